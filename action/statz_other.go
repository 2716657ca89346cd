//go:build !linux || !(amd64 || arm64)

package action

import "syscall"

// statz is syscall.Stat of a path given as bytes ending in NUL.
func statz(p []byte, st *syscall.Stat_t) error {
	return syscall.Stat(string(p[:len(p)-1]), st)
}

// lstatz is syscall.Lstat of a path given as bytes ending in NUL.
func lstatz(p []byte, st *syscall.Stat_t) error {
	return syscall.Lstat(string(p[:len(p)-1]), st)
}
