//go:build linux

package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/action"
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

// The filter sends the supervisor exactly the watched calls that could need a check under
// rules that can refuse block: with every operation blockable, all of them; otherwise a call
// whose operations can none be refused goes straight on, and an open by its flags, as the
// supervisor would judge them (openOps), the high word of the flags ignored as the kernel
// ignores it.
func TestNotifyProgram(t *testing.T) {
	if _, err := notifyProgram(allOps); err != nil {
		t.Skip(err)
	}
	flagSets := []uint64{
		unix.O_RDONLY, unix.O_WRONLY, unix.O_RDWR, unix.O_ACCMODE,
		unix.O_RDONLY | unix.O_CLOEXEC | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NONBLOCK,
		unix.O_RDONLY | unix.O_CREAT, unix.O_RDONLY | unix.O_TRUNC, unix.O_RDONLY | unix.O_APPEND,
		unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC, unix.O_WRONLY | unix.O_APPEND, unix.O_RDWR | unix.O_CREAT,
		unix.O_TMPFILE | unix.O_WRONLY, unix.O_TMPFILE | unix.O_RDWR, unix.O_TMPFILE,
		unix.O_PATH, unix.O_PATH | unix.O_WRONLY, unix.O_PATH | unix.O_RDWR, unix.O_PATH | unix.O_CREAT,
		unix.O_PATH | unix.O_TRUNC,
	}
	for _, f := range slices.Clone(flagSets) {
		flagSets = append(flagSets, f|0xffffffff00000000) // the kernel reads an int: the high word means nothing
	}
	for block := range allOps + 1 {
		prog, err := notifyProgram(block)
		if err != nil {
			t.Fatal(err)
		}
		for nr := range uint32(600) {
			call, watched := watchedCalls[nr]
			for _, flags := range flagSets {
				want := uint32(unix.SECCOMP_RET_ALLOW)
				if watched && needsCheck(call, flags, block) {
					want = unix.SECCOMP_RET_USER_NOTIF
				}
				args := [6]uint64{flags, flags, flags, flags, flags, flags}
				if got := runFilter(t, prog, nr, args); got != want {
					t.Errorf("rules blocking %04b, call %d (%v), flags %#x: filter answers %#x, want %#x", block, nr, call, flags, got, want)
				}
			}
		}
	}
	for nr := range watchedCalls {
		if got := runFilter(t, mustProgram(t, allOps), nr, [6]uint64{}); got != unix.SECCOMP_RET_USER_NOTIF {
			t.Errorf("watched call %d: filter answers %#x, want SECCOMP_RET_USER_NOTIF", nr, got)
		}
	}
}

// needsCheck is what the supervisor needs to see of call with flags (in every argument) under
// rules that can refuse block, worked out from what it checks, not from the filter.
func needsCheck(call fsCall, flags uint64, block opMask) bool {
	var ops []action.Op
	switch call {
	case callOpen, callOpenat:
		ops = openOps(int(int32(flags)))
		if writes(int(int32(flags))) {
			ops = append(ops, action.OpWrite) // O_TMPFILE without write access: EINVAL, but judged a write
		}
	case callOpenat2:
		ops = []action.Op{action.OpRead, action.OpWrite} // its flags are in memory
	case callCreat:
		ops = openOps(unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC)
	case callUnlink, callRmdir, callUnlinkat:
		ops = []action.Op{action.OpDelete}
	case callRename, callRenameat, callRenameat2:
		ops = []action.Op{action.OpDelete, action.OpWrite}
	case callLink, callLinkat:
		ops = []action.Op{action.OpRead, action.OpWrite}
	case callExecve, callExecveat:
		ops = []action.Op{action.OpExecute}
	default: // truncate, mkdir, mknod, symlink, chmod, chown
		ops = []action.Op{action.OpWrite}
	}
	bits := map[action.Op]opMask{action.OpRead: needRead, action.OpWrite: needWrite, action.OpDelete: needDelete, action.OpExecute: needExec}
	for _, op := range ops {
		if block&bits[op] != 0 {
			return true
		}
	}
	return false
}

func mustProgram(t *testing.T, block opMask) []bpf.Instruction {
	t.Helper()
	prog, err := notifyProgram(block)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// blockable reads what rules can refuse from the rules themselves: a command rule is execute;
// a disabled rule nothing; a set that is not valid everything.
func TestBlockable(t *testing.T) {
	for _, tt := range []struct {
		rules string
		want  opMask
	}{
		{``, 0},
		{`{"id":"a","enabled":true,"type":"command","pattern":"rm *","match":"glob","operations":["execute"]}`, needExec},
		{`{"id":"a","enabled":false,"type":"path","pattern":"**/.env","match":"glob","operations":["read","write"]}`, 0},
		{`{"id":"a","enabled":true,"type":"path","pattern":"**/.env","match":"glob","operations":["write"]}`, needWrite},
		{`{"id":"a","enabled":true,"type":"path","pattern":"/x/**","match":"glob","operations":["read","delete"]},
		  {"id":"b","enabled":true,"type":"path","pattern":"secret","match":"contains","operations":["execute"]}`, needRead | needDelete | needExec},
	} {
		d, err := boundary.Parse([]byte(`{"version":1,"hardBlocks":[` + tt.rules + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		s, _ := boundary.Compile(d, boundary.Options{})
		if got := blockable(s); got != tt.want {
			t.Errorf("%s: blockable %04b, want %04b", tt.rules, got, tt.want)
		}
	}
	if got := blockable((*boundary.Set)(nil)); got != allOps {
		t.Errorf("a set that was never compiled: blockable %04b, want all", got)
	}
}

// runFilter runs prog on a call of this architecture numbered nr, with args (the filter reads
// their low words: the machine is little-endian, the VM's loads big-endian).
func runFilter(t *testing.T, prog []bpf.Instruction, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]byte, 64)
	binary.BigEndian.PutUint32(in[offNr:], nr)
	binary.BigEndian.PutUint32(in[offArch:], arch.audit)
	for i, a := range args {
		binary.BigEndian.PutUint32(in[offArgs+8*i:], uint32(a))
		binary.BigEndian.PutUint32(in[offArgs+8*i+4:], uint32(a>>32))
	}
	out, err := vm.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(out)
}
