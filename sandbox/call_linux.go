//go:build linux

package sandbox

import (
	"errors"
	"path"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
)

// maxLinks is how many symbolic links one resolution follows before it fails with ELOOP, as
// the kernel's own limit.
const maxLinks = 40

// A supervisedCall is one notification being answered.
type supervisedCall struct {
	s    *supervisor
	req  *seccompNotif
	call fsCall
	pid  int // in Warden's PID namespace
	root int // O_PATH descriptor of the process's root, opened once
	fds  []int
	cont bool // let the kernel carry the call out (SECCOMP_USER_NOTIF_FLAG_CONTINUE)
	caps *threadCapabilities
}

// looking runs f, which looks at the process itself (its /proc entry, its memory), and if the
// kernel refuses it, runs it again with the thread's capabilities raised: the command's first
// process is still the undumpable init's child when it calls execve. If they cannot be
// lowered again, the call is refused and the goroutine ends on its locked thread, which then
// ends too (see loop).
func (c *supervisedCall) looking(f func() error) {
	err := f()
	if !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) || !c.caps.any() || c.caps.raise() != nil {
		return
	}
	f()
	if err := c.caps.lower(); err != nil {
		c.caps.broken = true
		c.s.answer(c.req.ID, unix.EACCES, false)
		runtime.Goexit()
	}
}

func (c *supervisedCall) close() {
	for _, fd := range c.fds {
		unix.Close(fd)
	}
}

func (c *supervisedCall) keep(fd int) int {
	c.fds = append(c.fds, fd)
	return fd
}

func (c *supervisedCall) arg(i int) uint64 { return c.req.Data.Args[i] }

// dirfd is argument i as a directory descriptor (AT_FDCWD is negative in 32 bits).
func (c *supervisedCall) dirfd(i int) int { return int(int32(c.arg(i))) }

// errRefused marks a call a hard block refused (already recorded).
var errRefused = errors.New("refused by a hard block")

// run answers the call. Anything that cannot be read or resolved fails the call with the
// error met (EACCES when there is none to give): nothing goes through unchecked.
func (c *supervisedCall) run() {
	id := c.req.ID
	c.pid = int(c.req.Pid)
	root, errno := c.s.rootOf(c)
	if errno != 0 {
		c.s.answer(id, errno, false)
		return
	}
	c.root = root
	cont := false
	switch c.call {
	case callOpen:
		errno = c.open(unix.AT_FDCWD, c.arg(0), int(c.arg(1)), uint32(c.arg(2)), 0)
	case callCreat:
		errno = c.open(unix.AT_FDCWD, c.arg(0), unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, uint32(c.arg(1)), 0)
	case callOpenat:
		errno = c.open(c.dirfd(0), c.arg(1), int(c.arg(2)), uint32(c.arg(3)), 0)
	case callOpenat2:
		errno = c.openat2()
	case callExecve:
		errno, cont = c.exec(unix.AT_FDCWD, c.arg(0), c.arg(1), 0)
	case callExecveat:
		errno, cont = c.exec(c.dirfd(0), c.arg(1), c.arg(2), int(c.arg(4)))
	default:
		errno = c.pathCall()
		cont = errno == 0
	}
	cont = cont || c.cont && errno == 0
	if errno == 0 && !cont {
		return // answered with the descriptor
	}
	if cont && !c.s.idValid(id) {
		return // died meanwhile: nothing to answer
	}
	c.s.answer(id, errno, cont)
}

// str reads the NUL-terminated string at addr in the process's memory (at most PATH_MAX
// bytes), a page at a time so that an unmapped page after the string does not fail it.
func (c *supervisedCall) str(addr uint64) (string, unix.Errno) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	return c.cstring(addr, unix.PathMax, unix.ENAMETOOLONG)
}

// cstring reads the NUL-terminated string at addr, a page at a time so that an unmapped page
// after it does not fail the read; one longer than max is tooLong.
func (c *supervisedCall) cstring(addr uint64, max int, tooLong unix.Errno) (string, unix.Errno) {
	var b []byte
	buf := make([]byte, 4096)
	for len(b) <= max {
		n := 4096 - int(addr%4096)
		local := []unix.Iovec{{Base: &buf[0], Len: uint64(n)}}
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: n}}
		got, err := c.readv(local, remote)
		if err != nil || got <= 0 {
			return "", unix.EFAULT
		}
		if i := indexByte(buf[:got], 0); i >= 0 {
			return string(append(b, buf[:i]...)), 0
		}
		b = append(b, buf[:got]...)
		addr += uint64(got)
	}
	return "", tooLong
}

// readv reads the process's memory.
func (c *supervisedCall) readv(local []unix.Iovec, remote []unix.RemoteIovec) (n int, err error) {
	err = unix.EACCES
	c.looking(func() error { n, err = unix.ProcessVMReadv(c.pid, local, remote, 0); return err })
	return n, err
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// word reads a pointer-sized word at addr.
func (c *supervisedCall) word(addr uint64) (uint64, unix.Errno) {
	var w uint64
	local := []unix.Iovec{{Base: (*byte)(unsafe.Pointer(&w)), Len: 8}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: 8}}
	if n, err := c.readv(local, remote); err != nil || n != 8 {
		return 0, unix.EFAULT
	}
	return w, 0
}

// base is the directory a relative path starts from: the process's working directory or
// dirfd's, as the process sees it.
func (c *supervisedCall) base(dirfd int) (string, unix.Errno) {
	link := "/proc/" + strconv.Itoa(c.pid) + "/cwd"
	if dirfd != unix.AT_FDCWD {
		if dirfd < 0 {
			return "", unix.EBADF
		}
		link = "/proc/" + strconv.Itoa(c.pid) + "/fd/" + strconv.Itoa(dirfd)
	}
	var p string
	err := error(unix.EACCES)
	c.looking(func() error { p, err = readlink(link); return err })
	if err != nil {
		if dirfd != unix.AT_FDCWD {
			return "", unix.EBADF
		}
		return "", errnoOf(err)
	}
	if !strings.HasPrefix(p, "/") {
		return "", unix.ENOTDIR // a pipe or socket
	}
	if strings.HasSuffix(p, " (deleted)") {
		return "", unix.ENOENT
	}
	return p, 0
}

// abs is p made absolute from dirfd, as the process sees it (not cleaned: ".." is resolved
// against what is really there, when it is opened).
func (c *supervisedCall) abs(dirfd int, p string) (string, unix.Errno) {
	if p == "" {
		return "", unix.ENOENT
	}
	if strings.HasPrefix(p, "/") {
		return p, 0
	}
	b, errno := c.base(dirfd)
	if errno != 0 {
		return "", errno
	}
	return strings.TrimSuffix(b, "/") + "/" + p, 0
}

// resolve opens abs with O_PATH inside the process's root, following links as the call
// would (the last component only when follow), and returns the descriptor and the real path.
// Magic links (/proc/pid/fd/N) are not followed here: see procOpen.
func (c *supervisedCall) resolve(abs string, follow, dir bool) (int, string, unix.Errno) {
	flags := unix.O_PATH | unix.O_CLOEXEC
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	if dir {
		flags |= unix.O_DIRECTORY
	}
	fd, err := unix.Openat2(c.root, abs, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
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

// fdPath is the path of a descriptor this process holds, as the process it was opened for
// sees it: the kernel names a file by its place in the mount namespace it was reached
// through, whose root is the sandbox's root.
func fdPath(fd int) (string, unix.Errno) {
	p, err := readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", errnoOf(err)
	}
	if strings.HasSuffix(p, " (deleted)") {
		return "", unix.ENOENT
	}
	return p, 0
}

func readlink(p string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlink(p, buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EACCES
}

// check checks op on path (the process's view), records what refuses it, and returns
// errRefused if something does.
func (c *supervisedCall) check(op action.Op, p string, recursive bool) error {
	hits := c.s.rules.CheckPath(op, p, recursive, nil)
	if len(hits) == 0 {
		return nil
	}
	c.refuse(op, p, "", hits)
	return errRefused
}

func (c *supervisedCall) refuse(op action.Op, p, command string, hits []boundary.Hit) {
	pid := nsPID(c.pid)
	for _, h := range hits {
		c.s.refuse(Refusal{Rule: h.Rule.ID, Reason: h.Rule.Reason, Op: op, Path: p, Command: command, PID: pid, Call: c.call.String()})
	}
}

// splitLast splits an absolute path into its directory and last component; last is empty
// when the path ends in "/", ".", ".." or is "/" (no entry of a directory to name).
func splitLast(abs string) (dir, last string) {
	i := strings.LastIndexByte(abs, '/')
	dir, last = abs[:i], abs[i+1:]
	if dir == "" {
		dir = "/"
	}
	if last == "." || last == ".." {
		return abs, ""
	}
	return dir, last
}

// entry resolves the entry a call acts on without following it (unlink, rename, mkdir...):
// its directory, followed, and its name there. It returns the entry's path and the
// directory's descriptor.
func (c *supervisedCall) entry(dirfd int, addr uint64) (string, int, string, unix.Errno) {
	p, errno := c.str(addr)
	if errno != 0 {
		return "", -1, "", errno
	}
	abs, errno := c.abs(dirfd, p)
	if errno != 0 {
		return "", -1, "", errno
	}
	abs = strings.TrimRight(abs, "/")
	if abs == "" {
		abs = "/"
	}
	dir, last := splitLast(abs)
	if last == "" {
		fd, real, errno := c.resolve(abs, true, true)
		return real, fd, "", errno
	}
	fd, real, errno := c.resolve(dir, true, true)
	if errno != 0 {
		return "", -1, "", errno
	}
	return path.Join(real, last), fd, last, 0
}

// target resolves the file a call acts on, following every link (truncate, chmod...).
func (c *supervisedCall) target(dirfd int, addr uint64, follow, emptyPath bool) (string, int, unix.Errno) {
	p, errno := c.str(addr)
	if errno != 0 {
		return "", -1, errno
	}
	if p == "" && emptyPath {
		b, errno := c.base(dirfd)
		return b, -1, errno
	}
	if !follow {
		real, fd, _, errno := c.entry(dirfd, addr)
		return real, fd, errno
	}
	abs, errno := c.abs(dirfd, p)
	if errno != 0 {
		return "", -1, errno
	}
	fd, real, errno := c.resolve(abs, true, false)
	return real, fd, errno
}

// pathCall checks a call the supervisor lets the kernel carry out (SECCOMP_USER_NOTIF_FLAG_CONTINUE):
// everything but opens and execs. The kernel resolves the path again when it carries the call
// out; docs/sandbox.md says what window that leaves.
func (c *supervisedCall) pathCall() unix.Errno {
	type want struct {
		op        action.Op
		p         string
		recursive bool
	}
	var ws []want
	add := func(p string, ops ...action.Op) {
		for _, op := range ops {
			ws = append(ws, want{op: op, p: p})
		}
	}
	var errno unix.Errno
	var p string
	switch c.call {
	case callTruncate:
		p, _, errno = c.target(unix.AT_FDCWD, c.arg(0), true, false)
		add(p, action.OpWrite)
	case callUnlink, callRmdir:
		p, _, _, errno = c.entry(unix.AT_FDCWD, c.arg(0))
		add(p, action.OpDelete)
	case callUnlinkat:
		p, _, _, errno = c.entry(c.dirfd(0), c.arg(1))
		add(p, action.OpDelete)
	case callMkdir, callMknod:
		p, _, _, errno = c.entry(unix.AT_FDCWD, c.arg(0))
		add(p, action.OpWrite)
	case callMkdirat, callMknodat:
		p, _, _, errno = c.entry(c.dirfd(0), c.arg(1))
		add(p, action.OpWrite)
	case callSymlink:
		p, _, _, errno = c.entry(unix.AT_FDCWD, c.arg(1))
		add(p, action.OpWrite)
	case callSymlinkat:
		p, _, _, errno = c.entry(c.dirfd(1), c.arg(2))
		add(p, action.OpWrite)
	case callChmod, callChown:
		p, _, errno = c.target(unix.AT_FDCWD, c.arg(0), true, false)
		add(p, action.OpWrite)
	case callLchown:
		p, _, errno = c.target(unix.AT_FDCWD, c.arg(0), false, false)
		add(p, action.OpWrite)
	case callFchmodat:
		// fchmodat has no flags argument; fchmodat2 shares its numbers and adds one.
		flags := 0
		if c.req.Data.Nr == unix.SYS_FCHMODAT2 {
			flags = int(c.arg(3))
		}
		p, _, errno = c.target(c.dirfd(0), c.arg(1), flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0)
		add(p, action.OpWrite)
	case callFchownat:
		flags := int(c.arg(4))
		p, _, errno = c.target(c.dirfd(0), c.arg(1), flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags&unix.AT_EMPTY_PATH != 0)
		add(p, action.OpWrite)
	case callRename, callRenameat, callRenameat2:
		oldDir, oldAddr, newDir, newAddr, flags := unix.AT_FDCWD, c.arg(0), unix.AT_FDCWD, c.arg(1), 0
		if c.call != callRename {
			oldDir, oldAddr, newDir, newAddr = c.dirfd(0), c.arg(1), c.dirfd(2), c.arg(3)
		}
		if c.call == callRenameat2 {
			flags = int(c.arg(4))
		}
		var op, np string
		var opFD, npFD int
		var oname, nname string
		if op, opFD, oname, errno = c.entry(oldDir, oldAddr); errno != 0 {
			return errno
		}
		if np, npFD, nname, errno = c.entry(newDir, newAddr); errno != 0 {
			return errno
		}
		// The old name goes (and with it, for a directory, the names of all below it); the new
		// one is written, and with RENAME_EXCHANGE each side is both.
		if errno = c.checkMoved(op, opFD, oname); errno != 0 {
			return errno
		}
		add(np, action.OpWrite)
		if flags&unix.RENAME_EXCHANGE != 0 {
			add(op, action.OpWrite)
			if errno = c.checkMoved(np, npFD, nname); errno != 0 {
				return errno
			}
		}
	case callLink, callLinkat:
		oldDir, oldAddr, newDir, newAddr, flags := unix.AT_FDCWD, c.arg(0), unix.AT_FDCWD, c.arg(1), 0
		if c.call == callLinkat {
			oldDir, oldAddr, newDir, newAddr, flags = c.dirfd(0), c.arg(1), c.dirfd(2), c.arg(3), int(c.arg(4))
		}
		var op, np string
		if op, _, errno = c.target(oldDir, oldAddr, flags&unix.AT_SYMLINK_FOLLOW != 0, flags&unix.AT_EMPTY_PATH != 0); errno != 0 {
			return errno
		}
		if np, _, _, errno = c.entry(newDir, newAddr); errno != 0 {
			return errno
		}
		// A second name for a file reads and writes it as the first does.
		add(op, action.OpRead, action.OpWrite)
		add(np, action.OpWrite)
	default:
		return unix.ENOSYS
	}
	if errno != 0 {
		return errno
	}
	refused := false
	for _, w := range ws {
		if c.check(w.op, w.p, w.recursive) != nil {
			refused = true
		}
	}
	if refused {
		return unix.EACCES
	}
	return 0
}

// maxTreeWalk is the most entries checked below a directory that is renamed; a larger tree
// that some rule could match below is refused.
const maxTreeWalk = 10000

// checkMoved checks that the entry name in the directory dirFD (at p) may be moved away: p
// may be deleted, and so may everything below it, which moves with it.
func (c *supervisedCall) checkMoved(p string, dirFD int, name string) unix.Errno {
	if c.check(action.OpDelete, p, false) != nil {
		return unix.EACCES
	}
	if name == "" {
		return 0
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirFD, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 0 // the kernel gives its own error, or a file has nothing below it
	}
	if may, _ := c.s.rules.MayBlock(action.OpDelete, p, true, nil); !may {
		return 0
	}
	fd, err := unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return errnoOf(err)
	}
	left := maxTreeWalk
	if errno := c.walk(fd, p, &left); errno != 0 {
		return errno
	}
	return 0
}

// walk checks delete on everything below the directory fd (at p), and closes fd.
func (c *supervisedCall) walk(fd int, p string, left *int) unix.Errno {
	f := newDirReader(fd)
	defer f.close()
	for {
		name, typ, ok, err := f.next()
		if err != nil {
			return errnoOf(err)
		}
		if !ok {
			return 0
		}
		*left--
		if *left < 0 {
			c.refuse(action.OpDelete, p, "", []boundary.Hit{{Rule: &treeTooLarge, Target: p}})
			return unix.EACCES
		}
		child := p + "/" + name
		if c.check(action.OpDelete, child, false) != nil {
			return unix.EACCES
		}
		if typ == unix.DT_DIR {
			if may, _ := c.s.rules.MayBlock(action.OpDelete, child, true, nil); !may {
				continue
			}
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return errnoOf(err)
			}
			if errno := c.walk(sub, child, left); errno != 0 {
				return errno
			}
		}
	}
}

// treeTooLarge is the rule a refusal names when a renamed directory is too large to check.
var treeTooLarge = boundary.Rule{ID: "sandbox_tree_too_large", Enabled: true,
	Reason: "a directory that a hard block could match below is too large to check before it is moved"}

// dirReader reads a directory's entries with getdents64.
type dirReader struct {
	fd   int
	buf  []byte
	n, i int
}

func newDirReader(fd int) *dirReader { return &dirReader{fd: fd, buf: make([]byte, 8192)} }

func (d *dirReader) close() { unix.Close(d.fd) }

func (d *dirReader) next() (string, uint8, bool, error) {
	for {
		if d.i >= d.n {
			n, err := unix.Getdents(d.fd, d.buf)
			if err != nil {
				return "", 0, false, err
			}
			if n <= 0 {
				return "", 0, false, nil
			}
			d.n, d.i = n, 0
		}
		rec := d.buf[d.i:]
		reclen := int(*(*uint16)(unsafe.Pointer(&rec[16])))
		typ := rec[18]
		nameb := rec[19:reclen]
		d.i += reclen
		name := string(nameb[:max(indexByte(nameb, 0), 0)])
		if name == "." || name == ".." || name == "" {
			continue
		}
		return name, typ, true, nil
	}
}
