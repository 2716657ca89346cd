package surface_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/surface"
)

// A net_search built-in is in no surface while no search provider is configured (Warden has
// none of its own, and a search that always fails is worse than none), and Explain says so;
// with a provider, it is listed as any built-in.
func TestSearchWithoutAProviderIsAbsent(t *testing.T) {
	tests := []struct {
		name, search string
		want         bool
	}{
		{name: "not configured", search: "", want: false},
		{name: "none", search: "search: {provider: none}\n", want: false},
		{name: "the harness searches", search: "search: {provider: harness}\n", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.Parse("quickstart.yaml", append(slices.Clone(examples.Quickstart), tt.search...))
			if err != nil {
				t.Fatal(err)
			}
			sf, err := surface.Open(p.Env(policy.MapLookup(nil)), surface.Spec{Role: "person", Tenant: "default"})
			if err != nil {
				t.Fatal(err)
			}
			if got := sf.Has("WebSearch"); got != tt.want {
				t.Fatalf("WebSearch in the surface: %v, want %v", got, tt.want)
			}
			if !sf.Has("WebFetch") {
				t.Errorf("WebFetch went with WebSearch")
			}
			if tt.want {
				return
			}
			e := sf.Explain("WebSearch")
			if e.Filter != surface.FilterRegistration || !strings.Contains(e.Reason, "no search provider is configured") {
				t.Errorf("Explain(WebSearch) = %+v; want the registration filter, saying no search provider is configured", e)
			}
			if slices.ContainsFunc(sf.Absent(), func(a surface.Explanation) bool {
				return a.Tool == "WebSearch" && a.Filter == surface.FilterRegistration
			}) {
				return
			}
			t.Errorf("the absent list does not name WebSearch under registration")
		})
	}
}
