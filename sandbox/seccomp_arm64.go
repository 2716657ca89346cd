//go:build linux

package sandbox

import "golang.org/x/sys/unix"

var arch = seccompArch{
	audit:   unix.AUDIT_ARCH_AARCH64,
	clone:   unix.SYS_CLONE,
	unshare: unix.SYS_UNSHARE,
	ioctl:   unix.SYS_IOCTL,
	refused: refusedCalls,
	missing: missingCalls,
}
