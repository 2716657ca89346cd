package boundary_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
)

// minimal is the smallest policy the rules can be written in: one tenant besides the
// boundaries under test.
const minimal = "version: 1\nbuiltins: [{name: files_read}]\n"

func mustPolicy(t *testing.T, name, text string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse(name, []byte(text))
	if err != nil {
		t.Fatalf("policy.Parse: %v", err)
	}
	return p
}

// The built-in quickstart policy ships examples/boundaries.json as every tenant's rules.
func TestQuickstartShipsTheExampleRules(t *testing.T) {
	p := mustPolicy(t, examples.QuickstartName, string(examples.Quickstart))
	rules, err := boundary.FromPolicy(p)
	if err != nil {
		t.Fatalf("FromPolicy(quickstart): %v", err)
	}
	data, err := os.ReadFile("../examples/boundaries.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := boundary.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"default", "a-tenant-the-policy-does-not-name"} {
		if diff := cmp.Diff(want, rules.For(tenant)); diff != "" {
			t.Errorf("the quickstart's rules for %s differ from examples/boundaries.json (-want +got):\n%s", tenant, diff)
		}
	}
	set := boundary.Merge(rules.For("default"), nil, boundary.Options{Home: "/home/u"})
	if hits := set.CheckPath(action.OpRead, "/home/u/.ssh/id_ed25519", false, nil); len(hits) == 0 {
		t.Error("the quickstart's rules do not block reading an SSH key")
	}
}

func TestFromPolicy(t *testing.T) {
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "rules.json")
	if err := os.WriteFile(rulesFile, []byte(`{"version":1,"hardBlocks":[
		{"id":"secrets","enabled":true,"type":"path","pattern":"/srv/secrets/","match":"prefix","operations":["read"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	text := minimal + `boundaries:
  version: 1
  hardBlocks:
    - {id: dotenv, enabled: true, type: path, pattern: "**/.env", match: glob, operations: [read]}
tenants:
  - id: acme
    boundaries: {file: rules.json}
  - id: other
`
	p := mustPolicy(t, filepath.Join(dir, "warden.yaml"), text)
	rules, err := boundary.FromPolicy(p)
	if err != nil {
		t.Fatalf("FromPolicy: %v", err)
	}
	ids := func(d *boundary.Document) []string {
		var out []string
		for _, r := range d.HardBlocks {
			out = append(out, r.ID)
		}
		return out
	}
	if got := ids(rules.For("acme")); !cmp.Equal(got, []string{"dotenv", "secrets"}) {
		t.Errorf("acme's rules = %v; want the deployment's, then its own", got)
	}
	if got := ids(rules.For("other")); !cmp.Equal(got, []string{"dotenv"}) {
		t.Errorf("other's rules = %v; want the deployment's", got)
	}
	var none *boundary.PolicyRules
	if none.For("acme") != nil {
		t.Error("a nil PolicyRules has rules")
	}
}

func TestFromPolicyErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"version":1,"hardBlocks":[{"id":"x","enabled":true,"type":"path","pattern":"/a","match":"fuzzy","operations":["read"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		give string
		want []string
	}{
		{
			name: "every field error, each where it is written",
			give: minimal + `boundaries:
  version: 2
  hardBlocks:
    - id: a
      enabled: true
      type: path
      pattern: "*.env"
      match: glob
      operations: [read, chew]
    - {id: a, type: path, pattern: /x, match: exact, operations: [read]}
`,
			want: []string{
				"warden.yaml:4:12: boundaries: version: unsupported version 2; want 1",
				`warden.yaml:9:17: boundaries: hardBlocks[0].pattern: this glob cannot match an absolute path`,
				`warden.yaml:11:26: boundaries: hardBlocks[0].operations[1]: unknown operation "chew"`,
				`warden.yaml:12:7: boundaries: hardBlocks[1].enabled: missing`,
				`warden.yaml:12:12: boundaries: hardBlocks[1].id: duplicate id "a"`,
			},
		},
		{
			name: "a file's errors at its reference",
			give: minimal + "tenants:\n  - id: acme\n    boundaries: {file: bad.json}\n",
			want: []string{`warden.yaml:5:24: tenant acme: boundaries file bad.json: hardBlocks[0].match: unknown match method "fuzzy"`},
		},
		{
			name: "a tenant's rule that reuses a deployment-wide id",
			give: minimal + `boundaries: {version: 1, hardBlocks: [{id: k, enabled: true, type: path, pattern: /k, match: exact, operations: [read]}]}
tenants:
  - id: acme
    boundaries: {version: 1, hardBlocks: [{id: k, enabled: true, type: path, pattern: /j, match: exact, operations: [read]}]}
`,
			want: []string{`warden.yaml:6:48: tenant acme: boundaries: hardBlocks[0].id: "k" is already the id of a deployment-wide rule`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, filepath.Join(dir, "warden.yaml"), tt.give)
			_, err := boundary.FromPolicy(p)
			if err == nil {
				t.Fatal("FromPolicy accepted invalid rules")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, line := range lines {
				line = strings.TrimPrefix(line, dir+string(filepath.Separator))
				if !strings.HasPrefix(line, tt.want[i]) {
					t.Errorf("error %d = %q\nwant it to start %q", i, line, tt.want[i])
				}
			}
		})
	}
}

// FuzzFromPolicy checks that no policy crashes FromPolicy, and that each problem it reports is
// one line at a place in the policy, as warden check prints them.
func FuzzFromPolicy(f *testing.F) {
	f.Add(examples.Quickstart)
	f.Add([]byte(minimal + "boundaries: {version: 1, hardBlocks: [{id: a, enabled: true, type: path, pattern: \"**/x\", match: glob, operations: [read]}]}\n"))
	f.Add([]byte(minimal + "boundaries: {version: 2, hardBlocks: [{id: a, type: command, pattern: \"(\", match: regex, operations: [read, read]}]}\n"))
	f.Add([]byte(minimal + "boundaries: {version: 1}\ntenants: [{id: t, boundaries: {version: 1, hardBlocks: [{id: a, enabled: yes}]}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := policy.Parse("name.yaml", data)
		if err != nil {
			return
		}
		rules, err := boundary.FromPolicy(p)
		if err != nil {
			lines := strings.Split(err.Error(), "\n")
			var list policy.ErrorList
			if !errors.As(err, &list) || len(list) != len(lines) {
				t.Fatalf("%T with %d errors prints as %d lines:\n%v", err, len(list), len(lines), err)
			}
			for _, e := range list {
				if e.File != "name.yaml" || !e.Pos.IsValid() {
					t.Errorf("an error without its place: %v", e)
				}
			}
			return
		}
		for tn := range p.Tenants() {
			// The rules FromPolicy accepted compile for a real home.
			if set := boundary.Merge(rules.For(tn.ID), nil, boundary.Options{Home: "/home/u"}); set.Invalid() != nil {
				t.Errorf("accepted rules of %s do not compile: %v", tn.ID, set.Invalid())
			}
		}
	})
}
