package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/internal/testnet"
	"github.com/wardenhq/warden/sandbox"
)

func TestMain(m *testing.M) {
	testnet.ServeIfHost(testnet.ServeHello)
	if os.Getenv(helperEnv) == "tiocsti" {
		os.Exit(tiocstiHelper())
	}
	os.Exit(m.Run())
}

// sh runs a shell command in the sandbox and returns its combined output and exit status.
func sh(t *testing.T, spec sandbox.Spec, script string) (string, sandbox.Result) {
	t.Helper()
	var out syncBuffer
	spec.Shell, spec.Stdout, spec.Stderr = script, &out, &out
	if spec.Workspace == "" {
		spec.Workspace = t.TempDir()
	}
	res, err := sandbox.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run(%q): %v", script, err)
	}
	return out.String(), res
}

// refused reports whether a shell's output says the file system refused it: a path that is
// unreadable, read-only, or not there.
func refused(out string) bool {
	for _, s := range []string{"ermission denied", "Read-only file system", "No such file or directory", "Directory nonexistent"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestFiles(t *testing.T) {
	sandboxtest.Need(t)
	ws := t.TempDir()
	outside := t.TempDir()
	ro := t.TempDir()
	os.WriteFile(filepath.Join(ro, "public"), []byte("public text"), 0o644)
	os.Mkdir(filepath.Join(ro, "secret"), 0o755)
	os.WriteFile(filepath.Join(ro, "secret", "key"), []byte("secret text"), 0o644)
	spec := sandbox.Spec{Workspace: ws, ReadOnly: []string{ro}, Hidden: []string{filepath.Join(ro, "secret")}}

	out, res := sh(t, spec, "mkdir sub && echo inside > sub/f && mv sub/f g && cat g && ls /usr/bin/env >/dev/null && echo ok")
	if res.ExitCode != 0 || out != "inside\nok\n" {
		t.Fatalf("writing in the workspace: status %d, output %q", res.ExitCode, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "g")); string(b) != "inside\n" {
		t.Errorf("the workspace file holds %q", b)
	}
	out, res = sh(t, spec, "cat "+filepath.Join(ro, "public"))
	if res.ExitCode != 0 || out != "public text" {
		t.Errorf("reading a read-only path: status %d, output %q", res.ExitCode, out)
	}

	// Outside the workspace a path is not there (or read-only, or unreadable): whichever the
	// shell says, the command is refused.
	denied := map[string]string{
		"write outside":          "echo x > " + filepath.Join(outside, "f"),
		"write /etc":             "echo x > /etc/warden-sandbox-test",
		"write a read-only path": "echo x >> " + filepath.Join(ro, "public"),
		"read outside":           "ls " + outside,
		"read a hidden path":     "cat " + filepath.Join(ro, "secret", "key"),
		"list a hidden path":     "ls " + filepath.Join(ro, "secret"),
		"read /etc/shadow":       "cat /etc/shadow",
		"read /root":             "ls /root",
		"read /proc":             "cat /proc/1/environ",
	}
	os.WriteFile(filepath.Join(outside, "existing"), nil, 0o644)
	for name, script := range denied {
		t.Run(name, func(t *testing.T) {
			out, res := sh(t, spec, script)
			if res.ExitCode == 0 || !refused(out) {
				t.Errorf("%s: status %d, output %q; want a refusal", script, res.ExitCode, out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Error("a file was written outside the workspace")
	}
	// /tmp is the sandbox's own: writing it leaves the host's alone.
	host := "/tmp/warden-sandbox-test-" + filepath.Base(ws)
	if out, res := sh(t, spec, "echo x > "+host+" && cat "+host); res.ExitCode != 0 || out != "x\n" {
		t.Errorf("writing the sandbox's /tmp: status %d, %q", res.ExitCode, out)
	}
	if _, err := os.Stat(host); err == nil {
		os.Remove(host)
		t.Error("the command wrote the host's /tmp")
	}
}

func TestNetworkDirect(t *testing.T) {
	sandboxtest.Need(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for /dev/tcp and /dev/udp")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	tcp := fmt.Sprintf(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo connected'`, port)
	// The same command outside the sandbox reaches the listener: the test tests something.
	if out, err := exec.Command("sh", "-c", tcp).CombinedOutput(); err != nil {
		t.Fatalf("outside the sandbox the listener is not reachable: %v %s", err, out)
	}
	cases := map[string]string{
		"tcp to a loopback listener outside": tcp,
		"tcp to a public address":            `bash -c 'exec 3<>/dev/tcp/192.0.2.1/80'`,
		"udp packet":                         `bash -c 'echo x > /dev/udp/192.0.2.1/53'`,
		"dns lookup":                         `getent hosts example.com`,
	}
	for name, script := range cases {
		t.Run(name, func(t *testing.T) {
			out, res := sh(t, sandbox.Spec{}, script)
			if res.ExitCode == 0 {
				t.Errorf("%s succeeded in the sandbox: %q", script, out)
			}
		})
	}
}

func TestProxy(t *testing.T) {
	sandboxtest.Need(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	host := newTestHost(t)
	list, err := egress.NewAllowlist([]string{host.String()})
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := egress.NewProxy(egress.New(egress.Options{Allowlist: list}), egress.ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln := sandbox.NewListener()
	go proxy.Serve(ctx, ln)
	spec := sandbox.Spec{Proxy: ln.Handle}

	out, res := sh(t, spec, "curl -sS -f http://"+host.String()+"/")
	if res.ExitCode != 0 || out != "hello from the test host\n" {
		t.Errorf("allowed host through the proxy: status %d, output %q", res.ExitCode, out)
	}
	out, res = sh(t, spec, "curl -sS -i http://203.0.113.250/")
	if res.ExitCode != 0 || !strings.Contains(out, "403") || !strings.Contains(out, "not_allowed") {
		t.Errorf("denied host through the proxy: status %d, output %q; want the proxy's 403", res.ExitCode, out)
	}
	out, res = sh(t, spec, "curl -sS -f --noproxy '*' http://"+host.String()+"/")
	if res.ExitCode == 0 {
		t.Errorf("the allowed host was reachable without the proxy: %q", out)
	}
	// Without a Proxy there is no way out at all.
	out, res = sh(t, sandbox.Spec{}, "curl -sS -f http://"+host.String()+"/")
	if res.ExitCode == 0 {
		t.Errorf("reached the host with no proxy: %q", out)
	}
}

// leftovers lists the processes whose command line holds marker.
func leftovers(t *testing.T, marker string) []string {
	t.Helper()
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && bytes.Contains(b, []byte(marker)) {
			found = append(found, d+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

func TestProcessTree(t *testing.T) {
	sandboxtest.Need(t)
	marker := fmt.Sprint(900000 + os.Getpid()%99999)
	t.Run("ends with the command", func(t *testing.T) {
		_, res := sh(t, sandbox.Spec{}, "sleep "+marker+"1 & setsid sleep "+marker+"2 & (trap '' HUP TERM; nohup sleep "+marker+"3 >/dev/null 2>&1 &) ; echo started")
		if res.ExitCode != 0 {
			t.Fatalf("status %d", res.ExitCode)
		}
		if l := leftovers(t, marker); len(l) > 0 {
			t.Errorf("processes left behind: %q", l)
		}
	})
	t.Run("time limit", func(t *testing.T) {
		_, res := sh(t, sandbox.Spec{Timeout: 200 * time.Millisecond}, "setsid sleep "+marker+"4 & sleep "+marker+"5")
		if !res.TimedOut || res.Signal == "" || res.SignalNumber != int(syscall.SIGKILL) {
			t.Errorf("result %+v, want timed out by a signal", res)
		}
		if l := leftovers(t, marker); len(l) > 0 {
			t.Errorf("processes left behind: %q", l)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		r, w := io.Pipe()
		go func() {
			bufio.NewReader(r).ReadString('\n') // the command started
			cancel()
			io.Copy(io.Discard, r)
		}()
		res, err := sandbox.Run(ctx, sandbox.Spec{Workspace: t.TempDir(), Stdout: w, Shell: "setsid sleep " + marker + "6 & echo started; sleep " + marker + "7"})
		w.Close()
		if err != nil || !res.Canceled {
			t.Errorf("result %+v, %v; want cancelled", res, err)
		}
		if l := leftovers(t, marker); len(l) > 0 {
			t.Errorf("processes left behind: %q", l)
		}
	})
}

func TestMaxOutput(t *testing.T) {
	sandboxtest.Need(t)
	var out bytes.Buffer
	res, err := sandbox.Run(context.Background(), sandbox.Spec{
		Workspace: t.TempDir(), Shell: "head -c 1000000 /dev/zero; echo done >&2", Stdout: &out, Stderr: &out, MaxOutput: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Len() != 1000 || !res.Truncated || res.ExitCode != 0 {
		t.Errorf("got %d bytes, result %+v; want 1000 bytes, truncated, status 0", out.Len(), res)
	}
}

func TestEnvAndStatus(t *testing.T) {
	sandboxtest.Need(t)
	out, res := sh(t, sandbox.Spec{Env: []string{"TOKEN=s3cret", "HTTP_PROXY=http://evil.example:1"}}, `echo "$TOKEN $HTTP_PROXY"; exit 7`)
	if res.ExitCode != 7 {
		t.Errorf("status %d, want 7", res.ExitCode)
	}
	if want := "s3cret http://" + res.ProxyAddr + "\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	_, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: t.TempDir(), Command: []string{"no-such-program-here"}})
	if err == nil || errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("a missing program: %v, want a plain error", err)
	}
	_, err = sandbox.Run(context.Background(), sandbox.Spec{Workspace: "relative", Command: []string{"true"}})
	if err == nil {
		t.Error("a relative workspace was accepted")
	}
}

// TestCABundle: a run's bundle is in its private /tmp, and every CA variable names
// it, whatever the environment said.
func TestCABundle(t *testing.T) {
	sandboxtest.Need(t)
	bundle := "-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n"
	out, res := sh(t, sandbox.Spec{Env: []string{"SSL_CERT_FILE=/etc/elsewhere.pem"}, CABundle: []byte(bundle)},
		`for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO CURL_CA_BUNDLE; do printenv $v; done; cat "$SSL_CERT_FILE"; env | grep -c SSL_CERT_FILE`)
	if res.ExitCode != 0 {
		t.Fatalf("status %d: %s", res.ExitCode, out)
	}
	want := strings.Repeat(sandbox.CABundleFile+"\n", 5) + bundle + "1\n"
	if out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	out, _ = sh(t, sandbox.Spec{}, `printenv SSL_CERT_FILE || echo unset`)
	if out != "unset\n" {
		t.Errorf("without a bundle: %q", out)
	}
}

func TestUnconfined(t *testing.T) {
	outside := t.TempDir()
	res, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: t.TempDir(), Unconfined: true, Shell: "echo x > " + outside + "/f"})
	if err != nil || res.ExitCode != 0 || res.Sandboxed {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := os.Stat(outside + "/f"); err != nil {
		t.Error("an unconfined command could not write outside its workspace")
	}
}

func BenchmarkStart(b *testing.B) {
	b.Run("sandboxed", func(b *testing.B) {
		sandboxtest.Need(b)
		ws := b.TempDir()
		for b.Loop() {
			res, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: ws, Command: []string{"true"}})
			if err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// newTestHost starts the test host in 203.0.113.0/24 (the egress package's tests use
// 198.51.100.0/24, so the two never collide); 203.0.113.248/30 and up stay free, since the
// tests use .250 as a denied host. It skips without root or ip(8).
func newTestHost(t *testing.T) netip.Addr {
	t.Helper()
	return testnet.NewHost(t, netip.MustParsePrefix("203.0.113.0/24"), 62, "ws")
}
