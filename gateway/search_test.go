package gateway

import (
	"slices"
	"testing"

	"github.com/wardenhq/warden/examples"
)

// WebSearch (kind net_search) is never listed by the gateway: absent from the surface while no
// search provider is configured, and the harness's own when the provider is the harness.
// Before, every session listed it and every call of it failed.
func TestSearchIsNeverListed(t *testing.T) {
	for _, search := range []string{"", "search: {provider: harness}\n"} {
		r := newRig(t, append(slices.Clone(examples.Quickstart), search...), nil)
		cs := r.connect(r.token("default", "person", ""), nil)
		got := names(t, cs)
		if slices.Contains(got, "WebSearch") || !slices.Contains(got, "WebFetch") {
			t.Errorf("with %q the session lists %v; want WebFetch and no WebSearch", search, got)
		}
	}
}
