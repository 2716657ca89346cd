//go:build linux

package sandbox

import (
	"maps"

	"golang.org/x/sys/unix"
)

// watchedCalls are the system calls the supervisor sees on amd64: the common ones and the
// older forms with a path and no directory descriptor. The 32-bit forms (i386, x32) never
// reach it: the deny filter kills a process that makes a call of another architecture and
// answers x32 numbers ENOSYS.
var watchedCalls = func() map[uint32]fsCall {
	m := maps.Clone(commonWatched)
	maps.Copy(m, map[uint32]fsCall{
		unix.SYS_OPEN:    callOpen,
		unix.SYS_CREAT:   callCreat,
		unix.SYS_UNLINK:  callUnlink,
		unix.SYS_RMDIR:   callRmdir,
		unix.SYS_RENAME:  callRename,
		unix.SYS_LINK:    callLink,
		unix.SYS_SYMLINK: callSymlink,
		unix.SYS_MKDIR:   callMkdir,
		unix.SYS_MKNOD:   callMknod,
		unix.SYS_CHMOD:   callChmod,
		unix.SYS_CHOWN:   callChown,
		unix.SYS_LCHOWN:  callLchown,
	})
	return m
}()
