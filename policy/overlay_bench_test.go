package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wardenhq/warden/policy"
)

// BenchmarkParseOverlay is what each change of the management data costs: the Scout example
// compiled with n stored tenants, each with a connection and a profile (3n objects).
func BenchmarkParseOverlay(b *testing.B) {
	data := scoutPolicyB(b)
	for _, n := range []int{0, 10, 100, 1000} {
		var docs []policy.Doc
		for i := range n {
			t := fmt.Sprintf("t%04d", i)
			docs = append(docs,
				policy.Doc{Kind: policy.DocTenant, ID: t, Tenant: t, Data: []byte(`{"name":"Tenant ` + t + `"}`)},
				policy.Doc{Kind: policy.DocConnection, ID: t + "-fc", Tenant: t, Data: []byte(`{"connector":"firecrawl","secret":"env:WARDEN_SECRET_` + strings.ToUpper(t) + `__FC"}`)},
				policy.Doc{Kind: policy.DocProfile, ID: t + "-crawler", Tenant: t, Data: []byte(`{"role":"specialist","tools":["Read","WebFetch"],"grant":{"connectors":["firecrawl"],"allowance":{"firecrawl":{"perRun":5,"perDay":20}}}}`)})
		}
		b.Run(fmt.Sprintf("objects=%d", 3*n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := policy.ParseOverlay("warden.yaml", data, docs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
