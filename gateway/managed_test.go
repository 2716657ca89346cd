package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/policy"
)

// vaultServer issues managed references scoped to the caller Warden names in _meta, and
// resolves them.
func vaultServer(t *testing.T, resolved *atomic.Int32) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "vault", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	issue := func(session string, expires time.Time) mcp.ToolHandler {
		return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			meta := req.Params.Meta
			if session == "" {
				session, _ = meta[MetaSession].(string)
			}
			ref := map[string]any{"issuer": "vault.test", "version": "1", "expires": expires.UTC().Format(time.RFC3339),
				"agent": meta[MetaAgent], "session": session, "conversation": meta[MetaConversation],
				"provider": "vault", "ref": "db-password"}
			b, _ := json.Marshal(map[string]any{"db": map[string]any{"$wardenManaged": ref}})
			return text(string(b)), nil
		}
	}
	later := time.Now().Add(time.Hour)
	s.AddTool(&mcp.Tool{Name: "issue", InputSchema: obj}, issue("", later))
	s.AddTool(&mcp.Tool{Name: "issue_foreign", InputSchema: obj}, issue("another-session", later))
	s.AddTool(&mcp.Tool{Name: "issue_expired", InputSchema: obj}, issue("", time.Now().Add(-time.Minute)))
	s.AddTool(&mcp.Tool{Name: "resolve_secret", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Ref string }
		_ = json.Unmarshal(req.Params.Arguments, &a)
		if a.Ref != "db-password" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such ref"}}}, nil
		}
		resolved.Add(1)
		return text(`{"value":{"$wardenSensitive":{"type":"password","value":"hunter2-db-password"}}}`), nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

const vaultPolicy = `
version: 1
builtins:
  - name: shell_exec
connectors:
  - id: vault
    effect: read
    discover: true
    upstream: {url: %q}
    managed: {issuer: vault.test, resolve: resolve_secret}
tenants:
  - id: default
    connections: [%s]
`

func TestManagedReferencesAreCheckedAtEachUse(t *testing.T) {
	var resolved atomic.Int32
	url := vaultServer(t, &resolved)
	r := newRig(t, fmt.Appendf(nil, vaultPolicy, url, "{id: vault, connector: vault}"), nil)
	cs := r.connect(r.token("default", "person", ""), nil)
	tools := names(t, cs)
	if slices.Contains(tools, "mcp__vault__resolve_secret") || !slices.Contains(tools, "mcp__vault__issue") {
		t.Fatalf("tools %v: the resolve tool is Warden's, not the model's", tools)
	}
	handleOf := func(tool string) string {
		t.Helper()
		out, isErr := call(t, cs, tool, nil)
		var res struct{ DB string }
		if isErr || json.Unmarshal([]byte(out), &res) != nil || !strings.HasPrefix(res.DB, "protected://managed/") {
			t.Fatalf("%s: %v %s", tool, isErr, out)
		}
		return res.DB
	}
	use := func(handle string) (string, bool) {
		return call(t, cs, "shell_exec", map[string]any{"command": `printf 'pw=%s\n' "$PW"`,
			"protectedBindings": map[string]any{"PW": handle}})
	}

	h := handleOf("mcp__vault__issue")
	out, isErr := use(h)
	if isErr || out == "" || strings.Contains(out, "hunter2") || !strings.Contains(out, "pw="+egress.PlaceholderPrefix) {
		t.Errorf("a managed reference bound to a process: %v %q", isErr, out)
	}
	if resolved.Load() != 1 {
		t.Errorf("the provider was asked %d times", resolved.Load())
	}
	// Fetched again at each use: nothing is cached between processes.
	if _, isErr := use(h); isErr || resolved.Load() != 2 {
		t.Errorf("a second use: %v, resolved %d times", isErr, resolved.Load())
	}

	for tool, says := range map[string]string{
		"mcp__vault__issue_foreign": "scope",
		"mcp__vault__issue_expired": "expired",
	} {
		out, isErr := use(handleOf(tool))
		if !isErr || !strings.Contains(out, says) || strings.Contains(out, "hunter2") {
			t.Errorf("a reference from %s: %v %s", tool, isErr, out)
		}
	}
	if out, isErr := call(t, cs, "mcp__vault__resolve_secret", map[string]any{"ref": "db-password"}); !isErr || strings.Contains(out, "hunter2") {
		t.Errorf("the model called the resolve tool: %v %s", isErr, out)
	}

	// The tenant loses its vault connection: the reference is no longer authorised.
	before := resolved.Load()
	p, err := policy.Parse("reload.yaml", fmt.Appendf(nil, vaultPolicy, url, ""))
	if err != nil {
		t.Fatal(err)
	}
	r.gw.Reload(p, p.Env(policy.MapLookup(nil)))
	out, isErr = use(h)
	if !isErr || !strings.Contains(out, "no longer holds") || resolved.Load() != before {
		t.Errorf("after the connection went: %v %s (resolved %d, before %d)", isErr, out, resolved.Load(), before)
	}
}
