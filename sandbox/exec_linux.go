//go:build linux

package sandbox

import (
	"crypto/sha256"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
)

// Limits on the argv read at an execve; a longer one is refused (E2BIG), not checked in part.
const (
	maxArgs     = 1 << 14
	maxArgBytes = 2 << 20
)

// exec checks an execve or execveat: the program's path for execute, and the command rules on
// the real argv, with the program known by what it is (a renamed or linked copy of rm is rm).
// The kernel then carries the call out.
func (c *supervisedCall) exec(dirfd int, addr, argvAddr uint64, flags int) (unix.Errno, bool) {
	p, errno := c.str(addr)
	if errno != 0 {
		return errno, false
	}
	var fd int
	var real string
	switch {
	case p == "" && flags&unix.AT_EMPTY_PATH != 0:
		if dirfd < 0 {
			return unix.EBADF, false
		}
		p = "/proc/self/fd/" + strconv.Itoa(dirfd)
		fallthrough
	default:
		abs, errno := c.abs(dirfd, p)
		if errno != 0 {
			return errno, false
		}
		if pp, ok := procPath(abs); ok {
			if fd, real, errno = c.procExec(pp); errno != 0 {
				return errno, false
			}
			break
		}
		if fd, real, errno = c.resolve(abs, flags&unix.AT_SYMLINK_NOFOLLOW == 0, false); errno != 0 {
			return errno, false
		}
	}
	argv, errno := c.argv(argvAddr)
	if errno != 0 {
		return errno, false
	}
	if !c.s.idValid(c.req.ID) {
		return unix.ENOENT, false
	}
	refused := false
	// A script runs its interpreter, which the kernel starts without a call of its own: the
	// interpreter is checked as the program, with the argv the kernel gives it.
	for range maxInterpreters + 1 {
		if c.checkProgram(fd, real, argv) {
			refused = true
		}
		interp, arg, ok := shebang(fd)
		if !ok {
			break
		}
		next := []string{interp}
		if arg != "" {
			next = append(next, arg)
		}
		next = append(next, p)
		if len(argv) > 1 {
			next = append(next, argv[1:]...)
		}
		abs, errno := c.abs(unix.AT_FDCWD, interp)
		if errno != 0 {
			break // the kernel fails the call itself
		}
		if fd, real, errno = c.resolve(abs, true, false); errno != 0 {
			break
		}
		argv, p = next, interp
	}
	if refused {
		return unix.EACCES, false
	}
	return 0, true
}

// maxInterpreters is how many scripts deep the kernel follows "#!" (BINPRM_MAX_RECURSION).
const maxInterpreters = 4

// checkProgram checks running the program fd (at real) with argv: execute on its path, and the
// command rules on argv, the program known by what it is. It records what refuses it.
func (c *supervisedCall) checkProgram(fd int, real string, argv []string) bool {
	refused := c.check(action.OpExecute, real, false) != nil
	norm := []string{boundary.CommandText(argv)}
	if len(argv) == 0 {
		norm = []string{path.Base(real)}
	}
	for _, name := range c.s.progs.identify(c.root, fd) {
		if len(argv) == 0 || path.Base(argv[0]) != name {
			norm = append(norm, boundary.CommandText(append([]string{name}, argv[min(1, len(argv)):]...)))
		}
	}
	if hits := c.s.rules.CheckCommand(strings.Join(argv, " "), norm, nil); len(hits) > 0 {
		for _, h := range hits {
			c.refuse(action.OpExecute, real, h.Target, []boundary.Hit{h})
		}
		refused = true
	}
	return refused
}

// shebang reads a script's "#!" line, as the kernel does: the interpreter and at most one
// argument (the rest of the line).
func shebang(fd int) (interp, arg string, ok bool) {
	f, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", "", false
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if unix.Fstat(f, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", "", false
	}
	buf := make([]byte, 256) // BINPRM_BUF_SIZE
	n, _ := unix.Read(f, buf)
	if n < 2 || buf[0] != '#' || buf[1] != '!' {
		return "", "", false
	}
	line := string(buf[2:max(n, 2)])
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	line = strings.Trim(line, " \t")
	interp, arg, _ = strings.Cut(line, " ")
	if j := strings.IndexByte(interp, '\t'); j >= 0 {
		interp, arg = interp[:j], interp[j+1:]+" "+arg
	}
	arg = strings.Trim(arg, " \t")
	return interp, arg, interp != ""
}

// procExec resolves a program named through /proc (fexecve's /proc/self/fd/N).
func (c *supervisedCall) procExec(pp string) (int, string, unix.Errno) {
	segs := strings.Split(strings.TrimPrefix(pp, "/proc/"), "/")
	tgid, ok := nsID(c.pid, "NStgid")
	if !ok || len(segs) != 3 || (segs[0] != "self" && segs[0] != strconv.Itoa(tgid)) || segs[1] != "fd" {
		return -1, "", unix.EACCES
	}
	fd, err := -1, error(unix.EACCES)
	c.looking(func() error {
		fd, err = unix.Open("/proc/"+strconv.Itoa(c.pid)+"/fd/"+segs[2], unix.O_PATH|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, "", errnoOf(err)
	}
	c.keep(fd)
	real, err := readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return -1, "", errnoOf(err)
	}
	return fd, strings.TrimSuffix(real, " (deleted)"), 0
}

// argv reads the NULL-terminated array of strings at addr.
func (c *supervisedCall) argv(addr uint64) ([]string, unix.Errno) {
	if addr == 0 {
		return nil, 0
	}
	var out []string
	total := 0
	for i := 0; ; i++ {
		if i >= maxArgs || total > maxArgBytes {
			return nil, unix.E2BIG
		}
		ptr, errno := c.word(addr + uint64(8*i))
		if errno != 0 {
			return nil, errno
		}
		if ptr == 0 {
			return out, 0
		}
		s, errno := c.longStr(ptr)
		if errno != 0 {
			return nil, errno
		}
		total += len(s) + 1
		out = append(out, s)
	}
}

// longStr reads a NUL-terminated argument, which unlike a path may be longer than PATH_MAX.
func (c *supervisedCall) longStr(addr uint64) (string, unix.Errno) {
	return c.cstring(addr, maxArgBytes, unix.E2BIG)
}

// programs knows the programs the command rules name (rm in "rm -rf /"), by what they are:
// the file's device and inode, or its content, as installed in the sandbox's system paths.
// A program run under another name, through a link or as a copy is known by the same name.
type programs struct {
	names []string

	once  sync.Once
	mu    sync.Mutex
	known map[fileID][]string // the system's copies
	where map[fileID]string   // and where each is, to hash it when a candidate needs it
	sizes map[int64][]fileID  // their sizes, to hash only a candidate of the same size
	sums  map[fileID][32]byte // contents hashed so far (this run)
}

type fileID struct {
	dev, ino uint64
	size     int64
	mtime    unix.Timespec
}

// programDirs are where the sandbox's programs are looked for.
var programDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

func newPrograms(rules HardBlocks) *programs {
	p := &programs{}
	for _, r := range rules.Rules() {
		if !r.Enabled || r.Type != boundary.TypeCommand {
			continue
		}
		if r.Match != boundary.MatchExact && r.Match != boundary.MatchPrefix && r.Match != boundary.MatchGlob {
			continue // a regex or substring names no program we can tell
		}
		word, _, _ := strings.Cut(strings.TrimSpace(r.Pattern), " ")
		word = path.Base(word)
		if word == "" || word == "." || word == "/" || strings.ContainsAny(word, `*?\[`) {
			continue
		}
		if !slices.Contains(p.names, word) {
			p.names = append(p.names, word)
		}
	}
	return p
}

func idOf(st *unix.Stat_t) fileID {
	return fileID{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim}
}

// load finds the named programs in the sandbox's system paths (root: its root).
func (p *programs) load(root int) {
	p.known, p.where, p.sizes, p.sums = map[fileID][]string{}, map[fileID]string{}, map[int64][]fileID{}, map[fileID][32]byte{}
	for _, name := range p.names {
		for _, dir := range programDirs {
			fd, err := unix.Openat2(root, dir+"/"+name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
			if err != nil {
				continue
			}
			var st unix.Stat_t
			if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
				id := idOf(&st)
				if !slices.Contains(p.known[id], name) {
					if len(p.known[id]) == 0 {
						p.sizes[st.Size] = append(p.sizes[st.Size], id)
						p.where[id] = dir + "/" + name
					}
					p.known[id] = append(p.known[id], name)
				}
			}
			unix.Close(fd)
		}
	}
}

// identify returns the names of the known programs fd (an O_PATH descriptor of the program
// about to run) is.
func (p *programs) identify(root, fd int) []string {
	if len(p.names) == 0 {
		return nil
	}
	p.once.Do(func() { p.load(root) })
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	id := idOf(&st)
	p.mu.Lock()
	defer p.mu.Unlock()
	if names, ok := p.known[id]; ok {
		return names
	}
	cands := p.sizes[st.Size]
	if len(cands) == 0 {
		return nil
	}
	sum, ok := p.sums[id]
	if !ok {
		if sum, ok = hashFD(fd); !ok {
			return nil
		}
		p.sums[id] = sum
	}
	var out []string
	for _, k := range cands {
		ks, ok := p.sums[k]
		if !ok {
			kfd, err := unix.Openat2(root, p.where[k], &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
			if err != nil {
				continue
			}
			var kst unix.Stat_t
			if unix.Fstat(kfd, &kst) == nil && idOf(&kst) == k {
				ks, ok = hashFD(kfd)
			}
			unix.Close(kfd)
			if !ok {
				continue
			}
			p.sums[k] = ks
		}
		if ks == sum {
			out = append(out, p.known[k]...)
		}
	}
	return out
}

// hashFD hashes the content of the file an O_PATH descriptor names.
func hashFD(fd int) ([32]byte, bool) {
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_RDONLY, 0)
	if err != nil {
		return [32]byte{}, false
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [32]byte{}, false
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, true
}
