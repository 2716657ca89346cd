package egress_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostEnv, when set to an address, makes the test binary the test host's server instead of
// running tests: the test re-executes itself under "ip netns exec".
const hostEnv = "WARDEN_EGRESS_TEST_HOST"

func TestMain(m *testing.M) {
	if addr := os.Getenv(hostEnv); addr != "" {
		if err := serveTestHost(addr); err != nil {
			fmt.Fprintln(os.Stderr, "test host:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hostReply is what the test host answers: what it saw of the request.
type hostReply struct {
	Host   string `json:"host"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Remote string `json:"remote"`
	TLS    bool   `json:"tls"`
}

// serveTestHost serves HTTP on addr:80 and HTTPS (net/http/httptest's certificate) on
// addr:443 until its standard input closes, which it does when the test process ends.
func serveTestHost(addr string) error {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(hostReply{Host: r.Host, Method: r.Method, Path: r.URL.Path, Remote: r.RemoteAddr, TLS: r.TLS != nil})
	})
	plain, err := net.Listen("tcp", net.JoinHostPort(addr, "80"))
	if err != nil {
		return err
	}
	tlsLn, err := net.Listen("tcp", net.JoinHostPort(addr, "443"))
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(plain, h) }()
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = tlsLn
	srv.StartTLS()
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// A testHost is an HTTP server at a documentation address (198.51.100.x) inside a network
// namespace the test made, reached over a veth pair: the one host the proxy tests may reach.
// Loopback can never be allowed, so it cannot stand in.
type testHost struct {
	addr netip.Addr
}

var hostSeq atomic.Int32

// newTestHost makes the namespace, the link and the server, and removes them when tb ends.
// It skips when not root or without ip(8); CI has both.
func newTestHost(tb testing.TB) *testHost {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("the proxy tests need root to make a network namespace for their test host (CI runs as root)")
	}
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		tb.Skip("the proxy tests need ip(8) (iproute2) to make a network namespace for their test host")
	}
	ip := func(args ...string) {
		tb.Helper()
		if out, err := exec.Command(ipPath, args...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	n := hostSeq.Add(1)
	ns := fmt.Sprintf("warden-egress-%d-%d", os.Getpid(), n)
	vethHost := fmt.Sprintf("we%xh%d", os.Getpid(), n) // at most 15 bytes
	vethFar := fmt.Sprintf("we%xn%d", os.Getpid(), n)
	hostIP, farIP := freeSubnet(tb, ipPath)

	ip("netns", "add", ns)
	tb.Cleanup(func() { _ = exec.Command(ipPath, "netns", "del", ns).Run() })
	ip("link", "add", vethHost, "type", "veth", "peer", "name", vethFar, "netns", ns)
	tb.Cleanup(func() { _ = exec.Command(ipPath, "link", "del", vethHost).Run() })
	ip("addr", "add", hostIP.String()+"/30", "dev", vethHost)
	ip("link", "set", vethHost, "up")
	ip("-n", ns, "addr", "add", farIP.String()+"/30", "dev", vethFar)
	ip("-n", ns, "link", "set", vethFar, "up")
	ip("-n", ns, "link", "set", "lo", "up")

	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(ipPath, "netns", "exec", ns, self, "-test.run=^$")
	cmd.Env = append(os.Environ(), hostEnv+"="+farIP.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if strings.TrimSpace(line) != "ready" {
			tb.Fatalf("the test host did not start (it said %q)", line)
		}
	case <-time.After(30 * time.Second):
		tb.Fatal("the test host did not start within 30s")
	}
	return &testHost{addr: farIP}
}

// freeSubnet picks a /30 in 198.51.100.0/24 that no address or route on this machine uses,
// starting at one the process id chooses, so that test binaries running at once (this
// package's and the sandbox's) do not collide.
func freeSubnet(tb testing.TB, ipPath string) (hostIP, farIP netip.Addr) {
	tb.Helper()
	out, err := exec.Command(ipPath, "-4", "route", "show", "table", "all").CombinedOutput()
	if err != nil {
		tb.Fatalf("ip route: %v\n%s", err, out)
	}
	var used []netip.Prefix
	for _, f := range strings.Fields(string(out)) {
		if p, err := netip.ParsePrefix(f); err == nil {
			used = append(used, p)
		} else if a, err := netip.ParseAddr(f); err == nil {
			used = append(used, netip.PrefixFrom(a, 32))
		}
	}
	start := os.Getpid() + int(hostSeq.Load())
	for i := range 64 {
		k := (start + i) % 64
		block := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(4 * k)}), 30)
		free := true
		for _, p := range used {
			if p.Bits() > 0 && p.Overlaps(block) {
				free = false
				break
			}
		}
		if free {
			base := block.Addr().As4()
			return netip.AddrFrom4([4]byte{198, 51, 100, base[3] + 2}), netip.AddrFrom4([4]byte{198, 51, 100, base[3] + 1})
		}
	}
	tb.Fatal("no free /30 in 198.51.100.0/24")
	return
}
