//go:build linux

package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestSeccompProgram runs the filter in a BPF interpreter over made-up system calls. The
// interpreter loads words big-endian where the kernel loads them in the machine's order, so
// the input is laid out big-endian: what matters is the value each load sees.
func TestSeccompProgram(t *testing.T) {
	prog, err := seccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	if prog == nil {
		t.Skip("no seccomp table for this architecture")
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	call := func(archID, nr, arg0 uint32, arg1 ...uint32) uint32 {
		in := make([]byte, 64)
		binary.BigEndian.PutUint32(in[offNr:], nr)
		binary.BigEndian.PutUint32(in[offArch:], archID)
		binary.BigEndian.PutUint32(in[offArg0:], arg0)
		if len(arg1) > 0 {
			binary.BigEndian.PutUint32(in[offArg1:], arg1[0])
		}
		out, err := vm.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		return uint32(out)
	}
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	tests := []struct {
		name     string
		arch, nr uint32
		arg0     uint32
		want     uint32
	}{
		{"read", arch.audit, unix.SYS_READ, 0, allow},
		{"execve", arch.audit, unix.SYS_EXECVE, 0, allow},
		{"clone for a thread", arch.audit, arch.clone, unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND, allow},
		{"clone for a process", arch.audit, arch.clone, unix.CLONE_VM | unix.CLONE_VFORK | unix.CLONE_PIDFD, allow},
		{"clone into a user namespace", arch.audit, arch.clone, unix.CLONE_NEWUSER, eperm},
		{"clone into a network namespace", arch.audit, arch.clone, unix.CLONE_NEWNET | unix.CLONE_VM, eperm},
		{"unshare a user namespace", arch.audit, arch.unshare, unix.CLONE_NEWUSER, eperm},
		{"unshare files", arch.audit, arch.unshare, unix.CLONE_FILES, allow},
		{"clone3", arch.audit, unix.SYS_CLONE3, 0, enosys},
		{"keyctl", arch.audit, unix.SYS_KEYCTL, 0, eperm},
		{"bpf", arch.audit, unix.SYS_BPF, 0, eperm},
		{"io_uring_setup", arch.audit, unix.SYS_IO_URING_SETUP, 0, enosys},
		{"another architecture", unix.AUDIT_ARCH_I386, unix.SYS_READ, 0, unix.SECCOMP_RET_KILL_PROCESS},
	}
	if arch.x32Bit != 0 {
		tests = append(tests, struct {
			name     string
			arch, nr uint32
			arg0     uint32
			want     uint32
		}{"an x32 call", arch.audit, arch.x32Bit | unix.SYS_READ, 0, enosys})
	}
	for _, tt := range tests {
		if got := call(tt.arch, tt.nr, tt.arg0); got != tt.want {
			t.Errorf("%s: %#x, want %#x", tt.name, got, tt.want)
		}
	}
	ioctls := []struct {
		name string
		req  uint32
		want uint32
	}{
		{"TIOCSTI", unix.TIOCSTI, eperm},
		{"TIOCLINUX", unix.TIOCLINUX, eperm},
		{"TCGETS", unix.TCGETS, allow},
		{"TIOCGWINSZ", unix.TIOCGWINSZ, allow},
		{"FIONREAD", unix.TIOCINQ, allow},
	}
	for _, tt := range ioctls {
		if got := call(arch.audit, arch.ioctl, 0, tt.req); got != tt.want {
			t.Errorf("ioctl %s: %#x, want %#x", tt.name, got, tt.want)
		}
	}
	for _, nr := range arch.refused {
		if got := call(arch.audit, nr, 0); got != eperm {
			t.Errorf("system call %d: %#x, want EPERM", nr, got)
		}
	}
}
