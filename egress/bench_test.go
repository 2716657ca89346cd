package egress_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/wardenhq/warden/egress"
)

// BenchmarkProxy measures what the proxy adds to a request to the test host: the same GET
// directly and through the proxy, over a kept-alive connection (the forward path: check,
// lookup through the test resolver, rewrite, pooled upstream connection) and over a new
// connection each time (the CONNECT path: check, dial, tunnel). The difference between each
// pair is the proxy's cost.
func BenchmarkProxy(b *testing.B) {
	f := newProxyFixture(b, egress.ModeAllowlist, egress.ProxyOptions{})
	direct := net.JoinHostPort(f.host.addr.String(), "80")

	get := func(b *testing.B, c *http.Client, url string) {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %s", url, resp.Status)
		}
	}
	b.Run("keepalive/direct", func(b *testing.B) {
		c := &http.Client{Transport: &http.Transport{Proxy: nil}}
		for b.Loop() {
			get(b, c, "http://"+direct+"/")
		}
	})
	b.Run("keepalive/proxy", func(b *testing.B) {
		c := f.client()
		for b.Loop() {
			get(b, c, "http://allowed.test/")
		}
	})
	// The floor: a bare forward proxy (httputil.ReverseProxy, no check, a fixed address) costs
	// the second HTTP hop and nothing else, so proxy minus bare is Warden's own share.
	b.Run("keepalive/bare", func(b *testing.B) {
		var d net.Dialer
		bare := &httputil.ReverseProxy{
			Rewrite: func(*httputil.ProxyRequest) {},
			Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return d.DialContext(ctx, "tcp", direct)
			}},
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := &http.Server{Handler: bare}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: ln.Addr().String()})}}
		for b.Loop() {
			get(b, c, "http://allowed.test/")
		}
	})

	// One request per connection, written raw so both sides do the same work. The client
	// resets the connection when done (SO_LINGER 0) so that thousands of connections leave no
	// TIME_WAIT behind to slow the next ones down.
	const req = "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
	roundTrip := func(b *testing.B, addr, preface string, responses int) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		_ = conn.(*net.TCPConn).SetLinger(0)
		if _, err := io.WriteString(conn, preface+req); err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(conn)
		for i := range responses {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				b.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("%s", resp.Status)
			}
			if i == responses-1 { // a 200 to CONNECT has no body: the tunnel follows
				_, _ = io.Copy(io.Discard, resp.Body)
			}
		}
	}
	b.Run("newconn/direct", func(b *testing.B) {
		for b.Loop() {
			roundTrip(b, direct, "", 1)
		}
	})
	b.Run("newconn/connect", func(b *testing.B) {
		preface := "CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n"
		for b.Loop() {
			roundTrip(b, f.proxyURL.Host, preface, 2)
		}
	})

	// A tunnel to the test host's echo port that starts with a real ClientHello (crypto/tls's,
	// about 1.5 KiB), sent once the proxy has answered, as clients do: the cost of reading and
	// judging the server name, without a TLS handshake's own cost to hide it.
	hello := clientHelloBytes(b, "allowed.test")
	echoHello := func(b *testing.B, addr string, connect bool) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		_ = conn.(*net.TCPConn).SetLinger(0)
		br := bufio.NewReader(conn)
		if connect {
			if _, err := io.WriteString(conn, "CONNECT allowed.test:7 HTTP/1.1\r\nHost: allowed.test:7\r\n\r\n"); err != nil {
				b.Fatal(err)
			}
			if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("CONNECT: %v", err)
			}
		}
		if _, err := conn.Write(hello); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(br, make([]byte, len(hello))); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("newconn/hello-direct", func(b *testing.B) {
		for b.Loop() {
			echoHello(b, net.JoinHostPort(f.host.addr.String(), "7"), false)
		}
	})
	b.Run("newconn/hello-connect", func(b *testing.B) {
		for b.Loop() {
			echoHello(b, f.proxyURL.Host, true)
		}
	})
}

// clientHelloBytes returns the ClientHello record a crypto/tls client sends for name.
func clientHelloBytes(tb testing.TB, name string) []byte {
	tb.Helper()
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	go func() { _ = tls.Client(c, &tls.Config{ServerName: name}).Handshake() }()
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(s, hdr); err != nil {
		tb.Fatal(err)
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(s, body); err != nil {
		tb.Fatal(err)
	}
	return append(hdr, body...)
}

// BenchmarkCheck measures a decision alone, for a listed name (with the in-memory resolver),
// a refused spelling of the metadata address, an unlisted name, and in open mode a public
// address and a port that is not allowed. The first, third and fourth include the look at this
// host's own addresses (BenchmarkHostAddrs has it alone).
func BenchmarkCheck(b *testing.B) {
	list, err := egress.ParseAllowlist("allowed.test, *.example.org, 203.0.113.0/24")
	if err != nil {
		b.Fatal(err)
	}
	res := newResolver(map[string][]string{"allowed.test": {"198.51.100.1"}})
	c := egress.New(egress.Options{Allowlist: list, Resolver: res})
	open := egress.New(egress.Options{Mode: egress.ModeOpen, Allowlist: list, Resolver: res})
	for _, tt := range []struct {
		c      *egress.Checker
		target string
	}{
		{c, "http://allowed.test/"}, {c, "http://0xa9fea9fe/"}, {c, "https://unlisted.example.com/"},
		{open, "https://8.8.8.8/"}, {open, "8.8.8.8:22"},
	} {
		b.Run(fmt.Sprintf("%s/%q", tt.c.Mode(), tt.target), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = tt.c.Check(context.Background(), tt.target)
			}
		})
	}
}
