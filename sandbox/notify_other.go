//go:build linux && !amd64 && !arm64

package sandbox

// No table of system calls here: hard blocks cannot be enforced at the system call, so a
// Spec with Boundaries does not run (see supervise_linux.go).
var watchedCalls map[uint32]fsCall
