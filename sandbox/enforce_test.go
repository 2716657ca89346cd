package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/sandbox"
)

const secret = "TOPSECRET-4242"

// enforcedRules are the hard blocks of these tests: .env is never read, written or removed,
// nothing under .git/hooks is written or run, and rm does not run.
func enforcedRules(t testing.TB) *boundary.Set {
	t.Helper()
	d, err := boundary.Parse([]byte(`{"version":1,"hardBlocks":[
	  {"id":"no-env","enabled":true,"type":"path","pattern":"**/.env","match":"glob","operations":["read","write","delete"],"reason":"secrets stay put"},
	  {"id":"no-hooks","enabled":true,"type":"path","pattern":"**/.git/hooks/**","match":"glob","operations":["write","delete","execute"]},
	  {"id":"no-rm","enabled":true,"type":"command","pattern":"rm *","match":"glob","operations":["execute"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := boundary.Compile(d, boundary.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// enforcedWorkspace makes a workspace holding a .env, a hook and ordinary files.
func enforcedWorkspace(t testing.TB) string {
	t.Helper()
	ws := t.TempDir()
	files := map[string]string{
		".env":         secret + "\n",
		"sub/.env":     secret + "\n",
		".git/hooks/x": "#!/bin/sh\necho hook ran\n",
		"a.txt":        "foo in a\n",
		"sub/b.txt":    "foo in b\n",
		"f":            "delete me\n",
	}
	for name, data := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func runEnforced(t *testing.T, ws, script string) (sandbox.Result, string) {
	t.Helper()
	var out bytes.Buffer
	res, err := sandbox.Run(context.Background(), sandbox.Spec{
		Workspace: ws, Command: []string{"/bin/bash", "-c", script},
		Env:    []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent"},
		Stdout: &out, Stderr: &out, Boundaries: enforcedRules(t),
	})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return res, out.String()
}

// hasRefusal reports whether res lists a refusal of rule for op on a path ending in suffix.
func hasRefusal(res sandbox.Result, rule string, op string, suffix string) bool {
	for _, r := range res.Refusals {
		if r.Rule == rule && string(r.Op) == op && strings.HasSuffix(r.Path, suffix) && r.PID > 0 && r.Call != "" {
			return true
		}
	}
	return false
}

// Each dodge of static review meets the rule at the system call: the blocked file is never
// read, changed or removed, the program never runs, and the Result says what was refused.
func TestEnforceDodges(t *testing.T) {
	sandboxtest.Need(t)
	tests := []struct {
		name, script string
		rule, op     string
		path         string
		after        func(t *testing.T, ws string)
	}{
		{"plain", "cat .env", "no-env", "read", "/.env", nil},
		{"command substitution", "cat $(echo .e)nv", "no-env", "read", "/.env", nil},
		{"arithmetic context", "x=$(( $(cat .env | wc -c) )); cat .env", "no-env", "read", "/.env", nil},
		{"eval", "eval 'c''at .e''nv'", "no-env", "read", "/.env", nil},
		{"alias", "shopt -s expand_aliases\nalias peek='cat .e''nv'\npeek", "no-env", "read", "/.env", nil},
		{"function", "f() { \"$@\" ; }; f cat sub/.env", "no-env", "read", "/sub/.env", nil},
		{"source", "source .env", "no-env", "read", "/.env", nil},
		{"redirect", "while read l; do echo $l; done < .env", "no-env", "read", "/.env", nil},
		{"symlink", "ln -s .env l && cat l", "no-env", "read", "/.env", nil},
		{"symlink to a directory", "ln -s sub d && cat d/.env", "no-env", "read", "/sub/.env", nil},
		{"absolute path", "cat \"$PWD/.env\"", "no-env", "read", "/.env", nil},
		{"dot dot", "cd sub && cat ../.env", "no-env", "read", "/.env", nil},
		{"copy", "cp .env x; cat x", "no-env", "read", "/.env", func(t *testing.T, ws string) {
			if data, err := os.ReadFile(filepath.Join(ws, "x")); err == nil && strings.Contains(string(data), secret) {
				t.Error("the copy holds the secret")
			}
		}},
		{"python", "python3 -c 'print(open(\".env\").read())'", "no-env", "read", "/.env", nil},
		{"make", "printf 'all:\\n\\tcat .env\\n' > Makefile && make", "no-env", "read", "/.env", nil},
		{"git show", "git hash-object .env", "no-env", "read", "/.env", nil},
		{"overwrite", "echo gone > .env", "no-env", "write", "/.env", func(t *testing.T, ws string) {
			if data, _ := os.ReadFile(filepath.Join(ws, ".env")); !strings.Contains(string(data), secret) {
				t.Error(".env was overwritten")
			}
		}},
		{"rename away", "mv .env y; cat y", "no-env", "delete", "/.env", nil},
		{"rename a directory holding it", "mv sub sub2; cat sub2/.env", "no-env", "delete", "/sub/.env", nil},
		{"unlink", "unlink .env", "no-env", "delete", "/.env", nil},
		{"hard link", "ln .env h; cat h", "no-env", "read", "/.env", nil},
		{"hook write", "echo 'echo pwned' >> .git/hooks/x", "no-hooks", "write", "/.git/hooks/x", nil},
		{"hook run", ".git/hooks/x", "no-hooks", "execute", "/.git/hooks/x", nil},
		{"rm", "rm f", "no-rm", "execute", "/rm", nil},
		{"rm renamed", "cp /bin/rm ./del && ./del f", "no-rm", "execute", "/del", nil},
		{"rm linked", "ln -s /bin/rm ./r && ./r f", "no-rm", "execute", "/rm", nil},
		{"rm through env", "env -i /usr/bin/rm f", "no-rm", "execute", "/rm", nil},
		{"rm exec -a", "exec -a ls rm f", "no-rm", "execute", "/rm", nil},
		{"rm as a script's interpreter", "printf '#!/bin/rm -f\\n' > s && chmod +x s && ./s f", "no-rm", "execute", "/rm", nil},
		{"hook as an interpreter", "printf '#!%s/.git/hooks/x\\n' \"$PWD\" > s && chmod +x s && ./s", "no-hooks", "execute", "/.git/hooks/x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := enforcedWorkspace(t)
			res, out := runEnforced(t, ws, strings.ReplaceAll(tt.script, "\\n", "\n"))
			if strings.Contains(out, secret) {
				t.Errorf("the secret came out:\n%s", out)
			}
			if !hasRefusal(res, tt.rule, tt.op, tt.path) {
				t.Errorf("no refusal of %s %s by %s; refusals %v\noutput:\n%s", tt.op, tt.path, tt.rule, res.Refusals, out)
			}
			if data, err := os.ReadFile(filepath.Join(ws, ".env")); err != nil || string(data) != secret+"\n" {
				t.Errorf(".env changed: %q, %v", data, err)
			}
			if tt.rule == "no-rm" {
				if _, err := os.Stat(filepath.Join(ws, "f")); err != nil {
					t.Errorf("rm ran: %v", err)
				}
			}
			if tt.after != nil {
				tt.after(t, ws)
			}
		})
	}
}

// grep -r over a tree that holds blocked files runs, finds what is in the other files, and is
// refused each blocked file at its open.
func TestEnforceRecursiveRead(t *testing.T) {
	sandboxtest.Need(t)
	ws := enforcedWorkspace(t)
	res, out := runEnforced(t, ws, "grep -r foo .")
	if strings.Contains(out, secret) {
		t.Fatalf("the secret came out:\n%s", out)
	}
	for _, want := range []string{"./a.txt:foo in a", "./sub/b.txt:foo in b"} {
		if !strings.Contains(out, want) {
			t.Errorf("grep did not find %q:\n%s", want, out)
		}
	}
	// grep says 2: it met files it could not read, and found matches in the rest.
	if res.ExitCode != 2 {
		t.Errorf("exit %d, want 2 (matches, and unreadable files)", res.ExitCode)
	}
	for _, p := range []string{"/.env", "/sub/.env"} {
		if !hasRefusal(res, "no-env", "read", p) {
			t.Errorf("no refusal of %s: %v", p, res.Refusals)
		}
	}
	for _, r := range res.Refusals {
		if !strings.HasSuffix(r.Path, "/.env") {
			t.Errorf("refused something else: %v", r)
		}
	}
}

// A link flipped between an allowed file and .env while it is opened, by a goroutine outside
// the sandbox, never yields .env: the supervisor opens what it checked. Several processes
// opening it at once, for reading and for writing, fare the same.
func TestEnforceSymlinkRace(t *testing.T) {
	sandboxtest.Need(t)
	for _, tt := range []struct {
		name   string
		script string
	}{
		// The shell's own redirections: one process opening the link again and again.
		{"one process", `for i in $(seq 5000); do read -r x 2>/dev/null < l && echo "$x"; done | sort | uniq -c`},
		// Four at once, each opening it for reading and for writing.
		{"four processes", `for j in 1 2 3 4; do
			( for i in $(seq 1500); do read -r x 2>/dev/null < l && echo "$x"; echo w 2>/dev/null >> l; done ) &
		done | sort | uniq -c; wait`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := enforcedWorkspace(t)
			n, res, out := flipWhile(t, ws, func() (sandbox.Result, string) { return runEnforced(t, ws, tt.script) })
			if strings.Contains(out, secret) {
				t.Fatalf("the secret came out through a swapped link:\n%s", out)
			}
			if res.ExitCode != 0 || !strings.Contains(out, "foo in a") {
				t.Errorf("exit %d, want the allowed file read:\n%s", res.ExitCode, out)
			}
			if data, err := os.ReadFile(filepath.Join(ws, ".env")); err != nil || string(data) != secret+"\n" {
				t.Errorf(".env changed: %q, %v", data, err)
			}
			t.Logf("%d flips; reads: %s; refusals: %d (+%d)", n, strings.TrimSpace(out), len(res.Refusals), res.RefusalsDropped)
		})
	}
}

// flipWhile makes ws/l a link and flips it between a.txt and .env, from a goroutine outside the
// sandbox, while run runs; it returns how many times it flipped and what run returned.
func flipWhile(t *testing.T, ws string, run func() (sandbox.Result, string)) (int, sandbox.Result, string) {
	t.Helper()
	link := filepath.Join(ws, "l")
	if err := os.Symlink("a.txt", link); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	flipped := make(chan int)
	go func() {
		n := 0
		defer func() { flipped <- n }()
		tmp := filepath.Join(ws, "l.new")
		for {
			for _, target := range []string{".env", "a.txt"} {
				select {
				case <-stop:
					return
				default:
				}
				os.Remove(tmp)
				if os.Symlink(target, tmp) != nil || os.Rename(tmp, link) != nil {
					t.Error("cannot flip the link")
					return
				}
				n++
			}
		}
	}()
	res, out := run()
	close(stop)
	return <-flipped, res, out
}

// Ordinary work is left alone: files are made, written, renamed, linked and removed in the
// workspace and /tmp, with the modes and umask the command asked for.
func TestEnforceOrdinaryWork(t *testing.T) {
	sandboxtest.Need(t)
	ws := enforcedWorkspace(t)
	script := `set -e
umask 027
mkdir -p out/deep && echo one > out/deep/f && cat out/deep/f
mv out/deep/f out/g && ln out/g out/h && ln -s g out/s && cat out/s
stat -c %a out/g out/deep
chmod 600 out/g && stat -c %a out/g
echo tmp > /tmp/t && cat /tmp/t && unlink /tmp/t
exec 3> out/fd && echo via-fd >&3 && exec 3>&- && cat out/fd
cat < /dev/null; echo x > /dev/null; ls /proc/self/fd > /dev/null; cat /proc/self/status > /dev/null
echo piped | cat /dev/stdin
cat <(echo substituted)
unlink out/h && rmdir out/deep && echo done`
	res, out := runEnforced(t, ws, script)
	want := "one\none\n640\n750\n600\ntmp\nvia-fd\npiped\nsubstituted\ndone\n"
	if res.ExitCode != 0 || out != want || len(res.Refusals) > 0 {
		t.Errorf("exit %d, refusals %v, output:\n%s\nwant:\n%s", res.ExitCode, res.Refusals, out, want)
	}
}

// A FIFO's opens wait for each other through the supervisor, and one left waiting when the
// command ends does not keep Run from returning.
func TestEnforceFIFO(t *testing.T) {
	sandboxtest.Need(t)
	ws := enforcedWorkspace(t)
	res, out := runEnforced(t, ws, `mkfifo p && { (echo through > p) & cat p; wait; }`)
	if res.ExitCode != 0 || out != "through\n" {
		t.Errorf("exit %d, output %q", res.ExitCode, out)
	}
	// A reader with no writer: wait until it is in its open (openat, 257 on amd64; any call on
	// another architecture), then end the command under it.
	res, out = runEnforced(t, ws, `mkfifo q; cat q & p=$!; until read -r nr rest < /proc/$p/syscall && [ "$nr" = 257 ] && [ -p q ]; do :; done; exit 3`)
	if res.ExitCode != 3 {
		t.Errorf("exit %d, output %q", res.ExitCode, out)
	}
}

// rulesFrom compiles a document's hard blocks.
func rulesFrom(t testing.TB, rules string) *boundary.Set {
	t.Helper()
	d, err := boundary.Parse([]byte(`{"version":1,"hardBlocks":[` + rules + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := boundary.Compile(d, boundary.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Where the rules cannot refuse a read anywhere, the filter lets read-only opens through
// without stopping them (the kernel takes an open's flags as an int, from a register the
// process cannot change once the filter has read it); everything that writes still stops and
// is refused: flags that write beside O_RDONLY, flags hidden in the high word, a link flipped
// to .env under a writer, O_TMPFILE. Where they refuse only commands, files are left alone
// and rm is still refused.
func TestEnforceNarrowedFilter(t *testing.T) {
	sandboxtest.Need(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	writeOnly := rulesFrom(t, `{"id":"no-env-write","enabled":true,"type":"path","pattern":"**/.env","match":"glob","operations":["write","delete"]}`)
	// Each line prints "<what> ok" or "<what> <errno name>".
	const probe = `import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def raw(what, nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    print(what, "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
def py(what, f):
    try:
        f(); print(what, "ok")
    except OSError as e:
        print(what, errno.errorcode[e.errno])
AT_FDCWD, OPENAT = -100, 257
py("read", lambda: open(".env").read())
py("read-path", lambda: os.open(".env", os.O_PATH))
py("trunc", lambda: os.open(".env", os.O_RDONLY | os.O_TRUNC))
py("creat", lambda: os.open(".env", os.O_RDONLY | os.O_CREAT))
py("write", lambda: os.open(".env", os.O_WRONLY))
py("append", lambda: os.open(".env", os.O_RDWR | os.O_APPEND))
raw("high-trunc", OPENAT, AT_FDCWD, b".env", (0xffffffff << 32) | os.O_TRUNC, 0)
raw("high-wronly", OPENAT, AT_FDCWD, b".env", (0x7fffffff << 32) | os.O_WRONLY, 0)
raw("tmpfile", OPENAT, AT_FDCWD, b"sub", os.O_TMPFILE | os.O_WRONLY, 0o600)
py("unlink", lambda: os.unlink(".env"))
`
	ws := enforcedWorkspace(t)
	os.WriteFile(filepath.Join(ws, "probe.py"), []byte(probe), 0o644)
	var out bytes.Buffer
	res, err := sandbox.Run(context.Background(), sandbox.Spec{
		Workspace: ws, Command: []string{"python3", "probe.py"},
		Env:    []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent"},
		Stdout: &out, Stderr: &out, Boundaries: writeOnly,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "read ok\nread-path ok\ntrunc EACCES\ncreat EACCES\nwrite EACCES\nappend EACCES\n" +
		"high-trunc EACCES\nhigh-wronly EACCES\ntmpfile ok\nunlink EACCES\n"
	if res.ExitCode != 0 || out.String() != want {
		t.Errorf("exit %d, output:\n%s\nwant:\n%s", res.ExitCode, out.String(), want)
	}
	for _, r := range res.Refusals {
		if r.Op == "read" {
			t.Errorf("a read was checked, so stopped: %v", r)
		}
	}
	if !hasRefusal(res, "no-env-write", "write", "/.env") || !hasRefusal(res, "no-env-write", "delete", "/.env") {
		t.Errorf("refusals %v", res.Refusals)
	}
	if data, err := os.ReadFile(filepath.Join(ws, ".env")); err != nil || string(data) != secret+"\n" {
		t.Fatalf(".env changed: %q, %v", data, err)
	}

	// A writer through a link flipped to .env, beside readers of it that are not stopped.
	n, res, _ := flipWhile(t, ws, func() (sandbox.Result, string) {
		var out bytes.Buffer
		res, err := sandbox.Run(context.Background(), sandbox.Spec{
			Workspace: ws, Shell: `for i in $(seq 3000); do echo pwned 2>/dev/null >> l; read -r x < l; done; true`,
			Stdout: &out, Stderr: &out, Boundaries: writeOnly,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, out.String()
	})
	if data, err := os.ReadFile(filepath.Join(ws, ".env")); err != nil || string(data) != secret+"\n" {
		t.Fatalf(".env written through a flipped link (%d flips): %q, %v", n, data, err)
	}
	t.Logf("%d flips; refusals %d (+%d)", n, len(res.Refusals), res.RefusalsDropped)

	// Only a command rule: every file call goes straight on, rm is refused.
	commandOnly := rulesFrom(t, `{"id":"no-rm","enabled":true,"type":"command","pattern":"rm *","match":"glob","operations":["execute"]}`)
	out.Reset()
	res, err = sandbox.Run(context.Background(), sandbox.Spec{
		Workspace: ws, Shell: `cat .env; echo more >> .env; rm f; test -e f && echo kept`,
		Stdout: &out, Stderr: &out, Boundaries: commandOnly,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), secret) || !strings.Contains(out.String(), "kept") || !hasRefusal(res, "no-rm", "execute", "/rm") || slices.ContainsFunc(res.Refusals, func(r sandbox.Refusal) bool { return r.Rule != "no-rm" }) {
		t.Errorf("output %q, refusals %v", out.String(), res.Refusals)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, ".env")); string(data) != secret+"\nmore\n" {
		t.Errorf(".env is %q, want it appended to", data)
	}
}
