// Package testnet makes test hosts for Warden's network tests: a server at a documentation
// address inside a network namespace of its own, reached from the test over a veth pair. Loopback
// and private addresses can never be allowed by the egress rules, so they cannot stand in; a
// documentation address on a link the test made sends nothing anywhere else.
//
// The server is the test binary itself, started again under "ip netns exec": a package's
// TestMain calls ServeIfHost first, and NewHost starts it.
package testnet

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hostEnv, when set to an address, makes the test binary a test host serving at it.
const hostEnv = "WARDEN_TESTNET_HOST"

// ServeIfHost returns at once in a test binary started normally. In one NewHost started, it
// calls serve with the host's address (serve starts its servers and returns), says it is
// ready, keeps serving until its standard input closes (when the test ends), and exits.
func ServeIfHost(serve func(addr string) error) {
	addr := os.Getenv(hostEnv)
	if addr == "" {
		return
	}
	if err := serve(addr); err != nil {
		fmt.Fprintln(os.Stderr, "test host:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

var seq atomic.Int32

// NewHost starts a test host at an address of a free /30 among the first blocks /30s of in
// (a /24 of documentation addresses), and removes it all when tb ends. The search starts at
// a block the process id chooses, so that test binaries running at once do not collide; tag
// (two letters) names the namespace and links. It skips without root or ip(8); CI has both.
func NewHost(tb testing.TB, in netip.Prefix, blocks int, tag string) netip.Addr {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root to make a network namespace for the test host (CI runs as root)")
	}
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		tb.Skip("needs ip(8) (iproute2) to make a network namespace for the test host")
	}
	ip := func(args ...string) {
		tb.Helper()
		if out, err := exec.Command(ipPath, args...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	n := seq.Add(1)
	ns := fmt.Sprintf("warden-%s-%d-%d", tag, os.Getpid(), n)
	near := fmt.Sprintf("%s%xh%d", tag, os.Getpid(), n) // at most 15 bytes
	far := fmt.Sprintf("%s%xn%d", tag, os.Getpid(), n)
	nearIP, farIP := freeBlock(tb, ipPath, in, blocks, os.Getpid()+int(n))

	ip("netns", "add", ns)
	tb.Cleanup(func() { _ = exec.Command(ipPath, "netns", "del", ns).Run() })
	ip("link", "add", near, "type", "veth", "peer", "name", far, "netns", ns)
	tb.Cleanup(func() { _ = exec.Command(ipPath, "link", "del", near).Run() })
	ip("addr", "add", nearIP.String()+"/30", "dev", near)
	ip("link", "set", near, "up")
	ip("-n", ns, "addr", "add", farIP.String()+"/30", "dev", far)
	ip("-n", ns, "link", "set", far, "up")
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
	return farIP
}

// freeBlock picks a /30 among the first blocks of in that no address or route here uses,
// starting at block start (mod blocks).
func freeBlock(tb testing.TB, ipPath string, in netip.Prefix, blocks, start int) (near, far netip.Addr) {
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
	base := in.Masked().Addr().As4()
	for i := range blocks {
		k := (start + i) % blocks
		b := base
		b[3] = byte(4 * k)
		block := netip.PrefixFrom(netip.AddrFrom4(b), 30)
		free := true
		for _, p := range used {
			if p.Bits() > 0 && p.Overlaps(block) {
				free = false
				break
			}
		}
		if free {
			nearB, farB := b, b
			nearB[3], farB[3] = b[3]+2, b[3]+1
			return netip.AddrFrom4(nearB), netip.AddrFrom4(farB)
		}
	}
	tb.Fatalf("no free /30 in %s", in)
	return
}

// ServeHello serves HTTP on addr:80, answering every request "hello from the test host\n":
// a serve function for ServeIfHost, for tests that only need to know they got through.
func ServeHello(addr string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "80"))
	if err != nil {
		return err
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the test host\n")
	}))
	return nil
}

// caEnv carries the test hosts' certificate authority (its certificate and key, PEM) from the
// test to the hosts it starts.
const caEnv = "WARDEN_TESTNET_CA"

// UseTLS makes a certificate authority for the test hosts this process starts from now on
// (call it from TestMain, before any NewHost) and returns a pool that trusts it: HostTLS, in
// a host, issues the host's certificate from it. Its key is a test's, in the environment of
// the test binary and its hosts only.
func UseTLS() (*x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Warden test hosts' CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	if err := os.Setenv(caEnv, string(certPEM)+string(keyPEM)); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool, nil
}

// HostTLS returns, in a test host, a TLS configuration with a certificate for addr issued by
// the CA the test made with UseTLS.
func HostTLS(addr string) (*tls.Config, error) {
	rest := []byte(os.Getenv(caEnv))
	var caCert *x509.Certificate
	var caKey *ecdsa.PrivateKey
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		var err error
		switch b.Type {
		case "CERTIFICATE":
			caCert, err = x509.ParseCertificate(b.Bytes)
		case "EC PRIVATE KEY":
			caKey, err = x509.ParseECPrivateKey(b.Bytes)
		}
		if err != nil {
			return nil, err
		}
	}
	if caCert == nil || caKey == nil {
		return nil, fmt.Errorf("no test CA in %s: call testnet.UseTLS in TestMain", caEnv)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: addr},
		NotBefore: caCert.NotBefore, NotAfter: caCert.NotAfter,
		IPAddresses: []net.IP{net.ParseIP(addr)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, nil
}

// A Received is what a recording test host (ServeHelloAndRecord) was sent: one request.
type Received struct {
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Query  string      `json:"query"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
}

// recordEnv names the directory where recording test hosts write what they receive.
const recordEnv = "WARDEN_TESTNET_RECORD"

// Record has the test hosts this process starts from now on write what their TLS servers
// receive under dir (call it from TestMain, before any NewHost); Recorded reads it back.
func Record(dir string) error { return os.Setenv(recordEnv, dir) }

// Recorded returns what the recording test host at addr has received so far, in order.
func Recorded(addr string) ([]Received, error) {
	b, err := os.ReadFile(filepath.Join(os.Getenv(recordEnv), addr+".jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Received
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var r Received
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// ServeHelloAndRecord is ServeHello, and HTTPS on addr:443 (HostTLS's certificate) that
// writes each request it receives to the directory Record named and answers how many bytes
// of body it read, or, at /echo, the Authorization header it was sent (as a careless API
// might, which the proxy must not let hand a protected value back into the sandbox).
func ServeHelloAndRecord(addr string) error {
	if err := ServeHello(addr); err != nil {
		return err
	}
	cfg, err := HostTLS(addr)
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", net.JoinHostPort(addr, "443"), cfg)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	file := filepath.Join(os.Getenv(recordEnv), addr+".jsonl")
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		line, _ := json.Marshal(Received{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header, Body: string(body)})
		mu.Lock()
		f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			_, err = f.Write(append(line, '\n'))
			f.Close()
		}
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if r.URL.Path == "/echo" {
			fmt.Fprintf(w, "the test host was sent Authorization: %s\n", r.Header.Get("Authorization"))
			return
		}
		fmt.Fprintf(w, "the test host read %d bytes of body\n", len(body))
	}))
	return nil
}
