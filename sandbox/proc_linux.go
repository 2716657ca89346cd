//go:build linux

package sandbox

import (
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The sandbox's /proc is its own PID namespace's: the supervisor, outside it, cannot resolve
// /proc/self there, and must not follow another process's magic links (/proc/N/cwd/.env is
// the workspace's .env, reached through a link the kernel would follow for the command). So
// paths in /proc are handled apart:
//
//   - the caller's own magic links (/proc/self/fd/N, cwd, root, exe, and /dev/stdout,
//     /dev/fd/N, which lead there) are opened by the supervisor through the process's entry in
//     its own /proc, and checked and installed like any open: what they lead to is what is
//     checked;
//   - another process's magic links are refused (EACCES);
//   - everything else in /proc is checked as named and left to the kernel, which opens it
//     with the command's own credentials and Landlock domain: the sandbox's root and its
//     /proc cannot be changed by the command, so what the kernel resolves is what was checked.

// procPath returns abs as a path in the sandbox's /proc, when it is one: cleaned, with
// /dev/stdin, /dev/stdout, /dev/stderr and /dev/fd (the sandbox's links into /proc/self)
// replaced. A path with ".." is not taken for one (it is resolved as any other).
func procPath(abs string) (string, bool) {
	for _, seg := range strings.Split(abs, "/") {
		if seg == ".." {
			return "", false
		}
	}
	p := path.Clean(abs)
	switch {
	case p == "/dev/stdin":
		p = "/proc/self/fd/0"
	case p == "/dev/stdout":
		p = "/proc/self/fd/1"
	case p == "/dev/stderr":
		p = "/proc/self/fd/2"
	case p == "/dev/fd" || strings.HasPrefix(p, "/dev/fd/"):
		p = "/proc/self/fd" + strings.TrimPrefix(p, "/dev/fd")
	}
	if p == "/proc" || strings.HasPrefix(p, "/proc/") {
		return p, true
	}
	return "", false
}

// magicLinks are the entries of /proc/PID (and /proc/PID/task/TID) that are links the kernel
// follows to a file itself, not to a path.
var magicLinks = map[string]bool{"cwd": true, "root": true, "exe": true}

// procOpen answers an open of pp, a path in the sandbox's /proc.
func (c *supervisedCall) procOpen(pp string, flags int) unix.Errno {
	segs := strings.Split(strings.TrimPrefix(pp, "/proc"), "/")[1:] // after "/proc/"
	if len(segs) > 0 && (segs[0] == "self" || segs[0] == "thread-self") {
		tgid, ok1 := nsID(c.pid, "NStgid")
		tid, ok2 := nsID(c.pid, "NSpid")
		if !ok1 || !ok2 {
			return unix.ENOENT
		}
		head := []string{strconv.Itoa(tgid)}
		if segs[0] == "thread-self" {
			head = append(head, "task", strconv.Itoa(tid))
		}
		segs = append(head, segs[1:]...)
	}
	magic, rest := procMagic(segs)
	if !magic {
		// Named by a path the command cannot change: checked, and opened by the kernel.
		if errno := c.checkOpen(path.Join("/proc", path.Join(segs...)), flags&^unix.O_ACCMODE|unix.O_RDONLY); errno != 0 {
			return errno
		}
		if writes(flags) {
			return unix.EACCES // Landlock lets the command write nothing in /proc
		}
		c.cont = true
		return 0
	}
	// Only the caller's own: /proc/TGID/... or /proc/TGID/task/TID/... of the calling thread.
	tgid, ok1 := nsID(c.pid, "NStgid")
	tid, ok2 := nsID(c.pid, "NSpid")
	if !ok1 || !ok2 || segs[0] != strconv.Itoa(tgid) {
		return unix.EACCES
	}
	host := "/proc/" + strconv.Itoa(c.pid)
	if len(segs) > 2 && segs[1] == "task" {
		if segs[2] != strconv.Itoa(tid) {
			return unix.EACCES
		}
		host += "/task/" + strconv.Itoa(c.pid)
	}
	of := unix.O_PATH | unix.O_CLOEXEC | flags&(unix.O_NOFOLLOW|unix.O_DIRECTORY)
	fd, err := -1, error(unix.EACCES)
	c.looking(func() error { fd, err = unix.Open(host+"/"+path.Join(rest...), of, 0); return err })
	if err != nil {
		return errnoOf(err)
	}
	c.keep(fd)
	if !c.s.idValid(c.req.ID) {
		return unix.ENOENT // the pid was another process's by then
	}
	real, err := readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return errnoOf(err)
	}
	// A file still open after its last name went is checked by the name it had.
	real = strings.TrimSuffix(real, " (deleted)")
	if strings.HasPrefix(real, "/memfd:") {
		real = "" // no path: an anonymous file
	}
	return c.reopen(fd, real, flags, 0)
}

// procMagic says whether segs (the path below /proc) goes through a magic link, and returns
// the part below /proc/PID (or /proc/PID/task/TID) that does.
func procMagic(segs []string) (bool, []string) {
	if len(segs) < 2 {
		return false, nil
	}
	if _, err := strconv.Atoi(segs[0]); err != nil {
		return false, nil // /proc/cpuinfo, /proc/mounts (a plain link to self/mounts), ...
	}
	rest := segs[1:]
	if len(rest) >= 3 && rest[0] == "task" {
		rest = rest[2:]
	}
	switch {
	case len(rest) >= 1 && magicLinks[rest[0]]:
		return true, rest
	case len(rest) >= 2 && (rest[0] == "fd" || rest[0] == "map_files"):
		return true, rest
	}
	return false, nil
}
