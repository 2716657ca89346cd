package permissions_test

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/permissions"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/verdict"
)

var update = flag.Bool("update", false, "rewrite docs/scout-permissions.md from the Scout example")

func render(t *testing.T, name string, src []byte) (*policy.Policy, string) {
	t.Helper()
	p, err := policy.Parse(name, src)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	var buf bytes.Buffer
	if err := permissions.Render(&buf, p); err != nil {
		t.Fatal(err)
	}
	return p, buf.String()
}

// TestEveryNameOnThePage is the test Scout keeps: a tool name in the policy that is missing
// from the page fails it. Here it is stricter: every role's section lists every tool, either
// as given or as not given with a reason, and every switch and blocker code appears.
func TestEveryNameOnThePage(t *testing.T) {
	tests := []struct {
		name string
		src  []byte
	}{
		{"examples/scout/warden.yaml", examples.Scout},
		{"examples/quickstart.yaml", examples.Quickstart},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, page := render(t, tt.name, tt.src)
			for tool := range p.Tools() {
				if !strings.Contains(page, "`"+tool.Name+"`") {
					t.Errorf("the page does not name the tool %s", tool.Name)
				}
			}
			for r := range p.Roles() {
				section := roleSection(t, page, r.ID)
				for tool := range p.Tools() {
					if !strings.Contains(section, "| `"+tool.Name+"` |") {
						t.Errorf("role %s: the page neither gives nor refuses %s", r.ID, tool.Name)
					}
				}
			}
			for s := range p.Switches() {
				if !strings.Contains(page, "`"+s.Name+"`") {
					t.Errorf("the page does not name the switch %s", s.Name)
				}
			}
			for _, c := range verdict.Codes() {
				if !strings.Contains(page, "`"+string(c.Code)+"`") {
					t.Errorf("the page does not name the blocker code %s", c.Code)
				}
			}
		})
	}
}

func roleSection(t *testing.T, page, role string) string {
	t.Helper()
	start := strings.Index(page, "\n## Role: "+role+"\n")
	if start < 0 {
		t.Fatalf("no section for role %s", role)
	}
	rest := page[start+1:]
	if end := strings.Index(rest[3:], "\n## "); end >= 0 {
		rest = rest[:end+3]
	}
	return rest
}

// TestScoutPage keeps docs/scout-permissions.md equal to what warden docs generates for the
// Scout example; run with -update to rewrite it after a deliberate change.
func TestScoutPage(t *testing.T) {
	_, page := render(t, "examples/scout/warden.yaml", examples.Scout)
	const golden = "../docs/scout-permissions.md"
	if *update {
		if err := os.WriteFile(golden, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./permissions -update to create it)", err)
	}
	if string(want) != page {
		t.Errorf("docs/scout-permissions.md is stale: run go test ./permissions -update and review the diff")
	}
}

// TestScoutPageStatements checks a few of the seed's statements in the page's own words.
func TestScoutPageStatements(t *testing.T) {
	_, page := render(t, "examples/scout/warden.yaml", examples.Scout)
	tests := []struct {
		role, want string
	}{
		{"coworker", "| `mcp__project__project_delete` | ceiling | removed from the ceiling by `!*#delete` |"},
		{"coworker", "| `mcp__memory__soul_update` | gate |"},
		{"inbound", "| `mcp__agentmail__agentmail_send_message` | ceiling |"},
		{"specialist", "| `mcp__shopify__shopify_admin_graphql` | grant | not in the read table"},
		{"goal_reviewer", "### Given to goal_reviewer (0)"},
		{"person", "| `mcp__writer__writer_save_draft` | profile | opt-in"},
		{"person", "| `mcp__seo__seo_save_brief` | grant | rides on the skill seo-method"},
	}
	for _, tt := range tests {
		if !strings.Contains(roleSection(t, page, tt.role), tt.want) {
			t.Errorf("role %s: the page lacks %q", tt.role, tt.want)
		}
	}
}

// TestElicitationOnThePage: a role with an approval channel says whether its sessions answer
// their own cards by elicitation; a role with nobody to ask does not mention it.
func TestElicitationOnThePage(t *testing.T) {
	_, page := render(t, "p.yaml", []byte(`
version: 1
builtins:
  - name: files_read
roles:
  - {id: person, approvalByElicitation: false}
  - {id: desk, approvalChannel: true, approvalByElicitation: true, ceiling: ['*']}
`))
	const line = "- Answers its own cards in its MCP client (elicitation): "
	for role, want := range map[string]string{"person": line + "no\n", "desk": line + "yes\n", "inbound": ""} {
		section := roleSection(t, page, role)
		if want == "" {
			if strings.Contains(section, line) {
				t.Errorf("role %s has no approval channel, but its section says %q", role, line)
			}
		} else if !strings.Contains(section, want) {
			t.Errorf("role %s: the section does not say %q", role, want)
		}
	}
}
