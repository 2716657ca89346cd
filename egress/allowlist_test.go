package egress_test

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/egress"
)

func TestParseAllowlist(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{"", nil},
		{" , ,\n", nil},
		{"github.com", []string{"github.com"}},
		{"GitHub.com., *.Example.ORG ,203.0.113.0/24", []string{"github.com", "*.example.org", "203.0.113.0/24"}},
		{"a.test\tb.test\nc.test,,d.test", []string{"a.test", "b.test", "c.test", "d.test"}},
		{"a.test,A.TEST,a.test.", []string{"a.test"}},
		{"*.bücher.example", []string{"*.xn--bcher-kva.example"}},
		{"0xcb.0.113.5, [2001:db8::1], ::ffff:203.0.113.6", []string{"203.0.113.5", "2001:db8::1", "203.0.113.6"}},
		{"8.8.0.0/9, 8.8.8.8/32, 2606:4700::/33", []string{"8.0.0.0/9", "8.8.8.8/32", "2606:4700::/33"}[1:]},
		{"*.api.githubusercontent.test, raw.githubusercontent.com", []string{"*.api.githubusercontent.test", "raw.githubusercontent.com"}},
		{"198.51.100.1, 192.0.2.0/24, 2001:db8::/48", []string{"198.51.100.1", "192.0.2.0/24", "2001:db8::/48"}},
		// Ports.
		{"GitHub.com.:22, github.com, *.Example.org:08443", []string{"github.com:22", "github.com", "*.example.org:8443"}},
		{"0xcb.0.113.7:22, [2001:DB8::1]:8443, [::ffff:203.0.113.8]:443", []string{"203.0.113.7:22", "[2001:db8::1]:8443", "203.0.113.8:443"}},
		{"203.0.113.0/24:8443, 2001:db8:1::/48:8443, 8.8.8.8/32:53", []string{"203.0.113.0/24:8443", "2001:db8:1::/48:8443", "8.8.8.8/32:53"}},
		{"a.test:443, a.test:443, a.test.:0443", []string{"a.test:443"}},
		{"2001:db8::1:443", []string{"2001:db8::1:443"}}, // an address: a port needs brackets
	}
	for _, tt := range tests {
		if strings.Contains(tt.give, "8.8.0.0/9") {
			// 8.8.0.0/9 has host bits set; see TestParseAllowlistErrors. Use the network.
			tt.give = "8.0.0.0/9, 8.8.8.8/32, 2606:4700::/33"
			tt.want = []string{"8.0.0.0/9", "8.8.8.8/32", "2606:4700::/33"}
		}
		a, err := egress.ParseAllowlist(tt.give)
		if err != nil {
			t.Errorf("ParseAllowlist(%q): %v", tt.give, err)
			continue
		}
		if got := a.Entries(); !slices.Equal(got, tt.want) {
			t.Errorf("ParseAllowlist(%q) = %q; want %q", tt.give, got, tt.want)
		}
		// The canonical string reads back to the same list.
		b, err := egress.ParseAllowlist(a.String())
		if err != nil || !slices.Equal(b.Entries(), a.Entries()) {
			t.Errorf("ParseAllowlist(%q) = %v, %v; want %q", a.String(), b, err, a.Entries())
		}
	}
}

func TestParseAllowlistErrors(t *testing.T) {
	tests := []struct {
		give string
		pos  int
		kind error
		msg  string
	}{
		{"127.0.0.1", 1, egress.ErrNeverAllowed, "loopback"},
		{"github.com, 0x7f.1", 2, egress.ErrNeverAllowed, "loopback"},
		{"a.test,b.test,169.254.169.254", 3, egress.ErrNeverAllowed, "metadata"},
		{"[fd00:ec2::254]", 1, egress.ErrNeverAllowed, "metadata"},
		{"100.100.100.200", 1, egress.ErrNeverAllowed, "Alibaba"},
		{"10.0.0.0/9", 1, egress.ErrNeverAllowed, "10.0.0.0/8"},
		{"172.0.0.0/9", 1, egress.ErrNeverAllowed, "172.16.0.0/12"},
		{"100.64.0.0/10", 1, egress.ErrNeverAllowed, "carrier-grade NAT"},
		{"192.168.1.0/24", 1, egress.ErrNeverAllowed, "private"},
		{"fc00::/33", 1, egress.ErrNeverAllowed, "unique local"},
		{"fe80::/64", 1, egress.ErrNeverAllowed, "link-local"},
		{"::ffff:10.0.0.1", 1, egress.ErrNeverAllowed, "private"},
		{"224.0.0.1", 1, egress.ErrNeverAllowed, "multicast"},
		{"255.255.255.255", 1, egress.ErrNeverAllowed, "broadcast"},
		{"0.0.0.0", 1, egress.ErrNeverAllowed, "unspecified"},
		{"::", 1, egress.ErrNeverAllowed, "unspecified"},
		{"localhost", 1, egress.ErrNeverAllowed, "loopback"},
		{"*.localhost", 1, egress.ErrNeverAllowed, "loopback"},
		{"Metadata.Google.Internal.", 1, egress.ErrNeverAllowed, "metadata"},
		{"8.0.0.0/8", 1, egress.ErrTooBroad, "narrower than /8"},
		{"0.0.0.0/0", 1, egress.ErrTooBroad, "narrower than /8"},
		{"2606:4700::/32", 1, egress.ErrTooBroad, "narrower than /32"},
		{"::/0", 1, egress.ErrTooBroad, "narrower than /32"},
		{"*", 1, egress.ErrTooBroad, "every host"},
		{"*.com", 1, egress.ErrTooBroad, "top-level"},
		{"*.co.uk", 1, egress.ErrTooBroad, "public suffix"},
		{"*.test", 1, egress.ErrTooBroad, "top-level"},
		{"8.8.8.0/9", 1, egress.ErrMalformed, "host bits"},
		{"https://github.com", 1, egress.ErrMalformed, "not a URL"},
		{"github.com:0", 1, egress.ErrMalformed, "from 1 to 65535"},
		{"github.com:65536", 1, egress.ErrMalformed, "from 1 to 65535"},
		{"github.com:https", 1, egress.ErrMalformed, "from 1 to 65535"},
		{"github.com:", 1, egress.ErrMalformed, "empty port"},
		{"github.com:22:22", 1, egress.ErrMalformed, "neither a name nor an IP address"},
		{"*.example.com:x", 1, egress.ErrMalformed, "from 1 to 65535"},
		{"[2001:db8::1]:", 1, egress.ErrMalformed, "want [address]:port"},
		{"[2001:db8::1]x", 1, egress.ErrMalformed, "want [address]:port"},
		{"203.0.113.0/24:0", 1, egress.ErrMalformed, "from 1 to 65535"},
		{"203.0.113.0/24:", 1, egress.ErrMalformed, "from 1 to 65535"},
		{"127.0.0.1:8080", 1, egress.ErrNeverAllowed, "loopback"},
		{"*.com:443", 1, egress.ErrTooBroad, "top-level"},
		{"*.github.io:8443", 1, egress.ErrTooBroad, "github.io is a public suffix"},
		{"*:443", 1, egress.ErrTooBroad, "every host"},
		{"8.0.0.0/8:443", 1, egress.ErrTooBroad, "narrower than /8"},
		{"git*hub.com", 1, egress.ErrMalformed, "wildcard"},
		{"*.*.example.com", 1, egress.ErrMalformed, ""},
		{"api.*.example.com", 1, egress.ErrMalformed, "wildcard"},
		{"*.203.0.113.0", 1, egress.ErrMalformed, "not an address"},
		{"1.2.3.256", 1, egress.ErrMalformed, "not an IPv4 address"},
		{"203.0.113.0/33", 1, egress.ErrMalformed, "not a CIDR"},
		{"example.com/path", 1, egress.ErrMalformed, "not a CIDR"},
		{"64:ff9b::/96", 1, egress.ErrMalformed, "write them as IPv4"},
		{"fe80::%eth0/64", 1, egress.ErrMalformed, ""},
		{"exa_mple.com, bad..name", 2, egress.ErrMalformed, "empty label"},
	}
	for _, tt := range tests {
		a, err := egress.ParseAllowlist(tt.give)
		if err == nil {
			t.Errorf("ParseAllowlist(%q) = %q; want an error", tt.give, a.Entries())
			continue
		}
		var list egress.ListError
		if !errors.As(err, &list) || len(list) != 1 {
			t.Errorf("ParseAllowlist(%q): %v; want one EntryError", tt.give, err)
			continue
		}
		e := list[0]
		if e.Position != tt.pos || !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ParseAllowlist(%q): %v (position %d); want position %d, %v, mentioning %q", tt.give, err, e.Position, tt.pos, tt.kind, tt.msg)
		}
		if !strings.Contains(err.Error(), "allowlist entry "+itoa(tt.pos)+" (") {
			t.Errorf("ParseAllowlist(%q): %q does not name the entry and its position", tt.give, err)
		}
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

// TestParseAllowlistPublicSuffixes: a wildcard over a public suffix of either section of the
// list, or over a domain with one below it, is refused with the suffix named, and so is a host
// that is one; a name below a suffix names one registrant and is listed.
func TestParseAllowlistPublicSuffixes(t *testing.T) {
	tests := []struct {
		give string
		want string // a part of the error; empty: accepted
	}{
		// Private section: one company runs the suffix, anyone registers names under it.
		{"*.ngrok.io", "ngrok.io is a public suffix (private section): anyone can register names under it"},
		{"*.workers.dev", "workers.dev is a public suffix (private section)"},
		{"*.github.io", "github.io is a public suffix (private section): anyone can register names under it"},
		{"*.trycloudflare.com", "trycloudflare.com is a public suffix (private section)"},
		{"*.githubusercontent.com", "githubusercontent.com is a public suffix (private section)"},
		{"*.GitHub.IO.", "github.io is a public suffix (private section)"},
		// Not a suffix itself, but with suffixes below: *.amazonaws.com holds everyone's buckets.
		{"*.amazonaws.com", "below amazonaws.com lies the public suffix s3.amazonaws.com (private section)"},
		{"*.us-east-1.amazonaws.com", "us-east-1.amazonaws.com is a public suffix (private section)"},
		{"*.elb.amazonaws.com", "every name directly below elb.amazonaws.com is a public suffix"},
		{"*.compute.amazonaws.com", "every name directly below compute.amazonaws.com is a public suffix (private section: *.compute.amazonaws.com)"},
		// Their ICANN siblings.
		{"*.co.uk", "co.uk is a public suffix (ICANN section)"},
		{"*.com", "top-level domain"},
		{"*.kawasaki.jp", "every name directly below kawasaki.jp is a public suffix (ICANN section: *.kawasaki.jp)"},
		// Hosts that are suffixes name a registry, not a site.
		{"github.io", "github.io is a public suffix (private section)"},
		{"s3.amazonaws.com", "s3.amazonaws.com is a public suffix (private section)"},
		{"co.uk", "co.uk is a public suffix (ICANN section)"},
		{"com", "com is a public suffix (ICANN section)"},
		// Below a suffix, or beside one: one registrant.
		{"foo.github.io", ""},
		{"*.foo.github.io", ""},
		{"*.example.co.uk", ""},
		{"amazonaws.com", ""},
		{"ec2.amazonaws.com", ""},
		{"*.my-bucket.s3.amazonaws.com", ""},
		{"city.kawasaki.jp", ""},
		{"*.github.com", ""},
		{"intranet", ""}, // a single label the list does not name
	}
	for _, tt := range tests {
		a, err := egress.ParseAllowlist(tt.give)
		if tt.want == "" {
			if err != nil {
				t.Errorf("ParseAllowlist(%q): %v; want it listed", tt.give, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("ParseAllowlist(%q) = %q; want an error mentioning %q", tt.give, a.Entries(), tt.want)
			continue
		}
		if !errors.Is(err, egress.ErrTooBroad) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `allowlist entry 1 (`) {
			t.Errorf("ParseAllowlist(%q): %v; want entry 1, too broad, mentioning %q", tt.give, err, tt.want)
		}
	}
}

func TestParseAllowlistReportsEveryEntry(t *testing.T) {
	_, err := egress.NewAllowlist([]string{"github.com", "", "10.0.0.1", "*.com", "ok.test", "8.0.0.0/7"})
	var list egress.ListError
	if !errors.As(err, &list) {
		t.Fatalf("got %v; want a ListError", err)
	}
	var got []int
	for _, e := range list {
		got = append(got, e.Position)
	}
	// The empty string is not an entry, so positions count the others.
	if !slices.Equal(got, []int{2, 3, 5}) {
		t.Errorf("positions %v; want [2 3 5]\n%v", got, err)
	}
	if strings.Count(err.Error(), "\n") != 2 {
		t.Errorf("want one line per bad entry:\n%v", err)
	}
}

func TestAllowlistMatch(t *testing.T) {
	a, err := egress.ParseAllowlist("github.com, *.example.org, 203.0.113.0/24, 2001:db8::1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		give  string
		entry string
	}{
		{"github.com", "github.com"},
		{"api.github.com", ""},
		{"example.org", ""},
		{"www.example.org", "*.example.org"},
		{"a.b.c.example.org", "*.example.org"},
		{"badexample.org", ""},
		{"example.org.evil.test", ""},
		{"203.0.113.77", "203.0.113.0/24"},
		{"::ffff:203.0.113.77", "203.0.113.0/24"},
		{"203.0.114.1", ""},
		{"2001:db8::1", "2001:db8::1"},
		{"2001:db8::2", ""},
	} {
		h, err := egress.ParseHost(tt.give)
		if err != nil {
			t.Fatal(err)
		}
		e, ok := a.Match(h)
		if e != tt.entry || ok != (tt.entry != "") {
			t.Errorf("Match(%s) = %q, %v; want %q", tt.give, e, ok, tt.entry)
		}
	}
	var none *egress.Allowlist
	if _, ok := none.MatchName("github.com"); ok || none.Len() != 0 {
		t.Error("the nil Allowlist lists something")
	}
	if _, ok := none.MatchAddr(netip.MustParseAddr("8.8.8.8")); ok {
		t.Error("the nil Allowlist lists an address")
	}
}

func TestAllowlistWith(t *testing.T) {
	a, _ := egress.ParseAllowlist("github.com")
	b, err := a.With("allowed.test", "203.0.113.5")
	if err != nil {
		t.Fatal(err)
	}
	if a.Len() != 1 || !slices.Equal(b.Entries(), []string{"github.com", "allowed.test", "203.0.113.5"}) {
		t.Errorf("With: a = %v, b = %v", a.Entries(), b.Entries())
	}
	if _, err := a.With("127.0.0.1"); !errors.Is(err, egress.ErrNeverAllowed) {
		t.Errorf("With(127.0.0.1): %v", err)
	}
}

func TestDefaultAllowlist(t *testing.T) {
	a := egress.DefaultAllowlist()
	if a.Len() < 20 {
		t.Fatalf("default list has %d entries", a.Len())
	}
	for _, want := range []string{"proxy.golang.org", "registry.npmjs.org", "pypi.org", "files.pythonhosted.org", "crates.io", "github.com"} {
		if _, ok := a.MatchName(want); !ok {
			t.Errorf("default list lacks %s", want)
		}
	}
	// Every entry is canonical, so the list reads back unchanged.
	b, err := egress.ParseAllowlist(a.String())
	if err != nil || !slices.Equal(a.Entries(), b.Entries()) {
		t.Errorf("default list does not read back: %v", err)
	}
}

func TestRanges(t *testing.T) {
	for _, tt := range []struct {
		addr  string
		never bool
		name  string
	}{
		{"169.254.169.254", true, "metadata"},
		{"169.254.1.1", true, "link-local"},
		{"::ffff:10.1.2.3", true, "private"},
		{"fd00:ec2::254", true, "metadata"},
		{"fd00:ec2::253", true, "unique local"},
		{"198.51.100.1", false, "documentation"},
		{"2001:db8::1", false, "documentation"},
	} {
		r, ok := egress.Classify(netip.MustParseAddr(tt.addr))
		if !ok || r.NeverAllowed != tt.never || !strings.Contains(r.Name, tt.name) {
			t.Errorf("Classify(%s) = %+v, %v; want never=%v, %q", tt.addr, r, ok, tt.never, tt.name)
		}
	}
	for _, public := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "100.128.0.1", "172.32.0.1", "11.0.0.1"} {
		if r, ok := egress.Classify(netip.MustParseAddr(public)); ok {
			t.Errorf("Classify(%s) = %+v; want an ordinary public address", public, r)
		}
	}
	if len(egress.Ranges()) < 20 {
		t.Errorf("Ranges() has %d ranges", len(egress.Ranges()))
	}
}
