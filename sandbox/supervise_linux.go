//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/sandbox/internal/initproc"
)

// The supervisor: Run's side of seccomp user notification. It reads each notification from
// the listener the init process passed over, reads the call's path arguments from the
// process's memory, resolves them as the call would (supervisedCall), checks the hard blocks,
// and answers: EACCES for a refused call; for an allowed open, the file it opened itself,
// handed over with SECCOMP_IOCTL_NOTIF_ADDFD; for the rest, SECCOMP_USER_NOTIF_FLAG_CONTINUE.

// The seccomp ioctls golang.org/x/sys/unix lacks (linux/seccomp.h).
const (
	seccompIoctlNotifIDValid  = 0x40082102 // SECCOMP_IOCTL_NOTIF_ID_VALID: _IOW('!', 2, __u64)
	seccompIoctlNotifAddfd    = 0x40182103 // SECCOMP_IOCTL_NOTIF_ADDFD: _IOW('!', 3, struct seccomp_notif_addfd)
	seccompIoctlNotifSetFlags = 0x40082104 // SECCOMP_IOCTL_NOTIF_SET_FLAGS: _IOW('!', 4, __u64)
)

// seccompData, seccompNotif, seccompNotifResp and seccompNotifAddfd are the kernel's structs.
type seccompData struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

type seccompNotifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

// minNotifyKernel is the first Linux with SECCOMP_ADDFD_FLAG_SEND, which hands a descriptor
// over and answers the call in one step.
var minNotifyKernel = [2]int{5, 14}

// notifyAvailable says why hard blocks cannot be enforced at the system call here, or nil.
func notifyAvailable() error {
	if arch.audit == 0 || len(watchedCalls) == 0 {
		return fmt.Errorf("no table of system calls for %s", runtime.GOARCH)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return err
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var maj, min int
	if _, err := fmt.Sscanf(rel, "%d.%d", &maj, &min); err != nil {
		return fmt.Errorf("cannot read the kernel's version %q", rel)
	}
	if maj < minNotifyKernel[0] || maj == minNotifyKernel[0] && min < minNotifyKernel[1] {
		return fmt.Errorf("the kernel (Linux %s) has no SECCOMP_ADDFD_FLAG_SEND (needs %d.%d or later)", rel, minNotifyKernel[0], minNotifyKernel[1])
	}
	return nil
}

// A supervisor answers one run's notifications. Its methods are called from Run's goroutines.
type supervisor struct {
	rules     HardBlocks
	writable  []string // what Landlock lets the command write, as the command sees it
	progs     *programs
	onRefusal func(Refusal) // Spec.OnRefusal

	mu       sync.Mutex
	attached bool
	fd       int
	wake     int // an eventfd that stops the loop
	loopDone chan struct{}
	handlers sync.WaitGroup
	refusals []Refusal
	dropped  int
	fifos    map[int]struct{} // O_PATH descriptors of FIFOs an open is blocked on
	root     int              // the sandbox's root (rootOf), or -1
	stopOnce sync.Once
}

func newSupervisor(rules HardBlocks, ws string, onRefusal func(Refusal)) (*supervisor, error) {
	if err := notifyAvailable(); err != nil {
		return nil, fmt.Errorf("%w: hard blocks are set, and cannot be enforced at the system call: %v", ErrUnavailable, err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("sandbox: eventfd: %w", err)
	}
	return &supervisor{
		rules:     rules,
		writable:  []string{ws, "/tmp", "/run", "/dev/shm", "/dev/pts", "/dev/null", "/dev/zero", "/dev/full"},
		progs:     newPrograms(rules),
		onRefusal: onRefusal,
		fd:        -1,
		root:      -1,
		wake:      wake,
		loopDone:  make(chan struct{}),
		fifos:     map[int]struct{}{},
	}, nil
}

// attach starts supervising with the listener in a control message's rights. It reports
// whether it did; a second listener is refused.
func (s *supervisor) attach(oob []byte) bool {
	fds := rightsIn(oob)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attached || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return false
	}
	s.attached, s.fd = true, fds[0]
	go s.loop()
	return true
}

func (s *supervisor) isAttached() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attached
}

// stop ends the loop and waits for every handler; the command's processes are gone by then,
// so no notification is left unanswered (the kernel fails those of dead processes).
func (s *supervisor) stop() { s.stopOnce.Do(s.doStop) }

func (s *supervisor) doStop() {
	unix.Write(s.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	if s.isAttached() {
		<-s.loopDone
	}
	// An open of a FIFO waits for the other end, which is gone: hold both ends open until
	// every such open has ended (a FIFO open with both ends does not wait). The loop is done,
	// so no FIFO open starts after this.
	var held []int
	s.mu.Lock()
	for fd := range s.fifos {
		if f, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			held = append(held, f)
		}
	}
	s.mu.Unlock()
	s.handlers.Wait()
	for _, f := range held {
		unix.Close(f)
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
	}
	if s.root >= 0 {
		unix.Close(s.root)
	}
	unix.Close(s.wake)
}

func (s *supervisor) result(res *Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res.Refusals = append([]Refusal(nil), s.refusals...)
	res.RefusalsDropped = s.dropped
}

func (s *supervisor) refuse(r Refusal) {
	s.mu.Lock()
	if len(s.refusals) < MaxRefusals {
		s.refusals = append(s.refusals, r)
	} else {
		s.dropped++
	}
	s.mu.Unlock()
	if s.onRefusal != nil {
		s.onRefusal(r)
	}
}

// loop receives notifications until stop, or until no process is left that the filter
// applies to.
func (s *supervisor) loop() {
	defer close(s.loopDone)
	// The loop answers every notification itself, on a thread of its own whose effective
	// capabilities are dropped (a thread's capabilities are its own), so that it resolves and
	// opens files with no more than the command's own rights (the command runs without
	// capabilities, as uid 0 where Warden is root); they are raised only to look at a process
	// the kernel would not otherwise show it (see looking). Answering here, with the kernel
	// told to wake this thread on the caller's CPU, spares a second thread's wake-up on every
	// call; only an open of a FIFO, which waits for its other end, is finished elsewhere.
	runtime.LockOSThread()
	caps, err := threadCaps()
	if err != nil || caps.lower() != nil {
		caps = nil // answer nothing but EACCES; the thread ends with the goroutine
	} else {
		defer func() {
			if caps.raise() == nil {
				runtime.UnlockOSThread()
			}
		}()
	}
	unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), seccompIoctlNotifSetFlags, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) // a hint: older kernels lack it
	pfd := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}, {Fd: int32(s.wake), Events: unix.POLLIN}}
	for {
		pfd[0].Revents, pfd[1].Revents = 0, 0
		if _, err := unix.Poll(pfd, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if pfd[1].Revents != 0 {
			return
		}
		if pfd[0].Revents&unix.POLLIN == 0 {
			if pfd[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
				return
			}
			continue
		}
		var req seccompNotif
		if err := ioctlPtr(s.fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&req)); err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				continue // interrupted, or the caller died before it was read
			}
			return
		}
		if caps == nil {
			s.answer(req.ID, unix.EACCES, false)
			continue
		}
		s.handle(&req, caps)
	}
}

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// idValid reports whether the notification is still pending: its process has not died, so
// its pid was not reused and what was read from /proc and its memory was its own.
func (s *supervisor) idValid(id uint64) bool {
	return ioctlPtr(s.fd, seccompIoctlNotifIDValid, unsafe.Pointer(&id)) == nil
}

// answer sends the answer: errno (0: success with val), or continue the call.
func (s *supervisor) answer(id uint64, errno unix.Errno, cont bool) {
	resp := seccompNotifResp{ID: id}
	if cont {
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	} else if errno != 0 {
		resp.Error = -int32(errno)
	}
	ioctlPtr(s.fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)) // ENOENT: it died meanwhile
}

// addFD installs fd in the process and answers the call with its number there.
func (s *supervisor) addFD(id uint64, fd int, cloexec bool) error {
	a := seccompNotifAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(fd)}
	if cloexec {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), seccompIoctlNotifAddfd, uintptr(unsafe.Pointer(&a)))
	if e != 0 {
		return e
	}
	return nil
}

// fifoOpen finishes, on a thread of its own, an open of a FIFO the loop checked: it waits for
// the other end, which only another process of the sandbox can open, through the loop.
func (s *supervisor) fifoOpen(id uint64, fd, flags int) {
	defer s.handlers.Done()
	defer func() {
		s.mu.Lock()
		delete(s.fifos, fd) // before it is closed: stop opens what s.fifos names
		s.mu.Unlock()
		unix.Close(fd)
	}()
	runtime.LockOSThread()
	caps, err := threadCaps()
	if err != nil || caps.lower() != nil {
		s.answer(id, unix.EACCES, false) // still locked: the thread ends with the goroutine
		return
	}
	defer func() {
		if caps.raise() == nil {
			runtime.UnlockOSThread()
		}
	}()
	nf, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), reopenFlags(flags), 0)
	if err != nil {
		s.answer(id, errnoOf(err), false)
		return
	}
	defer unix.Close(nf)
	if err := s.addFD(id, nf, flags&unix.O_CLOEXEC != 0); err != nil {
		s.answer(id, errnoOf(err), false)
	}
}

// handle answers one notification.
func (s *supervisor) handle(req *seccompNotif, caps *threadCapabilities) {
	call, ok := watchedCalls[uint32(req.Data.Nr)]
	if !ok {
		s.answer(req.ID, unix.ENOSYS, false)
		return
	}
	c := &supervisedCall{s: s, req: req, call: call, root: -1, caps: caps}
	defer c.close()
	c.run()
}

// rootOf returns the sandbox's root, opened through the calling process the first time: every
// process in the sandbox has the same root, for none of them can change it (chroot needs a
// capability they lack; mount, pivot_root, setns and new mount namespaces are refused).
func (s *supervisor) rootOf(c *supervisedCall) (int, unix.Errno) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root >= 0 {
		return s.root, 0
	}
	root, err := -1, error(unix.EACCES)
	c.looking(func() error {
		root, err = unix.Open("/proc/"+strconv.Itoa(c.pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, unix.EACCES
	}
	if !s.idValid(c.req.ID) {
		unix.Close(root) // the pid was another process's by then
		return -1, unix.ENOENT
	}
	s.root = root
	return root, 0
}

// threadCapabilities switches the calling thread's effective capabilities (a thread's
// capabilities are its own) between none and what it had.
type threadCapabilities struct {
	hdr       unix.CapUserHeader
	had, none [2]unix.CapUserData
	broken    bool // could not be lowered: the thread must not serve anything else
}

func threadCaps() (*threadCapabilities, error) {
	t := &threadCapabilities{hdr: unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}}
	if err := unix.Capget(&t.hdr, &t.had[0]); err != nil {
		return nil, err
	}
	t.none = t.had
	t.none[0].Effective, t.none[1].Effective = 0, 0
	return t, nil
}

// any says whether the thread had effective capabilities to raise.
func (t *threadCapabilities) any() bool { return t.had[0].Effective != 0 || t.had[1].Effective != 0 }

func (t *threadCapabilities) set(d *[2]unix.CapUserData) error {
	if t.had[0].Effective == 0 && t.had[1].Effective == 0 {
		return nil // nothing to switch
	}
	hdr := t.hdr
	return unix.Capset(&hdr, &d[0])
}

func (t *threadCapabilities) lower() error { return t.set(&t.none) }
func (t *threadCapabilities) raise() error {
	if t.broken {
		return errors.New("the thread's capabilities could not be lowered")
	}
	return t.set(&t.had)
}

// rightsIn returns the descriptors in a control message.
func rightsIn(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var out []int
	for _, m := range msgs {
		if fds, err := unix.ParseUnixRights(&m); err == nil {
			out = append(out, fds...)
		}
	}
	return out
}

// procStatus returns the value of a field of /proc/pid/status.
func procStatus(pid int, field string) (string, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// nsID returns the last id of a field such as NSpid or NStgid: the one in the process's own
// PID namespace.
func nsID(pid int, field string) (int, bool) {
	v, ok := procStatus(pid, field)
	if !ok {
		return 0, false
	}
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(f[len(f)-1])
	return n, err == nil
}

// nsPID returns the process pid (a thread) belongs to, as its PID namespace numbers it, or
// pid when that cannot be read.
func nsPID(pid int) int {
	if n, ok := nsID(pid, "NStgid"); ok {
		return n
	}
	return pid
}

// control handles, on Run's control socket, the listener (initproc.MsgNotify) and the start of the
// command (initproc.MsgReady). It reports false when the command started without a supervisor, having
// killed it: hard blocks are never left unenforced.
func (s *supervisor) control(kind byte, oob []byte, p *os.Process) bool {
	if kind == initproc.MsgNotify {
		if s == nil {
			for _, fd := range rightsIn(oob) {
				unix.Close(fd)
			}
		} else {
			s.attach(oob) // closes what it does not take
		}
		return true
	}
	if s.isAttached() {
		return true
	}
	p.Kill()
	return false
}
