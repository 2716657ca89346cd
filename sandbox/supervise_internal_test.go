//go:build linux

package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/boundary"
)

// Where seccomp user notification cannot be had, a command with hard blocks does not run.
func TestEnforceFailsClosed(t *testing.T) {
	saved := minNotifyKernel
	minNotifyKernel = [2]int{99, 0}
	defer func() { minNotifyKernel = saved }()
	ws := t.TempDir()
	_, err := Run(context.Background(), Spec{Workspace: ws, Shell: "touch ran", Boundaries: boundary.Empty()})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "hard blocks are set") {
		t.Fatalf("err = %v, want ErrUnavailable saying why", err)
	}
	if _, err := Run(context.Background(), Spec{Workspace: ws, Shell: "true"}); err != nil && !errors.Is(err, ErrUnavailable) {
		t.Fatalf("without hard blocks: %v", err)
	}
}

// The filter sends exactly the watched calls to the supervisor.
func TestNotifyProgram(t *testing.T) {
	prog, err := notifyProgram()
	if err != nil {
		t.Skip(err)
	}
	for nr := range uint32(600) {
		_, watched := watchedCalls[nr]
		want := uint32(unix.SECCOMP_RET_ALLOW)
		if watched {
			want = unix.SECCOMP_RET_USER_NOTIF
		}
		if got := runFilter(t, prog, nr); got != want {
			t.Errorf("call %d: filter answers %#x, want %#x", nr, got, want)
		}
	}
	for nr := range watchedCalls {
		if got := runFilter(t, prog, nr); got != unix.SECCOMP_RET_USER_NOTIF {
			t.Errorf("watched call %d: filter answers %#x, want SECCOMP_RET_USER_NOTIF", nr, got)
		}
	}
}

// runFilter runs prog on a call of this architecture numbered nr.
func runFilter(t *testing.T, prog []bpf.Instruction, nr uint32) uint32 {
	t.Helper()
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]byte, 64)
	binary.BigEndian.PutUint32(in[offNr:], nr)
	binary.BigEndian.PutUint32(in[offArch:], arch.audit)
	out, err := vm.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(out)
}
