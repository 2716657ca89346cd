//go:build linux

package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// ownAddrs knows the addresses of this host's interfaces, in the network namespace it was made
// in, as they are now. Two netlink sockets, opened when it is made, belong to that namespace:
// one subscribed to every address change, one to ask for the addresses. The addresses are
// read once, and again only after the subscription has reported a change: each use costs one
// non-blocking read of the subscription, not a dump of the addresses. The kernel queues a
// change's message before the call that made the change (ip addr add, a DHCP client's, a VPN's)
// returns, so a use that starts after the change sees it: no window, no timer.
//
// Safe for concurrent use; uses are serialised by a mutex held for that read.
type ownAddrs struct {
	mu    sync.Mutex
	fds   *ownFDs
	buf   []byte
	seq   uint32
	stale bool                    // the addresses must be read again
	set   map[netip.Addr]struct{} // never changed once published
	err   error                   // why the addresses could not be read, if they could not
}

// ownFDs are the sockets, closed by a cleanup when their ownAddrs is unreachable.
type ownFDs struct {
	watch int // subscribed to RTMGRP_IPV4_IFADDR and RTMGRP_IPV6_IFADDR, non-blocking; -1 if none
	dump  int // for RTM_GETADDR dumps; -1 if none
	err   error
}

func (f *ownFDs) close() {
	for _, fd := range []int{f.watch, f.dump} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// netnsKey identifies the network namespace of the calling thread.
func netnsKey() (nsKey, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
		return nsKey{}, err
	}
	return nsKey{dev: st.Dev, ino: st.Ino}, nil
}

// openOwnAddrs opens the sockets in the calling thread's network namespace. A failure is kept
// and reported by every use: the check then refuses every address (fail closed).
func openOwnAddrs() (*ownAddrs, *ownFDs) {
	f := &ownFDs{watch: -1, dump: -1}
	o := &ownAddrs{fds: f, stale: true, buf: make([]byte, 64<<10)}
	var err error
	f.watch, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err == nil {
		err = unix.Bind(f.watch, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR})
	}
	if err != nil {
		f.err = fmt.Errorf("subscribe to address changes: %w", os.NewSyscallError("netlink", err))
		return o, f
	}
	f.dump, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err == nil {
		// The kernel always answers; the timeout only keeps a broken answer from hanging checks.
		err = unix.SetsockoptTimeval(f.dump, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5})
	}
	if err == nil {
		err = unix.Bind(f.dump, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	}
	if err != nil {
		f.err = fmt.Errorf("open a netlink socket: %w", os.NewSyscallError("netlink", err))
	}
	return o, f
}

// current returns the host's addresses as they are now, reading them again if they changed.
func (o *ownAddrs) current() (map[netip.Addr]struct{}, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fds.err != nil {
		return nil, o.fds.err
	}
	if o.drain() || o.stale {
		o.set, o.err = o.load()
		o.stale = o.err != nil
	}
	return o.set, o.err
}

// known returns the addresses as last read, without asking whether they changed since (they
// are read if they never were).
func (o *ownAddrs) known() (map[netip.Addr]struct{}, error) {
	o.mu.Lock()
	set, err, stale := o.set, o.err, o.stale
	o.mu.Unlock()
	if stale {
		return o.current()
	}
	return set, err
}

// drain reads every pending message of the subscription, reporting whether there was one (or
// one was lost: ENOBUFS, a full queue, means changes happened).
func (o *ownAddrs) drain() bool {
	changed := false
	for {
		n, err := unix.Read(o.fds.watch, o.buf) // not recvfrom: no source address to allocate
		switch {
		case err == nil && n > 0, errors.Is(err, unix.ENOBUFS):
			changed = true
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			return changed
		default:
			// A broken subscription cannot say what changed: read the addresses every time.
			return true
		}
	}
}

// load dumps the addresses of every interface (RTM_GETADDR).
func (o *ownAddrs) load() (map[netip.Addr]struct{}, error) {
	for range 3 {
		set, interrupted, err := o.dumpOnce()
		if err != nil {
			return nil, fmt.Errorf("read this host's addresses: %w", err)
		}
		if !interrupted {
			return set, nil
		}
	}
	return nil, errors.New("read this host's addresses: they kept changing during the dump")
}

// dumpOnce sends one dump request and reads its answer: the addresses, and whether the kernel
// marked the dump inconsistent (NLM_F_DUMP_INTR: an address changed while it ran).
func (o *ownAddrs) dumpOnce() (set map[netip.Addr]struct{}, interrupted bool, err error) {
	o.seq++
	req := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofIfAddrmsg)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.RTM_GETADDR)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], o.seq)
	req[unix.NLMSG_HDRLEN] = unix.AF_UNSPEC
	if err := unix.Sendto(o.fds.dump, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, false, os.NewSyscallError("sendto", err)
	}
	set = map[netip.Addr]struct{}{}
	for {
		n, _, err := unix.Recvfrom(o.fds.dump, o.buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, false, os.NewSyscallError("recvfrom", err)
		}
		b := o.buf[:n]
		for len(b) >= unix.NLMSG_HDRLEN {
			l := int(ne.Uint32(b[0:]))
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return nil, false, errors.New("a malformed netlink message")
			}
			typ, flags, seq := ne.Uint16(b[4:]), ne.Uint16(b[6:]), ne.Uint32(b[8:])
			msg := b[unix.NLMSG_HDRLEN:l]
			b = b[min(nlmAlign(l), len(b)):]
			if seq != o.seq {
				continue // the rest of an earlier dump that timed out
			}
			if flags&unix.NLM_F_DUMP_INTR != 0 {
				interrupted = true
			}
			switch typ {
			case unix.NLMSG_DONE:
				return set, interrupted, nil
			case unix.NLMSG_ERROR:
				if len(msg) >= 4 {
					if errno := int32(ne.Uint32(msg)); errno != 0 {
						return nil, false, os.NewSyscallError("RTM_GETADDR", unix.Errno(-errno))
					}
				}
				return nil, false, errors.New("RTM_GETADDR: an error without a code")
			case unix.RTM_NEWADDR:
				if a, ok := ifaAddr(msg); ok {
					set[a] = struct{}{}
				}
			}
		}
	}
}

func nlmAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

// ifaAddr reads an RTM_NEWADDR message's local address: IFA_LOCAL when present (on a
// point-to-point link IFA_ADDRESS is the peer's), else IFA_ADDRESS.
func ifaAddr(msg []byte) (netip.Addr, bool) {
	if len(msg) < unix.SizeofIfAddrmsg {
		return netip.Addr{}, false
	}
	var local, address netip.Addr
	ne := binary.NativeEndian
	for b := msg[unix.SizeofIfAddrmsg:]; len(b) >= unix.SizeofRtAttr; {
		l := int(ne.Uint16(b[0:]))
		if l < unix.SizeofRtAttr || l > len(b) {
			break
		}
		typ, data := ne.Uint16(b[2:]), b[unix.SizeofRtAttr:l]
		if a, ok := netip.AddrFromSlice(data); ok {
			switch typ {
			case unix.IFA_LOCAL:
				local = a
			case unix.IFA_ADDRESS:
				address = a
			}
		}
		b = b[min((l+unix.RTA_ALIGNTO-1)&^(unix.RTA_ALIGNTO-1), len(b)):]
	}
	if local.IsValid() {
		return canonicalAddr(local), true
	}
	return canonicalAddr(address), address.IsValid()
}
