package egress

import (
	"strings"
	"testing"

	"golang.org/x/net/publicsuffix"
)

// TestSuffixTableMatchesPublicSuffix: the table of domains with a public suffix below them was
// made from the list golang.org/x/net/publicsuffix carries; after an update of that module,
// run go generate ./egress.
func TestSuffixTableMatchesPublicSuffix(t *testing.T) {
	if v := publicsuffix.List.String(); v != suffixListVersion {
		t.Fatalf("suffixes_table.go was made from %q, but golang.org/x/net/publicsuffix carries %q: run go generate ./egress", suffixListVersion, v)
	}
	if len(suffixesBelow) < 100 {
		t.Fatalf("suffixesBelow has %d domains", len(suffixesBelow))
	}
	for d, b := range suffixesBelow {
		if ps, _ := publicsuffix.PublicSuffix(d); ps == d {
			t.Errorf("%s is a public suffix itself", d)
		}
		probe := strings.Replace(b.suffix, "*", "x_", 1)
		if ps, icann := publicsuffix.PublicSuffix(probe); ps != probe || icann != b.icann || !strings.HasSuffix(b.suffix, "."+d) {
			t.Errorf("%s: %s is not a public suffix below it of the section the table says (%s, %v)", d, b.suffix, ps, icann)
		}
	}
}
