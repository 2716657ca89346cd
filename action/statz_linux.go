//go:build linux && (amd64 || arm64)

package action

import (
	"syscall"
	"unsafe"
)

// statz is syscall.Stat of a path given as bytes ending in NUL, which it does not copy: Seen
// keeps its paths so, and checks them without allocating.
func statz(p []byte, st *syscall.Stat_t) error {
	return fstatat(atFDCWD, p, st, 0)
}

// lstatz is statz without following a link at the end.
func lstatz(p []byte, st *syscall.Stat_t) error {
	return fstatat(atFDCWD, p, st, atSymlinkNofollow)
}

func fstatat(dir int, p []byte, st *syscall.Stat_t, flags int) error {
	_, _, e := syscall.Syscall6(sysFstatat, uintptr(dir), uintptr(unsafe.Pointer(&p[0])),
		uintptr(unsafe.Pointer(st)), uintptr(flags), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

const (
	atFDCWD           = -0x64 // AT_FDCWD
	atSymlinkNofollow = 0x100 // AT_SYMLINK_NOFOLLOW
)
