//go:build linux

package sandbox

import (
	"path"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/action"
)

// Opens are carried out by the supervisor: it resolves the path inside the process's root
// to a descriptor (O_PATH), checks the path that descriptor really has, and opens that same
// descriptor again with the call's flags (through /proc/self/fd), so the file checked is the
// file opened whatever the process changes meanwhile. The descriptor is then installed in the
// process as the call's result (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND).

// resolveCached is RESOLVE_CACHED (linux/openat2.h), which golang.org/x/sys/unix lacks.
const resolveCached = 0x20

// openHow is the kernel's struct open_how.
type openHow struct {
	Flags, Mode, Resolve uint64
}

// openat2 reads the call's open_how and opens as openat does, with its resolve flags.
func (c *supervisedCall) openat2() unix.Errno {
	size := c.arg(3)
	if size < uint64(unsafe.Sizeof(openHow{})) {
		return unix.EINVAL
	}
	if size > uint64(unsafe.Sizeof(openHow{})) {
		return unix.E2BIG // a larger struct than this supervisor knows: refuse rather than guess
	}
	var how openHow
	local := []unix.Iovec{{Base: (*byte)(unsafe.Pointer(&how)), Len: uint64(unsafe.Sizeof(how))}}
	remote := []unix.RemoteIovec{{Base: uintptr(c.arg(2)), Len: int(unsafe.Sizeof(how))}}
	if n, err := c.readv(local, remote); err != nil || n != int(unsafe.Sizeof(how)) {
		return unix.EFAULT
	}
	if how.Flags>>32 != 0 || how.Mode&^0o7777 != 0 {
		return unix.EINVAL
	}
	return c.open(c.dirfd(0), c.arg(1), int(how.Flags), uint32(how.Mode), how.Resolve)
}

// opOpen is what an open does to its file, for the hard blocks: reading, writing or both.
func openOps(flags int) []action.Op {
	if flags&unix.O_PATH != 0 {
		// A descriptor that only names the file is as good as reading it: /proc/self/fd/N
		// opens it again.
		return []action.Op{action.OpRead}
	}
	var ops []action.Op
	switch flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		ops = append(ops, action.OpRead)
	case unix.O_WRONLY:
		ops = append(ops, action.OpWrite)
	default:
		ops = append(ops, action.OpRead, action.OpWrite)
	}
	if flags&unix.O_ACCMODE == unix.O_RDONLY && flags&(unix.O_TRUNC|unix.O_CREAT) != 0 {
		ops = append(ops, action.OpWrite)
	}
	return ops
}

// writes says whether an open changes the file or its directory.
func writes(flags int) bool {
	return flags&unix.O_PATH == 0 && (flags&unix.O_ACCMODE != unix.O_RDONLY || flags&(unix.O_TRUNC|unix.O_CREAT) != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE)
}

// mayWrite says whether Landlock lets the command write p: the supervisor opens files
// outside the command's Landlock domain, so it keeps to the same bounds itself (read-only
// mounts refuse it anyway).
func (s *supervisor) mayWrite(p string) bool {
	for _, w := range s.writable {
		if p == w || strings.HasPrefix(p, w+"/") {
			return true
		}
	}
	return false
}

// open answers an open, openat, openat2 or creat.
func (c *supervisedCall) open(dirfd int, addr uint64, flags int, mode uint32, resolve uint64) unix.Errno {
	p, errno := c.str(addr)
	if errno != 0 {
		return errno
	}
	abs, errno := c.abs(dirfd, p)
	if errno != 0 {
		return errno
	}
	if !c.s.idValid(c.req.ID) {
		return unix.ENOENT // what was read may be another process's: act on none of it
	}
	if pp, ok := procPath(abs); ok {
		return c.procOpen(pp, flags)
	}
	if flags&unix.O_CREAT != 0 && flags&unix.O_TMPFILE == unix.O_TMPFILE {
		return unix.EINVAL
	}
	start, rel := c.root, abs
	if resolve&(unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT) != 0 {
		// Resolved beneath dirfd, as the call asked: from dirfd's own directory.
		if strings.HasPrefix(p, "/") && resolve&unix.RESOLVE_BENEATH != 0 {
			return unix.EXDEV
		}
		b, errno := c.base(dirfd)
		if errno != 0 {
			return errno
		}
		fd, _, errno := c.resolve(b, true, true)
		if errno != 0 {
			return errno
		}
		start, rel = fd, p
	}
	resolve = resolve&^resolveCached | unix.RESOLVE_NO_MAGICLINKS
	if start == c.root {
		resolve |= unix.RESOLVE_IN_ROOT
	}
	for range maxLinks {
		fd, real, errno := c.openPath(start, rel, flags, resolve)
		switch {
		case errno == unix.ENOENT && flags&unix.O_CREAT != 0:
			var next string
			errno, next = c.create(start, rel, flags, mode, resolve)
			if next == "" {
				return errno
			}
			rel = next // a dangling link to follow, or an entry made meanwhile
			continue
		case errno != 0:
			return errno
		}
		if flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
			return unix.EEXIST
		}
		return c.reopen(fd, real, flags, mode)
	}
	return unix.ELOOP
}

// openPath resolves rel from start to an O_PATH descriptor as the open would, and its path.
func (c *supervisedCall) openPath(start int, rel string, flags int, resolve uint64) (int, string, unix.Errno) {
	of := unix.O_PATH | unix.O_CLOEXEC | flags&(unix.O_NOFOLLOW|unix.O_DIRECTORY)
	if flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
		of |= unix.O_NOFOLLOW // O_EXCL never follows the last component
	}
	if flags&unix.O_TMPFILE == unix.O_TMPFILE {
		of |= unix.O_DIRECTORY
	}
	fd, err := unix.Openat2(start, rel, &unix.OpenHow{Flags: uint64(of), Resolve: resolve})
	if err != nil {
		return -1, "", errnoOf(err)
	}
	c.keep(fd)
	real, errno := fdPath(fd)
	if errno != 0 {
		return -1, "", errno
	}
	return fd, real, 0
}

// reopen checks the file fd names (at real) for the open's flags and installs it in the
// process, opened with those flags.
func (c *supervisedCall) reopen(fd int, real string, flags int, mode uint32) unix.Errno {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return errnoOf(err)
	}
	typ := st.Mode & unix.S_IFMT
	if typ == unix.S_IFLNK && flags&unix.O_PATH == 0 {
		return unix.ELOOP // O_NOFOLLOW met a link
	}
	if flags&unix.O_DIRECTORY != 0 && typ != unix.S_IFDIR && typ != unix.S_IFLNK {
		return unix.ENOTDIR
	}
	if errno := c.checkOpen(real, flags); errno != 0 {
		return errno
	}
	cloexec := flags&unix.O_CLOEXEC != 0
	if flags&unix.O_PATH != 0 {
		return c.install(fd, cloexec)
	}
	if typ == unix.S_IFIFO {
		// The open waits for the other end, which the loop must stay free to let another
		// process open: finish it elsewhere (stop opens that end if the run ends first).
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return errnoOf(err)
		}
		c.s.mu.Lock()
		c.s.fifos[dup] = struct{}{} // before the loop takes the next call, so stop sees it
		c.s.mu.Unlock()
		c.s.handlers.Add(1)
		go c.s.fifoOpen(c.req.ID, dup, flags)
		return 0
	}
	nf, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), reopenFlags(flags), 0)
	if err != nil {
		return errnoOf(err)
	}
	c.keep(nf)
	if flags&unix.O_TMPFILE == unix.O_TMPFILE {
		// An unnamed file made just now: its mode is the call's, as for a created one.
		unix.Fchmod(nf, mode&^umask(c.pid)&0o7777)
	}
	return c.install(nf, cloexec)
}

// reopenFlags are an open's flags for opening its file again: without what creates or
// resolves (done already), never taking a controlling terminal for Warden.
func reopenFlags(flags int) int {
	return flags&^(unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC) | unix.O_CLOEXEC | unix.O_NOCTTY
}

// checkOpen checks the hard blocks for an open of real with flags, and that it writes only
// where the command may.
func (c *supervisedCall) checkOpen(real string, flags int) unix.Errno {
	if !strings.HasPrefix(real, "/") {
		return 0 // a pipe, socket or anonymous file reached through /proc: no path to check
	}
	refused := false
	for _, op := range openOps(flags) {
		if c.check(op, real, false) != nil {
			refused = true
		}
	}
	if refused {
		return unix.EACCES
	}
	if writes(flags) && !c.s.mayWrite(real) {
		return unix.EACCES // as Landlock answers the command
	}
	return 0
}

func (c *supervisedCall) install(fd int, cloexec bool) unix.Errno {
	if err := c.s.addFD(c.req.ID, fd, cloexec); err != nil {
		return errnoOf(err)
	}
	return 0
}

// create makes the file of an O_CREAT open that found nothing at rel: in the directory it
// resolves to, checked first, with O_EXCL so that nothing made meanwhile is taken over. It
// returns the path to try again when the last component is a dangling link (followed, as the
// kernel does) or appeared meanwhile.
func (c *supervisedCall) create(start int, rel string, flags int, mode uint32, resolve uint64) (unix.Errno, string) {
	trimmed := strings.TrimRight(rel, "/")
	if trimmed != rel {
		return unix.EISDIR, ""
	}
	dir, name := splitLast(rel)
	if !strings.HasPrefix(rel, "/") {
		if i := strings.LastIndexByte(rel, '/'); i >= 0 {
			dir, name = rel[:i], rel[i+1:]
			if dir == "" {
				dir = "/"
			}
		} else {
			dir, name = ".", rel
		}
	}
	if name == "" || name == "." || name == ".." {
		return unix.EISDIR, ""
	}
	dfd, err := unix.Openat2(start, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolve})
	if err != nil {
		return errnoOf(err), ""
	}
	c.keep(dfd)
	dreal, errno := fdPath(dfd)
	if errno != 0 {
		return errno, ""
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return 0, rel // made meanwhile: open it as it is now
		}
		if flags&(unix.O_NOFOLLOW|unix.O_EXCL) != 0 {
			return unix.ELOOP, ""
		}
		target, err := readlinkat(dfd, name)
		if err != nil {
			return errnoOf(err), ""
		}
		if strings.HasPrefix(target, "/") {
			if resolve&unix.RESOLVE_IN_ROOT == 0 {
				return unix.EXDEV, ""
			}
			return 0, target
		}
		return 0, path.Join(dreal, target)
	}
	p := path.Join(dreal, name)
	if errno := c.checkOpen(p, flags); errno != 0 {
		return errno, ""
	}
	um := umask(c.pid)
	nf, err := unix.Openat(dfd, name, reopenFlags(flags)|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, mode&^um)
	if err == unix.EEXIST {
		return 0, rel
	}
	if err != nil {
		return errnoOf(err), ""
	}
	c.keep(nf)
	// Warden's own umask applied too; the mode is the process's.
	unix.Fchmod(nf, mode&^um&0o7777)
	return c.install(nf, flags&unix.O_CLOEXEC != 0), ""
}

func readlinkat(dfd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// umask is the process's umask (from its status), or 022.
func umask(pid int) uint32 {
	if v, ok := procStatus(pid, "Umask"); ok {
		if n, err := strconv.ParseUint(v, 8, 32); err == nil {
			return uint32(n)
		}
	}
	return 0o022
}
