//go:build linux && !amd64 && !arm64

package sandbox

// No table of system calls here: no seccomp filter; Landlock, no_new_privs and the capability
// drop still apply.
var arch seccompArch
