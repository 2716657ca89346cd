//go:build linux && (amd64 || arm64)

package sandbox

import "golang.org/x/sys/unix"

// The file system calls both architectures have, and what the supervisor does with each.
// seccomp_amd64.go adds the older calls only amd64 has.
var commonWatched = map[uint32]fsCall{
	unix.SYS_OPENAT:    callOpenat,
	unix.SYS_OPENAT2:   callOpenat2,
	unix.SYS_TRUNCATE:  callTruncate,
	unix.SYS_UNLINKAT:  callUnlinkat,
	unix.SYS_RENAMEAT:  callRenameat,
	unix.SYS_RENAMEAT2: callRenameat2,
	unix.SYS_LINKAT:    callLinkat,
	unix.SYS_SYMLINKAT: callSymlinkat,
	unix.SYS_MKDIRAT:   callMkdirat,
	unix.SYS_MKNODAT:   callMknodat,
	unix.SYS_FCHMODAT:  callFchmodat,
	unix.SYS_FCHMODAT2: callFchmodat,
	unix.SYS_FCHOWNAT:  callFchownat,
	unix.SYS_EXECVE:    callExecve,
	unix.SYS_EXECVEAT:  callExecveat,
}
