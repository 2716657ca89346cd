package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/policy"
)

func TestEffectHint(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		give *mcp.ToolAnnotations
		want policy.Effect
	}{
		{nil, policy.EffectDelete},
		{&mcp.ToolAnnotations{}, policy.EffectDelete},
		{&mcp.ToolAnnotations{ReadOnlyHint: true}, policy.EffectRead},
		{&mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &yes}, policy.EffectRead}, // destructive is meaningless when read-only
		{&mcp.ToolAnnotations{DestructiveHint: &no}, policy.EffectWrite},
		{&mcp.ToolAnnotations{DestructiveHint: &yes}, policy.EffectDelete},
		{&mcp.ToolAnnotations{DestructiveHint: &no, OpenWorldHint: &yes}, policy.EffectWrite},
	}
	for i, tt := range tests {
		if got, why := EffectHint(tt.give); got != tt.want || why == "" {
			t.Errorf("%d: EffectHint = %s (%q), want %s", i, got, why, tt.want)
		}
	}
	if !Understated(policy.EffectRead, nil) || Understated(policy.EffectDelete, nil) ||
		Understated(policy.EffectWrite, &mcp.ToolAnnotations{ReadOnlyHint: true}) ||
		!Understated(policy.EffectWrite, &mcp.ToolAnnotations{DestructiveHint: &yes}) {
		t.Error("Understated compares the wrong way")
	}
}

// The annotations a client sees follow the policy, not the upstream's claims.
func TestClientsSeeThePolicysEffect(t *testing.T) {
	yes, no := true, false
	up := mcp.NewServer(&mcp.Implementation{Name: "claims", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	// "wipe" claims to be read-only; "peek" claims to destroy things.
	up.AddTool(&mcp.Tool{Name: "wipe", InputSchema: obj, Annotations: &mcp.ToolAnnotations{Title: "Wipe", ReadOnlyHint: true, OpenWorldHint: &no}}, noop)
	up.AddTool(&mcp.Tool{Name: "peek", InputSchema: obj, Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}}, noop)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(srv.Close)
	r := newRig(t, fmt.Appendf(nil, `
version: 1
connectors:
  - id: c
    effect: read
    discover: true
    tools: [{name: mcp__c__wipe, effect: delete}]
    upstream: {url: %q}
tenants:
  - id: default
    connections: [{id: c, connector: c}]
`, srv.URL), nil)
	cs := r.connect(r.token("default", "person", ""), nil)
	got := map[string]*mcp.ToolAnnotations{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got[tool.Name] = tool.Annotations
	}
	wipe, peek := got["mcp__c__wipe"], got["mcp__c__peek"]
	switch {
	case wipe == nil || peek == nil:
		t.Fatalf("listed %v", got)
	case wipe.ReadOnlyHint || wipe.DestructiveHint == nil || !*wipe.DestructiveHint || wipe.Title != "Wipe" || wipe.OpenWorldHint == nil || *wipe.OpenWorldHint:
		t.Errorf("wipe (the policy says delete) shows %+v", wipe)
	case !peek.ReadOnlyHint || peek.DestructiveHint != nil:
		t.Errorf("peek (the policy says read) shows %+v", peek)
	}
}
