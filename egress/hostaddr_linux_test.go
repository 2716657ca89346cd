//go:build linux

package egress_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/egress"
)

// A netns is a network namespace the test made, holding only lo: nothing in it reaches
// anywhere else, so public addresses can be given to it without consequence.
type netns struct {
	name string
	ip   string // ip(8)
}

var netnsSeq atomic.Int32

// newNetns makes a network namespace with lo up, removed when the test ends. It skips where
// namespaces cannot be made (not root, no ip(8), a container that forbids it).
func newNetns(t *testing.T) *netns {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("needs ip(8) (iproute2) to make a network namespace")
	}
	n := &netns{name: fmt.Sprintf("warden-ha-%d-%d", os.Getpid(), netnsSeq.Add(1)), ip: ip}
	if out, err := exec.Command(ip, "netns", "add", n.name).CombinedOutput(); err != nil {
		t.Skipf("cannot make a network namespace: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(ip, "netns", "del", n.name).Run() })
	n.run(t, "link", "set", "lo", "up")
	return n
}

// run runs ip -n NAME args; it may be called from any goroutine.
func (n *netns) run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(n.ip, append([]string{"-n", n.name}, args...)...).CombinedOutput(); err != nil {
		t.Errorf("ip -n %s %s: %v\n%s", n.name, strings.Join(args, " "), err, out)
	}
}

// in runs fn on a goroutine whose thread has joined the namespace: the sockets fn opens and
// the Checkers it makes are the namespace's. The thread is never unlocked, so it ends with
// the goroutine instead of going back to the runtime in the wrong namespace. fn reports with
// t.Error, not t.Fatal.
func (n *netns) in(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + n.name)
		if err != nil {
			done <- err
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err != nil {
			done <- fmt.Errorf("setns: %w", err)
			return
		}
		fn()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Skipf("cannot enter the network namespace: %v", err)
	}
}

// Public-looking addresses the namespace gives itself, and a public address it does not have.
const (
	ownV4   = "11.22.33.44"
	ownV6   = "2a02:6b8::44"
	addedV4 = "11.22.33.55"
	notOwn  = "8.8.8.8"
)

// TestHostAddressRefused: an address of one of this host's interfaces is never allowed, in
// either mode, listed or not, as an address or as a name that resolves to it. The old code
// let open mode reach one: its interface addresses were in no never-allowed range.
func TestHostAddressRefused(t *testing.T) {
	ns := newNetns(t)
	ns.run(t, "addr", "add", ownV4+"/32", "dev", "lo")
	ns.run(t, "addr", "add", ownV6+"/128", "dev", "lo")
	res := newResolver(map[string][]string{
		"self.test":   {notOwn, ownV4},
		"self6.test":  {ownV6},
		"public.test": {notOwn},
	})
	list, err := egress.ParseAllowlist(ownV4 + ", self.test, " + ownV4 + ":22, 11.22.33.0/24, [" + ownV6 + "]:8443")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mode   egress.Mode
		target string
		allow  bool
	}{
		{egress.ModeOpen, "http://" + ownV4 + "/", false},
		{egress.ModeOpen, "https://0x0b.22.33.44/", false},
		{egress.ModeOpen, "[::ffff:" + ownV4 + "]:443", false},
		{egress.ModeOpen, "https://[" + ownV6 + "]/", false},
		{egress.ModeOpen, "http://self.test/", false},
		{egress.ModeOpen, "self6.test:443", false},
		{egress.ModeOpen, "https://public.test/", true},
		{egress.ModeOpen, notOwn + ":443", true},
		{egress.ModeAllowlist, ownV4 + ":443", false}, // listed, still refused
		{egress.ModeAllowlist, ownV4 + ":22", false},
		{egress.ModeAllowlist, "[" + ownV6 + "]:8443", false},
		{egress.ModeAllowlist, "https://self.test/", false},
		{egress.ModeAllowlist, "11.22.33.45:443", true}, // the same CIDR, not this host's
	}
	ns.in(t, func() {
		for _, mode := range []egress.Mode{egress.ModeOpen, egress.ModeAllowlist} {
			c := egress.New(egress.Options{Mode: mode, Allowlist: list, Resolver: res})
			for _, tt := range tests {
				if tt.mode != mode {
					continue
				}
				d := c.Check(context.Background(), tt.target)
				switch {
				case tt.allow && !d.Allow:
					t.Errorf("%s %s: %s %s (%s); want allow", mode, tt.target, d.Verdict(), d.Reason, d.Detail)
				case !tt.allow && (d.Allow || d.Reason != egress.ReasonHostAddress || !strings.Contains(d.Detail, "this host's own addresses") || len(d.Addrs) != 0):
					t.Errorf("%s %s: %s %s (%s) %v; want deny host_address, saying it is this host's own", mode, tt.target, d.Verdict(), d.Reason, d.Detail, d.Addrs)
				}
			}
		}
	})
	// The namespace's addresses are not the test process's.
	c := egress.New(egress.Options{Mode: egress.ModeOpen, Resolver: res})
	if d := c.Check(context.Background(), ownV4+":443"); !d.Allow {
		t.Errorf("outside the namespace, %s: %s %s (%s); want allow", ownV4, d.Verdict(), d.Reason, d.Detail)
	}
}

// TestHostAddressChanges: an address added at run time (DHCP, a VPN coming up) is refused by
// the next check, and one removed is allowed again, without a restart and without waiting.
func TestHostAddressChanges(t *testing.T) {
	ns := newNetns(t)
	ns.in(t, func() {
		c := egress.New(egress.Options{Mode: egress.ModeOpen})
		check := func(when string, want bool) {
			t.Helper()
			if d := c.Check(context.Background(), addedV4+":443"); d.Allow != want {
				t.Errorf("%s: %s %s (%s); want allow=%v", when, d.Verdict(), d.Reason, d.Detail, want)
			}
		}
		check("before", true)
		ns.run(t, "addr", "add", addedV4+"/32", "dev", "lo")
		check("once added", false)
		// A Checker made later shares what the first one knows.
		if d := egress.New(egress.Options{Mode: egress.ModeOpen}).Check(context.Background(), addedV4); d.Reason != egress.ReasonHostAddress {
			t.Errorf("a second checker: %s %s", d.Verdict(), d.Reason)
		}
		ns.run(t, "addr", "del", addedV4+"/32", "dev", "lo")
		check("once removed", true)
		ns.run(t, "addr", "add", addedV4+"/32", "dev", "lo")
		check("added again", false)
	})
}

// inNetnsEnv marks a test binary that newNetns's reexec started inside the namespace.
const inNetnsEnv = "WARDEN_EGRESS_TEST_IN_NETNS"

// reexec runs the test named test again, in a test binary started inside the namespace, so
// that every thread of it is there: a proxy's handlers run on any thread, and a connection
// they made from the test process's namespace could leave the machine. Inside, only lo exists.
func (n *netns) reexec(t *testing.T, test string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(n.ip, "netns", "exec", n.name, self, "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), inNetnsEnv+"="+n.name)
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Errorf("%s inside the namespace: %v\n%s", test, err, out)
	case strings.Contains(string(out), "--- SKIP"):
		t.Skipf("%s inside the namespace skipped:\n%s", test, out)
	case !strings.Contains(string(out), "--- PASS: "+test):
		t.Errorf("%s did not run inside the namespace:\n%s", test, out)
	}
}

// insideNetns reports whether this test binary runs inside a namespace reexec made, and checks
// that it does: every interface is lo.
func insideNetns(t *testing.T) bool {
	if os.Getenv(inNetnsEnv) == "" {
		return false
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Name != "lo" {
			t.Fatalf("%s is set, but this binary sees the interface %s: not inside the test's namespace", inNetnsEnv, i.Name)
		}
	}
	return true
}

// TestProxyRefusesHostAddress: the proxy refuses this host's own addresses for CONNECT, for
// forwarded requests and for net_fetch's dialer, and nothing reaches the service listening
// there. A local route that is no interface's address (AnyIP) escapes the address check but
// not the one after connect(2): a connection whose source is its destination is refused
// before a byte is sent.
func TestProxyRefusesHostAddress(t *testing.T) {
	if !insideNetns(t) {
		ns := newNetns(t)
		ns.run(t, "addr", "add", ownV4+"/32", "dev", "lo")
		ns.run(t, "route", "add", "local", "11.22.34.0/24", "dev", "lo")
		ns.reexec(t, "TestProxyRefusesHostAddress")
		return
	}
	res := newResolver(map[string][]string{"self.test": {ownV4}, "anyip.test": {"11.22.34.5"}})
	// The service the sandbox must not reach: on this host's address, and on every address
	// (for the local route).
	svc, err := net.Listen("tcp", ownV4+":443")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	wild, err := net.Listen("tcp", "0.0.0.0:80")
	if err != nil {
		t.Fatal(err)
	}
	defer wild.Close()

	var refusals atomic.Int32
	p, err := egress.NewProxy(egress.New(egress.Options{Mode: egress.ModeOpen, Resolver: res}),
		egress.ProxyOptions{OnDecision: func(d egress.Decision) {
			if d.Reason == egress.ReasonHostAddress {
				refusals.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-served
	})

	ask := func(raw string) (int, string) {
		t.Helper()
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("X-Warden-Egress-Reason")
	}
	for _, raw := range []string{
		"CONNECT " + ownV4 + ":443 HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT self.test:443 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET https://" + ownV4 + "/ HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://self.test:443/ HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		if status, reason := ask(raw); status != http.StatusForbidden || reason != "host_address" {
			t.Errorf("%q: %d %q; want 403 host_address", raw, status, reason)
		}
	}
	_, err = p.DialContext(context.Background(), "tcp", "self.test:443")
	if re, ok := errors.AsType[*egress.RefusedError](err); !ok || re.Decision.Reason != egress.ReasonHostAddress {
		t.Errorf("DialContext(self.test:443): %v; want a host_address refusal", err)
	}

	// Nothing reached the service: the first connection it accepts is this one.
	probe, err := net.Dial("tcp", ownV4+":443")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	first, err := svc.Accept()
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	if first.RemoteAddr().String() != probe.LocalAddr().String() {
		t.Errorf("the service's first connection came from %s, not the probe (%s): the proxy reached it", first.RemoteAddr(), probe.LocalAddr())
	}

	// The local route: allowed by the check, refused once connected, for CONNECT and for
	// net_fetch's dialer.
	if d := p.Check(context.Background(), "anyip.test:80"); !d.Allow {
		t.Errorf("anyip.test: %s %s (%s); the check cannot know a local route", d.Verdict(), d.Reason, d.Detail)
	}
	if status, reason := ask("CONNECT anyip.test:80 HTTP/1.1\r\nHost: x\r\n\r\n"); status != http.StatusForbidden || reason != "host_address" {
		t.Errorf("CONNECT to a local route: %d %q; want 403 host_address", status, reason)
	}
	_, err = p.DialContext(context.Background(), "tcp", "anyip.test:80")
	if re, ok := errors.AsType[*egress.RefusedError](err); !ok || re.Decision.Reason != egress.ReasonHostAddress || !strings.Contains(re.Decision.Detail, "reaches this host itself") {
		t.Errorf("DialContext(anyip.test:80): %v; want a host_address refusal", err)
	}
	if n := refusals.Load(); n != 7 {
		t.Errorf("%d host_address decisions reported; want 7", n)
	}
}
