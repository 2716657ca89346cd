package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// ClientHelloForTest builds a ClientHello record by hand, naming each of names as a host_name
// in its server_name extension (none: no extension), for the proxy tests outside the package.
var ClientHelloForTest = buildClientHello

// buildClientHello builds a minimal ClientHello record that crypto/tls reads: TLS 1.2 and 1.3
// offered, one cipher suite, and a server_name extension listing names (none without names).
func buildClientHello(names ...string) []byte {
	exts := [][]byte{ext(43, vec8(u16(0x0304), u16(0x0303)))} // supported_versions
	if len(names) > 0 {
		var entries [][]byte
		for _, n := range names {
			entries = append(entries, hostName(n))
		}
		exts = append(exts, ext(extensionServerName, vec16(entries...)))
	}
	return record(recordTypeHandshake, handshake(handshakeTypeClientHello, helloBody(exts...)))
}

func u16(v int) []byte { return []byte{byte(v >> 8), byte(v)} }

func vec8(parts ...[]byte) []byte {
	b := bytes.Join(parts, nil)
	return append([]byte{byte(len(b))}, b...)
}

func vec16(parts ...[]byte) []byte {
	b := bytes.Join(parts, nil)
	return append(u16(len(b)), b...)
}

func ext(typ int, data []byte) []byte { return append(u16(typ), vec16(data)...) }

func hostName(n string) []byte { return append([]byte{serverNameTypeHostName}, vec16([]byte(n))...) }

func record(typ byte, body []byte) []byte {
	return append([]byte{typ, 3, 1, byte(len(body) >> 8), byte(len(body))}, body...)
}

func handshake(typ byte, body []byte) []byte {
	return append([]byte{typ, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
}

// helloBody is a ClientHello's body; with no extensions at all when exts is nil.
func helloBody(exts ...[]byte) []byte {
	b := append(u16(0x0303), make([]byte, 32)...) // legacy_version, random
	b = append(b, vec8(bytes.Repeat([]byte{7}, 32))...)
	b = append(b, vec16(u16(0x1301), u16(0xc02f))...)
	b = append(b, vec8([]byte{0})...)
	if exts != nil {
		b = append(b, vec16(exts...)...)
	}
	return b
}

// refragment re-frames the handshake bytes of raw (records of any type but alert) into
// handshake records of at most size bytes each.
func refragment(tb testing.TB, raw []byte, size int) []byte {
	tb.Helper()
	var hs []byte
	for len(raw) > 0 {
		if len(raw) < recordHeaderLen {
			tb.Fatalf("refragment: a truncated record header")
		}
		n := int(raw[3])<<8 | int(raw[4])
		if raw[0] == recordTypeHandshake {
			hs = append(hs, raw[recordHeaderLen:recordHeaderLen+n]...)
		}
		raw = raw[recordHeaderLen+n:]
	}
	var out []byte
	for len(hs) > 0 {
		k := min(size, len(hs))
		out = append(out, record(recordTypeHandshake, hs[:k])...)
		hs = hs[k:]
	}
	return out
}

// memConn is a net.Conn in memory: reads come from in (end of stream when nil), writes go to
// out.
type memConn struct {
	in  io.Reader
	out bytes.Buffer
}

func (c *memConn) Read(b []byte) (int, error) {
	if c.in == nil {
		return 0, io.EOF
	}
	return c.in.Read(b)
}
func (c *memConn) Write(b []byte) (int, error)      { return c.out.Write(b) }
func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// goClientHello returns the first flight of a crypto/tls client with cfg.
func goClientHello(tb testing.TB, cfg *tls.Config) []byte {
	tb.Helper()
	c := &memConn{}
	if err := tls.Client(c, cfg).Handshake(); err == nil {
		tb.Fatal("a handshake with no server succeeded")
	}
	if c.out.Len() == 0 {
		tb.Fatalf("no ClientHello for %+v", cfg)
	}
	return bytes.Clone(c.out.Bytes())
}

var errStop = errors.New("stop")

// stdServerName is crypto/tls's reading of raw as the start of a TLS connection: the server
// name it finds, and whether it got as far as a ClientHello it accepts.
func stdServerName(raw []byte) (name string, accepted bool) {
	cfg := &tls.Config{GetConfigForClient: func(hi *tls.ClientHelloInfo) (*tls.Config, error) {
		name, accepted = hi.ServerName, true
		return nil, errStop
	}}
	_ = tls.Server(&memConn{in: bytes.NewReader(raw)}, cfg).Handshake()
	return name, accepted
}

// goHellos are ClientHellos of crypto/tls clients: various server names, versions and
// extensions, and the server name each one should carry.
func goHellos(tb testing.TB) (hellos [][]byte, names []string) {
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 57) + ".test"
	for _, tt := range []struct {
		cfg  *tls.Config
		want string
	}{
		{&tls.Config{ServerName: "allowed.test"}, "allowed.test"},
		{&tls.Config{ServerName: "api.example.org", MaxVersion: tls.VersionTLS12}, "api.example.org"},
		{&tls.Config{ServerName: "Mixed.Case.Example", NextProtos: []string{"h2", "http/1.1"}}, "Mixed.Case.Example"},
		{&tls.Config{ServerName: "xn--bcher-kva.example", MinVersion: tls.VersionTLS13}, "xn--bcher-kva.example"},
		{&tls.Config{ServerName: "trailing.example."}, "trailing.example"}, // crypto/tls drops the dot
		{&tls.Config{ServerName: long}, long},
		{&tls.Config{ServerName: "x", CurvePreferences: []tls.CurveID{tls.X25519}}, "x"},
		{&tls.Config{InsecureSkipVerify: true}, ""},                             // no server name: no extension
		{&tls.Config{ServerName: "198.51.100.7", InsecureSkipVerify: true}, ""}, // an address is never sent
	} {
		hellos = append(hellos, goClientHello(tb, tt.cfg))
		names = append(names, tt.want)
	}
	return hellos, names
}

func TestParseClientHello(t *testing.T) {
	hellos, names := goHellos(t)
	for i, raw := range hellos {
		want := names[i]
		if std, ok := stdServerName(raw); !ok || std != want {
			t.Fatalf("hello %d: crypto/tls reads %q (accepted %v); want %q", i, std, ok, want)
		}
		for _, variant := range []struct {
			name string
			raw  []byte
		}{
			{"as sent", raw},
			{"1-byte records", refragment(t, raw, 1)},
			{"3-byte records", refragment(t, raw, 3)},
			{"100-byte records", refragment(t, raw, 100)},
			{"after a warning alert", append(record(recordTypeAlert, []byte{1, 112}), raw...)},
			{"alerts between fragments", interleaveAlerts(t, refragment(t, raw, 50))},
			{"with bytes after it", append(bytes.Clone(raw), record(23, []byte("early data"))...)},
		} {
			got, err := parseClientHello(variant.raw)
			if err != nil || got != want {
				t.Errorf("hello %d (%s): %q, %v; want %q", i, variant.name, got, err, want)
			}
			if std, ok := stdServerName(variant.raw); ok && std != got {
				t.Errorf("hello %d (%s): %q, but crypto/tls reads %q", i, variant.name, got, std)
			}
		}
		// Every prefix is incomplete, never a verdict.
		for n := range len(raw) {
			if _, err := parseClientHello(raw[:n]); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("hello %d cut to %d of %d bytes: %v; want io.ErrUnexpectedEOF", i, n, len(raw), err)
			}
		}
	}
}

func interleaveAlerts(tb testing.TB, raw []byte) []byte {
	tb.Helper()
	var out []byte
	for len(raw) > 0 {
		n := recordHeaderLen + (int(raw[3])<<8 | int(raw[4]))
		out = append(out, raw[:n]...)
		out = append(out, record(recordTypeAlert, []byte{1, 0})...)
		raw = raw[n:]
	}
	return out
}

func TestParseClientHelloHandBuilt(t *testing.T) {
	big := strings.Repeat("x", 63000)
	for _, tt := range []struct {
		name string
		raw  []byte
		want string // the name, or the start of the error
	}{
		{"one name", buildClientHello("allowed.test"), "allowed.test"},
		{"no extension", buildClientHello(), ""},
		{"no extensions at all", record(22, handshake(1, helloBody())), ""},
		{"trailing dot", buildClientHello("allowed.test."), "allowed.test."},
		{"an address", buildClientHello("127.0.0.1"), "127.0.0.1"},
		{"another name type, then a host name",
			record(22, handshake(1, helloBody(ext(0, vec16([]byte{1, 0, 1, 'z'}, hostName("allowed.test")))))), "allowed.test"},
		{"only another name type", record(22, handshake(1, helloBody(ext(0, vec16([]byte{1, 0, 1, 'z'}))))), ""},

		{"two host names", buildClientHello("allowed.test", "other.test"), "the TLS ClientHello names two servers"},
		{"two server_name extensions",
			record(22, handshake(1, helloBody(ext(0, vec16(hostName("a.test"))), ext(0, vec16(hostName("b.test")))))),
			"the TLS ClientHello has two server_name extensions"},
		{"an empty name", record(22, handshake(1, helloBody(ext(0, vec16(hostName("")))))), "the TLS ClientHello's server_name"},
		{"an empty name list", record(22, handshake(1, helloBody(ext(0, vec16())))), "the TLS ClientHello's server_name"},
		{"bytes after the name list",
			record(22, handshake(1, helloBody(ext(0, append(vec16(hostName("a.test")), 0))))), "the TLS ClientHello's server_name"},
		{"a name longer than its list", record(22, handshake(1, helloBody(ext(0, []byte{0, 3, 0, 0, 9, 'a'})))), "the TLS ClientHello's server_name"},
		{"extensions longer than the message", record(22, handshake(1, append(helloBody(), 0, 9, 0))), "the TLS ClientHello's extensions"},
		{"bytes after the extensions", record(22, handshake(1, append(helloBody(ext(43, nil)), 1))), "the TLS ClientHello's extensions"},
		{"truncated before the extensions", record(22, handshake(1, helloBody()[:40])), "the TLS ClientHello is truncated"},
		{"a ServerHello", record(22, handshake(2, helloBody())), "the first TLS handshake message is of type 2"},
		{"application data first", append(record(23, []byte("x")), buildClientHello("a.test")...), "a TLS record of type 23"},
		{"change_cipher_spec first", append(record(20, []byte{1}), buildClientHello("a.test")...), "a TLS record of type 20"},
		{"an empty handshake record", append(record(22, nil), buildClientHello("a.test")...), "an empty TLS handshake record"},
		{"a record over 16 KiB", []byte{22, 3, 1, 0x40, 0x01}, "a TLS record of 16385 bytes"},
		{"a message over 64 KiB", record(22, []byte{1, 1, 0, 1}), "the TLS ClientHello is longer than 64 KiB"},
		{"a message under 64 KiB in records over it", refragment(t, buildClientHello(big[:63000]), 100), "the TLS ClientHello is longer than 64 KiB"},
		{"truncated", buildClientHello("a.test")[:20], io.ErrUnexpectedEOF.Error()},
	} {
		got, err := parseClientHello(tt.raw)
		if err != nil {
			got = err.Error()
		}
		if !strings.HasPrefix(got, tt.want) || tt.want == "" && got != "" {
			t.Errorf("%s: %.80q; want %q", tt.name, got, tt.want)
		}
		// The one place the parser is stricter than crypto/tls: its 64 KiB counts record
		// headers too.
		if std, ok := stdServerName(tt.raw); ok && !errors.Is(err, errHelloTooLarge) && (err != nil || std != got) {
			t.Errorf("%s: %.80q, but crypto/tls accepts it and reads %.80q", tt.name, got, std)
		}
	}
}

// TestHelloReaderReadsAsNeeded feeds the ClientHellos a byte at a time: the result is the same,
// and what was read is exactly a prefix of what was sent, so it can be forwarded as it is.
func TestHelloReaderReadsAsNeeded(t *testing.T) {
	hellos, names := goHellos(t)
	for i, raw := range hellos {
		for _, sent := range [][]byte{raw, refragment(t, raw, 1), append(bytes.Clone(raw), "trailing"...)} {
			src := bytes.NewReader(sent)
			r := helloReader{buf: make([]byte, 0, 1), read: func(b []byte) (int, error) { return src.Read(b[:1]) }}
			msg, err := r.clientHello()
			if err != nil {
				t.Fatalf("hello %d: %v", i, err)
			}
			got, err := serverName(msg)
			if err != nil || got != names[i] {
				t.Errorf("hello %d: %q, %v; want %q", i, got, err, names[i])
			}
			if !bytes.HasPrefix(sent, r.buf) {
				t.Errorf("hello %d: read %d bytes that are not what was sent", i, len(r.buf))
			}
		}
	}
}

func TestCheckServerName(t *testing.T) {
	list, err := ParseAllowlist("allowed.test, *.wild.test, 198.51.100.7")
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := ParseAllowlist("tenant.test")
	if err != nil {
		t.Fatal(err)
	}
	proxy := func(mode Mode) *Proxy {
		p, err := NewProxy(New(Options{Mode: mode, Allowlist: list}), ProxyOptions{Tenant: func() *Allowlist { return tenant }})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.AllowOnce("once.test"); err != nil {
			t.Fatal(err)
		}
		return p
	}
	allowlist, open := proxy(ModeAllowlist), proxy(ModeOpen)
	for _, tt := range []struct {
		connect, sni  string
		list, openOK  bool
		detailContain string
	}{
		{"allowed.test:443", "", true, true, ""},
		{"allowed.test:443", "allowed.test", true, true, ""},
		{"allowed.test:443", "ALLOWED.test.", true, true, ""},
		{"xn--bcher-kva.wild.test:443", "bücher.wild.test", true, true, ""},
		{"a.wild.test:443", "b.wild.test", true, true, ""},
		{"allowed.test:443", "deep.a.wild.test", true, true, ""},
		{"allowed.test:443", "tenant.test", true, true, ""},
		{"allowed.test:443", "once.test", true, true, ""},
		{"198.51.100.7:443", "allowed.test", true, true, ""},
		{"allowed.test:443", "other.test", false, true,
			"the TLS server name other.test does not match the CONNECT host allowed.test and is not on the allowlist"},
		{"198.51.100.7:443", "other.test", false, true, "does not match the CONNECT host 198.51.100.7"},
		{"allowed.test:443", "wild.test", false, true, "wild.test does not match"},
		{"allowed.test:443", "198.51.100.7", false, true, "is an IP address"},
		{"198.51.100.7:443", "198.51.100.7", false, true, "is an IP address"},
		{"allowed.test:443", "127.0.0.1", false, false, "loopback"},
		{"allowed.test:443", "0x7f.1", false, false, "127.0.0.1, loopback"},
		{"allowed.test:443", "169.254.169.254", false, false, "never allowed"},
		{"allowed.test:443", "localhost", false, false, "localhost is loopback"},
		{"allowed.test:443", "api.localhost.", false, false, "api.localhost is loopback"},
		{"allowed.test:443", "metadata.google.internal", false, false, "cloud instance metadata"},
		{"allowed.test:443", "allowed.test\x00.evil", false, false, "is not a valid host name"},
		{"allowed.test:443", "a b", false, false, "is not a valid host name"},
	} {
		target, err := ParseTarget(tt.connect)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			p    *Proxy
			want bool
		}{{allowlist, tt.list}, {open, tt.openOK}} {
			d, ok := c.p.checkServerName(target, tt.sni)
			if ok != c.want {
				t.Errorf("%s: CONNECT %s, server name %q: %v (%s); want %v", c.p.checker.mode, tt.connect, tt.sni, ok, d.Detail, c.want)
				continue
			}
			if ok {
				continue
			}
			if d.Allow || d.Reason != ReasonSNIMismatch || d.Host != target.Host.String() || d.Port != 443 || d.Addrs != nil ||
				!strings.Contains(d.Detail, tt.detailContain) {
				t.Errorf("%s: CONNECT %s, server name %q: %+v; want a %s refusal saying %q", c.p.checker.mode, tt.connect, tt.sni, d, ReasonSNIMismatch, tt.detailContain)
			}
		}
	}
}

// TestServerNameIsNotResolved: judging a server name looks nothing up.
func TestServerNameIsNotResolved(t *testing.T) {
	list, err := ParseAllowlist("allowed.test, listed.test")
	if err != nil {
		t.Fatal(err)
	}
	lookups := 0
	res := resolverFunc(func(context.Context, string, string) ([]netip.Addr, error) {
		lookups++
		return []netip.Addr{netip.MustParseAddr("198.51.100.1")}, nil
	})
	p, err := NewProxy(New(Options{Allowlist: list, Resolver: res}), ProxyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	target, _ := ParseTarget("allowed.test:443")
	for _, sni := range []string{"listed.test", "unlisted.test"} {
		p.checkServerName(target, sni)
	}
	if lookups != 0 {
		t.Errorf("%d lookups for server names", lookups)
	}
}

type resolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}

// FuzzClientHello checks the ClientHello parser: it never panics, never reads past
// maxHelloBytes, gives the same answer whether the bytes come at once or one at a time (and
// then has read exactly a prefix of them), and on every input crypto/tls accepts as a
// ClientHello it accepts it too and finds the same server name.
func FuzzClientHello(f *testing.F) {
	hellos, _ := goHellos(f)
	for _, raw := range hellos {
		f.Add(raw)
		f.Add(refragment(f, raw, 64))
		f.Add(raw[:len(raw)/2])
		f.Add(raw[:7])
		if len(raw) < 600 {
			// Small seeds keep the fuzzer fast; the TLS 1.3 ones with post-quantum key
			// shares are near 1.5 KiB, six times that in 1-byte records.
			f.Add(refragment(f, raw, 1))
		}
	}
	for _, raw := range [][]byte{
		buildClientHello("allowed.test"), buildClientHello(), buildClientHello("a.test", "b.test"),
		buildClientHello("allowed.test."), buildClientHello("127.0.0.1"),
		record(22, handshake(1, helloBody())),
		record(22, handshake(1, helloBody(ext(0, vec16([]byte{1, 0, 1, 'z'}, hostName("a.test")))))),
		append(record(21, []byte{1, 112}), buildClientHello("a.test")...),
		append(record(20, []byte{1}), buildClientHello("a.test")...),
		{22, 3, 1, 0x40, 0x01},
	} {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		name, err := parseClientHello(raw)

		src := bytes.NewReader(raw)
		r := helloReader{read: func(b []byte) (int, error) { return src.Read(b[:1]) }}
		msg, err2 := r.clientHello()
		name2 := ""
		if err2 == nil {
			name2, err2 = serverName(msg)
		}
		if name != name2 || (err == nil) != (err2 == nil) {
			t.Fatalf("at once: %q, %v; a byte at a time: %q, %v", name, err, name2, err2)
		}
		if len(r.buf) > maxHelloBytes || !bytes.HasPrefix(raw, r.buf) {
			t.Fatalf("read %d bytes, not a prefix of the input, or more than %d", len(r.buf), maxHelloBytes)
		}
		var he helloError
		if err != nil && !errors.As(err, &he) && !errors.Is(err, errHelloTooLarge) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("an error of no known kind: %v", err)
		}

		std, ok := stdServerName(raw)
		if !ok || errors.Is(err, errHelloTooLarge) {
			return
		}
		if err != nil {
			t.Fatalf("crypto/tls accepts a ClientHello naming %q; the parser refuses it: %v", std, err)
		}
		if name != std {
			t.Fatalf("the parser reads the server name %q; crypto/tls reads %q", name, std)
		}
	})
}

func BenchmarkClientHello(b *testing.B) {
	raw := goClientHello(b, &tls.Config{ServerName: "registry.npmjs.org"})
	for _, tt := range []struct {
		name string
		raw  []byte
	}{{"one record", raw}, {"1-byte records", refragment(b, raw, 1)}} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tt.raw)))
			for b.Loop() {
				if _, err := parseClientHello(tt.raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
