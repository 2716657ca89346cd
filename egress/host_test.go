package egress_test

import (
	"errors"
	"testing"

	"github.com/wardenhq/warden/egress"
)

// hostSpellings are inputs to ParseHost and the canonical host each must become. They seed
// FuzzParseHost too.
var hostSpellings = []struct {
	give, want string
}{
	// IPv4, every spelling of 127.0.0.1.
	{"127.0.0.1", "127.0.0.1"},
	{"127.1", "127.0.0.1"},
	{"127.0.1", "127.0.0.1"},
	{"2130706433", "127.0.0.1"},
	{"0x7f000001", "127.0.0.1"},
	{"0X7F000001", "127.0.0.1"},
	{"017700000001", "127.0.0.1"},
	{"0177.0.0.1", "127.0.0.1"},
	{"0177.0.0.01", "127.0.0.1"},
	{"0x7f.1", "127.0.0.1"},
	{"0x7f.0.0.0x1", "127.0.0.1"},
	{"0x7f.0x0.0x0.0x1", "127.0.0.1"},
	{"127.0.0.1.", "127.0.0.1"},
	{"127.000.000.001", "127.0.0.1"},
	{"１２７．０．０．１", "127.0.0.1"},
	{"127。0。0。1", "127.0.0.1"},
	{"[127.0.0.1]", "127.0.0.1"},
	{"0", "0.0.0.0"},
	{"0x", "0.0.0.0"},
	{"169.254.43518", "169.254.169.254"},
	{"0xa9fea9fe", "169.254.169.254"},
	{"2852039166", "169.254.169.254"},
	{"0251.0376.0251.0376", "169.254.169.254"},
	{"8.8.8.8", "8.8.8.8"},
	// IPv6.
	{"::1", "::1"},
	{"[::1]", "::1"},
	{"[0:0:0:0:0:0:0:1]", "::1"},
	{"[::ffff:127.0.0.1]", "127.0.0.1"},
	{"[::ffff:7f00:1]", "127.0.0.1"},
	{"::FFFF:A9FE:A9FE", "169.254.169.254"},
	{"[::127.0.0.1]", "127.0.0.1"},
	{"[::ffff:0:7f00:1]", "127.0.0.1"},
	{"[64:ff9b::7f00:1]", "127.0.0.1"},
	{"[64:ff9b::808:808]", "8.8.8.8"},
	{"[fe80::1%25eth0]", "fe80::1"},
	{"[fe80::1%eth0]", "fe80::1"},
	{"FD00:EC2::254", "fd00:ec2::254"},
	{"[2606:4700:4700::1111]", "2606:4700:4700::1111"},
	{"::", "::"},
	// Names.
	{"Example.COM", "example.com"},
	{"example.com.", "example.com"},
	{"ＥＸＡＭＰＬＥ．com", "example.com"},
	{"bücher.example", "xn--bcher-kva.example"},
	{"XN--BCHER-KVA.example", "xn--bcher-kva.example"},
	{"r3---sn-abc.googlevideo.com", "r3---sn-abc.googlevideo.com"},
	{"_acme.example.org", "_acme.example.org"},
	{"1e100.net", "1e100.net"},
	{"127.0.0.1.nip.io", "127.0.0.1.nip.io"},
	{"LOCALHOST", "localhost"},
}

func TestParseHost(t *testing.T) {
	for _, tt := range hostSpellings {
		h, err := egress.ParseHost(tt.give)
		if err != nil {
			t.Errorf("ParseHost(%q): %v", tt.give, err)
			continue
		}
		if h.String() != tt.want {
			t.Errorf("ParseHost(%q) = %q; want %q", tt.give, h, tt.want)
		}
		// Canonical forms are fixed points.
		again, err := egress.ParseHost(h.String())
		if err != nil || again != h {
			t.Errorf("ParseHost(%q) = %v, %v; want it unchanged", h, again, err)
		}
	}
}

// badHosts are never hosts: in particular, a host that ends in a number is an IPv4 address or
// nothing, so "1.2.3.256" is never looked up as a name.
var badHosts = []string{
	"", "1.2.3.256", "256.1", "1.2.3.4.5", "0x100000000", "4294967296", "08.0.0.1", "09",
	"1..2", "example..com", ".example.com", "example.com..", "exa mple.com", "example.com/x",
	"a@b", "[::1", "::1]", "[]", "[example.com]", "[1.2.3.256]", "::ffff:127.1", ":::1",
	"example.0x7f", "xn--.example", "xn--a.example", "a%2fb", "ex\x00ample.com",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com",
}

func TestParseHostRejects(t *testing.T) {
	for _, s := range badHosts {
		h, err := egress.ParseHost(s)
		if err == nil {
			t.Errorf("ParseHost(%q) = %q; want an error", s, h)
			continue
		}
		if !errors.Is(err, egress.ErrInvalidHost) {
			t.Errorf("ParseHost(%q): %v does not wrap ErrInvalidHost", s, err)
		}
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		give, want string
		port       uint16
	}{
		{"http://Example.com/path?q=1", "example.com", 80},
		{"https://example.com", "example.com", 443},
		{"HTTPS://example.com:8443/x", "example.com", 8443},
		{"http://user:pw@0x7f.1:8080/", "127.0.0.1", 8080},
		{"http://[::ffff:127.0.0.1]/", "127.0.0.1", 80},
		{"http://[fe80::1%25eth0]:81/", "fe80::1", 81},
		{"http://allowed.test@127.0.0.1/", "127.0.0.1", 80},
		{"example.com", "example.com", 0},
		{"example.com:443", "example.com", 443},
		{"127.1:22", "127.0.0.1", 22},
		{"[2001:db8::1]:443", "2001:db8::1", 443},
		{"[2001:db8::1]", "2001:db8::1", 0},
		{"2001:db8::1", "2001:db8::1", 0},
		{"gopher://example.com", "example.com", 0},
	}
	for _, tt := range tests {
		got, err := egress.ParseTarget(tt.give)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", tt.give, err)
			continue
		}
		if got.Host.String() != tt.want || got.Port != tt.port {
			t.Errorf("ParseTarget(%q) = %s port %d; want %s port %d", tt.give, got.Host, got.Port, tt.want, tt.port)
		}
	}
	for _, s := range []string{
		"", "http://", "http:///x", "example.com:", "example.com:0", "example.com:65536",
		"example.com:http", "example.com/path", "[::1]:", "[::1]x", "http://example.com:99999/",
		"http://1.2.3.256/", "http://exa mple.com/", "http://example.com\\@127.0.0.1/",
		"http://%31%32%37.0.0.1/", // Go's URL parser refuses escapes of ASCII in a host
	} {
		if got, err := egress.ParseTarget(s); err == nil {
			t.Errorf("ParseTarget(%q) = %v; want an error", s, got)
		}
	}
}
