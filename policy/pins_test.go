package policy_test

import (
	"maps"
	"testing"

	"github.com/wardenhq/warden/policy"
)

func TestPinsAreCompiledOntoTheirConnector(t *testing.T) {
	p, err := policy.Parse("t.yaml", []byte(`
version: 1
connectors:
  - id: up
    effect: read
    upstream: {url: "http://127.0.0.1:1/mcp"}
    tools: [{name: mcp__up__list}, {name: mcp__up__get}]
    pins:
      mcp__up__list: sha256:`+digestA+`
      "mcp__up__get": 'sha256:`+digestB+`'
  - id: docs
    effect: read
    discover: true
    upstream: {command: [docs-mcp]}
    withheld:
      - {what: deletion, reason: no deletes through the agent, tools: ["mcp__docs__delete_*"]}
    pins: {mcp__docs__search: "sha256:`+digestA+`"}
  - id: plain
    effect: read
    upstream: {command: [plain-mcp]}
    tools: [{name: mcp__plain__list}]
    pins:
  - id: none
    effect: read
    tools: [{name: mcp__none__list}]
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id   string
		want map[string]string
	}{
		{"up", map[string]string{"mcp__up__list": "sha256:" + digestA, "mcp__up__get": "sha256:" + digestB}},
		{"docs", map[string]string{"mcp__docs__search": "sha256:" + digestA}},
		{"plain", nil}, // pins written but empty: nothing pinned
		{"none", nil},
	}
	for _, tt := range tests {
		s, ok := p.Server(tt.id)
		if !ok {
			t.Fatalf("no connector %s", tt.id)
		}
		if !maps.Equal(s.Pins, tt.want) || (tt.want == nil) != (s.Pins == nil) {
			t.Errorf("%s: pins %v, want %v", tt.id, s.Pins, tt.want)
		}
	}
}
