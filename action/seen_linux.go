package action

import "syscall"

// The file systems whose directories' ctime moves on every change to their entries, and so
// whose answers a View may show to hold (Seen): ext2/3/4, XFS, Btrfs, tmpfs and overlayfs
// (whose directories take the upper layer's times once changed). Network and FUSE file
// systems, /proc and /sys are not among them.
const (
	magicExt     = 0xEF53
	magicXFS     = 0x58465342
	magicBtrfs   = 0x9123683E
	magicTmpfs   = 0x01021994
	magicOverlay = 0x794C7630
)

// fsKeepsCtime reports whether the file system p is on is one of those.
func fsKeepsCtime(p string) bool {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(p, &fs); err != nil {
		return false
	}
	switch uint32(fs.Type) {
	case magicExt, magicXFS, magicBtrfs, magicTmpfs, magicOverlay:
		return true
	}
	return false
}
