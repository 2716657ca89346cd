package egress_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/egress"
)

func TestCheck(t *testing.T) {
	res := newResolver(map[string][]string{
		"allowed.test":       {"198.51.100.1"},
		"api.svc.test":       {"203.0.113.7", "2001:db8::7", "203.0.113.7"},
		"mapped.svc.test":    {"::ffff:203.0.113.8"},
		"public.test":        {"8.8.8.8"},
		"doc.test":           {"192.0.2.10"},
		"listeddoc.test":     {"203.0.113.9"},
		"empty.svc.test":     {},
		"unlisted.test":      {"203.0.113.200"},
		"xn--bcher-kva.test": {"203.0.113.51"},
	})
	list, err := egress.ParseAllowlist("allowed.test *.svc.test,203.0.113.9, 8.8.4.0/24 bücher.test")
	if err != nil {
		t.Fatal(err)
	}
	allowlist := egress.New(egress.Options{Allowlist: list, Resolver: res})
	open := egress.New(egress.Options{Mode: egress.ModeOpen, Allowlist: list, Resolver: res})
	noResolve := egress.New(egress.Options{Allowlist: list, Resolver: res, NoResolve: true})
	openNoResolve := egress.New(egress.Options{Mode: egress.ModeOpen, Allowlist: list, Resolver: res, NoResolve: true})

	tests := []struct {
		name   string
		c      *egress.Checker
		give   string
		allow  bool
		reason egress.Reason
		host   string
		addrs  []string
		entry  string
	}{
		{"listed name", allowlist, "http://allowed.test/x", true, egress.ReasonListed, "allowed.test", []string{"198.51.100.1"}, "allowed.test"},
		{"listed name, odd spelling", allowlist, "ALLOWED.test.:443", true, egress.ReasonListed, "allowed.test", []string{"198.51.100.1"}, "allowed.test"},
		{"wildcard, every address checked, duplicates dropped", allowlist, "https://api.svc.test", true, egress.ReasonListed, "api.svc.test", []string{"203.0.113.7", "2001:db8::7"}, "*.svc.test"},
		{"mapped answer is dialled as IPv4", allowlist, "mapped.svc.test:443", true, egress.ReasonListed, "mapped.svc.test", []string{"203.0.113.8"}, "*.svc.test"},
		{"IDNA", allowlist, "http://BÜCHER.test/", true, egress.ReasonListed, "xn--bcher-kva.test", []string{"203.0.113.51"}, "xn--bcher-kva.test"},
		{"wildcard does not list the domain itself", allowlist, "svc.test", false, egress.ReasonNotAllowed, "svc.test", nil, ""},
		{"unlisted name", allowlist, "unlisted.test", false, egress.ReasonNotAllowed, "unlisted.test", nil, ""},
		{"listed name with no address", allowlist, "empty.svc.test", false, egress.ReasonUnresolvable, "empty.svc.test", nil, ""},
		{"listed name that does not resolve", allowlist, "nowhere.svc.test", false, egress.ReasonUnresolvable, "nowhere.svc.test", nil, ""},
		{"listed IP", allowlist, "http://203.0.113.9/", true, egress.ReasonListed, "203.0.113.9", []string{"203.0.113.9"}, "203.0.113.9"},
		{"listed IP, hex", allowlist, "0xcb.0x0.0x71.0x9:443", true, egress.ReasonListed, "203.0.113.9", []string{"203.0.113.9"}, "203.0.113.9"},
		{"CIDR", allowlist, "8.8.4.4", true, egress.ReasonListed, "8.8.4.4", []string{"8.8.4.4"}, "8.8.4.0/24"},
		{"unlisted IP", allowlist, "8.8.8.8", false, egress.ReasonNotAllowed, "8.8.8.8", nil, ""},
		{"a name is not listed by its address", allowlist, "listeddoc.test", false, egress.ReasonNotAllowed, "listeddoc.test", nil, ""},
		{"invalid", allowlist, "http://1.2.3.256/", false, egress.ReasonInvalidTarget, "http://1.2.3.256/", nil, ""},
		{"open: public IP", open, "https://8.8.8.8/", true, egress.ReasonOpen, "8.8.8.8", []string{"8.8.8.8"}, ""},
		{"open: public name", open, "public.test", true, egress.ReasonOpen, "public.test", []string{"8.8.8.8"}, ""},
		{"open: documentation IP unlisted", open, "192.0.2.1", false, egress.ReasonReserved, "192.0.2.1", nil, ""},
		{"open: documentation IP listed", open, "203.0.113.9", true, egress.ReasonListed, "203.0.113.9", []string{"203.0.113.9"}, "203.0.113.9"},
		{"open: name to documentation address", open, "doc.test", false, egress.ReasonReserved, "doc.test", nil, ""},
		{"open: name to listed documentation address", open, "listeddoc.test", true, egress.ReasonOpen, "listeddoc.test", []string{"203.0.113.9"}, ""},
		{"open: listed name to documentation address", open, "allowed.test", true, egress.ReasonListed, "allowed.test", []string{"198.51.100.1"}, "allowed.test"},
		{"open: unresolvable", open, "nowhere.test", false, egress.ReasonUnresolvable, "nowhere.test", nil, ""},
		{"no-resolve: listed name", noResolve, "allowed.test:80", true, egress.ReasonListed, "allowed.test", nil, "allowed.test"},
		{"no-resolve: unlisted name", noResolve, "public.test", false, egress.ReasonNotAllowed, "public.test", nil, ""},
		{"no-resolve: IP judged as usual", noResolve, "8.8.4.4", true, egress.ReasonListed, "8.8.4.4", []string{"8.8.4.4"}, "8.8.4.0/24"},
		{"no-resolve open: unlisted name", openNoResolve, "public.test", false, egress.ReasonNotResolved, "public.test", nil, ""},
		{"no-resolve: localhost", noResolve, "localhost", false, egress.ReasonPrivate, "localhost", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.c.Check(context.Background(), tt.give)
			var addrs []string
			for _, a := range d.Addrs {
				addrs = append(addrs, a.String())
			}
			if d.Allow != tt.allow || d.Reason != tt.reason || d.Host != tt.host || !slices.Equal(addrs, tt.addrs) || d.Entry != tt.entry {
				t.Errorf("Check(%q) = %s %s host %q addrs %v entry %q (%s)\nwant %v %s host %q addrs %v entry %q",
					tt.give, d.Verdict(), d.Reason, d.Host, addrs, d.Entry, d.Detail, tt.allow, tt.reason, tt.host, tt.addrs, tt.entry)
			}
			if d.Detail == "" {
				t.Errorf("Check(%q): no detail", tt.give)
			}
		})
	}
	if n := res.lookups("unlisted.test"); n != 0 {
		t.Errorf("an unlisted name was looked up %d times in allowlist mode; want none", n)
	}
}

// TestCheckPorts: every reachable host is reachable on 80 and 443; another port needs an
// entry that names it, and an entry with a port lists its hosts on that port only, in both
// modes.
func TestCheckPorts(t *testing.T) {
	res := newResolver(map[string][]string{
		"web.test":     {"198.51.100.1"},
		"git.test":     {"9.9.9.9"},
		"both.test":    {"198.51.100.5"},
		"api.svc.test": {"203.0.113.7"},
		"public.test":  {"8.8.8.8"},
	})
	list, err := egress.ParseAllowlist("web.test, git.test:22, both.test, both.test:8443, *.svc.test:8443, 203.0.113.9:22, [2001:db8::1]:8443, 8.8.4.0/24:5432")
	if err != nil {
		t.Fatal(err)
	}
	allowlist := egress.New(egress.Options{Allowlist: list, Resolver: res})
	open := egress.New(egress.Options{Mode: egress.ModeOpen, Allowlist: list, Resolver: res})
	tests := []struct {
		name   string
		c      *egress.Checker
		give   string
		allow  bool
		reason egress.Reason
		entry  string
	}{
		{"default port", allowlist, "web.test:443", true, egress.ReasonListed, "web.test"},
		{"default port, by scheme", allowlist, "http://web.test/", true, egress.ReasonListed, "web.test"},
		{"another port", allowlist, "web.test:8443", false, egress.ReasonPortNotAllowed, ""},
		{"another port, by URL", allowlist, "https://web.test:22/", false, egress.ReasonPortNotAllowed, ""},
		{"a scheme with another port", allowlist, "ftp://web.test/", false, egress.ReasonPortNotAllowed, ""},
		{"no port: the host alone", allowlist, "git.test", true, egress.ReasonListed, "git.test:22"},
		{"the entry's port", allowlist, "git.test:22", true, egress.ReasonListed, "git.test:22"},
		{"an entry with a port lists that port only", allowlist, "git.test:443", false, egress.ReasonPortNotAllowed, ""},
		{"two entries, default port", allowlist, "both.test:80", true, egress.ReasonListed, "both.test"},
		{"two entries, named port", allowlist, "both.test:8443", true, egress.ReasonListed, "both.test:8443"},
		{"two entries, neither", allowlist, "both.test:22", false, egress.ReasonPortNotAllowed, ""},
		{"wildcard with a port", allowlist, "api.svc.test:8443", true, egress.ReasonListed, "*.svc.test:8443"},
		{"wildcard with a port, default port", allowlist, "api.svc.test:443", false, egress.ReasonPortNotAllowed, ""},
		{"IP with a port", allowlist, "203.0.113.9:22", true, egress.ReasonListed, "203.0.113.9:22"},
		{"IP with a port, another", allowlist, "203.0.113.9:80", false, egress.ReasonPortNotAllowed, ""},
		{"IPv6 with a port", allowlist, "[2001:db8::1]:8443", true, egress.ReasonListed, "[2001:db8::1]:8443"},
		{"CIDR with a port", allowlist, "8.8.4.4:5432", true, egress.ReasonListed, "8.8.4.0/24:5432"},
		{"CIDR with a port, another", allowlist, "8.8.4.4:443", false, egress.ReasonPortNotAllowed, ""},
		{"unlisted host, another port", allowlist, "public.test:8443", false, egress.ReasonNotAllowed, ""},
		{"open: default port", open, "public.test:443", true, egress.ReasonOpen, ""},
		{"open: another port", open, "public.test:8443", false, egress.ReasonPortNotAllowed, ""},
		{"open: IP, another port", open, "8.8.8.8:22", false, egress.ReasonPortNotAllowed, ""},
		{"open: an entry adds its port", open, "8.8.4.4:5432", true, egress.ReasonListed, "8.8.4.0/24:5432"},
		{"open: listed on a port, default port", open, "git.test:443", true, egress.ReasonOpen, ""},
		{"open: listed on a port, another", open, "git.test:8443", false, egress.ReasonPortNotAllowed, ""},
		{"open: documentation IP listed on another port", open, "203.0.113.9:443", false, egress.ReasonReserved, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.c.Check(context.Background(), tt.give)
			if d.Allow != tt.allow || d.Reason != tt.reason || d.Entry != tt.entry {
				t.Errorf("Check(%q) = %s %s entry %q (%s); want %v %s entry %q", tt.give, d.Verdict(), d.Reason, d.Entry, d.Detail, tt.allow, tt.reason, tt.entry)
			}
			if !d.Allow && len(d.Addrs) != 0 {
				t.Errorf("Check(%q): denied with addresses %v", tt.give, d.Addrs)
			}
			if d.Reason == egress.ReasonPortNotAllowed {
				if !strings.Contains(d.Detail, "port ") || !strings.Contains(d.Detail, "list ") {
					t.Errorf("Check(%q): the detail %q does not name the port and how to allow it", tt.give, d.Detail)
				}
			}
		})
	}
	// A refused port costs no lookup: web.test was resolved for its two allowed checks, and
	// public.test for open mode's default port only.
	if a, b := res.lookups("web.test"), res.lookups("public.test"); a != 2 || b != 1 {
		t.Errorf("web.test was looked up %d times, public.test %d; want 2 and 1", a, b)
	}
}

func TestZeroDecisionDenies(t *testing.T) {
	var d egress.Decision
	if d.Allow || d.Verdict() != "deny" {
		t.Errorf("the zero Decision is %s", d.Verdict())
	}
	var h egress.Host
	d = egress.New(egress.Options{}).CheckHost(context.Background(), h, 80)
	if d.Allow || d.Reason != egress.ReasonInvalidTarget {
		t.Errorf("CheckHost(zero Host) = %s %s", d.Verdict(), d.Reason)
	}
}

func TestDecisionJSON(t *testing.T) {
	d := egress.Decision{Allow: true, Host: "allowed.test", Port: 443, Reason: egress.ReasonListed,
		Detail: "listed", Entry: "allowed.test", Addrs: []netip.Addr{netip.MustParseAddr("198.51.100.1")}}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"decision":"allow","host":"allowed.test","reason":"listed","detail":"listed","port":443,"entry":"allowed.test","addresses":["198.51.100.1"]}`
	if string(b) != want {
		t.Errorf("JSON\n got %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(egress.Decision{Host: "x", Reason: egress.ReasonNotAllowed})
	if !strings.HasPrefix(string(b), `{"decision":"deny","host":"x","reason":"not_allowed"`) {
		t.Errorf("deny JSON: %s", b)
	}
}

func TestDefaultOptions(t *testing.T) {
	c := egress.New(egress.Options{})
	if c.Mode() != egress.ModeAllowlist || c.Allowlist() != egress.DefaultAllowlist() {
		t.Errorf("zero Options: mode %s, list %v; want allowlist and the default list", c.Mode(), c.Allowlist())
	}
	// An unlisted name is refused without a lookup, so this sends nothing anywhere.
	if d := c.Check(context.Background(), "unlisted.invalid"); d.Allow || d.Reason != egress.ReasonNotAllowed {
		t.Errorf("default checker: %s %s", d.Verdict(), d.Reason)
	}
	if d := c.Check(context.Background(), "http://169.254.169.254/"); d.Allow || d.Reason != egress.ReasonPrivate {
		t.Errorf("default checker: %s %s", d.Verdict(), d.Reason)
	}
}
