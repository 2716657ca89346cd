//go:build linux

package sandbox

import (
	"errors"
	"slices"
	"sync"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
)

// Hard blocks at the system call: when a Spec carries Boundaries, the init process installs a
// second seccomp filter on the thread that starts the command, after Landlock, no_new_privs,
// the capability drop and the deny filter. It sends every file system call that names a path
// (watchedCalls) to a supervisor in Run's process through seccomp user notification, and
// passes the filter's listener to Run over the control socket (initproc.MsgNotify, the
// descriptor attached). The command and everything it starts inherit the filter: none of
// them can open, create, remove, rename, link, change or run a file without the supervisor's
// answer. Run assembles the filter (once per process) and sends it in the init process's
// configuration.

// fsCall is a watched system call, by what its arguments are.
type fsCall uint8

const (
	callOpen      fsCall = iota + 1 // open(path, flags, mode)
	callOpenat                      // openat(dirfd, path, flags, mode)
	callOpenat2                     // openat2(dirfd, path, how, size)
	callCreat                       // creat(path, mode)
	callTruncate                    // truncate(path, length)
	callUnlink                      // unlink(path)
	callRmdir                       // rmdir(path)
	callUnlinkat                    // unlinkat(dirfd, path, flags)
	callRename                      // rename(old, new)
	callRenameat                    // renameat(olddirfd, old, newdirfd, new)
	callRenameat2                   // renameat2(olddirfd, old, newdirfd, new, flags)
	callLink                        // link(old, new)
	callLinkat                      // linkat(olddirfd, old, newdirfd, new, flags)
	callSymlink                     // symlink(target, linkpath)
	callSymlinkat                   // symlinkat(target, newdirfd, linkpath)
	callMkdir                       // mkdir(path, mode)
	callMkdirat                     // mkdirat(dirfd, path, mode)
	callMknod                       // mknod(path, mode, dev)
	callMknodat                     // mknodat(dirfd, path, mode, dev)
	callChmod                       // chmod(path, mode)
	callFchmodat                    // fchmodat(dirfd, path, mode[, flags])
	callChown                       // chown(path, uid, gid)
	callLchown                      // lchown(path, uid, gid)
	callFchownat                    // fchownat(dirfd, path, uid, gid, flags)
	callExecve                      // execve(path, argv, envp)
	callExecveat                    // execveat(dirfd, path, argv, envp, flags)
)

var callNames = map[fsCall]string{
	callOpen: "open", callOpenat: "openat", callOpenat2: "openat2", callCreat: "creat",
	callTruncate: "truncate", callUnlink: "unlink", callRmdir: "rmdir", callUnlinkat: "unlinkat",
	callRename: "rename", callRenameat: "renameat", callRenameat2: "renameat2",
	callLink: "link", callLinkat: "linkat", callSymlink: "symlink", callSymlinkat: "symlinkat",
	callMkdir: "mkdir", callMkdirat: "mkdirat", callMknod: "mknod", callMknodat: "mknodat",
	callChmod: "chmod", callFchmodat: "fchmodat", callChown: "chown", callLchown: "lchown",
	callFchownat: "fchownat", callExecve: "execve", callExecveat: "execveat",
}

func (c fsCall) String() string { return callNames[c] }

// An opMask is a set of the operations a hard block can refuse, as a watched call needs them
// checked.
type opMask uint8

const (
	needRead opMask = 1 << iota
	needWrite
	needDelete
	needExec // execute on the program's path, or a command rule on its argv

	allOps = needRead | needWrite | needDelete | needExec
)

// callNeeds is what each watched call may need checked (see pathCall, open and exec). Opens
// need read, write or both by their flags (openOps); openFlagsArg says where those are.
var callNeeds = map[fsCall]opMask{
	callOpen: needRead | needWrite, callOpenat: needRead | needWrite, callOpenat2: needRead | needWrite,
	callCreat: needWrite, callTruncate: needWrite,
	callUnlink: needDelete, callRmdir: needDelete, callUnlinkat: needDelete,
	callRename: needDelete | needWrite, callRenameat: needDelete | needWrite, callRenameat2: needDelete | needWrite,
	callLink: needRead | needWrite, callLinkat: needRead | needWrite,
	callSymlink: needWrite, callSymlinkat: needWrite,
	callMkdir: needWrite, callMkdirat: needWrite, callMknod: needWrite, callMknodat: needWrite,
	callChmod: needWrite, callFchmodat: needWrite, callChown: needWrite, callLchown: needWrite, callFchownat: needWrite,
	callExecve: needExec, callExecveat: needExec,
}

// openFlagsArg is the argument that holds an open's flags, for the calls that pass them in a
// register (openat2's are in memory, which a filter cannot read).
var openFlagsArg = map[fsCall]int{callOpen: 1, callOpenat: 2}

// blockable is the operations rules could refuse anywhere: those some enabled path rule names,
// execute when a command rule is enabled too, and all of them for a set that does not
// validate (it refuses every call). The index is asked too, for the whole tree; either
// saying so is enough.
func blockable(rules HardBlocks) opMask {
	if rules.Invalid() != nil {
		return allOps
	}
	bits := map[action.Op]opMask{action.OpRead: needRead, action.OpWrite: needWrite, action.OpDelete: needDelete, action.OpExecute: needExec}
	var m opMask
	for _, r := range rules.Rules() {
		switch {
		case !r.Enabled:
		case r.Type == boundary.TypeCommand:
			m |= needExec
		case r.Type == boundary.TypePath:
			for _, op := range r.Operations {
				if b, ok := bits[action.Op(op)]; ok {
					m |= b
				} else {
					return allOps // an operation this table does not know: check everything
				}
			}
		default:
			return allOps
		}
	}
	for op, b := range bits {
		if may, _ := rules.MayBlock(op, "/", true, nil); may {
			m |= b
		}
	}
	return m
}

// openWriteFlags are the flags that make an open write (writes): the access mode beyond
// O_RDONLY, O_CREAT, O_TRUNC, and O_TMPFILE's own bit.
const openWriteFlags = unix.O_ACCMODE | unix.O_CREAT | unix.O_TRUNC | (unix.O_TMPFILE &^ unix.O_DIRECTORY)

// notifyProgram is the filter for rules that can refuse block: a watched call goes to the
// supervisor unless none of the operations it may need checked can be refused, which the
// filter decides from the call's number and, for open and openat, its flags (a register's
// value, copied before the filter runs: the process cannot change what the filter saw, and a
// path it names later is checked again by its own call). Where reads cannot be refused, an
// open with O_PATH (open and openat drop every other flag but O_DIRECTORY, O_NOFOLLOW and
// O_CLOEXEC with it) or none of openWriteFlags does not stop; where writes cannot, an
// O_WRONLY open without O_PATH. The kernel takes an open's flags as an int, so the low 32
// bits the filter reads are all of them. Everything else is left to the deny filter (the
// kernel applies the stricter answer of the two).
func notifyProgram(block opMask) ([]bpf.Instruction, error) {
	if arch.audit == 0 || len(watchedCalls) == 0 {
		return nil, errors.New("no table of system calls for this architecture")
	}
	nrs := make([]uint32, 0, len(watchedCalls))
	for nr := range watchedCalls {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	allow := bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	notify := bpf.RetConstant{Val: unix.SECCOMP_RET_USER_NOTIF}
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch.audit, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	var always []uint32
	for _, nr := range nrs {
		call := watchedCalls[nr]
		need := callNeeds[call]
		if need == 0 {
			need = allOps // a call this table does not know
		}
		if need&block == 0 {
			continue // nothing it does can be refused: never stopped
		}
		arg, flagged := openFlagsArg[call]
		if !flagged || need&block == need {
			always = append(always, nr)
			continue
		}
		// An open, where only one of reading and writing can be refused. The accumulator
		// holds the call's number again past this block, which is skipped whole.
		var cond []bpf.Instruction
		off := uint32(offArgs + 8*arg)
		if block&needRead == 0 {
			cond = []bpf.Instruction{
				bpf.LoadAbsolute{Off: off, Size: 4},
				bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.O_PATH, SkipTrue: 1}, // the kernel drops the rest
				bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: openWriteFlags, SkipTrue: 1},
				allow,
				notify,
			}
		} else {
			cond = []bpf.Instruction{
				bpf.LoadAbsolute{Off: off, Size: 4},
				bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.O_PATH, SkipTrue: 3},
				bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: unix.O_ACCMODE},
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.O_WRONLY, SkipFalse: 1},
				allow,
				notify,
			}
		}
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: uint8(len(cond))})
		p = append(p, cond...)
	}
	// One comparison per call always stopped, each jumping to the notification at the end.
	for i, nr := range always {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(len(always) - i)})
	}
	return append(p, allow, notify), nil
}

// notifyFilters are the notifying filters, one for each set of operations rules can refuse,
// each assembled once per process, as the init process installs it (initproc.Config.Notify).
var notifyFilters = func() (fs [allOps + 1]func() ([]unix.SockFilter, error)) {
	for m := range fs {
		fs[m] = sync.OnceValues(func() ([]unix.SockFilter, error) {
			prog, err := notifyProgram(opMask(m))
			if err != nil {
				return nil, err
			}
			return assemble(prog)
		})
	}
	return fs
}()

// notifyFilter is the notifying filter for rules that can refuse block.
func notifyFilter(block opMask) ([]unix.SockFilter, error) {
	return notifyFilters[block&allOps]()
}
