package egress_test

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"testing"

	"github.com/wardenhq/warden/internal/testnet"
)

// testHostRoots trusts the certificate of the test host's HTTPS on port 8443.
var testHostRoots *x509.CertPool

func TestMain(m *testing.M) {
	testnet.ServeIfHost(serveTestHost)
	var err error
	if testHostRoots, err = testnet.UseTLS(); err != nil {
		log.Fatal(err)
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
	// Query, Header and Body are what the request carried, and Digest the SHA-256 (hex) of its
	// path, query, Authorization header and body, joined by newlines: what the host received,
	// whatever the proxy does to the echo on the way back.
	Query  string      `json:"query"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
	Digest string      `json:"digest"`
}

// requestDigest is hostReply.Digest.
func requestDigest(path, query, auth, body string) string {
	sum := sha256.Sum256([]byte(path + "\n" + query + "\n" + auth + "\n" + body))
	return hex.EncodeToString(sum[:])
}

// serveTestHost serves HTTP on addr:80, HTTPS (net/http/httptest's certificate) on
// addr:443 and HTTPS with a certificate for addr (testnet.HostTLS) on addr:8443, an echo of every byte on addr:7, and on addr:25 a server that speaks first, as
// SMTP's does (a greeting, then "250 " and each line it is sent), for as long as the test
// host lives.
func serveTestHost(addr string) error {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(hostReply{Host: r.Host, Method: r.Method, Path: r.URL.Path, Remote: r.RemoteAddr, TLS: r.TLS != nil,
			Query: r.URL.RawQuery, Header: r.Header, Body: string(body),
			Digest: requestDigest(r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), string(body))})
	})
	plain, err := net.Listen("tcp", net.JoinHostPort(addr, "80"))
	if err != nil {
		return err
	}
	tlsLn, err := net.Listen("tcp", net.JoinHostPort(addr, "443"))
	if err != nil {
		return err
	}
	echo, err := net.Listen("tcp", net.JoinHostPort(addr, "7"))
	if err != nil {
		return err
	}
	greet, err := net.Listen("tcp", net.JoinHostPort(addr, "25"))
	if err != nil {
		return err
	}
	own, err := testnet.HostTLS(addr)
	if err != nil {
		return err
	}
	ownLn, err := tls.Listen("tcp", net.JoinHostPort(addr, "8443"), own)
	if err != nil {
		return err
	}
	// The tests hand the host's TLS to clients that do not trust it, on purpose.
	ownSrv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = ownSrv.Serve(ownLn) }()
	go serveConns(echo, func(c net.Conn) { _, _ = io.Copy(c, c) })
	go serveConns(greet, func(c net.Conn) {
		_, _ = io.WriteString(c, "220 test host ready\r\n")
		for sc := bufio.NewScanner(c); sc.Scan(); {
			_, _ = io.WriteString(c, "250 "+sc.Text()+"\r\n")
		}
	})
	go func() { _ = http.Serve(plain, h) }()
	srv := httptest.NewUnstartedServer(h)
	// The proxy's tests cut handshakes short on purpose (a refused server name).
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Listener = tlsLn
	srv.StartTLS()
	return nil
}

func serveConns(ln net.Listener, serve func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			serve(c)
		}()
	}
}

// A testHost is an HTTP server at a documentation address (198.51.100.x) inside a network
// namespace the test made, reached over a veth pair: the one host the proxy tests may reach.
// Loopback can never be allowed, so it cannot stand in.
type testHost struct {
	addr netip.Addr
}

// newTestHost starts the test host in 198.51.100.0/24 (the sandbox's tests use
// 203.0.113.0/24, so the two never collide). It skips when not root or without ip(8).
func newTestHost(tb testing.TB) *testHost {
	tb.Helper()
	return &testHost{addr: testnet.NewHost(tb, netip.MustParsePrefix("198.51.100.0/24"), 64, "we")}
}
