package sandbox_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/sandbox"
)

// userNSEnv, set to a directory, makes TestUserNamespaceHelper run its sandboxed commands
// there: it is this test binary, started again as an unprivileged user by
// TestSandboxAsUnprivilegedUser.
const userNSEnv = "WARDEN_TEST_USERNS_DIR"

// TestSandboxAsUnprivilegedUser runs the sandbox as a user that is not root, where Run adds a
// user namespace to the network and PID ones: the confinement must hold the same. CI runs as
// root, so it starts a copy of this test binary as nobody.
func TestSandboxAsUnprivilegedUser(t *testing.T) {
	sandboxtest.Need(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a process as another user (CI runs as root)")
	}
	// A directory nobody can use: the test binary's own lies under a private one.
	dir, err := os.MkdirTemp("", "warden-userns-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, d := range []string{dir, dir + "/ws", dir + "/outside"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sandbox.test")
	copyFile(t, self, bin)

	var out bytes.Buffer
	cmd := exec.Command(bin, "-test.run=^TestUserNamespaceHelper$", "-test.v")
	cmd.Env = []string{userNSEnv + "=" + dir, "PATH=" + os.Getenv("PATH")}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		cmd.Process.Kill()
		t.Fatalf("the unprivileged run did not end:\n%s", out.String())
	}
	switch {
	case strings.Contains(out.String(), "SKIP: user namespaces unavailable"):
		t.Skipf("this kernel refuses unprivileged user namespaces:\n%s", out.String())
	case err != nil || !strings.Contains(out.String(), "--- PASS: TestUserNamespaceHelper"):
		t.Fatalf("as nobody: %v\n%s", err, out.String())
	}
	t.Logf("as nobody:\n%s", out.String())
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestUserNamespaceHelper is the unprivileged side of TestSandboxAsUnprivilegedUser.
func TestUserNamespaceHelper(t *testing.T) {
	dir := os.Getenv(userNSEnv)
	if dir == "" {
		t.Skip("run by TestSandboxAsUnprivilegedUser")
	}
	if os.Geteuid() == 0 {
		t.Fatal("running as root: the test would not try the user namespace")
	}
	run := func(script string) (string, sandbox.Result) {
		t.Helper()
		var out syncBuffer
		res, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: dir + "/ws", Shell: script, Stdout: &out, Stderr: &out})
		if err != nil {
			if strings.Contains(err.Error(), "cannot be applied") {
				t.Skipf("SKIP: user namespaces unavailable: %v", err)
			}
			t.Fatalf("Run(%q): %v", script, err)
		}
		return out.String(), res
	}
	if out, res := run("echo inside > f && cat f"); res.ExitCode != 0 || out != "inside\n" {
		t.Errorf("a write inside the workspace: %d %q", res.ExitCode, out)
	}
	if _, res := run("echo x > " + dir + "/outside/f"); res.ExitCode == 0 {
		t.Error("a write outside the workspace succeeded, though nobody may write there")
	}
	if _, err := os.Stat(dir + "/outside/f"); err == nil {
		t.Error("the file outside the workspace exists")
	}
	if out, res := run("cat /etc/shadow"); res.ExitCode == 0 {
		t.Errorf("read /etc/shadow: %q", out)
	}
	// The network namespace has no way out: a listener on the host's loopback is not reached.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	reached := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			reached <- struct{}{}
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if _, err := exec.LookPath("bash"); err == nil {
		if out, res := run("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + port + "'"); res.ExitCode == 0 {
			t.Errorf("connected to the host's loopback: %q", out)
		}
	}
	select {
	case <-reached:
		t.Error("the host's loopback listener was reached")
	case <-time.After(100 * time.Millisecond):
	}
	if out, _ := run("echo $HTTP_PROXY"); !strings.HasPrefix(out, "http://127.0.0.1:") {
		t.Errorf("HTTP_PROXY = %q", out)
	}
}
