//go:build linux

package sandbox

import (
	"fmt"
	"sync"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter: a short deny-list on top of Landlock, no_new_privs and the capability
// drop, for the kernel interfaces that none of those govern and that a command has no business
// with. It refuses:
//
//   - the kernel keyrings (keyctl, add_key, request_key): they are not namespaced, so uid 0
//     in the sandbox would reach root's keys on the host;
//   - new namespaces (unshare, setns, and clone with a namespace flag; clone3, whose flags
//     a filter cannot read, answers ENOSYS so that libc falls back to clone): a user namespace
//     inside would hand the command a full set of capabilities over it, and with it kernel
//     attack surface;
//   - bpf, perf_event_open, userfaultfd and io_uring (ENOSYS, so runtimes fall back to their
//     thread pools): interfaces with a long record of kernel exploits;
//   - the terminal ioctls TIOCSTI (push characters into a terminal's input, so a command run
//     from a person's shell could type the next command of that shell) and TIOCLINUX (the
//     console's selection and paste): the command has no controlling terminal either, but it
//     may hold the caller's terminal as its standard input;
//   - module loading, kexec, mount (and the new mount API: open_tree, move_mount, fsopen,
//     mount_setattr and the rest), swap, reboot, acct, quotactl, syslog and file handles,
//     which the dropped capabilities already refuse: a second wall.
//
// A system call of another architecture (32-bit calls on a 64-bit kernel) kills the process.
// Anything else is allowed. The filter is installed on the thread that starts the command,
// after no_new_privs, and the command inherits it.

// nsFlags are the namespace flags of clone and unshare.
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME

// The offsets of seccomp_data's fields.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16 // args[0]; args[i] at offArgs+8*i
	offArg0 = 16 // the low 32 bits of args[0] on a little-endian machine
	offArg1 = 24 // the low 32 bits of args[1]
)

// seccompProgram returns the filter for this architecture, or nil where it has no table
// (see seccomp_other.go).
func seccompProgram() ([]bpf.Instruction, error) {
	if arch.audit == 0 {
		return nil, nil
	}
	ret := func(v uint32) bpf.Instruction { return bpf.RetConstant{Val: v} }
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch.audit, SkipTrue: 1},
		ret(unix.SECCOMP_RET_KILL_PROCESS),
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if arch.x32Bit != 0 {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: arch.x32Bit, SkipFalse: 1},
			ret(enosys))
	}
	p = append(p,
		// clone and unshare: refused with a namespace flag, allowed without.
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch.clone, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch.unshare, SkipFalse: 5},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: nsFlags},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 1},
		ret(eperm),
		ret(allow),
	)
	p = append(p,
		// ioctl: TIOCSTI and TIOCLINUX refused. The kernel takes the request as 32 bits, so
		// the low word is the whole of it: high bits set by the caller cannot hide one.
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch.ioctl, SkipFalse: 5},
		bpf.LoadAbsolute{Off: offArg1, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCSTI, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCLINUX, SkipFalse: 1},
		ret(eperm),
		ret(allow),
	)
	for _, nr := range arch.refused {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, ret(eperm))
	}
	for _, nr := range arch.missing {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, ret(enosys))
	}
	return append(p, ret(allow)), nil
}

// denyFilter is the filter, assembled once per process, as the init process installs it on
// the thread that starts the command (none where there is no table).
var denyFilter = sync.OnceValues(func() ([]unix.SockFilter, error) {
	prog, err := seccompProgram()
	if err != nil || prog == nil {
		return nil, err
	}
	return assemble(prog)
})

// assemble turns a program into the instructions the kernel takes.
func assemble(prog []bpf.Instruction) ([]unix.SockFilter, error) {
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp: %v", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return filter, nil
}

// seccompArch is what the filter needs to know of an architecture.
type seccompArch struct {
	audit          uint32 // AUDIT_ARCH_*; 0: no filter here
	x32Bit         uint32 // system call numbers at or above it are another ABI's (amd64's x32)
	clone, unshare uint32
	ioctl          uint32
	refused        []uint32 // answered EPERM
	missing        []uint32 // answered ENOSYS, so that callers fall back
}
