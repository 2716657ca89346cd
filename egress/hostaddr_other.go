//go:build !linux

package egress

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// ownAddrs knows the addresses of this host's interfaces. Off Linux they are read with
// net.InterfaceAddrs and kept for a second: Warden's sandbox is Linux's, and elsewhere this
// only keeps warden egress check and a proxy honest, at the cost of a one-second window.
type ownAddrs struct {
	mu   sync.Mutex
	read time.Time
	set  map[netip.Addr]struct{}
}

type ownFDs struct{}

func (*ownFDs) close() {}

func netnsKey() (nsKey, error) { return nsKey{}, nil }

func openOwnAddrs() (*ownAddrs, *ownFDs) { return &ownAddrs{}, &ownFDs{} }

func (o *ownAddrs) known() (map[netip.Addr]struct{}, error) { return o.current() }

func (o *ownAddrs) current() (map[netip.Addr]struct{}, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.set != nil && time.Since(o.read) < time.Second {
		return o.set, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		o.set = nil
		return nil, err
	}
	set := map[netip.Addr]struct{}{}
	for _, a := range addrs {
		if p, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(p.IP); ok {
				set[canonicalAddr(ip)] = struct{}{}
			}
		}
	}
	o.set, o.read = set, time.Now()
	return set, nil
}
