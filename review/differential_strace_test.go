package review_test

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wardenhq/warden/action"
)

// This file reads what `strace -f -y` says a process tree did to the file system, for the
// differential test (differential_test.go).

// straceSyscalls are the system calls the differential test traces: those that open, create,
// truncate, remove, rename, link, change the metadata of or execute a path, getdents (a
// directory is read when it is listed, not when it is opened: mkdir -p and gzip open
// directories only to work relative to them), and those needed to follow each process's
// working directory (chdir, fchdir, and the calls that create a process, which inherits its
// parent's).
var straceSyscalls = []string{
	"open", "openat", "openat2", "creat", "truncate",
	"unlink", "unlinkat", "rmdir",
	"rename", "renameat", "renameat2",
	"link", "linkat", "symlink", "symlinkat",
	"mkdir", "mkdirat", "mknod", "mknodat",
	"chmod", "fchmodat", "chown", "lchown", "fchownat", "utimensat",
	"execve", "execveat",
	"getdents", "getdents64",
	"chdir", "fchdir",
	"clone", "clone3", "fork", "vfork",
}

// tracedEffect is one effect a traced process had on a path.
type tracedEffect struct {
	Op   action.Op
	Path string
	// Dir is set on a read that listed a directory (getdents), not a file's contents.
	Dir bool
	// Onto is set on the delete of a rename's source: the path it was renamed onto.
	Onto string
	// Parent is set on an execute: the program the process ran before (its path), if any.
	Parent string
	// PID is the process that did it, Prog the base name of the program it was running (the
	// last it executed, or its parent's), and Call the syscall as strace printed it.
	PID  int
	Prog string
	Call string
}

// straceCall is one completed system call from strace's output.
type straceCall struct {
	pid  int
	name string
	args []string
	// ret is the result as printed ("0", "3</path>", "-1 ENOENT (No such file or directory)").
	ret  string
	text string
}

// failed reports whether the call returned an error: a call that failed opened, created or
// removed nothing. A call refused for permission (EACCES, EPERM) is not failed here: the
// command tried, and only the test running it as nobody stopped it.
func (c straceCall) failed() bool {
	if !strings.HasPrefix(c.ret, "-1 ") {
		return false
	}
	errno, _, _ := strings.Cut(strings.TrimPrefix(c.ret, "-1 "), " ")
	return errno != "EACCES" && errno != "EPERM"
}

// parseStrace reads `strace -f -y` output (lines prefixed by the pid) and returns the effects
// of every successful call, with relative paths resolved against the working directory of the
// process that made the call. root is the pid-less starting directory: the first process's
// working directory.
func parseStrace(r io.Reader, root string) ([]tracedEffect, error) {
	calls, err := straceCalls(r)
	if err != nil {
		return nil, err
	}
	cwd := map[int]string{}
	dirOf := func(pid int) string {
		if d, ok := cwd[pid]; ok {
			return d
		}
		return root
	}
	prog, progPath := map[int]string{}, map[int]string{}
	// A child may act before strace prints its parent's clone returning (a vfork'd child's
	// execve comes first): who its parent is is known from the whole trace, and it starts
	// from its parent's state when it is first seen, whichever comes first.
	parentOf, seen := map[int]int{}, map[int]bool{}
	for _, c := range calls {
		switch c.name {
		case "clone", "clone3", "fork", "vfork":
			if child, err := strconv.Atoi(c.ret); err == nil {
				parentOf[child] = c.pid
			}
		}
	}
	inherit := func(child, parent int) {
		if seen[child] {
			return
		}
		seen[child] = true
		cwd[child] = dirOf(parent)
		prog[child], progPath[child] = prog[parent], progPath[parent]
	}
	var out []tracedEffect
	add := func(c straceCall, op action.Op, p string, dir bool) {
		out = append(out, tracedEffect{Op: op, Path: p, Dir: dir, PID: c.pid, Prog: prog[c.pid], Call: c.text})
	}
	for _, c := range calls {
		if parent, ok := parentOf[c.pid]; ok {
			inherit(c.pid, parent)
		}
		seen[c.pid] = true
		// A dirfd of AT_FDCWD</dir> says where the process is: keep in step with it.
		for _, a := range c.args {
			if strings.HasPrefix(a, "AT_FDCWD<") {
				cwd[c.pid] = annotation(a)
				break
			}
		}
		if c.failed() {
			continue
		}
		// at resolves a path argument against a dirfd argument ("" for the working directory).
		at := func(dirfd, p string) string {
			p = unquote(p)
			if !filepath.IsAbs(p) {
				base := dirOf(c.pid)
				if dirfd != "" && !strings.HasPrefix(dirfd, "AT_FDCWD") {
					base = annotation(dirfd)
				}
				p = filepath.Join(base, p)
			}
			return realParent(filepath.Clean(p))
		}
		arg := func(i int) string {
			if i < len(c.args) {
				return c.args[i]
			}
			return ""
		}
		switch c.name {
		case "clone", "clone3", "fork", "vfork":
			if child, err := strconv.Atoi(c.ret); err == nil {
				inherit(child, c.pid)
			}
		case "chdir":
			cwd[c.pid] = at("", arg(0))
		case "fchdir":
			if d := annotation(arg(0)); d != "" {
				cwd[c.pid] = d
			}
		case "open", "openat", "openat2", "creat":
			var p, flags string
			switch c.name {
			case "open":
				p, flags = at("", arg(0)), arg(1)
			case "creat":
				p, flags = at("", arg(0)), "O_WRONLY|O_CREAT|O_TRUNC"
			default:
				p, flags = at(arg(0), arg(1)), arg(2)
			}
			// The descriptor's annotation is the real path the kernel opened; a pipe or a
			// socket (/dev/fd/63 of a process substitution) is no file.
			if real := annotation(c.ret); strings.HasPrefix(real, "/") {
				p = real
			} else if real != "" {
				continue
			}
			op, ok := openOp(flags)
			if op == action.OpRead && (strings.Contains(flags, "O_DIRECTORY") || isDir(p)) {
				continue // read when listed (getdents)
			}
			if ok {
				add(c, op, p, false)
			}
		case "getdents", "getdents64":
			if d := annotation(arg(0)); strings.HasPrefix(d, "/") {
				add(c, action.OpRead, d, true)
			}
		case "truncate", "mkdir", "mknod", "chmod", "chown", "lchown":
			add(c, action.OpWrite, at("", arg(0)), false)
		case "mkdirat", "mknodat", "fchmodat", "fchownat":
			add(c, action.OpWrite, at(arg(0), arg(1)), false)
		case "utimensat":
			if arg(1) != "NULL" { // NULL: the descriptor's own file, opened before
				add(c, action.OpWrite, at(arg(0), arg(1)), false)
			}
		case "unlink", "rmdir":
			add(c, action.OpDelete, at("", arg(0)), false)
		case "unlinkat":
			add(c, action.OpDelete, at(arg(0), arg(1)), false)
		case "rename", "renameat", "renameat2":
			from, to := at("", arg(0)), at("", arg(1))
			if c.name != "rename" {
				from, to = at(arg(0), arg(1)), at(arg(2), arg(3))
			}
			add(c, action.OpDelete, from, false)
			out[len(out)-1].Onto = to
			add(c, action.OpWrite, to, false)
		case "link":
			add(c, action.OpRead, at("", arg(0)), false)
			add(c, action.OpWrite, at("", arg(1)), false)
		case "linkat":
			add(c, action.OpRead, at(arg(0), arg(1)), false)
			add(c, action.OpWrite, at(arg(2), arg(3)), false)
		case "symlink":
			add(c, action.OpWrite, at("", arg(1)), false)
		case "symlinkat":
			add(c, action.OpWrite, at(arg(1), arg(2)), false)
		case "execve", "execveat":
			p := at("", arg(0))
			if c.name == "execveat" {
				p = at(arg(0), arg(1))
			}
			parent := progPath[c.pid]
			prog[c.pid], progPath[c.pid] = filepath.Base(p), p
			add(c, action.OpExecute, p, false)
			out[len(out)-1].Parent = parent
		}
	}
	return out, nil
}

// isDir reports whether p is a directory now, after the run.
func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// realParent makes the directory of p real where it still exists, so that a call through a
// symbolic link (unlink("link/x")) names the file it reached. The last component is left as it
// is: unlink, rename and mkdir act on the name itself. strace prints the path as given, and
// parseStrace runs after the command, so a link gone by then is not followed.
func realParent(p string) string {
	dir, base := filepath.Split(p)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(real, base)
	}
	return p
}

// openOp is what an open with these flags does: a write if it may change or create the file,
// else a read. An O_PATH descriptor reads nothing. openat2's flags are a field of its struct
// open_how ({flags=O_RDONLY, ...}).
func openOp(flags string) (action.Op, bool) {
	if rest, ok := strings.CutPrefix(flags, "{flags="); ok {
		flags, _, _ = strings.Cut(rest, ",")
	}
	write := false
	for _, f := range strings.Split(flags, "|") {
		switch strings.TrimSpace(f) {
		case "O_PATH":
			return "", false
		case "O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND":
			write = true
		}
	}
	if write {
		return action.OpWrite, true
	}
	return action.OpRead, true
}

// annotation returns what strace -y printed between < and > after a descriptor
// ("3</a/b>" is "/a/b"), or "".
func annotation(s string) string {
	i := strings.IndexByte(s, '<')
	if i < 0 || !strings.HasSuffix(s, ">") {
		return ""
	}
	return s[i+1 : len(s)-1]
}

// unquote reads a C string as strace prints it; anything else is returned as it is.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	return s
}

// straceCalls joins the halves of interrupted calls (`<unfinished ...>`, then
// `<... name resumed>`) and splits each completed call into its name, arguments and result.
// Signals and exits are skipped.
func straceCalls(r io.Reader) ([]straceCall, error) {
	var calls []straceCall
	pending := map[int]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		sp := strings.IndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		pid, err := strconv.Atoi(line[:sp])
		if err != nil {
			continue
		}
		rest := strings.TrimLeft(line[sp+1:], " ")
		switch {
		case strings.HasPrefix(rest, "---"), strings.HasPrefix(rest, "+++"):
			continue
		case strings.HasSuffix(rest, "<unfinished ...>"):
			pending[pid] = strings.TrimSuffix(rest, "<unfinished ...>")
			continue
		case strings.HasPrefix(rest, "<... "):
			end := strings.Index(rest, " resumed>")
			if end < 0 {
				continue
			}
			rest = pending[pid] + rest[end+len(" resumed>"):]
			delete(pending, pid)
		}
		if c, ok := splitCall(pid, rest); ok {
			calls = append(calls, c)
		}
	}
	return calls, sc.Err()
}

// splitCall splits `name(arg, arg, ...) = result` at the top level: commas inside strings,
// brackets, braces and <annotations> do not separate arguments.
func splitCall(pid int, s string) (straceCall, bool) {
	open := strings.IndexByte(s, '(')
	if open <= 0 {
		return straceCall{}, false
	}
	c := straceCall{pid: pid, name: s[:open], text: s}
	depth, start := 0, open+1
	inString := false
	for i := open + 1; i < len(s); i++ {
		ch := s[i]
		if inString {
			switch ch {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch ch {
		case '"':
			inString = true
		case '(', '[', '{', '<':
			depth++
		case ']', '}', '>':
			depth--
		case ',':
			if depth == 0 {
				c.args = append(c.args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		case ')':
			if depth > 0 {
				depth--
				continue
			}
			if a := strings.TrimSpace(s[start:i]); a != "" {
				c.args = append(c.args, a)
			}
			eq := strings.Index(s[i:], "= ")
			if eq < 0 {
				return straceCall{}, false
			}
			c.ret = strings.TrimSpace(s[i+eq+2:])
			return c, true
		}
	}
	return straceCall{}, false
}

// TestDifferentialParse checks the reading of strace's output on a transcript: interrupted
// calls, working directories followed through chdir, fchdir and fork, descriptors' real paths,
// failed calls and pipes.
func TestDifferentialParse(t *testing.T) {
	const transcript = `10 execve("/usr/bin/bash", ["bash", "-c", "x"], 0x7ffd /* 4 vars */) = 0
10 openat(AT_FDCWD</ws>, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3</etc/ld.so.cache>
10 openat(AT_FDCWD</ws>, "missing", O_RDONLY) = -1 ENOENT (No such file or directory)
10 openat(AT_FDCWD</ws>, "/etc/hosts", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 EACCES (Permission denied)
10 chdir("sub") = 0
10 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD, child_tidptr=0x7f) = 11
11 openat(AT_FDCWD, "out, with a comma.txt", O_WRONLY|O_CREAT|O_TRUNC, 0666 <unfinished ...>
10 mkdir("d", 0777 <unfinished ...>
11 <... openat resumed>) = 3</ws/sub/out, with a comma.txt>
10 <... mkdir resumed>) = 0
11 execve("/usr/bin/cat", ["cat", "a\"b"], 0x55 /* 4 vars */) = 0
11 openat(AT_FDCWD</ws/sub>, "link", O_RDONLY) = 3</ws/target>
11 openat(AT_FDCWD</ws/sub>, "/dev/fd/63", O_RDONLY) = 4<pipe:[123]>
11 openat(AT_FDCWD</ws/sub>, ".", O_PATH) = 5</ws/sub>
11 openat(AT_FDCWD</ws/sub>, "dir", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 5</ws/sub/dir>
11 getdents64(5</ws/sub/dir>, 0x5581 /* 3 entries */, 32768) = 80
11 openat2(AT_FDCWD</ws/sub>, "new", {flags=O_RDWR|O_CREAT|O_EXCL, mode=0600, resolve=0}, 24) = 6</ws/sub/new>
10 openat(AT_FDCWD</ws/sub>, "d", O_RDONLY|O_DIRECTORY) = 3</ws/sub/d>
10 fchdir(3</ws/sub/d>) = 0
10 unlinkat(AT_FDCWD</ws/sub/d>, "gone", 0) = 0
10 unlinkat(3</ws/sub/d>, "e", AT_REMOVEDIR) = 0
10 renameat2(AT_FDCWD</ws/sub/d>, "a", 4</ws>, "b", RENAME_NOREPLACE) = 0
10 rename("x", "/abs/y") = 0
10 linkat(AT_FDCWD</ws/sub/d>, "old", AT_FDCWD</ws/sub/d>, "new", 0) = 0
10 symlink("/etc/passwd", "pw") = 0
10 utimensat(0</ws/sub/out>, NULL, NULL, 0) = 0
11 vfork( <unfinished ...>
12 execve("/usr/bin/gzip", ["gzip"], 0x56 /* 4 vars */) = 0
11 <... vfork resumed>) = 12
10 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=11} ---
10 +++ exited with 0 +++
`
	got, err := parseStrace(strings.NewReader(transcript), "/ws")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, o := range got {
		s := strconv.Itoa(o.PID) + " " + o.Prog + " " + string(o.Op) + " " + o.Path
		if o.Dir {
			s += " (dir)"
		}
		if o.Onto != "" {
			s += " onto " + o.Onto
		}
		if o.Parent != "" {
			s += " from " + o.Parent
		}
		lines = append(lines, s)
	}
	want := []string{
		"10 bash execute /usr/bin/bash", // an execute is the new program's
		"10 bash read /etc/ld.so.cache",
		"10 bash write /etc/hosts", // refused only because the test runs it as nobody
		"11 bash write /ws/sub/out, with a comma.txt",
		"10 bash write /ws/sub/d",
		"11 cat execute /usr/bin/cat from /usr/bin/bash",
		"11 cat read /ws/target",
		"11 cat read /ws/sub/dir (dir)", // listed, not opened
		"11 cat write /ws/sub/new",
		"10 bash delete /ws/sub/d/gone",
		"10 bash delete /ws/sub/d/e",
		"10 bash delete /ws/sub/d/a onto /ws/b",
		"10 bash write /ws/b",
		"10 bash delete /ws/sub/d/x onto /abs/y",
		"10 bash write /abs/y",
		"10 bash read /ws/sub/d/old",
		"10 bash write /ws/sub/d/new",
		"10 bash write /ws/sub/d/pw",
		"12 gzip execute /usr/bin/gzip from /usr/bin/cat", // vfork'd, and seen before the vfork returns
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestDifferentialRealParent checks that a call through a symbolic link names what it reached,
// while a call on the link itself names the link.
func TestDifferentialRealParent(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir+"/real", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", dir+"/link"); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		dir + "/link/x":    dir + "/real/x",
		dir + "/link":      dir + "/link",
		dir + "/gone/x":    dir + "/gone/x",
		dir + "/real/../x": dir + "/x",
	} {
		if got := realParent(filepath.Clean(p)); got != want {
			t.Errorf("realParent(%s) = %s; want %s", p, got, want)
		}
	}
}
