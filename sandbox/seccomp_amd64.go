//go:build linux

package sandbox

import "golang.org/x/sys/unix"

var arch = seccompArch{
	audit:   unix.AUDIT_ARCH_X86_64,
	x32Bit:  0x40000000,
	clone:   unix.SYS_CLONE,
	unshare: unix.SYS_UNSHARE,
	ioctl:   unix.SYS_IOCTL,
	refused: refusedCalls,
	missing: missingCalls,
}
