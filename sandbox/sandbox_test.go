package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/sandbox"
)

// hostEnv, when set to an address, makes the test binary the test host's HTTP server: the
// test re-executes itself under "ip netns exec".
const hostEnv = "WARDEN_SANDBOX_TEST_HOST"

func TestMain(m *testing.M) {
	if addr := os.Getenv(hostEnv); addr != "" {
		if err := serveHost(addr); err != nil {
			fmt.Fprintln(os.Stderr, "test host:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveHost answers "hello from the test host" on addr:80 until its standard input closes.
func serveHost(addr string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "80"))
	if err != nil {
		return err
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the test host\n")
	}))
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// needSandbox skips unless the sandbox can run here; CI has root and Landlock.
func needSandbox(t testing.TB) {
	t.Helper()
	_, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: t.TempDir(), Command: []string{"true"}})
	if errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("the sandbox cannot run here (needs Landlock ABI 6+ and namespaces; CI has both): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
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
	needSandbox(t)
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

	denied := map[string]string{
		"write outside":          "echo x > " + filepath.Join(outside, "f"),
		"write /tmp":             "echo x > /tmp/warden-sandbox-test-" + filepath.Base(ws),
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
			if res.ExitCode == 0 || !strings.Contains(out, "ermission denied") {
				t.Errorf("%s: status %d, output %q; want a permission error", script, res.ExitCode, out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Error("a file was written outside the workspace")
	}
}

func TestNetworkDirect(t *testing.T) {
	needSandbox(t)
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
	needSandbox(t)
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
	needSandbox(t)
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
		if !res.TimedOut || res.Signal == "" {
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
	needSandbox(t)
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
	needSandbox(t)
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
		needSandbox(b)
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

// newTestHost starts an HTTP server at a documentation address (203.0.113.x: the egress
// package's tests use 198.51.100.x, so the two never collide) in a network namespace of its
// own, reached from here over a veth pair. It skips without root or ip(8).
func newTestHost(t *testing.T) netip.Addr {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace for the test host (CI runs as root)")
	}
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("needs ip(8) (iproute2) for the test host")
	}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ipPath, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ns := fmt.Sprintf("warden-sandbox-%d", os.Getpid())
	near, far := fmt.Sprintf("ws%xh", os.Getpid()), fmt.Sprintf("ws%xn", os.Getpid())
	nearIP, farIP := freeBlock(t, ipPath)
	ip("netns", "add", ns)
	t.Cleanup(func() { exec.Command(ipPath, "netns", "del", ns).Run() })
	ip("link", "add", near, "type", "veth", "peer", "name", far, "netns", ns)
	t.Cleanup(func() { exec.Command(ipPath, "link", "del", near).Run() })
	ip("addr", "add", nearIP.String()+"/30", "dev", near)
	ip("link", "set", near, "up")
	ip("-n", ns, "addr", "add", farIP.String()+"/30", "dev", far)
	ip("-n", ns, "link", "set", far, "up")

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ipPath, "netns", "exec", ns, self, "-test.run=^$")
	cmd.Env = append(os.Environ(), hostEnv+"="+farIP.String())
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "ready" {
		t.Fatalf("the test host did not start (it said %q)", line)
	}
	return farIP
}

// freeBlock picks a /30 in 203.0.113.0/24 that no address or route here uses.
func freeBlock(t *testing.T, ipPath string) (near, far netip.Addr) {
	t.Helper()
	out, err := exec.Command(ipPath, "-4", "route", "show", "table", "all").CombinedOutput()
	if err != nil {
		t.Fatalf("ip route: %v\n%s", err, out)
	}
	var used []netip.Prefix
	for _, f := range strings.Fields(string(out)) {
		if p, err := netip.ParsePrefix(f); err == nil {
			used = append(used, p)
		} else if a, err := netip.ParseAddr(f); err == nil {
			used = append(used, netip.PrefixFrom(a, 32))
		}
	}
	for i := range 62 { // 203.0.113.248/30 and up stay free: the tests use .250 as a denied host
		k := (os.Getpid() + i) % 62
		block := netip.PrefixFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(4 * k)}), 30)
		free := true
		for _, p := range used {
			if p.Bits() > 0 && p.Overlaps(block) {
				free = false
			}
		}
		if free {
			b := block.Addr().As4()
			return netip.AddrFrom4([4]byte{203, 0, 113, b[3] + 2}), netip.AddrFrom4([4]byte{203, 0, 113, b[3] + 1})
		}
	}
	t.Fatal("no free /30 in 203.0.113.0/24")
	return
}
