package review_test

import (
	"testing"

	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// TestAllowHost checks that a sandbox_allow_host call asks a person only for a host a yes could
// add: a host that is never allowed, too broad or not one host is denied by the review itself.
func TestAllowHost(t *testing.T) {
	f := newFixture(t)
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	check(t, f, r.Review(s, "sandbox_allow_host", map[string]any{"host": "example.com", "reason": "docs"}),
		want{decision: verdict.Ask, codes: []verdict.Code{verdict.ApprovalRequired}})
	for _, host := range []string{"169.254.169.254", "127.1", "10.0.0.0/8", "a.com,b.com", "", "*.com"} {
		v := r.Review(s, "sandbox_allow_host", map[string]any{"host": host})
		check(t, f, v, want{decision: verdict.Deny, codes: []verdict.Code{verdict.InvalidInput, verdict.ApprovalRequired}})
	}
}
