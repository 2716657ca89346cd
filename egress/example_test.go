package egress_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/wardenhq/warden/egress"
)

func ExampleChecker_Check() {
	list, _ := egress.ParseAllowlist("github.com, *.example.org, 203.0.113.0/24")
	// A stand-in resolver: nothing here is looked up for real.
	res := resolverFunc(func(_ context.Context, _, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("203.0.113.11")}, nil
	})
	c := egress.New(egress.Options{Allowlist: list, Resolver: res})
	for _, target := range []string{
		"https://www.example.org/",
		"http://0x7f.1/",
		"[::ffff:169.254.169.254]:80",
		"evil.test:443",
		"github.com:22",
	} {
		d := c.Check(context.Background(), target)
		fmt.Println(d.Verdict(), d.Host, d.Reason, d.Addrs)
	}
	// Output:
	// allow www.example.org listed [203.0.113.11]
	// deny 127.0.0.1 private_address []
	// deny 169.254.169.254 private_address []
	// deny evil.test not_allowed []
	// deny github.com port_not_allowed []
}

func ExampleParseAllowlist() {
	_, err := egress.ParseAllowlist("github.com, 10.0.0.0/8, *.com, 8.0.0.0/8, *.github.io, git.example.com:22")
	fmt.Println(err)
	// Output:
	// allowlist entry 2 ("10.0.0.0/8"): never allowed: it lies in 10.0.0.0/8, private (RFC 1918)
	// allowlist entry 3 ("*.com"): too broad: *.com would allow a whole top-level domain
	// allowlist entry 4 ("8.0.0.0/8"): too broad: an IPv4 CIDR must be narrower than /8 (/9 at most)
	// allowlist entry 5 ("*.github.io"): too broad: github.io is a public suffix (private section): anyone can register names under it
}

// TestDocsNameEveryRangeAndReason keeps docs/egress.md in step with the code: every range and every reason
// appears in it.
func TestDocsNameEveryRangeAndReason(t *testing.T) {
	doc, err := os.ReadFile("../docs/egress.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range egress.Ranges() {
		if !strings.Contains(string(doc), "`"+r.Prefix.String()+"`") {
			t.Errorf("docs/egress.md does not name the range %s (%s)", r.Prefix, r.Name)
		}
	}
	for _, r := range []egress.Reason{
		egress.ReasonListed, egress.ReasonAllowedOnce, egress.ReasonOpen, egress.ReasonNotAllowed,
		egress.ReasonPrivate, egress.ReasonReserved, egress.ReasonUnresolvable, egress.ReasonNotResolved,
		egress.ReasonInvalidTarget, egress.ReasonAllowedTenant, egress.ReasonSNIMismatch,
		egress.ReasonHostAddress, egress.ReasonPortNotAllowed, egress.ReasonPlaceholder,
	} {
		if !strings.Contains(string(doc), "`"+string(r)+"`") {
			t.Errorf("docs/egress.md does not explain the reason %s", r)
		}
	}
	for _, e := range egress.DefaultAllowlist().Entries() {
		if !strings.Contains(string(doc), e) {
			t.Errorf("docs/egress.md does not list the default entry %s", e)
		}
	}
}
