package policy_test

import (
	"testing"

	"github.com/wardenhq/warden/policy"
)

func TestDiscoveredNamesResolveToTheStandIn(t *testing.T) {
	p, err := policy.Parse("t.yaml", []byte(`
version: 1
connectors:
  - id: docs
    effect: read
    discover: true
    withheld:
      - {what: deletion, reason: no deletes through the agent, tools: ["mcp__docs__delete_*"]}
  - id: shop
    effect: write
    tools: [{name: mcp__shop__list}]
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, want string
	}{
		{"mcp__docs__search", "mcp__docs__*"},
		{"mcp__docs__read_page", "mcp__docs__*"},
		{"mcp__docs__delete_page", ""}, // withheld by the connector
		{"mcp__docs__", ""},            // no tool part
		{"mcp__shop__list", "mcp__shop__list"},
		{"mcp__shop__other", ""}, // shop lists its tools: nothing else is offered
		{"mcp__nobody__x", ""},
		{"docs__search", ""},
	}
	for _, tt := range tests {
		got, ok := p.Tool(tt.name)
		switch {
		case tt.want == "" && ok:
			t.Errorf("Tool(%q) = %s, want none", tt.name, got.Name)
		case tt.want != "" && (!ok || got.Name != tt.want):
			t.Errorf("Tool(%q) = %v, %v, want %s", tt.name, got, ok, tt.want)
		}
	}
}
