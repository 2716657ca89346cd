//go:build linux

package sandbox

import (
	"errors"
	"slices"
	"sync"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
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

// notifyProgram is the filter: the watched calls go to the supervisor, everything else is
// left to the deny filter (the kernel applies the stricter answer of the two).
func notifyProgram() ([]bpf.Instruction, error) {
	if arch.audit == 0 || len(watchedCalls) == 0 {
		return nil, errors.New("no table of system calls for this architecture")
	}
	nrs := make([]uint32, 0, len(watchedCalls))
	for nr := range watchedCalls {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch.audit, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	// One comparison per call, each jumping to the notification at the end.
	for i, nr := range nrs {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(len(nrs) - i)})
	}
	return append(p,
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		bpf.RetConstant{Val: unix.SECCOMP_RET_USER_NOTIF},
	), nil
}

// notifyFilter is the notifying filter, assembled once per process, as the init process
// installs it (initproc.Config.Notify).
var notifyFilter = sync.OnceValues(func() ([]unix.SockFilter, error) {
	prog, err := notifyProgram()
	if err != nil {
		return nil, err
	}
	return assemble(prog)
})
