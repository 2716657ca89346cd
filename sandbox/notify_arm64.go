//go:build linux

package sandbox

// watchedCalls are the system calls the supervisor sees on arm64, which has only the forms
// with a directory descriptor (and no 32-bit calls reach it: the deny filter kills a process
// that makes one).
var watchedCalls = commonWatched
