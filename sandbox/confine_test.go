package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/sandbox"
)

// connectScript connects to the unix socket at $1 (an abstract one when it starts with @)
// and prints "connected", or why not.
const connectScript = `use IO::Socket::UNIX; my $p = shift; $p =~ s/^@/\0/;
my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $p) or die "connect: $!\n"; print "connected\n";`

// listenUnix listens on the unix socket at path (abstract when it starts with @) and accepts
// connections until the test ends.
func listenUnix(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listening on %s: %v", path, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// TestHostSockets: no path-based or abstract unix socket of the host is reachable from the
// sandbox. Landlock does not govern connect() on a socket file and a network namespace does
// not isolate them, so a listener in /tmp or /run (a tmux server, a database) would otherwise
// take commands from the sandbox. Each socket is first reached from outside, with the same
// program, so the test tests something.
func TestHostSockets(t *testing.T) {
	sandboxtest.Need(t)
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("needs perl for its unix socket client")
	}
	tag := strconv.Itoa(os.Getpid())
	tmpDir, err := os.MkdirTemp("/tmp", "warden-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmpDir) })
	runDir := "/run/warden-test-" + tag
	if err := os.Mkdir(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runDir) })
	sockets := map[string]string{
		"a listener in /tmp":            filepath.Join(tmpDir, "s"),
		"a listener in /tmp, top":       "/tmp/warden-test-" + tag + ".sock",
		"a listener in /run":            filepath.Join(runDir, "s"),
		"an abstract socket":            "@warden-test-" + tag,
		"a listener in /var/run (/run)": "/var/run/warden-test-" + tag + ".sock",
	}
	for _, p := range sockets {
		listenUnix(t, p)
		if !strings.HasPrefix(p, "@") {
			t.Cleanup(func() { os.Remove(p) })
		}
	}
	const pg = "/run/postgresql/.s.PGSQL.5432"
	if fi, err := os.Stat(pg); err == nil && fi.Mode()&os.ModeSocket != 0 {
		sockets["the PostgreSQL server's socket"] = pg
	} else {
		t.Logf("no PostgreSQL socket at %s here; CI has one", pg)
	}
	for name, p := range sockets {
		t.Run(name, func(t *testing.T) {
			if out, err := exec.Command("perl", "-e", connectScript, p).CombinedOutput(); err != nil || string(out) != "connected\n" {
				t.Fatalf("outside the sandbox %s is not reachable: %v %s", p, err, out)
			}
			out, res := sh(t, sandbox.Spec{}, "perl -e '"+connectScript+"' "+p)
			if res.ExitCode == 0 || strings.Contains(out, "connected") {
				t.Errorf("connected to %s from the sandbox: status %d, %q", p, res.ExitCode, out)
			}
		})
	}
	if _, ok := sockets["the PostgreSQL server's socket"]; ok {
		if _, err := exec.LookPath("psql"); err == nil {
			out, res := sh(t, sandbox.Spec{}, "psql -h /run/postgresql -U postgres -c 'select 1' test")
			if res.ExitCode == 0 {
				t.Errorf("psql reached the database from the sandbox: %q", out)
			}
		}
	}
}

// TestOwnFileSystem: the sandbox sees a file system of its own: a private /tmp, /run and
// /dev/shm, a /dev with only the usual devices, no host mount.
func TestOwnFileSystem(t *testing.T) {
	sandboxtest.Need(t)
	marker := "warden-own-fs-" + strconv.Itoa(os.Getpid())
	script := strings.Join([]string{
		"set -e",
		"echo t > /tmp/" + marker, "echo r > /run/" + marker, "echo s > /dev/shm/" + marker,
		"cat /tmp/" + marker + " /run/" + marker + " /dev/shm/" + marker,
		`test "$TMPDIR" = /tmp`,
		"ls /dev | tr '\\n' ' '", "echo",
		"cat /proc/self/mounts | cut -d' ' -f2 | sort | tr '\\n' ' '", "echo",
		"ls /",
		"echo x > /dev/null", "head -c 4 /dev/urandom | wc -c",
		"ls /etc/passwd >/dev/null",
	}, "\n")
	out, res := sh(t, sandbox.Spec{}, script)
	if res.ExitCode != 0 {
		t.Fatalf("status %d: %s", res.ExitCode, out)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(out, "t\nr\ns\n") {
		t.Errorf("writing the private directories: %q", out)
	}
	for _, p := range []string{"/tmp/", "/run/", "/dev/shm/"} {
		if _, err := os.Stat(p + marker); err == nil {
			os.Remove(p + marker)
			t.Errorf("%s%s was written on the host", p, marker)
		}
	}
	devs := strings.Fields(lines[3])
	for _, d := range devs {
		switch d {
		case "null", "zero", "full", "random", "urandom", "pts", "ptmx", "shm", "fd", "stdin", "stdout", "stderr":
		default:
			t.Errorf("/dev holds %s", d)
		}
	}
	for _, m := range strings.Fields(lines[4]) {
		switch {
		case m == "/" || m == "/tmp" || m == "/run" || m == "/proc" || m == "/usr" || m == "/etc" || strings.HasPrefix(m, "/dev"):
		case strings.HasPrefix(m, "/etc/") || strings.HasPrefix(m, "/tmp/"): // hidden paths, the workspace
		case strings.HasPrefix(m, "/root/") || strings.HasPrefix(m, "/home/") || strings.HasPrefix(m, "/opt/"): // PATH's installations
		default:
			t.Errorf("the sandbox's mounts include %s (all: %s)", m, lines[4])
		}
	}
	root := strings.Fields(strings.Join(lines[5:len(lines)-2], " "))
	for _, e := range root {
		switch e {
		case "bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "tmp", "run", "dev", "proc", "var", "root", "home", "opt":
		default:
			t.Errorf("/ holds %s", e)
		}
	}

	// Two runs at once each see their own /tmp.
	ws := t.TempDir()
	start := make(chan struct{})
	errs := make(chan string, 2)
	for i := range 2 {
		go func() {
			<-start
			var out syncBuffer
			_, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: ws, Stdout: &out, Stderr: &out,
				Shell: fmt.Sprintf("echo %d > /tmp/mine; ls /tmp | tr '\\n' ' '; cat /tmp/mine", i)})
			if err != nil {
				errs <- err.Error()
				return
			}
			errs <- out.String()
		}()
	}
	close(start)
	for range 2 {
		got := <-errs
		if !strings.HasSuffix(got, "0\n") && !strings.HasSuffix(got, "1\n") || strings.Count(got, "mine") != 1 {
			t.Errorf("a run's /tmp: %q", got)
		}
	}
}

// TestNoTerminal: a command run from a person's terminal cannot type into it. The caller here
// is a process whose controlling terminal is a pty, as a shell's is; the command gets the pty
// as its standard input and pushes a line into it with TIOCSTI. Before the sandbox had a
// session of its own, the line landed in the terminal's input queue, where the caller's
// shell would have read it as its next command.
func TestNoTerminal(t *testing.T) {
	sandboxtest.Need(t)
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("needs perl for ioctl")
	}
	master, slave := openPTY(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The caller: this test binary in helper mode, session leader of the pty.
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=tiocsti", "WARDEN_TEST_WS="+t.TempDir())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	out, err := runOnPTY(t, cmd, master)
	if err != nil {
		t.Fatalf("the caller: %v: %s", err, out)
	}
	if !strings.Contains(out, "sid differs") || !strings.Contains(out, "no tty") {
		t.Errorf("the command shares the caller's session or terminal: %q", out)
	}
	if !strings.Contains(out, "ioctl: Operation not permitted") {
		t.Errorf("TIOCSTI was not refused: %q", out)
	}
	n, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d bytes were pushed into the caller's terminal", n)
	}
}

// helperEnv turns the test binary into a helper process (see TestMain).
const helperEnv = "WARDEN_SANDBOX_TEST_HELPER"

// tiocstiHelper runs, as a terminal's session leader, a sandboxed command that compares its
// session with the caller's, looks for a controlling terminal and tries TIOCSTI on its
// standard input (the terminal).
func tiocstiHelper() int {
	// The sandbox has a PID namespace of its own, and /proc/self/stat gives session ids as
	// that namespace sees them: a command in the caller's session sees 0 there (the leader is
	// outside it), one in a session of its own a session id inside it.
	script := `sid=$(cut -d' ' -f6 /proc/self/stat); tty=$(cut -d' ' -f7 /proc/self/stat)
[ "$sid" != 0 ] && echo "sid differs"; [ "$tty" = 0 ] && echo "no tty"
perl -e 'for my $c (split //, "id\n") { ioctl(STDIN, 0x5412, $c) or die "ioctl: $!\n" } print "pushed\n"'`
	res, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: os.Getenv("WARDEN_TEST_WS"), Shell: script,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stdout})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("done", res.ExitCode)
	return 0
}

// TestInheritedDescriptors: descriptors the caller holds without close-on-exec (a file the
// sandbox may not open, a directory outside) do not pass into the command.
func TestInheritedDescriptors(t *testing.T) {
	sandboxtest.Need(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for descriptors above 9")
	}
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("inherited secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened without O_CLOEXEC, as a parent process's descriptors arrive, and moved high.
	rfd, err := unix.Open(secret, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rfd)
	wfd, err := unix.Open(filepath.Join(outside, "target"), unix.O_WRONLY|unix.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(wfd)
	const high = 251
	if err := unix.Dup3(rfd, high, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(high)
	script := fmt.Sprintf(`ls /proc/self/fd | tr '\n' ' '; echo; exec bash -c 'cat <&%d; cat <&%d; echo escaped >&%d'`, high, rfd, wfd)
	for _, unconfined := range []bool{false, true} {
		out, _ := sh(t, sandbox.Spec{Unconfined: unconfined}, script)
		if strings.Contains(out, "inherited secret") {
			t.Errorf("unconfined %v: the command read an inherited descriptor: %q", unconfined, out)
		}
		fds := strings.Fields(strings.SplitN(out, "\n", 2)[0])
		for _, fd := range fds {
			if n, err := strconv.Atoi(fd); err == nil && n > 3 {
				t.Errorf("unconfined %v: the command holds descriptor %d (all: %v)", unconfined, n, fds)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "target")); len(b) > 0 {
			t.Errorf("unconfined %v: the command wrote through an inherited descriptor: %q", unconfined, b)
		}
	}
}

// TestPathDirs: a program installed outside the system paths (a toolchain under an
// installation directory, as pyenv or a language's own installer leave them) runs in the
// sandbox when its directory is on PATH, with the rest of its installation readable; a
// credential kept in that installation is not.
func TestPathDirs(t *testing.T) {
	sandboxtest.Need(t)
	inst := filepath.Join(t.TempDir(), "tool")
	for _, d := range []string{"bin", "libexec"} {
		if err := os.MkdirAll(filepath.Join(inst, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(inst, "libexec", "real"), []byte("#!/bin/sh\necho the real tool\n"), 0o755)
	os.WriteFile(filepath.Join(inst, "bin", "tool"), []byte("#!/bin/sh\nexec "+filepath.Join(inst, "libexec", "real")+"\n"), 0o755)
	os.WriteFile(filepath.Join(inst, "credentials"), []byte("tool secret"), 0o644)
	env := []string{"PATH=" + filepath.Join(inst, "bin") + ":/usr/bin:/bin"}

	out, res := sh(t, sandbox.Spec{Env: env, Hidden: []string{filepath.Join(inst, "credentials")}}, "tool; cat "+filepath.Join(inst, "credentials"))
	if res.ExitCode == 0 || !strings.HasPrefix(out, "the real tool\n") || strings.Contains(out, "tool secret") {
		t.Errorf("status %d, output %q; want the tool to run and its credentials hidden", res.ExitCode, out)
	}
	// OnlyListedPaths leaves PATH's directories out: the program is not there.
	_, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: t.TempDir(), Env: env, OnlyListedPaths: true, Command: []string{"tool"}})
	var ee *sandbox.ExecError
	if !errors.As(err, &ee) || ee.Code != 127 || !strings.Contains(err.Error(), "tool") {
		t.Errorf("OnlyListedPaths: %v, want a 127 naming the tool", err)
	}

	// pyenv's shims are scripts that run pyenv from its installation under the home directory.
	if py, err := exec.LookPath("python3"); err == nil && strings.Contains(py, "/.pyenv/shims/") {
		out, res := sh(t, sandbox.Spec{Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}}, "python3 -c 'print(6*7)'")
		if res.ExitCode != 0 || out != "42\n" {
			t.Errorf("python3 through pyenv's shim: status %d, %q", res.ExitCode, out)
		}
	}
}

// TestExecErrors: a program that is not there fails with 127, one that cannot be run with
// 126, each naming it, as a shell would; neither is ErrUnavailable.
func TestExecErrors(t *testing.T) {
	sandboxtest.Need(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "notexec"), []byte("#!/bin/sh\n"), 0o644)
	outside := filepath.Join(t.TempDir(), "prog")
	os.WriteFile(outside, []byte("#!/bin/sh\necho ran\n"), 0o755)
	tests := []struct {
		name string
		argv []string
		code int
		says string
	}{
		{"not on PATH", []string{"no-such-program-here"}, 127, "no-such-program-here"},
		{"outside", []string{outside}, 127, outside},
		{"not executable", []string{filepath.Join(ws, "notexec")}, 126, "notexec"},
		{"hidden", []string{"/etc/shadow"}, 126, "/etc/shadow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: ws, Command: tt.argv})
			var ee *sandbox.ExecError
			if !errors.As(err, &ee) || ee.Code != tt.code || !strings.Contains(err.Error(), tt.says) || errors.Is(err, sandbox.ErrUnavailable) {
				t.Errorf("%v: want an ExecError %d naming %s", err, tt.code, tt.says)
			}
			_, err = sandbox.Run(context.Background(), sandbox.Spec{Workspace: ws, Command: tt.argv, Unconfined: true})
			if tt.name == "outside" || tt.name == "hidden" {
				return // unconfined, these are there
			}
			if !errors.As(err, &ee) || ee.Code != tt.code {
				t.Errorf("unconfined: %v: want an ExecError %d", err, tt.code)
			}
		})
	}
}

// openPTY opens a pseudo-terminal pair, the terminal side in raw mode (so that anything
// pushed into its input counts at once).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// runOnPTY runs cmd, whose output goes to the terminal side of master, and returns that
// output: everything up to the helper's last line ("done ..."), or up to its exit if it
// failed.
func runOnPTY(t *testing.T, cmd *exec.Cmd, master *os.File) (string, error) {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		var b strings.Builder
		buf := make([]byte, 4096)
		for !strings.Contains(b.String(), "done ") || !strings.HasSuffix(b.String(), "\n") {
			n, err := master.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- b.String()
	}()
	if err := cmd.Run(); err != nil {
		master.Close() // nothing more will come: stop the reader
		return <-got, err
	}
	return <-got, nil
}
