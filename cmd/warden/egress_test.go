package main

import (
	"encoding/json"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/wardenhq/warden/egress"
)

type egressJSON struct {
	Decision  string   `json:"decision"`
	Host      string   `json:"host"`
	Reason    string   `json:"reason"`
	Detail    string   `json:"detail"`
	Port      int      `json:"port"`
	Entry     string   `json:"entry"`
	Addresses []string `json:"addresses"`
}

// egressCheck runs warden egress check --json with the host's egress switches cleared. Every
// name in these tests is pinned with --resolve, judged with --no-resolve, or unlisted (and so
// never looked up): nothing is sent anywhere.
func egressCheck(t *testing.T, args ...string) egressJSON {
	t.Helper()
	t.Setenv("SANDBOX_EGRESS", "")
	t.Setenv("SANDBOX_EGRESS_ALLOWLIST", "")
	out, errOut, code := run(t, append([]string{"egress", "check", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("egress check %v: status %d: %s", args, code, errOut)
	}
	var d egressJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("egress check %v: not JSON: %v\n%s", args, err, out)
	}
	if d.Decision != "allow" && d.Decision != "deny" || d.Host == "" || d.Reason == "" {
		t.Fatalf("egress check %v: %s; want decision, host and reason", args, out)
	}
	return d
}

func TestEgressCheck(t *testing.T) {
	tests := []struct {
		name                   string
		args                   []string
		decision, host, reason string
	}{
		{"listed, pinned", []string{"--allowlist", "allowed.test", "--resolve", "allowed.test:198.51.100.1", "http://allowed.test/x"}, "allow", "allowed.test", "listed"},
		{"pinned with curl's port form", []string{"--allowlist", "allowed.test", "--resolve", "allowed.test:443:198.51.100.1,[2001:db8::1]", "https://Allowed.Test."}, "allow", "allowed.test", "listed"},
		{"pinned to metadata", []string{"--allowlist", "allowed.test", "--resolve", "allowed.test:169.254.169.254", "allowed.test:80"}, "deny", "allowed.test", "private_address"},
		{"one pinned address of two is private", []string{"--allowlist", "*.svc.test", "--resolve", "api.svc.test:203.0.113.5,10.0.0.1", "api.svc.test"}, "deny", "api.svc.test", "private_address"},
		{"pinned to a mapped loopback", []string{"--allowlist", "allowed.test", "--resolve", "allowed.test:[::ffff:127.0.0.1]", "allowed.test"}, "deny", "allowed.test", "private_address"},
		{"unlisted", []string{"--allowlist", "allowed.test", "evil.test:443"}, "deny", "evil.test", "not_allowed"},
		{"default list, unlisted", []string{"unlisted.test"}, "deny", "unlisted.test", "not_allowed"},
		{"listed CIDR", []string{"--allowlist", "h1.test,*.d2.test,203.0.113.0/24", "https://203.0.113.7/"}, "allow", "203.0.113.7", "listed"},
		{"listed CIDR, hex spelling", []string{"--allowlist", "203.0.113.0/24", "0xcb007107:443"}, "allow", "203.0.113.7", "listed"},
		{"no-resolve, listed", []string{"--no-resolve", "--allowlist", "allowed.test", "allowed.test:443"}, "allow", "allowed.test", "listed"},
		{"no-resolve, unlisted", []string{"--no-resolve", "--allowlist", "allowed.test", "other.test"}, "deny", "other.test", "not_allowed"},
		{"no-resolve, open, unlisted", []string{"--no-resolve", "--mode", "open", "other.test"}, "deny", "other.test", "not_resolved"},
		{"open, public IP", []string{"--mode", "open", "http://8.8.8.8/"}, "allow", "8.8.8.8", "open_mode"},
		{"open, documentation IP", []string{"--mode", "OPEN", "192.0.2.1"}, "deny", "192.0.2.1", "reserved_address"},
		{"open, pinned public", []string{"--mode", "open", "--resolve", "public.test:8.8.4.4", "public.test"}, "allow", "public.test", "open_mode"},
		{"a port pin for another name does not interfere", []string{"--mode", "open", "--resolve", "a.test:443:8.8.4.4", "--resolve", "b.test:8.8.8.8", "http://b.test/"}, "allow", "b.test", "open_mode"},
		{"invalid target is a decision", []string{"http://1.2.3.256/"}, "deny", "http://1.2.3.256/", "invalid_target"},
		{"empty allowlist", []string{"--allowlist", "", "github.com"}, "deny", "github.com", "not_allowed"},
		{"listed, another port", []string{"--allowlist", "allowed.test", "--resolve", "allowed.test:198.51.100.1", "allowed.test:8443"}, "deny", "allowed.test", "port_not_allowed"},
		{"listed with its port", []string{"--allowlist", "allowed.test:8443", "--resolve", "allowed.test:198.51.100.1", "https://allowed.test:8443/"}, "allow", "allowed.test", "listed"},
		{"listed with a port, the default port", []string{"--allowlist", "allowed.test:8443", "--resolve", "allowed.test:198.51.100.1", "https://allowed.test/"}, "deny", "allowed.test", "port_not_allowed"},
		{"listed IPv6 with a port", []string{"--allowlist", "[2001:db8::1]:22", "[2001:db8::1]:22"}, "allow", "2001:db8::1", "listed"},
		{"open, another port", []string{"--mode", "open", "8.8.8.8:22"}, "deny", "8.8.8.8", "port_not_allowed"},
		{"open, a listed port", []string{"--mode", "open", "--allowlist", "8.8.8.8:22", "8.8.8.8:22"}, "allow", "8.8.8.8", "listed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := egressCheck(t, tt.args...)
			if d.Decision != tt.decision || d.Host != tt.host || d.Reason != tt.reason {
				t.Errorf("got %s %s %s (%s); want %s %s %s", d.Decision, d.Host, d.Reason, d.Detail, tt.decision, tt.host, tt.reason)
			}
		})
	}
}

// TestEgressCheckRefused runs spellings of private and metadata addresses through the CLI in
// open mode with a list that names every test name; egress/refused_test.go has the full table.
func TestEgressCheckRefused(t *testing.T) {
	pins := []string{
		"--resolve", "meta.rebind.test:169.254.169.254",
		"--resolve", "mapped.rebind.test:[::ffff:a9fe:a9fe]",
		"--resolve", "nat64.rebind.test:[64:ff9b::7f00:1]",
		"--resolve", "mixed.rebind.test:203.0.113.1,192.168.0.1",
	}
	for _, target := range []string{
		"http://127.1/", "http://0x7f.1/", "http://2130706433/", "0177.0.0.1:22", "[::1]:80",
		"http://[::ffff:127.0.0.1]/", "http://localhost:8080/", "http://169.254.169.254/latest/meta-data/",
		"http://0xa9fea9fe/", "http://169.254.43518/", "http://[fd00:ec2::254]/", "http://100.100.100.200/",
		"http://metadata.google.internal/", "http://10.1/", "http://172.16.0.1/", "http://192.168.257/",
		"http://100.64.0.1/", "http://[fc00::1]/", "[fe80::1%eth0]:80", "http://0.0.0.0/", "http://0/",
		"http://255.255.255.255/", "http://224.0.0.1/", "http://meta.rebind.test/", "mapped.rebind.test:443",
		"http://nat64.rebind.test/", "http://mixed.rebind.test/",
	} {
		args := append([]string{"--mode", "open", "--allowlist", "*.rebind.test, 203.0.113.0/24"}, pins...)
		d := egressCheck(t, append(args, target)...)
		if d.Decision != "deny" || d.Reason != "private_address" || len(d.Addresses) != 0 {
			t.Errorf("%s: %s %s (%s) %v; want deny private_address", target, d.Decision, d.Reason, d.Detail, d.Addresses)
		}
	}
}

// TestEgressCheckHostAddress: an address of one of this machine's interfaces is refused, even
// in open mode and listed. It skips on a machine whose interfaces have only never-allowed
// addresses (those are private_address) or only the test hosts' (which come and go).
func TestEgressCheckHostAddress(t *testing.T) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	var own netip.Addr
	for _, a := range addrs {
		p, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, _ := netip.AddrFromSlice(p.IP)
		ip = ip.Unmap()
		r, special := egress.Classify(ip)
		if ip.IsValid() && (!special || !r.NeverAllowed) && !testHostRanges[0].Contains(ip) && !testHostRanges[1].Contains(ip) {
			own = ip
			break
		}
	}
	if !own.IsValid() {
		t.Skip("no interface address outside the never-allowed ranges and the test hosts' to check")
	}
	target := netip.AddrPortFrom(own, 443).String()
	for _, args := range [][]string{
		{"--mode", "open", "--allowlist", own.String(), target}, // listed: a documentation address is reachable only so
		{"--allowlist", own.String(), target},
	} {
		d := egressCheck(t, args...)
		if d.Decision != "deny" || d.Reason != "host_address" || !strings.Contains(d.Detail, "this host's own addresses") {
			t.Errorf("%v: %s %s (%s); want deny host_address", args, d.Decision, d.Reason, d.Detail)
		}
	}
}

// testHostRanges are where test hosts (internal/testnet) put the near ends of their links.
var testHostRanges = []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.0/24")}

func TestEgressCheckEnvironment(t *testing.T) {
	t.Setenv("SANDBOX_EGRESS", "")
	t.Setenv("SANDBOX_EGRESS_ALLOWLIST", "")
	// A typo in SANDBOX_EGRESS is reported and fails closed.
	out, errOut, code := run(t, "egress", "check", "--env", "SANDBOX_EGRESS=opne", "--json", "8.8.8.8")
	if code != 0 || !strings.Contains(errOut, `SANDBOX_EGRESS="opne"`) || !strings.Contains(out, `"not_allowed"`) {
		t.Errorf("typo: status %d, stderr %q, out %s; want it reported and allowlist mode", code, errOut, out)
	}
	out, _, code = run(t, "egress", "check", "--env", "SANDBOX_EGRESS=Open", "--json", "8.8.8.8")
	if code != 0 || !strings.Contains(out, `"open_mode"`) {
		t.Errorf("SANDBOX_EGRESS=Open: status %d, %s", code, out)
	}
	// SANDBOX_EGRESS_ALLOWLIST replaces the default list; --allowlist replaces both.
	out, _, _ = run(t, "egress", "check", "--env", "SANDBOX_EGRESS_ALLOWLIST=allowed.test", "--no-resolve", "--json", "allowed.test")
	if !strings.Contains(out, `"allow"`) {
		t.Errorf("SANDBOX_EGRESS_ALLOWLIST: %s", out)
	}
	out, _, _ = run(t, "egress", "check", "--env", "SANDBOX_EGRESS_ALLOWLIST=allowed.test", "--no-resolve", "--json", "github.com")
	if !strings.Contains(out, `"not_allowed"`) {
		t.Errorf("SANDBOX_EGRESS_ALLOWLIST must replace the default list: %s", out)
	}
	out, _, _ = run(t, "egress", "check", "--env", "SANDBOX_EGRESS_ALLOWLIST=allowed.test", "--allowlist", "other.test", "--no-resolve", "--json", "allowed.test")
	if !strings.Contains(out, `"not_allowed"`) {
		t.Errorf("--allowlist must replace SANDBOX_EGRESS_ALLOWLIST: %s", out)
	}
	_, errOut, code = run(t, "egress", "check", "--env", "SANDBOX_EGRESS_ALLOWLIST=a.test,127.0.0.1", "a.test")
	if code == 0 || !strings.Contains(errOut, `SANDBOX_EGRESS_ALLOWLIST: allowlist entry 2 ("127.0.0.1")`) {
		t.Errorf("bad SANDBOX_EGRESS_ALLOWLIST: status %d, %q", code, errOut)
	}
}

func TestEgressCheckText(t *testing.T) {
	t.Setenv("SANDBOX_EGRESS", "")
	t.Setenv("SANDBOX_EGRESS_ALLOWLIST", "")
	out, _, code := run(t, "egress", "check", "--allowlist", "allowed.test", "--resolve", "allowed.test:198.51.100.1", "https://allowed.test/")
	for _, want := range []string{"decision: allow", "host:     allowed.test (port 443)", "reason:   listed", "connect:  198.51.100.1", "mode:     allowlist, 1 entry from --allowlist"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("status %d; missing %q in\n%s", code, want, out)
		}
	}
}

func TestEgressCheckUsageErrors(t *testing.T) {
	t.Setenv("SANDBOX_EGRESS", "")
	t.Setenv("SANDBOX_EGRESS_ALLOWLIST", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no target", nil, "accepts 1 arg"},
		{"two targets", []string{"a.test", "b.test"}, "accepts 1 arg"},
		{"bad mode", []string{"--mode", "opne", "a.test"}, `--mode "opne"`},
		{"empty mode", []string{"--mode", "", "a.test"}, `--mode ""`},
		{"bad list", []string{"--allowlist", "ok.test, 10.0.0.0/8, 1.0.0.0/8", "a.test"}, `--allowlist: allowlist entry 2 ("10.0.0.0/8")`},
		{"too broad", []string{"--allowlist", "ok.test, 10.0.0.0/8, 1.0.0.0/8", "a.test"}, `allowlist entry 3 ("1.0.0.0/8"): too broad`},
		{"a private-section suffix", []string{"--allowlist", "ok.test *.github.io", "a.test"}, `allowlist entry 2 ("*.github.io"): too broad: github.io is a public suffix (private section): anyone can register names under it`},
		{"a domain with a suffix below it", []string{"--allowlist", "*.amazonaws.com", "a.test"}, `allowlist entry 1 ("*.amazonaws.com"): too broad: below amazonaws.com lies the public suffix s3.amazonaws.com`},
		{"a bad port", []string{"--allowlist", "ok.test, ok.test:0", "a.test"}, `allowlist entry 2 ("ok.test:0"): malformed entry: port "0" is not a number from 1 to 65535`},
		{"resolve without address", []string{"--resolve", "a.test", "a.test"}, "--resolve"},
		{"resolve to a name", []string{"--resolve", "a.test:b.test", "a.test"}, "not an IP address"},
		{"resolve unbracketed IPv6", []string{"--resolve", "a.test:2001:db8::1", "a.test"}, "brackets"},
		{"resolve an address", []string{"--resolve", "1.2.3.4:5.6.7.8", "a.test"}, "HOST must be a name"},
		{"resolve port 0", []string{"--resolve", "a.test:0:8.8.8.8", "a.test"}, "PORT"},
		{"resolve and no-resolve", []string{"--resolve", "a.test:8.8.8.8", "--no-resolve", "a.test"}, "cannot be used together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := run(t, append([]string{"egress", "check"}, tt.args...)...)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("status %d, stderr %q; want failure mentioning %q", code, errOut, tt.want)
			}
		})
	}
}
