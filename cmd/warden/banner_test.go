package main

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
)

// The banner says the sandbox is not active, and reports egress settings that are wrong even
// before anything enforces them.
func TestBannerReportsTheSandboxAndBadEgressSettings(t *testing.T) {
	p, err := policy.Parse("quickstart.yaml", examples.Quickstart)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SANDBOX_EGRESS", "closed")
	t.Setenv("SANDBOX_EGRESS_ALLOWLIST", "10.0.0.0/8")
	var b strings.Builder
	banner(&b, p, p.Env(policy.MapLookup(nil)), "sqlite w.db", "127.0.0.1:1", "/ws")
	for _, want := range []string{
		"SANDBOX NOT ACTIVE",
		`egress: SANDBOX_EGRESS="closed" is neither open nor allowlist, so the egress mode is allowlist`,
		`egress: SANDBOX_EGRESS_ALLOWLIST: allowlist entry 1 ("10.0.0.0/8"): never allowed`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the banner lacks %q:\n%s", want, b.String())
		}
	}
	t.Setenv("SANDBOX_EGRESS", "OPEN")
	t.Setenv("SANDBOX_EGRESS_ALLOWLIST", "")
	b.Reset()
	banner(&b, p, p.Env(policy.MapLookup(nil)), "sqlite w.db", "127.0.0.1:1", "/ws")
	if strings.Contains(b.String(), "egress:") {
		t.Errorf("good settings reported as bad:\n%s", b.String())
	}
}
