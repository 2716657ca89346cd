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
		"xn--bcher-kva.test": {"203.0.113.50"},
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
		{"listed name, odd spelling", allowlist, "ALLOWED.test.:8080", true, egress.ReasonListed, "allowed.test", []string{"198.51.100.1"}, "allowed.test"},
		{"wildcard, every address checked, duplicates dropped", allowlist, "https://api.svc.test", true, egress.ReasonListed, "api.svc.test", []string{"203.0.113.7", "2001:db8::7"}, "*.svc.test"},
		{"mapped answer is dialled as IPv4", allowlist, "mapped.svc.test:443", true, egress.ReasonListed, "mapped.svc.test", []string{"203.0.113.8"}, "*.svc.test"},
		{"IDNA", allowlist, "http://BÜCHER.test/", true, egress.ReasonListed, "xn--bcher-kva.test", []string{"203.0.113.50"}, "xn--bcher-kva.test"},
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
