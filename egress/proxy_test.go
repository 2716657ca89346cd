package egress_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden/egress"
)

// proxyFixture is a proxy on loopback in front of the test host, with a resolver that maps
// the test names: allowed.test and rebind.test to the test host, evil.test and other.test too
// (but unlisted), and metadata.test to the metadata address.
type proxyFixture struct {
	host      *testHost
	res       *fakeResolver
	proxy     *egress.Proxy
	proxyURL  *url.URL
	mu        sync.Mutex
	decisions []egress.Decision
}

func newProxyFixture(tb testing.TB, mode egress.Mode, po egress.ProxyOptions) *proxyFixture {
	tb.Helper()
	f := &proxyFixture{host: newTestHost(tb)}
	far := f.host.addr.String()
	f.res = newResolver(map[string][]string{
		"allowed.test":  {far},
		"evil.test":     {far},
		"other.test":    {far},
		"metadata.test": {"169.254.169.254"},
	})
	// The test host's echo (7) and SMTP-like (25) ports are listed too, for the tunnels.
	list, err := egress.ParseAllowlist("allowed.test, *.allowed.test, metadata.test, rebind.test, allowed.test:7, allowed.test:25")
	if err != nil {
		tb.Fatal(err)
	}
	c := egress.New(egress.Options{Mode: mode, Allowlist: list, Resolver: f.res, RootCAs: testHostRoots})
	po.OnDecision = func(d egress.Decision) {
		f.mu.Lock()
		f.decisions = append(f.decisions, d)
		f.mu.Unlock()
	}
	f.proxy, err = egress.NewProxy(c, po)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.proxy.Serve(ctx, ln) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	})
	f.proxyURL = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	return f
}

// client returns an HTTP client that goes through the proxy, trusting the test host's TLS
// certificate (httptest's) without checking it.
func (f *proxyFixture) client() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:           http.ProxyURL(f.proxyURL),
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (f *proxyFixture) allows() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, d := range f.decisions {
		if d.Allow {
			n++
		}
	}
	return n
}

func getJSON(t *testing.T, c *http.Client, req *http.Request) (int, hostReply, string, http.Header) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r hostReply
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("%s: %v\n%s", req.URL, err, body)
		}
	}
	return resp.StatusCode, r, string(body), resp.Header
}

func TestProxyForward(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{})
	c := f.client()

	req, _ := http.NewRequest("GET", "http://allowed.test/hello", nil)
	status, r, body, _ := getJSON(t, c, req)
	if status != http.StatusOK || r.Host != "allowed.test" || r.Path != "/hello" {
		t.Fatalf("allowed: %d %+v %s", status, r, body)
	}

	// The Host header never chooses where the request goes, nor what the upstream sees.
	// (Written raw: Go's own client would put req.Host into the request line.)
	resp, body := rawRequest(t, f, "GET http://allowed.test/x HTTP/1.1\r\nHost: evil.test\r\n\r\n")
	if err := json.Unmarshal([]byte(body), &r); resp.StatusCode != http.StatusOK || err != nil || r.Host != "allowed.test" {
		t.Errorf("Host: evil.test: %s %s; want the upstream to see allowed.test", resp.Status, body)
	}

	req, _ = http.NewRequest("GET", "http://evil.test/", nil)
	status, _, body, hdr := getJSON(t, c, req)
	if status != http.StatusForbidden || hdr.Get("X-Warden-Egress-Reason") != "not_allowed" ||
		!strings.Contains(body, "evil.test") || !strings.Contains(body, "not_allowed") {
		t.Errorf("evil.test: %d %q %q; want 403 not_allowed naming the host", status, hdr.Get("X-Warden-Egress-Reason"), body)
	}

	req, _ = http.NewRequest("GET", "http://metadata.test/latest/meta-data/", nil)
	status, _, body, hdr = getJSON(t, c, req)
	if status != http.StatusForbidden || hdr.Get("X-Warden-Egress-Reason") != "private_address" || !strings.Contains(body, "169.254.169.254") {
		t.Errorf("metadata.test: %d %q; want 403 private_address naming the address", status, body)
	}
	if n := f.res.lookups("evil.test"); n != 0 {
		t.Errorf("evil.test was looked up %d times; an unlisted name costs no lookup", n)
	}
}

func TestProxyConnect(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{})
	c := f.client()

	// HTTPS through CONNECT, as clients do it.
	req, _ := http.NewRequest("GET", "https://allowed.test/secure", nil)
	status, r, body, _ := getJSON(t, c, req)
	if status != http.StatusOK || !r.TLS || r.Path != "/secure" {
		t.Fatalf("https via CONNECT: %d %+v %s", status, r, body)
	}

	req, _ = http.NewRequest("GET", "https://evil.test/", nil)
	_, err := c.Do(req)
	if err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("https to evil.test: %v; want the CONNECT refused", err)
	}

	// A raw CONNECT shows the refusal's reason.
	resp, _ := rawRequest(t, f, "CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Warden-Egress-Reason") != "not_allowed" {
		t.Errorf("CONNECT evil.test: %s %v", resp.Status, resp.Header)
	}

	// Plain HTTP inside a tunnel, with bytes sent before the proxy answered.
	conn := dialProxy(t, f)
	fmt.Fprintf(conn, "CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\nGET /tunnel HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT allowed.test:80: %v %v", resp, err)
	}
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	var hr hostReply
	if err := json.NewDecoder(resp.Body).Decode(&hr); err != nil || hr.Path != "/tunnel" {
		t.Errorf("through the tunnel: %+v %v", hr, err)
	}
	conn.Close()
}

func TestProxyRefusesHostHeaderRouting(t *testing.T) {
	f := newProxyFixture(t, egress.ModeOpen, egress.ProxyOptions{})
	for _, raw := range []string{
		// Origin-form: a server, not a proxy, would route on Host.
		"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"GET /latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n",
		// CONNECT with a path: net/http would take the destination from Host.
		"CONNECT /x HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n",
		// CONNECT without a port.
		"CONNECT allowed.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		// Not http(s).
		"GET ftp://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
	} {
		resp, body := rawRequest(t, f, raw)
		if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusForbidden {
			t.Errorf("%q: %s %s; want 400 or 403", raw, resp.Status, body)
		}
	}
	if n := f.allows(); n != 0 {
		t.Errorf("%d requests were allowed; want none", n)
	}
}

func TestProxyRefusedSpellings(t *testing.T) {
	f := newProxyFixture(t, egress.ModeOpen, egress.ProxyOptions{})
	for name, addrs := range rebindResolver().answers {
		for _, a := range addrs {
			var ss []string
			for _, x := range a {
				ss = append(ss, x.String())
			}
			f.res.add(name, ss...)
		}
	}
	for _, s := range refusedSpellings {
		var raw string
		if strings.Contains(s, "://") {
			raw = "GET " + s + " HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
		} else {
			target := s
			if !strings.Contains(strings.TrimPrefix(target, "::"), ":") || strings.HasPrefix(target, "::") || strings.HasSuffix(target, "]") {
				target += ":80"
				if strings.Count(s, ":") > 1 && !strings.HasPrefix(s, "[") {
					target = "[" + s + "]:80"
				}
			}
			raw = "CONNECT " + target + " HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n"
		}
		resp, body := rawRequest(t, f, raw)
		// 400 is net/http refusing a request line it cannot parse; 403 is the check.
		if resp.StatusCode == http.StatusBadRequest {
			t.Logf("%s: 400 %s", s, strings.TrimSpace(body))
		}
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s %s; want 403", s, resp.Status, body)
		}
		if resp.StatusCode == http.StatusForbidden && resp.Header.Get("X-Warden-Egress-Reason") != "private_address" {
			t.Errorf("%s: reason %q (%s); want private_address", s, resp.Header.Get("X-Warden-Egress-Reason"), body)
		}
	}
	if n := f.allows(); n != 0 {
		t.Errorf("%d refused spellings were allowed", n)
	}
}

// The name is looked up once per request, and the connection goes to the address that was
// checked: a resolver that rebinds to loopback after the check cannot redirect it.
func TestProxyDialsTheCheckedAddress(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{})
	f.res.add("rebind.test", f.host.addr.String())
	f.res.add("rebind.test", "127.0.0.1")
	c := f.client()

	req, _ := http.NewRequest("GET", "http://rebind.test/first", nil)
	status, r, body, _ := getJSON(t, c, req)
	if status != http.StatusOK || r.Path != "/first" {
		t.Fatalf("first request: %d %s", status, body)
	}
	if n := f.res.lookups("rebind.test"); n != 1 {
		t.Errorf("rebind.test looked up %d times for one request; want 1", n)
	}
	req, _ = http.NewRequest("GET", "http://rebind.test/second", nil)
	status, _, body, _ = getJSON(t, c, req)
	if status != http.StatusForbidden || !strings.Contains(body, "127.0.0.1") {
		t.Errorf("after rebinding to loopback: %d %s; want 403", status, body)
	}
}

func TestProxyAllowOnce(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{})
	other, err := egress.NewProxy(f.proxy.Checker(), egress.ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := f.client()
	get := func() int {
		req, _ := http.NewRequest("GET", "http://other.test/", nil)
		status, _, _, _ := getJSON(t, c, req)
		return status
	}
	if s := get(); s != http.StatusForbidden {
		t.Fatalf("before AllowOnce: %d", s)
	}
	if err := f.proxy.AllowOnce("Other.Test."); err != nil {
		t.Fatal(err)
	}
	if s := get(); s != http.StatusOK {
		t.Errorf("after AllowOnce: %d; want 200 from the same running proxy", s)
	}
	if d := f.proxy.Check(context.Background(), "other.test"); !d.Allow || d.Reason != egress.ReasonAllowedOnce {
		t.Errorf("Check after AllowOnce: %s %s", d.Verdict(), d.Reason)
	}
	if got := f.proxy.AllowedOnce(); len(got) != 1 || got[0] != "other.test" {
		t.Errorf("AllowedOnce() = %q", got)
	}
	// Another proxy (another session) on the same checker is not widened.
	if d := other.Check(context.Background(), "other.test"); d.Allow {
		t.Errorf("another proxy allows other.test after AllowOnce on the first")
	}
	for _, bad := range []string{"127.0.0.1", "169.254.169.254", "localhost", "10.0.0.0/8", "*.com", "", "a b"} {
		if err := f.proxy.AllowOnce(bad); err == nil {
			t.Errorf("AllowOnce(%q) succeeded", bad)
		}
	}
	if errors.Is(f.proxy.AllowOnce("127.0.0.1"), egress.ErrNeverAllowed) != true {
		t.Errorf("AllowOnce(127.0.0.1) does not wrap ErrNeverAllowed")
	}
}

func TestProxyIdleTunnelIsClosed(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{IdleTimeout: 200 * time.Millisecond})
	conn := dialProxy(t, f)
	fmt.Fprintf(conn, "CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	// Send nothing: the proxy must end the tunnel by itself. The deadline only stops a
	// broken test from hanging; no duration is asserted.
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("idle tunnel: read %v; want EOF", err)
	}
}

func TestProxyClose(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{})
	conn := dialProxy(t, f)
	fmt.Fprintf(conn, "CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n")
	br := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	// The tunnel is registered once the 200 has been written; Close may race the registration,
	// in which case the tunnel is refused instead. Either way it ends.
	if err := f.proxy.Close(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after Close: read %v; want EOF", err)
	}
}

func TestNewProxyNeedsResolution(t *testing.T) {
	_, err := egress.NewProxy(egress.New(egress.Options{NoResolve: true}), egress.ProxyOptions{})
	if !errors.Is(err, egress.ErrNoResolve) {
		t.Errorf("NewProxy(NoResolve) = %v", err)
	}
}

// TestProxyDialContext uses the proxy's dialer directly, as net_fetch's client would.
func TestProxyDialContext(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{})
	c := &http.Client{Transport: &http.Transport{DialContext: f.proxy.DialContext}}
	resp, err := c.Get("http://allowed.test/direct")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("allowed.test: %s", resp.Status)
	}
	_, err = c.Get("http://evil.test/")
	var refused *egress.RefusedError
	if !errors.As(err, &refused) || refused.Decision.Reason != egress.ReasonNotAllowed {
		t.Errorf("evil.test: %v; want a RefusedError", err)
	}
	if _, err := f.proxy.DialContext(context.Background(), "udp", "allowed.test:53"); err == nil {
		t.Error("udp was dialled")
	}
	if _, err := f.proxy.DialContext(context.Background(), "tcp", "127.0.0.1:80"); err == nil {
		t.Error("loopback was dialled")
	}
}

func dialProxy(t *testing.T, f *proxyFixture) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", f.proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// rawRequest writes a request as is and reads one response.
func rawRequest(t *testing.T, f *proxyFixture, raw string) (*http.Response, string) {
	t.Helper()
	conn := dialProxy(t, f)
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	conn.Close()
	return resp, string(body)
}

// TestProxyTenantList: a list shared through ProxyOptions.Tenant widens every proxy that
// shares it, at once, and never lets a never-allowed address through.
func TestProxyTenantList(t *testing.T) {
	var tenant atomic.Pointer[egress.Allowlist]
	opts := egress.ProxyOptions{Tenant: tenant.Load}
	f := newProxyFixture(t, egress.ModeAllowlist, opts)
	other, err := egress.NewProxy(f.proxy.Checker(), opts)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := egress.NewProxy(f.proxy.Checker(), egress.ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := f.client()
	get := func() int {
		req, _ := http.NewRequest("GET", "http://other.test/", nil)
		status, _, _, _ := getJSON(t, c, req)
		return status
	}
	if s := get(); s != http.StatusForbidden {
		t.Fatalf("before the tenant's list has other.test: %d", s)
	}
	list, err := egress.ParseAllowlist("other.test")
	if err != nil {
		t.Fatal(err)
	}
	tenant.Store(list)
	if s := get(); s != http.StatusOK {
		t.Errorf("with other.test on the tenant's list: %d; want 200 from the same running proxy", s)
	}
	if d := other.Check(context.Background(), "other.test"); !d.Allow || d.Reason != egress.ReasonAllowedTenant {
		t.Errorf("another proxy of the tenant: %s %s, want allow %s", d.Verdict(), d.Reason, egress.ReasonAllowedTenant)
	}
	if d := alone.Check(context.Background(), "other.test"); d.Allow {
		t.Error("a proxy of another tenant allows other.test")
	}
	if d := f.proxy.Check(context.Background(), "169.254.169.254"); d.Allow {
		t.Error("the metadata address is allowed")
	}
	tenant.Store(nil)
	if s := get(); s != http.StatusForbidden {
		t.Errorf("after other.test left the tenant's list: %d", s)
	}
}

// sniRefusals returns the sni_mismatch decisions so far.
func (f *proxyFixture) sniRefusals() []egress.Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []egress.Decision
	for _, d := range f.decisions {
		if d.Reason == egress.ReasonSNIMismatch {
			out = append(out, d)
		}
	}
	return out
}

// bufConn reads through the reader that read the proxy's answer, which may already hold the
// tunnel's first bytes.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// openTunnel sends CONNECT target through the proxy and returns the tunnel once the proxy
// has answered 200.
func openTunnel(t *testing.T, f *proxyFixture, target string) net.Conn {
	t.Helper()
	conn := dialProxy(t, f)
	// The deadline only stops a broken test from hanging; no duration is asserted.
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %s", target, resp.Status)
	}
	return bufConn{conn, br}
}

// tlsGet makes a TLS handshake over conn and sends one request; it returns what the test host
// saw, or the error.
func tlsGet(conn net.Conn, cfg *tls.Config, path string) (hostReply, error) {
	tc := tls.Client(conn, cfg)
	if err := tc.Handshake(); err != nil {
		return hostReply{}, err
	}
	fmt.Fprintf(tc, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, cmp.Or(cfg.ServerName, "no-sni"))
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		return hostReply{}, err
	}
	defer resp.Body.Close()
	var r hostReply
	err = json.NewDecoder(resp.Body).Decode(&r)
	return r, err
}

// trickleConn sends its first write (a ClientHello) a byte at a time, pausing between bytes,
// so that the proxy reads it in many pieces.
type trickleConn struct {
	net.Conn
	done bool
}

func (c *trickleConn) Write(b []byte) (int, error) {
	if c.done {
		return c.Conn.Write(b)
	}
	c.done = true
	for i := range b {
		if _, err := c.Conn.Write(b[i : i+1]); err != nil {
			return i, err
		}
		time.Sleep(50 * time.Microsecond)
	}
	return len(b), nil
}

// writeBytewise writes b a byte at a time.
func writeBytewise(t *testing.T, conn net.Conn, b []byte) {
	t.Helper()
	_, err := (&trickleConn{Conn: conn}).Write(b)
	if err != nil {
		t.Fatal(err)
	}
}

// testRoots trusts the certificate the test host serves (httptest's).
func testRoots(t *testing.T) *x509.CertPool {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return pool
}

// accessDenied is the TLS alert a client whose server name was refused reads before the end.
var accessDenied = []byte{21, 3, 3, 0, 2, 2, 49}

// TestProxyConnectServerName: a tunnel's TLS ClientHello must name the CONNECT host or a
// listed name. The test host's certificate is valid for example.com and *.example.com, so
// without the check a ClientHello for an unlisted www.example.com would get through a tunnel
// to a listed cdn.example.com: domain fronting on a shared server.
func TestProxyConnectServerName(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{})
	far := f.host.addr.String()
	for _, n := range []string{"cdn.example.com", "www.example.com", "unlisted.example.com"} {
		f.res.add(n, far)
	}
	if err := f.proxy.AllowOnce("cdn.example.com"); err != nil {
		t.Fatal(err)
	}
	roots := testRoots(t)
	verified := func(name string) *tls.Config { return &tls.Config{ServerName: name, RootCAs: roots} }
	// refused checks that exactly one more refusal was reported, with this detail.
	seen := 0
	refused := func(t *testing.T, host string, port uint16, detail string) {
		t.Helper()
		got := f.sniRefusals()
		if len(got) != seen+1 {
			t.Fatalf("%d sni_mismatch decisions, want %d: %+v", len(got), seen+1, got)
		}
		seen++
		d := got[len(got)-1]
		if d.Allow || d.Host != host || d.Port != port || !strings.Contains(d.Detail, detail) {
			t.Errorf("decision %+v; want a refusal of %s:%d saying %q", d, host, port, detail)
		}
	}

	t.Run("the CONNECT host", func(t *testing.T) {
		r, err := tlsGet(openTunnel(t, f, "cdn.example.com:443"), verified("cdn.example.com"), "/same")
		if err != nil || !r.TLS || r.Host != "cdn.example.com" || r.Path != "/same" {
			t.Fatalf("%+v %v", r, err)
		}
		// Case and a trailing dot are the same name.
		r, err = tlsGet(openTunnel(t, f, "cdn.example.com:443"), &tls.Config{ServerName: "CDN.Example.com", RootCAs: roots}, "/case")
		if err != nil || r.Path != "/case" {
			t.Fatalf("CDN.Example.com: %+v %v", r, err)
		}
	})
	t.Run("another name", func(t *testing.T) {
		_, err := tlsGet(openTunnel(t, f, "cdn.example.com:443"), verified("www.example.com"), "/fronted")
		if err == nil || !strings.Contains(err.Error(), "access denied") {
			t.Fatalf("www.example.com through cdn.example.com: %v; want the handshake refused", err)
		}
		refused(t, "cdn.example.com", 443,
			"the TLS server name www.example.com does not match the CONNECT host cdn.example.com and is not on the allowlist")
	})
	t.Run("a name listed on another port only", func(t *testing.T) {
		// git.example.com is listed for port 22: a tunnel to 443 may not carry it.
		if err := f.proxy.AllowOnce("git.example.com:22"); err != nil {
			t.Fatal(err)
		}
		_, err := tlsGet(openTunnel(t, f, "cdn.example.com:443"), &tls.Config{ServerName: "git.example.com", InsecureSkipVerify: true}, "/port")
		if err == nil || !strings.Contains(err.Error(), "access denied") {
			t.Fatalf("git.example.com through cdn.example.com:443: %v; want the handshake refused", err)
		}
		refused(t, "cdn.example.com", 443, "the TLS server name git.example.com does not match the CONNECT host")
	})
	t.Run("a name listed separately", func(t *testing.T) {
		// *.allowed.test is on the checker's list.
		r, err := tlsGet(openTunnel(t, f, "cdn.example.com:443"), &tls.Config{ServerName: "api.allowed.test", InsecureSkipVerify: true}, "/wild")
		if err != nil || r.Path != "/wild" {
			t.Fatalf("api.allowed.test: %+v %v", r, err)
		}
		// And once www.example.com is allowed, it may be fronted too: it could be reached directly.
		if err := f.proxy.AllowOnce("www.example.com"); err != nil {
			t.Fatal(err)
		}
		r, err = tlsGet(openTunnel(t, f, "cdn.example.com:443"), verified("www.example.com"), "/once")
		if err != nil || r.Host != "www.example.com" {
			t.Fatalf("www.example.com after AllowOnce: %+v %v", r, err)
		}
	})
	t.Run("no server name", func(t *testing.T) {
		r, err := tlsGet(openTunnel(t, f, "cdn.example.com:443"), &tls.Config{InsecureSkipVerify: true}, "/nosni")
		if err != nil || r.Path != "/nosni" {
			t.Fatalf("%+v %v", r, err)
		}
	})
	t.Run("CONNECT to a listed address", func(t *testing.T) {
		if err := f.proxy.AllowOnce(far); err != nil {
			t.Fatal(err)
		}
		target := net.JoinHostPort(far, "443")
		r, err := tlsGet(openTunnel(t, f, target), &tls.Config{ServerName: "allowed.test", InsecureSkipVerify: true}, "/ip")
		if err != nil || r.Path != "/ip" {
			t.Fatalf("allowed.test through %s: %+v %v", far, r, err)
		}
		if _, err := tlsGet(openTunnel(t, f, target), verified("unlisted.example.com"), "/"); err == nil {
			t.Fatalf("unlisted.example.com through %s was not refused", far)
		}
		refused(t, far, 443, "the TLS server name unlisted.example.com does not match the CONNECT host "+far)
	})
	t.Run("a ClientHello a byte at a time", func(t *testing.T) {
		small := func(name string) *tls.Config {
			// One key share keeps the ClientHello a few hundred bytes long.
			return &tls.Config{ServerName: name, RootCAs: roots, CurvePreferences: []tls.CurveID{tls.X25519}}
		}
		r, err := tlsGet(&trickleConn{Conn: openTunnel(t, f, "cdn.example.com:443")}, small("cdn.example.com"), "/trickle")
		if err != nil || r.Path != "/trickle" {
			t.Fatalf("%+v %v", r, err)
		}
		if _, err := tlsGet(&trickleConn{Conn: openTunnel(t, f, "cdn.example.com:443")}, small("unlisted.example.com"), "/"); err == nil {
			t.Fatal("unlisted.example.com a byte at a time was not refused")
		}
		refused(t, "cdn.example.com", 443, "the TLS server name unlisted.example.com does not match")
	})
	// Through the test host's echo port: what the upstream got comes back.
	t.Run("the bytes forwarded are the bytes sent", func(t *testing.T) {
		conn := openTunnel(t, f, "allowed.test:7")
		sent := append(egress.ClientHelloForTest("allowed.test"), "and what follows"...)
		writeBytewise(t, conn, sent)
		got := make([]byte, len(sent))
		if _, err := io.ReadFull(conn, got); err != nil || !bytes.Equal(got, sent) {
			t.Fatalf("echoed %q, %v; want exactly what was sent", got, err)
		}
	})
	t.Run("a refused ClientHello never reaches the upstream", func(t *testing.T) {
		conn := openTunnel(t, f, "allowed.test:7")
		writeBytewise(t, conn, egress.ClientHelloForTest("evil.test"))
		if got, err := io.ReadAll(conn); !bytes.Equal(got, accessDenied) {
			t.Fatalf("read %q, %v; want the access_denied alert and nothing echoed", got, err)
		}
		refused(t, "allowed.test", 7, "evil.test does not match the CONNECT host allowed.test")
	})
	t.Run("a ClientHello sent with the CONNECT", func(t *testing.T) {
		for _, tt := range []struct {
			sni   string
			allow bool
		}{{"allowed.test", true}, {"evil.test", false}} {
			conn := dialProxy(t, f)
			_ = conn.SetDeadline(time.Now().Add(time.Minute))
			hello := egress.ClientHelloForTest(tt.sni)
			if _, err := conn.Write(append([]byte("CONNECT allowed.test:7 HTTP/1.1\r\nHost: allowed.test:7\r\n\r\n"), hello...)); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("CONNECT: %v", err)
			}
			want := accessDenied
			if tt.allow {
				want = hello
			}
			got := make([]byte, len(want))
			if _, err := io.ReadFull(br, got); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: read %q, %v; want %q", tt.sni, got, err, want)
			}
			if !tt.allow {
				refused(t, "allowed.test", 7, "evil.test does not match")
			}
		}
	})
	t.Run("never a name", func(t *testing.T) {
		for _, tt := range []struct{ sni, detail string }{
			{"198.51.100.9", "is an IP address"},
			{"127.0.0.1", "loopback"},
			{"localhost", "localhost is loopback"},
			{"metadata.google.internal", "cloud instance metadata"},
			{"allowed.test\x00", "is not a valid host name"},
		} {
			conn := openTunnel(t, f, "allowed.test:7")
			if _, err := conn.Write(egress.ClientHelloForTest(tt.sni)); err != nil {
				t.Fatal(err)
			}
			if got, err := io.ReadAll(conn); !bytes.Equal(got, accessDenied) {
				t.Errorf("%q: read %q, %v; want the access_denied alert", tt.sni, got, err)
			}
			refused(t, "allowed.test", 7, tt.detail)
		}
	})
	t.Run("not a ClientHello", func(t *testing.T) {
		conn := openTunnel(t, f, "allowed.test:7")
		// A handshake record holding a ServerHello.
		if _, err := conn.Write([]byte{22, 3, 3, 0, 4, 2, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(conn); !bytes.Equal(got, accessDenied) {
			t.Fatalf("read %q, %v; want the access_denied alert", got, err)
		}
		refused(t, "allowed.test", 7, "not a ClientHello")
	})
	t.Run("not TLS", func(t *testing.T) {
		conn := openTunnel(t, f, "allowed.test:7")
		writeBytewise(t, conn, []byte("plain text\n"))
		got := make([]byte, len("plain text\n"))
		if _, err := io.ReadFull(conn, got); err != nil || string(got) != "plain text\n" {
			t.Fatalf("echoed %q, %v", got, err)
		}
	})
	t.Run("the server speaks first", func(t *testing.T) {
		conn := openTunnel(t, f, "allowed.test:25")
		br := bufio.NewReader(conn)
		// The client sends nothing until it has the greeting.
		if line, err := br.ReadString('\n'); err != nil || line != "220 test host ready\r\n" {
			t.Fatalf("greeting %q, %v", line, err)
		}
		fmt.Fprintf(conn, "EHLO sandbox\r\n")
		if line, err := br.ReadString('\n'); err != nil || line != "250 EHLO sandbox\r\n" {
			t.Fatalf("reply %q, %v", line, err)
		}
	})
	if n := len(f.sniRefusals()); n != seen {
		t.Errorf("%d sni_mismatch decisions; the subtests expected %d", n, seen)
	}
}

// TestProxyConnectServerNameTimeout: a tunnel that starts a ClientHello and does not finish it
// within DialTimeout is refused, and nothing of it is forwarded.
func TestProxyConnectServerNameTimeout(t *testing.T) {
	f := newProxyFixture(t, egress.ModeAllowlist, egress.ProxyOptions{DialTimeout: 300 * time.Millisecond})
	conn := openTunnel(t, f, "allowed.test:7")
	if _, err := conn.Write(egress.ClientHelloForTest("allowed.test")[:20]); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(conn); !bytes.Equal(got, accessDenied) {
		t.Fatalf("read %q, %v; want the access_denied alert and nothing echoed", got, err)
	}
	if got := f.sniRefusals(); len(got) != 1 || !strings.Contains(got[0].Detail, "did not come within 300ms") {
		t.Errorf("decisions %+v; want one refusal for the unfinished ClientHello", got)
	}
}

// TestProxyConnectServerNameOpenMode: in open mode any server name goes, but one that is never
// allowed.
func TestProxyConnectServerNameOpenMode(t *testing.T) {
	f := newProxyFixture(t, egress.ModeOpen, egress.ProxyOptions{})
	for _, tt := range []struct {
		sni   string
		allow bool
	}{
		{"allowed.test", true},
		{"other.test", true},
		{"198.51.100.9", true},
		{"localhost", false},
		{"x.localhost", false},
		{"127.0.0.1", false},
		{"169.254.169.254", false},
		{"instance-data.ec2.internal", false},
	} {
		conn := openTunnel(t, f, "allowed.test:7")
		hello := egress.ClientHelloForTest(tt.sni)
		if _, err := conn.Write(hello); err != nil {
			t.Fatal(err)
		}
		want := accessDenied
		if tt.allow {
			want = hello
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(conn, got); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: read %q, %v; want %q", tt.sni, got, err, want)
		}
		conn.Close()
	}
	if got := f.sniRefusals(); len(got) != 5 {
		t.Errorf("%d refusals, want 5: %+v", len(got), got)
	}
}
