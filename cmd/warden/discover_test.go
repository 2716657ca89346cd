package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestDiscoverReportsClaimsAgainstThePolicy(t *testing.T) {
	yes, no := true, false
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	obj := map[string]any{"type": "object"}
	up.AddTool(&mcp.Tool{Name: "search", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, handler)
	up.AddTool(&mcp.Tool{Name: "append", InputSchema: obj, Annotations: &mcp.ToolAnnotations{DestructiveHint: &no}}, handler)
	up.AddTool(&mcp.Tool{Name: "purge", InputSchema: obj, Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}}, handler)
	up.AddTool(&mcp.Tool{Name: "mystery", InputSchema: obj}, handler)
	up.AddTool(&mcp.Tool{Name: "drop_all", InputSchema: obj}, handler)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	defer srv.Close()

	file := filepath.Join(t.TempDir(), "warden.yaml")
	writeFile(t, file, `version: 1
connectors:
  - id: up
    effect: read
    discover: true
    tools: [{name: mcp__up__purge, effect: delete}]
    withheld: [{what: dropping, reason: never, tools: ["mcp__up__drop_*"]}]
    upstream: {url: "`+srv.URL+`"}
tenants:
  - id: default
    connections: [{id: up, connector: up}]
`)
	out, errOut, code := run(t, "discover", "-c", file, "--json")
	if code != 0 {
		t.Fatalf("discover: status %d\n%s%s", code, out, errOut)
	}
	var report []discoveredConnector
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := map[string]discovered{}
	for _, d := range report[0].Tools {
		got[d.Tool] = d
	}
	for name, want := range map[string]struct {
		suggests, policy, how string
		understated           bool
	}{
		"mcp__up__search":   {"read", "read", "discovered", false},
		"mcp__up__append":   {"write", "read", "discovered", true},
		"mcp__up__purge":    {"delete", "delete", "declared", false},
		"mcp__up__mystery":  {"delete", "read", "discovered", true}, // no annotations: destructive by MCP's default
		"mcp__up__drop_all": {"delete", "", "withheld", false},
	} {
		d := got[name]
		if string(d.Suggests) != want.suggests || string(d.Policy) != want.policy || d.How != want.how || d.Understated != want.understated {
			t.Errorf("%s: %+v, want %+v", name, d, want)
		}
	}

	out, _, code = run(t, "discover", "-c", file)
	if code != 0 || !strings.Contains(out, "MILDER THAN CLAIMED") ||
		!strings.Contains(out, "- {name: mcp__up__append, effect: write}") || !strings.Contains(out, "- {name: mcp__up__mystery, effect: delete}") ||
		strings.Contains(out, "- {name: mcp__up__search") || strings.Contains(out, "- {name: mcp__up__drop_all") {
		t.Errorf("discover printed:\n%s", out)
	}
	if _, errOut, code := run(t, "discover", "-c", file, "--connector", "nope"); code == 0 || !strings.Contains(errOut, "no such connector") {
		t.Errorf("an unknown connector: %d %s", code, errOut)
	}
}
