package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
)

// routeSrc is the quickstart with a certified and a held-back model, a harness capped at two
// model calls, an uncertified harness, and a customer's tenant (brand) beside the owner's.
func routeSrc() string {
	src := string(examples.Quickstart)
	src = strings.Replace(src, "roles:\n", `models:
  - {id: claude-sonnet-5}
  - {id: claude-haiku-5-5, certified: false}
harnesses:
  - {id: capped, limits: {maxModelCalls: 2}}
  - {id: bridge, certified: false}
roles:
`, 1)
	return strings.Replace(src, "tenants:\n", "tenants:\n  - {id: brand, name: Brand}\n", 1)
}

func routePolicy(t *testing.T) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("route.yaml", []byte(routeSrc()))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// routeToken stores a person's agent token for the tenant, binding model and harness when
// given, and returns its secret.
func (r *usageRig) routeToken(tenant, model, harness string) string {
	r.t.Helper()
	secret, hash, err := auth.NewSecret()
	if err != nil {
		r.t.Fatal(err)
	}
	tok := &auth.Token{ID: newTokenID(), Hash: hash, Role: auth.RoleAgent, Tenant: tenant, SessionRole: "person",
		Model: model, Harness: harness, Created: time.Now()}
	if err := r.db.CreateToken(r.t.Context(), tok); err != nil {
		r.t.Fatal(err)
	}
	return secret
}

// connect opens an MCP session with the go-sdk client, its initialize carrying meta.
func (r *usageRig) connect(secret string, meta map[string]any) (*mcp.ClientSession, error) {
	r.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "route-test", Version: "1"}, nil)
	c.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.InitializeParams); ok && meta != nil {
				p.Meta = meta
			}
			return next(ctx, method, req)
		}
	})
	ctx, cancel := context.WithTimeout(r.t.Context(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{secret}}}, nil)
	if err == nil {
		r.t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func listNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// Routing by model through serve's stack, with the go-sdk client: a certified model keeps the
// person's surface; a held-back one, in a customer's tenant, gets the read-only route (only
// read-only built-ins listed, a write refused as outside the surface); the same model in the
// owner's tenant keeps the full surface; no model stated is not certified; the model a token
// binds beats the one initialize states, and a contradiction is refused.
func TestModelRoutingThroughServe(t *testing.T) {
	p := routePolicy(t)
	dir := t.TempDir()
	r := newUsageRigFor(t, p, openUsageDB(t, dir), dir)
	readOnly := func(t *testing.T, names []string) {
		t.Helper()
		if len(names) == 0 {
			t.Fatal("the read-only route lists no tools")
		}
		for _, n := range names {
			if tl, ok := p.Tool(n); !ok || tl.Server.Kind != policy.KindBuiltin || tl.Effect != policy.EffectRead {
				t.Errorf("the read-only route lists %s, which is not a read-only built-in", n)
			}
		}
	}
	full := func(t *testing.T, names []string) {
		t.Helper()
		for _, n := range []string{"files_write", "files_delete", "shell_exec", "Bash"} {
			if !slices.Contains(names, n) {
				t.Errorf("the person's surface lacks %s: %v", n, names)
			}
		}
	}

	t.Run("certified model, customer", func(t *testing.T) {
		cs, err := r.connect(r.routeToken("brand", "", ""), map[string]any{"warden/model": "claude-sonnet-5"})
		if err != nil {
			t.Fatal(err)
		}
		full(t, listNames(t, cs))
	})
	t.Run("held-back model, customer", func(t *testing.T) {
		cs, err := r.connect(r.routeToken("brand", "", ""), map[string]any{"warden/model": "claude-haiku-5-5"})
		if err != nil {
			t.Fatal(err)
		}
		names := listNames(t, cs)
		readOnly(t, names)
		if slices.Contains(names, "files_write") {
			t.Errorf("files_write listed on the read-only route")
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "files_write", Arguments: map[string]any{"path": "x.txt", "content": "x"}})
		if err != nil || !res.IsError || !strings.Contains(resultText(res), "permission_denied") {
			t.Fatalf("files_write on the read-only route: %v %v; want refused with permission_denied", resultText(res), err)
		}
		if _, err := os.Stat(filepath.Join(dir, "ws", "brand", "x.txt")); err == nil {
			t.Errorf("the refused write wrote its file")
		}
		res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "files_list", Arguments: map[string]any{"path": "."}})
		if err != nil || res.IsError {
			t.Fatalf("files_list on the read-only route: %v %v", resultText(res), err)
		}
	})
	t.Run("held-back model, owner", func(t *testing.T) {
		cs, err := r.connect(r.routeToken("default", "", ""), map[string]any{"warden/model": "claude-haiku-5-5"})
		if err != nil {
			t.Fatal(err)
		}
		full(t, listNames(t, cs))
	})
	t.Run("no model, customer", func(t *testing.T) {
		cs, err := r.connect(r.routeToken("brand", "", ""), nil)
		if err != nil {
			t.Fatal(err)
		}
		readOnly(t, listNames(t, cs))
	})
	t.Run("unlisted model, customer", func(t *testing.T) {
		cs, err := r.connect(r.routeToken("brand", "", ""), map[string]any{"warden/model": "gpt-9"})
		if err != nil {
			t.Fatal(err)
		}
		readOnly(t, listNames(t, cs))
	})
	t.Run("token-bound model beats initialize", func(t *testing.T) {
		held := r.routeToken("brand", "claude-haiku-5-5", "")
		_, err := r.connect(held, map[string]any{"warden/model": "claude-sonnet-5"})
		if err == nil || !strings.Contains(err.Error(), "the session's token binds the model claude-haiku-5-5") {
			t.Fatalf("claiming a certified model against the token: %v; want refused", err)
		}
		cs, err := r.connect(held, nil)
		if err != nil {
			t.Fatal(err)
		}
		readOnly(t, listNames(t, cs))
		cs, err = r.connect(held, map[string]any{"warden/model": "claude-haiku-5-5"})
		if err != nil {
			t.Fatalf("stating the token's own model: %v", err)
		}
		readOnly(t, listNames(t, cs))
		cs, err = r.connect(r.routeToken("brand", "claude-sonnet-5", ""), nil)
		if err != nil {
			t.Fatal(err)
		}
		full(t, listNames(t, cs))
	})
	t.Run("malformed model", func(t *testing.T) {
		_, err := r.connect(r.routeToken("brand", "", ""), map[string]any{"warden/model": 7})
		if err == nil || !strings.Contains(err.Error(), "_meta.warden/model must be a non-empty string") {
			t.Fatalf("a model that is a number: %v; want refused", err)
		}
	})
}

// The harness through serve: bound in the token or stated at initialize (the token winning),
// an unknown one refused, an uncertified one the read-only route even for the owner, and a
// harness's maxModelCalls enforced on the model calls the session reports in _meta.
func TestHarnessThroughServe(t *testing.T) {
	p := routePolicy(t)
	dir := t.TempDir()
	r := newUsageRigFor(t, p, openUsageDB(t, dir), dir)

	if _, err := r.connect(r.routeToken("default", "", ""), map[string]any{"warden/harness": "hermes"}); err == nil ||
		!strings.Contains(err.Error(), `harness "hermes"`) || !strings.Contains(err.Error(), "capped") {
		t.Fatalf("an unknown harness: %v; want refused, naming the policy's harnesses", err)
	}
	if _, err := r.connect(r.routeToken("default", "", "capped"), map[string]any{"warden/harness": "default"}); err == nil ||
		!strings.Contains(err.Error(), "the session's token binds the harness capped") {
		t.Fatalf("a harness against the token's: %v; want refused", err)
	}

	cs, err := r.connect(r.routeToken("default", "", ""), map[string]any{"warden/harness": "bridge", "warden/model": "claude-sonnet-5"})
	if err != nil {
		t.Fatal(err)
	}
	names := listNames(t, cs)
	if slices.Contains(names, "files_write") || !slices.Contains(names, "files_read") {
		t.Errorf("the owner on an uncertified harness: %v; want the read-only route", names)
	}

	for _, how := range []struct {
		name, token string
		meta        map[string]any
	}{
		{"bound in the token", r.routeToken("default", "", "capped"), nil},
		{"stated at initialize", r.routeToken("default", "", ""), map[string]any{"warden/harness": "capped"}},
	} {
		t.Run(how.name, func(t *testing.T) {
			cs, err := r.connect(how.token, how.meta)
			if err != nil {
				t.Fatal(err)
			}
			call := func() *mcp.CallToolResult {
				t.Helper()
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "files_list", Arguments: map[string]any{"path": "."},
					Meta: mcp.Meta{"warden/usage": map[string]any{"turns": 1}}})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			for i := 1; i <= 2; i++ {
				if res := call(); res.IsError {
					t.Fatalf("model call %d of 2: %s", i, resultText(res))
				}
			}
			res := call()
			if text := resultText(res); !res.IsError || !strings.Contains(text, "run_limit") || !strings.Contains(text, "harness capped") {
				t.Fatalf("model call 3 of 2: %q; want refused with run_limit, naming the harness", text)
			}
		})
	}
}

// POST /api/v1/tokens and warden token create bind a model and a harness, checked against the
// policy: a model it does not list, an unknown harness, and a binding on a token that is not an
// agent's are refused.
func TestTokenBindsRoute(t *testing.T) {
	p := routePolicy(t)
	dir := t.TempDir()
	r := newUsageRigFor(t, p, openUsageDB(t, dir), dir)
	cfg := filepath.Join(dir, "route.yaml")
	if err := os.WriteFile(cfg, []byte(routeSrc()), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "cli.db")
	out, errOut, code := run(t, "token", "create", "-c", cfg, "--db", db, "--create", "--tenant", "brand", "--role", "person",
		"--model", "claude-haiku-5-5", "--harness", "capped")
	if code != 0 || !strings.Contains(out, "model claude-haiku-5-5, harness capped") {
		t.Fatalf("create with --model and --harness: status %d: %s%s", code, out, errOut)
	}
	out, _, _ = run(t, "token", "list", "--db", db, "--json")
	if !strings.Contains(out, `"model": "claude-haiku-5-5"`) || !strings.Contains(out, `"harness": "capped"`) {
		t.Errorf("token list --json: %s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "claude-haiku-5"}, `--model "claude-haiku-5": the policy does not list it (its models are claude-sonnet-5, claude-haiku-5-5)`},
		{[]string{"--model", "claude haiku"}, `--model: the model id "claude haiku" must match`},
		{[]string{"--harness", "hermes"}, `--harness "hermes": the policy has no such harness (it has default, capped, bridge)`},
		{[]string{"--access", "viewer", "--model", "claude-sonnet-5"}, "for agent tokens only"},
	} {
		args := append([]string{"token", "create", "-c", cfg, "--db", db, "--tenant", "brand"}, c.args...)
		if !slices.Contains(c.args, "--access") {
			args = append(args, "--role", "person")
		}
		if _, errOut, code := run(t, args...); code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: status %d: %s; want %q", c.args, code, errOut, c.want)
		}
	}

	out, errOut, code = run(t, "surface", "-c", cfg, "--tenant", "brand", "--role", "person", "--model", "claude-haiku-5-5")
	if code != 0 || !strings.Contains(out, "model claude-haiku-5-5") || !strings.Contains(out, "read-only route: the model claude-haiku-5-5 is held back") {
		t.Errorf("warden surface --model: status %d: %s%s", code, out, errOut)
	}

	admin, _ := r.token(auth.RoleAdmin, "", "")
	code, _, body := r.do(http.MethodPost, "/api/v1/tokens", admin, "",
		`{"tenant": "brand", "role": "person", "model": "claude-haiku-5-5", "harness": "capped"}`)
	if code != http.StatusCreated || body["model"] != "claude-haiku-5-5" || body["harness"] != "capped" {
		t.Fatalf("POST /api/v1/tokens with a model and a harness: HTTP %d %v", code, body)
	}
	code, _, body = r.do(http.MethodPost, "/api/v1/tokens", admin, "", `{"tenant": "brand", "role": "person", "model": "gpt-9"}`)
	if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body), "the policy does not list it") {
		t.Fatalf("POST /api/v1/tokens with an unlisted model: HTTP %d %v", code, body)
	}
}
