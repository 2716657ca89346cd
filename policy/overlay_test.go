package policy_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/policy"
)

func scoutPolicy(t *testing.T) []byte { return scoutPolicyB(t) }

func scoutPolicyB(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile("../examples/scout/warden.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestOverlayAddsObjects: a stored tenant, its connection, a profile and its egress compile
// into the policy as if the file held them.
func TestOverlayAddsObjects(t *testing.T) {
	docs := []policy.Doc{
		// Given out of order: connections and profiles name a tenant that comes later.
		{Kind: policy.DocProfile, ID: "crawler", Tenant: "globex", Data: []byte(`{"name":"Crawler","role":"specialist","tools":["Read","WebFetch"],"grant":{"connectors":["firecrawl"],"allowance":{"firecrawl":{"perRun":5,"perDay":20}}}}`)},
		{Kind: policy.DocConnection, ID: "globex-firecrawl", Tenant: "globex", Data: []byte(`{"connector":"firecrawl","name":"Globex Firecrawl","secret":"env:WARDEN_SECRET_GLOBEX__FIRECRAWL"}`)},
		{Kind: policy.DocTenant, ID: "globex", Tenant: "globex", Data: []byte(`{"name":"Globex","account":"globex"}`)},
		{Kind: policy.DocEgress, ID: "globex", Tenant: "globex", Data: []byte(`{"allow":["api.globex.example","*.cdn.globex.example:8443"]}`)},
	}
	p, err := policy.ParseOverlay("warden.yaml", scoutPolicy(t), docs)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := p.Tenant("globex")
	if !ok {
		t.Fatal("the stored tenant is not in the policy")
	}
	if g.Name != "Globex" || len(g.Connections) != 1 || g.Connections[0].ID != "globex-firecrawl" {
		t.Errorf("tenant %+v: want Globex with its connection", g)
	}
	if len(g.Coworkers) != 1 || g.Coworkers[0].ID != "crawler" {
		t.Errorf("coworkers %v: want the stored profile", g.Coworkers)
	}
	if want := []string{"api.globex.example", "*.cdn.globex.example:8443"}; !slices.Equal(g.Egress, want) {
		t.Errorf("egress %q, want %q", g.Egress, want)
	}
	plain, err := policy.Parse("warden.yaml", scoutPolicy(t))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Revision == p.Revision {
		t.Error("the revision does not cover the overlaid objects")
	}
	docs[2].Data = []byte(`{"name":"Globex Inc","account":"globex"}`)
	again, err := policy.ParseOverlay("warden.yaml", scoutPolicy(t), docs)
	if err != nil {
		t.Fatal(err)
	}
	if again.Revision == p.Revision {
		t.Error("a changed object did not change the revision")
	}
}

// TestOverlayProblemsNameTheObject: a problem in a stored object is reported with the object
// and the JSON pointer of the value, with the compiler's own message; every problem at once.
func TestOverlayProblemsNameTheObject(t *testing.T) {
	tests := []struct {
		name string
		doc  policy.Doc
		// want are "object: pointer: message fragment", each found in one error.
		want []string
	}{
		{
			name: "unknown connector and tool",
			doc: policy.Doc{Kind: policy.DocProfile, ID: "bad", Tenant: "acme",
				Data: []byte(`{"name":"Bad","tools":["Read","mcp__nope__x"],"grant":{"connectors":["firecrawl","nope"],"allowance":{"firecrawl":{"perRun":5,"perDay":20}}}}`)},
			want: []string{"profile bad: /tools/1: ", "profile bad: /grant/connectors/1: "},
		},
		{
			name: "per-run above per-day",
			doc: policy.Doc{Kind: policy.DocProfile, ID: "greedy", Tenant: "acme",
				Data: []byte("{\n  \"role\": \"specialist\",\n  \"tools\": [\"Read\"],\n  \"grant\": {\"connectors\": [\"firecrawl\"], \"allowance\": {\"firecrawl\": {\"perRun\": 50, \"perDay\": 20}}}\n}")},
			want: []string{"profile greedy: /grant/allowance/firecrawl"},
		},
		{
			name: "unknown field",
			doc:  policy.Doc{Kind: policy.DocConnection, ID: "c1", Tenant: "acme", Data: []byte(`{"connector":"firecrawl","secrett":"env:X"}`)},
			want: []string{"connection c1: /secrett: "},
		},
		{
			name: "a secret value instead of a reference",
			doc:  policy.Doc{Kind: policy.DocConnection, ID: "c2", Tenant: "acme", Data: []byte(`{"connector":"firecrawl","secret":"sk-live-123"}`)},
			want: []string{"connection c2: /secret: ", "reference"},
		},
		{
			name: "another tenant's credential, or Warden's own",
			doc:  policy.Doc{Kind: policy.DocConnection, ID: "c4", Tenant: "acme", Data: []byte(`{"connector":"firecrawl","secret":"env:WARDEN_SECRET_ACME_EU__FIRECRAWL"}`)},
			want: []string{"connection c4: /secret: ", "env:WARDEN_SECRET_ACME__NAME"},
		},
		{
			name: "a file Warden can read",
			doc:  policy.Doc{Kind: policy.DocConnection, ID: "c5", Tenant: "acme", Data: []byte(`{"connector":"firecrawl","secret":"file:/etc/shadow"}`)},
			want: []string{"connection c5: /secret: "},
		},
		{
			name: "a tenant that does not exist",
			doc:  policy.Doc{Kind: policy.DocConnection, ID: "c3", Tenant: "nobody", Data: []byte(`{"connector":"firecrawl"}`)},
			want: []string{"connection c3: ", `tenant "nobody", which does not exist`},
		},
		{
			name: "a bad egress entry",
			doc:  policy.Doc{Kind: policy.DocEgress, ID: "acme-eu", Tenant: "acme-eu", Data: []byte(`{"allow":["ok.example","*.com","10.0.0.1"]}`)},
			want: []string{"egress acme-eu: /allow/1: ", "egress acme-eu: /allow/2: "},
		},
		{
			name: "an object the file declares",
			doc:  policy.Doc{Kind: policy.DocProfile, ID: "researcher", Tenant: "acme", Data: []byte(`{"tools":["Read"]}`)},
			want: []string{"profile researcher: ", "declared in the policy file"},
		},
		{
			name: "not JSON",
			doc:  policy.Doc{Kind: policy.DocTenant, ID: "t", Tenant: "t", Data: []byte(`{"name": [}`)},
			want: []string{"tenant t: "},
		},
		{
			name: "connections inside a stored tenant",
			doc:  policy.Doc{Kind: policy.DocTenant, ID: "t", Tenant: "t", Data: []byte(`{"connections":[]}`)},
			want: []string{"tenant t: /connections: ", "objects of their own"},
		},
		{
			name: "id differs from where it is stored",
			doc:  policy.Doc{Kind: policy.DocTenant, ID: "t", Tenant: "t", Data: []byte(`{"id":"u"}`)},
			want: []string{"tenant t: /id: "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.ParseOverlay("warden.yaml", scoutPolicy(t), []policy.Doc{tt.doc})
			var list policy.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("err %v: want an ErrorList", err)
			}
			for _, want := range tt.want {
				found := false
				for _, e := range list {
					found = found || strings.Contains(e.Error(), want)
				}
				if !found {
					t.Errorf("no error holds %q; errors:\n%v", want, err)
				}
			}
			for _, e := range list {
				if e.Pos.Doc != 1 || e.Object == "" {
					t.Errorf("%v: Pos.Doc %d, Object %q: want the object's", e, e.Pos.Doc, e.Object)
				}
			}
		})
	}
}

// TestOverlayLeavesTheFileAlone: a problem the file has is reported at its line, as Parse
// reports it, overlay or not.
func TestOverlayLeavesTheFileAlone(t *testing.T) {
	data := []byte("version: 1\nbuiltins:\n  - name: files_read\nprofiles:\n  - {id: p, tools: [nope]}\n")
	_, err := policy.ParseOverlay("w.yaml", data, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "w.yaml:5:") {
		t.Fatalf("err %v: want it at w.yaml:5", err)
	}
}

// overlayBad are overlays with a problem each, over the Scout example, for
// TestEveryMessageIsTested.
var overlayBad = [][]policy.Doc{
	{{Kind: policy.DocEgress, ID: "acme", Tenant: "acme", Data: []byte(`{"allow":["*.com"]}`)}},
	{{Kind: policy.DocEgress, ID: "acme", Tenant: "acme", Data: []byte(`{"allow":["a.example","a.example"]}`)}},
	{{Kind: "widget", ID: "w", Data: []byte(`{}`)}},
	{{Kind: policy.DocTenant, ID: "t", Tenant: "t", Data: []byte(`[1]`)}},
	{{Kind: policy.DocTenant, ID: "acme", Tenant: "acme", Data: []byte(`{}`)}},
	{{Kind: policy.DocTenant, ID: "t", Tenant: "t", Data: []byte(`{"id":"u"}`)}},
	{{Kind: policy.DocProfile, ID: "p", Tenant: "nobody", Data: []byte(`{"tools":["Read"]}`)}},
	{{Kind: policy.DocTenant, ID: "t", Tenant: "t", Data: []byte(`{"boundaries":{}}`)}},
	{{Kind: policy.DocTenant, ID: "t", Tenant: "u", Data: []byte(`{}`)}},
	{{Kind: policy.DocEgress, ID: "acme", Tenant: "acme-eu", Data: []byte(`{"allow":[]}`)}},
	{{Kind: policy.DocConnection, ID: "c", Tenant: "acme", Data: []byte(`{"connector":"firecrawl","secret":"env:HOME"}`)}},
	{
		{Kind: policy.DocTenant, ID: "acme_eu", Tenant: "acme_eu", Data: []byte(`{}`)},
		{Kind: policy.DocConnection, ID: "c", Tenant: "acme_eu", Data: []byte(`{"connector":"firecrawl","secret":"env:WARDEN_SECRET_ACME_EU__X"}`)},
	},
}

// overlayMessages are the messages the overlays of overlayBad produce.
func overlayMessages(t *testing.T) []string {
	var out []string
	for _, docs := range overlayBad {
		_, err := policy.ParseOverlay(fileName, scoutPolicy(t), docs)
		if err == nil {
			t.Errorf("%s %s: no problem found", docs[0].Kind, docs[0].Data)
			continue
		}
		out = append(out, strings.Split(err.Error(), "\n")...)
	}
	return out
}
