package egress_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/wardenhq/warden/egress"
)

// FuzzParseHost checks the normaliser: a host it accepts has one canonical spelling that
// parses back to itself, agrees with the standard library wherever that parses the input,
// and is an address whenever it looks like one. Anything it finds is kept under
// testdata/fuzz/FuzzParseHost as a regression seed.
func FuzzParseHost(f *testing.F) {
	for _, tt := range hostSpellings {
		f.Add(tt.give)
	}
	for _, s := range badHosts {
		f.Add(s)
	}
	for _, s := range refusedSpellings {
		if t, err := egress.ParseTarget(s); err == nil {
			f.Add(t.Host.String())
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := egress.ParseHost(s)
		if err != nil {
			if !errors.Is(err, egress.ErrInvalidHost) {
				t.Fatalf("ParseHost(%q): %v does not wrap ErrInvalidHost", s, err)
			}
			if h.IsValid() {
				t.Fatalf("ParseHost(%q) returned %v with an error", s, h)
			}
			return
		}
		if !h.IsValid() || h.IsAddr() == (h.Name() != "") {
			t.Fatalf("ParseHost(%q) = %#v: want exactly one of name and address", s, h)
		}
		canon := h.String()
		again, err := egress.ParseHost(canon)
		if err != nil || again != h {
			t.Fatalf("ParseHost(%q) = %q, but that parses to %v, %v", s, canon, again, err)
		}
		if h.IsAddr() {
			a := h.Addr()
			if a.Zone() != "" || a.Is4In6() {
				t.Fatalf("ParseHost(%q) = %v: not canonical", s, a)
			}
		} else {
			n := h.Name()
			if len(n) > 253 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != "" ||
				strings.HasSuffix(n, ".") || strings.Contains(n, "..") {
				t.Fatalf("ParseHost(%q) = name %q: not a canonical ASCII name", s, n)
			}
			// A name never looks like a number to a resolver that would read it as IPv4.
			last := n[strings.LastIndexByte(n, '.')+1:]
			if strings.Trim(last, "0123456789") == "" {
				t.Fatalf("ParseHost(%q) = name %q ending in a number", s, n)
			}
		}
		// Where the standard library reads the input as an address, so must ParseHost, and
		// the same one once unwrapped.
		if std, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
			want := std.WithZone("")
			if want.Is4In6() {
				want = want.Unmap()
			}
			if !h.IsAddr() {
				t.Fatalf("ParseHost(%q) = name %q; the standard library reads address %v", s, h.Name(), std)
			}
			if r1, ok1 := egress.Classify(want); ok1 {
				r2, ok2 := egress.Classify(h.Addr())
				if !ok2 || r1.NeverAllowed != r2.NeverAllowed {
					t.Fatalf("ParseHost(%q) = %v (%+v); the standard library's %v is %+v", s, h.Addr(), r2, want, r1)
				}
			}
		}
		if utf8.ValidString(s) && !strings.ContainsAny(s, "[]:") && isNumericLabels(s) && !h.IsAddr() {
			t.Fatalf("ParseHost(%q) = name %q for an all-numeric host", s, h.Name())
		}
	})
}

// isNumericLabels reports whether s is dot-separated numbers: decimal digits, or 0x and hex
// digits.
func isNumericLabels(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return false
	}
	for l := range strings.SplitSeq(s, ".") {
		l = strings.ToLower(l)
		switch {
		case strings.HasPrefix(l, "0x"):
			if strings.Trim(l[2:], "0123456789abcdef") != "" {
				return false
			}
		case l == "" || strings.Trim(l, "0123456789") != "":
			return false
		}
	}
	return true
}

// FuzzParseAllowlist checks the allowlist parser: a list it accepts reads back from its own
// canonical string and lists no never-allowed address or name; a list it refuses names each
// bad entry by its position, in order, with one of the three kinds of error.
func FuzzParseAllowlist(f *testing.F) {
	for _, s := range []string{
		"", "github.com", "GitHub.com., *.Example.ORG ,203.0.113.0/24", "a.test\tb.test\nc.test,,d.test",
		"*.bücher.example", "0xcb.0.113.5, [2001:db8::1], ::ffff:203.0.113.6", "8.0.0.0/9, 2606:4700::/33",
		"127.0.0.1", "10.0.0.0/9", "100.64.0.0/10", "fc00::/33", "*.com", "*.co.uk", "*", "8.8.8.0/9",
		"https://github.com", "github.com:443", "git*hub.com", "64:ff9b::/96", "localhost, *.localhost",
		"*.github.io", "*.amazonaws.com", "github.io", "foo.github.io",
		"host.test:8443", "*.example.com:8443", "203.0.113.7:22", "[2001:db8::1]:8443", "203.0.113.0/24:8443",
		"2001:db8:1::/48:8443", "a.test:0", "a.test:", "a.test:65536", "a.test:22:22", "[::1]:22", "*:80",
		"0x7f.1:8080", "2001:db8::1:443", "[2001:db8::1]x", "10.0.0.0/8:443", "*.co.uk:443",
		egress.DefaultAllowlist().String(),
	} {
		f.Add(s)
	}
	never := []netip.Addr{}
	for _, r := range egress.Ranges() {
		if r.NeverAllowed {
			never = append(never, r.Prefix.Addr(), lastAddr(r.Prefix))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := egress.ParseAllowlist(s)
		fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
		if err != nil {
			var list egress.ListError
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("ParseAllowlist(%q): %v is not a ListError", s, err)
			}
			prev := 0
			for _, e := range list {
				if e.Position <= prev || e.Position > len(fields) {
					t.Fatalf("ParseAllowlist(%q): position %d after %d, of %d entries", s, e.Position, prev, len(fields))
				}
				prev = e.Position
				if !errors.Is(e, egress.ErrMalformed) && !errors.Is(e, egress.ErrNeverAllowed) && !errors.Is(e, egress.ErrTooBroad) {
					t.Fatalf("ParseAllowlist(%q): %v has no kind", s, e)
				}
			}
			return
		}
		if a.Len() > len(fields) {
			t.Fatalf("ParseAllowlist(%q): %d entries from %d fields", s, a.Len(), len(fields))
		}
		b, err := egress.ParseAllowlist(a.String())
		if err != nil || b.String() != a.String() {
			t.Fatalf("ParseAllowlist(%q) = %q, which reads back as %v, %v", s, a, b, err)
		}
		for _, addr := range never {
			if e, ok := a.MatchAddr(addr); ok {
				t.Fatalf("ParseAllowlist(%q): entry %q lists never-allowed %v", s, e, addr)
			}
		}
		for _, n := range []string{"localhost", "x.localhost", "metadata.google.internal"} {
			if e, ok := a.MatchName(n); ok && e == n {
				t.Fatalf("ParseAllowlist(%q) lists %q", s, n)
			}
		}
	})
}

// FuzzCheck checks the property everything else serves: whatever the target and whatever a
// resolver answers, an allowed decision carries only addresses outside the never-allowed
// ranges, and a denied one carries none.
func FuzzCheck(f *testing.F) {
	for _, s := range refusedSpellings {
		f.Add(s, []byte{})
	}
	f.Add("http://a.test/", []byte{198, 51, 100, 1})
	f.Add("a.test:443", append(make([]byte, 10), 0xff, 0xff, 127, 0, 0, 1))
	f.Add("https://x.b.test", []byte{8, 8, 8, 8, 10, 0, 0, 1})
	list, err := egress.ParseAllowlist("a.test, *.b.test, 203.0.113.0/24, 8.8.8.8")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target string, answer []byte) {
		var addrs []netip.Addr
		for len(answer) >= 4 {
			if len(answer) >= 16 && answer[0]&1 == 1 {
				addrs = append(addrs, netip.AddrFrom16([16]byte(answer[:16])))
				answer = answer[16:]
				continue
			}
			addrs = append(addrs, netip.AddrFrom4([4]byte(answer[:4])))
			answer = answer[4:]
		}
		res := resolverFunc(func(context.Context, string, string) ([]netip.Addr, error) { return addrs, nil })
		for _, mode := range []egress.Mode{egress.ModeAllowlist, egress.ModeOpen} {
			d := egress.New(egress.Options{Mode: mode, Allowlist: list, Resolver: res}).Check(context.Background(), target)
			if !d.Allow {
				if len(d.Addrs) != 0 {
					t.Fatalf("%s %q: denied with addresses %v", mode, target, d.Addrs)
				}
				continue
			}
			if len(d.Addrs) == 0 {
				t.Fatalf("%s %q: allowed with no address to dial", mode, target)
			}
			for _, a := range d.Addrs {
				if r, ok := egress.Classify(a); a.Is4In6() || a.Zone() != "" || ok && r.NeverAllowed {
					t.Fatalf("%s %q (answer %v): allowed %v", mode, target, addrs, a)
				}
			}
		}
	})
}

type resolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
