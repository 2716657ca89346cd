package surface_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/surface"
)

// routePolicy has two tenants (the owner's and a customer's, both connected to shop), a held-back
// model, an uncertified harness and a tool that registers only for one model.
const routePolicy = `version: 1
builtins:
  - name: files_read
  - name: files_write
  - {name: Bash, kind: shell_exec}
models:
  - {id: claude-sonnet-5}
  - {id: claude-haiku-5-5, certified: false, description: held back}
  - {id: google/gemini-3.8-flash}
harnesses:
  - {id: loop, certified: false}
servers:
  - id: memory
    effect: write
    tools: [{name: mcp__memory__note}]
  - id: transcripts
    effect: read
    tools:
      - name: mcp__transcripts__search
      - {name: mcp__transcripts__flash_only, when: "model == google/gemini-3.8-flash"}
connectors:
  - id: shop
    effect: read
    tools: [{name: mcp__shop__list}]
tenants:
  - id: house
    owner: true
    connections: [{id: house-shop, connector: shop, secret: "env:HOUSE_SHOP"}]
  - id: brand
    connections: [{id: brand-shop, connector: shop, secret: "env:BRAND_SHOP"}]
`

var fullTools = []string{"files_read", "files_write", "Bash", "mcp__memory__note", "mcp__transcripts__search", "mcp__shop__list"}

// readOnlyTools is the read_only role's surface: read-only built-ins and transcripts; no
// memory (it writes), no connector (the route is handed no credentials).
var readOnlyTools = []string{"files_read", "mcp__transcripts__search"}

func TestModelRoute(t *testing.T) {
	p := parse(t, routePolicy)
	cases := []struct {
		name          string
		spec          surface.Spec
		tools         []string
		readOnly      string // a word of the reason; "" for the role's own route
		absentBecause map[string]string
	}{
		{name: "certified model, customer", spec: surface.Spec{Role: "person", Tenant: "brand", Model: "claude-sonnet-5"}, tools: fullTools},
		{name: "held-back model, customer", spec: surface.Spec{Role: "person", Tenant: "brand", Model: "claude-haiku-5-5"},
			tools: readOnlyTools, readOnly: "held back",
			absentBecause: map[string]string{"mcp__shop__list": "never built", "Bash": "read-only route", "mcp__memory__note": "read-only route"}},
		{name: "held-back model, owner", spec: surface.Spec{Role: "person", Tenant: "house", Model: "claude-haiku-5-5"}, tools: fullTools},
		{name: "held-back model, owner by what-if", spec: surface.Spec{Role: "person", Tenant: "brand", Model: "claude-haiku-5-5", Owner: true}, tools: fullTools},
		{name: "unlisted model, customer", spec: surface.Spec{Role: "person", Tenant: "brand", Model: "gpt-9"},
			tools: readOnlyTools, readOnly: "not among the policy's models"},
		{name: "no model, customer", spec: surface.Spec{Role: "person", Tenant: "brand"},
			tools: readOnlyTools, readOnly: "states no model"},
		{name: "no model, owner", spec: surface.Spec{Role: "person", Tenant: "house"}, tools: fullTools},
		{name: "uncertified harness, owner", spec: surface.Spec{Role: "person", Tenant: "house", Harness: "loop", Model: "claude-sonnet-5"},
			tools: readOnlyTools, readOnly: "harness loop is not certified"},
		{name: "the model fact", spec: surface.Spec{Role: "person", Tenant: "brand", Model: "google/gemini-3.8-flash"},
			tools: append(slices.Clone(fullTools), "mcp__transcripts__flash_only")},
		{name: "role read_only, certified model", spec: surface.Spec{Role: "read_only", Tenant: "brand", Model: "claude-sonnet-5"},
			tools: readOnlyTools, readOnly: "role is read_only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openOK(t, p, map[string]string{"HOUSE_SHOP": "h", "BRAND_SHOP": "b"}, c.spec)
			got, want := s.Tools(), slices.Clone(c.tools)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("tools %v; want %v", got, want)
			}
			ro, why := s.ReadOnly()
			if ro != (c.readOnly != "") || !strings.Contains(why, c.readOnly) {
				t.Errorf("ReadOnly() = %v, %q; want %q", ro, why, c.readOnly)
			}
			if s.Model() != c.spec.Model {
				t.Errorf("Model() = %q; want %q", s.Model(), c.spec.Model)
			}
			for tool, word := range c.absentBecause {
				if e := s.Explain(tool); e.Given || !strings.Contains(e.Reason, word) {
					t.Errorf("Explain(%s) = %+v; want absent, the reason saying %q", tool, e, word)
				}
			}
			if c.readOnly != "" && c.spec.Role != "read_only" && len(s.Credentials()) != 0 {
				t.Errorf("a read-only route holds credentials: %+v", s.Credentials())
			}
		})
	}
}

func TestModelRouteChild(t *testing.T) {
	p := parse(t, routePolicy+`roles:
  - id: person
    limits: {maxDelegationDepth: 1}
`)
	parent := openOK(t, p, map[string]string{"BRAND_SHOP": "b"}, surface.Spec{Role: "person", Tenant: "brand", Model: "claude-haiku-5-5"})
	child := childOK(t, parent, "", "")
	if ro, why := child.ReadOnly(); !ro || !strings.Contains(why, "parent") || child.Model() != "claude-haiku-5-5" {
		t.Errorf("child: ReadOnly() = %v, %q, model %q; want the parent's read-only route and model", ro, why, child.Model())
	}
	_, err := surface.Open(parent.Env(), surface.Spec{Parent: parent, Model: "claude-sonnet-5"})
	if !errors.Is(err, surface.ErrRefused) || !strings.Contains(err.Error(), "parent's model") {
		t.Errorf("a child naming another model: %v; want refused", err)
	}
}

// TestNoModelsKeepsToday: a policy that lists no models routes by harness only, whatever the
// session's model; an empty list certifies none.
func TestNoModelsKeepsToday(t *testing.T) {
	src := strings.Replace(routePolicy, "models:\n  - {id: claude-sonnet-5}\n  - {id: claude-haiku-5-5, certified: false, description: held back}\n  - {id: google/gemini-3.8-flash}\n", "", 1)
	src = strings.Replace(src, `, when: "model == google/gemini-3.8-flash"`, "", 1)
	p := parse(t, src)
	for _, model := range []string{"", "claude-haiku-5-5"} {
		s := openOK(t, p, map[string]string{"BRAND_SHOP": "b"}, surface.Spec{Role: "person", Tenant: "brand", Model: model})
		if ro, why := s.ReadOnly(); ro || !s.Has("Bash") {
			t.Errorf("model %q without models: read-only %v (%s), Bash %v; want the role's own route", model, ro, why, s.Has("Bash"))
		}
	}
	p = parse(t, strings.Replace(src, "harnesses:", "models: []\nharnesses:", 1))
	s := openOK(t, p, map[string]string{"BRAND_SHOP": "b"}, surface.Spec{Role: "person", Tenant: "brand", Model: "claude-sonnet-5"})
	if ro, _ := s.ReadOnly(); !ro {
		t.Errorf("models: [] certifies no model, yet a customer's session runs its role's route")
	}
}

// Where role read_only does not exist, a session on the read-only route is refused rather than
// started on its own role's tools.
func TestReadOnlyRouteWithoutTheRole(t *testing.T) {
	p := parse(t, routePolicy+`switches:
  - {name: READ_ONLY_ON, rule: exactly-true}
roles:
  - id: read_only
    when: READ_ONLY_ON
`)
	_, err := surface.Open(p.Env(policy.MapLookup(nil)), surface.Spec{Role: "person", Tenant: "brand", Model: "claude-haiku-5-5"})
	if !errors.Is(err, surface.ErrRefused) || !strings.Contains(err.Error(), "role read_only exists only when READ_ONLY_ON") {
		t.Fatalf("a held-back model without role read_only: %v; want refused", err)
	}
	s := openOK(t, p, map[string]string{"READ_ONLY_ON": "true"}, surface.Spec{Role: "person", Tenant: "brand", Model: "claude-haiku-5-5"})
	if ro, _ := s.ReadOnly(); !ro {
		t.Errorf("with role read_only on, the held-back model's session is not read-only")
	}
}
