package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/store/storetest"
	"github.com/wardenhq/warden/surface"
)

// rig is a gateway on a store (SQLite unless a test gives another), served over loopback HTTP.
type rig struct {
	t      *testing.T
	db     storetest.Store
	gw     *Gateway
	gate   *gate.Gate
	broker *approval.Broker
	url    string
	cards  chan *approval.Card
}

func newRig(t *testing.T, src []byte, env map[string]string) *rig {
	t.Helper()
	return newRigWith(t, src, env, nil)
}

// newRigWith is newRig with the gateway's options changed by opt before it starts.
func newRigWith(t *testing.T, src []byte, env map[string]string, opt func(*Options)) *rig {
	t.Helper()
	db, err := sqlite.OpenWith(context.Background(), filepath.Join(t.TempDir(), "warden.db"), sqlite.Options{Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return newRigOn(t, db, src, env, opt)
}

// newRigOn is newRigWith on a store the test opened (and closes).
func newRigOn(t *testing.T, db storetest.Store, src []byte, env map[string]string, opt func(*Options)) *rig {
	t.Helper()
	dir := t.TempDir()
	p, err := policy.Parse("p.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, db: db, cards: make(chan *approval.Card, 16)}
	var gw atomic.Pointer[Gateway]
	r.broker = approval.NewBroker(approval.Options{Store: db, Timeout: time.Minute, OnCard: func(c *approval.Card) {
		if g := gw.Load(); g != nil {
			g.OnCard(c)
		}
		if c.State == approval.Pending {
			r.cards <- c
		}
	}})
	rv, err := review.New(review.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.gate, err = gate.New(gate.Options{Reviewer: rv, Broker: r.broker, Ledger: db, Log: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.gate.Close)
	o := Options{Policy: p, Env: p.Env(policy.MapLookup(env)), Store: db, Gate: r.gate, Reviewer: rv,
		Broker: r.broker, Workspaces: filepath.Join(dir, "ws"), Native: native.Options{Timeout: 10 * time.Second}}
	if opt != nil {
		opt(&o)
	}
	r.gw, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	gw.Store(r.gw)
	t.Cleanup(r.gw.Close)
	srv := httptest.NewServer(r.gw.Handler())
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// token stores an agent token and returns its secret.
func (r *rig) token(tenant, role, profile string) string {
	r.t.Helper()
	secret, hash, err := auth.NewSecret()
	if err != nil {
		r.t.Fatal(err)
	}
	tok := &auth.Token{ID: "tok_" + newID(), Hash: hash, Role: auth.RoleAgent, Tenant: tenant, SessionRole: role,
		Profile: profile, Name: "tester", Created: time.Now()}
	if err := r.db.CreateToken(context.Background(), tok); err != nil {
		r.t.Fatal(err)
	}
	return secret
}

type bearer struct {
	secret string
	base   http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.secret)
	return b.base.RoundTrip(req)
}

// connect opens an MCP client session with a token.
func (r *rig) connect(secret string, opts *mcp.ClientOptions) *mcp.ClientSession {
	r.t.Helper()
	cs, err := r.dial(secret, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { cs.Close() })
	return cs
}

func (r *rig) dial(secret string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: &http.Client{Transport: bearer{secret, http.DefaultTransport}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.Connect(ctx, tr, nil)
}

func names(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	slices.Sort(out)
	return out
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.StructuredContent != nil {
		j, _ := json.Marshal(res.StructuredContent)
		b.WriteString("\n")
		b.Write(j)
	}
	return b.String(), res.IsError
}

// audited returns the audit events of the tenant, after the gate has written them.
func (r *rig) audited(filter audit.Filter) []*audit.Event {
	r.t.Helper()
	if err := r.gate.Sync(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	evs, err := r.db.Query(context.Background(), filter)
	if err != nil {
		r.t.Fatal(err)
	}
	return evs
}

func codes(evs []*audit.Event) []string {
	var out []string
	for _, e := range evs {
		s := e.Kind + ":" + e.Tool + ":" + e.Decision
		if e.Kind == audit.KindOutcome {
			s = e.Kind + ":" + e.Tool + ":" + e.Outcome
		}
		for _, b := range e.Blockers {
			s += ":" + b.Code
		}
		out = append(out, s)
	}
	return out
}

func TestListsExactlyTheSurface(t *testing.T) {
	r := newRig(t, examples.Quickstart, nil)
	for _, c := range []struct{ role, profile string }{{"person", ""}, {"coworker", "reviewer"}} {
		cs := r.connect(r.token("default", c.role, c.profile), nil)
		p, _ := policy.Parse("p.yaml", examples.Quickstart)
		sf, err := surface.Open(p.Env(policy.MapLookup(nil)), surface.Spec{Role: c.role, Tenant: "default", Profile: c.profile})
		if err != nil {
			t.Fatal(err)
		}
		want := sf.Tools()
		slices.Sort(want)
		if got := names(t, cs); !slices.Equal(got, want) {
			t.Errorf("%s lists %v, want %v", c.role, got, want)
		}
	}
}

func TestNativeCallsAreReviewedAndConfined(t *testing.T) {
	r := newRig(t, examples.Quickstart, nil)
	cs := r.connect(r.token("default", "person", ""), nil)
	if out, isErr := call(t, cs, "files_write", map[string]any{"path": "notes/a.txt", "content": "hello"}); isErr {
		t.Fatalf("write: %s", out)
	}
	if out, isErr := call(t, cs, "Read", map[string]any{"file_path": "notes/a.txt"}); isErr || !strings.Contains(out, "hello") {
		t.Fatalf("read: %s", out)
	}
	data, err := os.ReadFile(filepath.Join(r.gw.Workspaces(), "default", "notes", "a.txt"))
	if err != nil || string(data) != "hello" {
		t.Fatalf("the file in the workspace: %q, %v", data, err)
	}
	out, isErr := call(t, cs, "files_read", map[string]any{"path": "../../etc/passwd"})
	if !isErr || !strings.Contains(out, "outside_workspace") {
		t.Errorf("a read outside the workspace: %v %s", isErr, out)
	}
	// A command runs in the workspace; what it touches beyond its working directory is the
	// sandbox's to confine (issue 7), not the reviewer's.
	out, isErr = call(t, cs, "shell_exec", map[string]any{"command": "ls", "cwd": "../.."})
	if !isErr || !strings.Contains(out, "outside_workspace") {
		t.Errorf("a command run outside the workspace: %v %s", isErr, out)
	}
	out, isErr = call(t, cs, "shell_exec", map[string]any{"command": "pwd", "cwd": "notes"})
	if isErr || !strings.Contains(out, filepath.Join("default", "notes")) {
		t.Errorf("a command in the workspace: %v %s", isErr, out)
	}
	evs := r.audited(audit.Filter{Tenant: "default"})
	got := codes(evs)
	for _, want := range []string{"decision:files_write:allow", "outcome:files_write:ok", "decision:files_read:deny:outside_workspace"} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("audit trail %v lacks %s", got, want)
		}
	}
}

func TestRefusalsAreRecorded(t *testing.T) {
	r := newRig(t, examples.Quickstart, nil)
	good := r.token("default", "coworker", "reviewer")
	cs := r.connect(good, nil)

	// A tool outside the surface: never listed, and refused when called anyway.
	out, isErr := call(t, cs, "files_write", map[string]any{"path": "x", "content": "y"})
	if !isErr || !strings.Contains(out, "permission_denied") {
		t.Errorf("a tool outside the surface: %v %s", isErr, out)
	}
	// Arguments that do not match the schema.
	out, isErr = call(t, cs, "files_read", map[string]any{"path": 5})
	if !isErr || !strings.Contains(out, "invalid_input") {
		t.Errorf("arguments of the wrong type: %v %s", isErr, out)
	}
	// No token, a bad token, a revoked one.
	for _, secret := range []string{"", "wdn_nope"} {
		if _, err := r.dial(secret, nil); err == nil {
			t.Errorf("token %q was let in", secret)
		}
	}
	evs := r.audited(audit.Filter{})
	got := codes(evs)
	for _, want := range []string{"decision:files_write:deny:permission_denied", "decision:files_read:deny:invalid_input", "decision:mcp:POST:deny:unauthenticated"} {
		if !slices.Contains(got, want) {
			t.Errorf("audit trail %v lacks %s", got, want)
		}
	}
	// The server keeps serving the good session.
	if out, isErr := call(t, cs, "files_list", map[string]any{"path": "."}); isErr {
		t.Errorf("after the refusals: %s", out)
	}
}

func TestSessionIsBoundToItsToken(t *testing.T) {
	r := newRig(t, examples.Quickstart, nil)
	a := r.connect(r.token("default", "person", ""), nil)
	other := r.token("default", "person", "")
	req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+other)
	req.Header.Set("Mcp-Session-Id", a.ID())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("another token on the session: %d", resp.StatusCode)
	}
}

const askPolicy = `
version: 1
builtins:
  - name: files_read
  - name: files_write
    gate: {approval: true}
tenants:
  - id: default
`

func TestAskWaitsForAPersonWithProgress(t *testing.T) {
	r := newRig(t, []byte(askPolicy), nil)
	progressed := make(chan struct{}, 1)
	cs := r.connect(r.token("default", "person", ""), &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progressed <- struct{}{}:
			default:
			}
		},
	})
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "files_write", Arguments: map[string]any{"path": "a.txt", "content": "x"}}
		params.SetProgressToken("p1")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	var c *approval.Card
	select {
	case c = <-r.cards:
	case <-time.After(20 * time.Second):
		t.Fatal("no card was parked")
	}
	// The client hears that the call waits (on its own stream, so in no fixed order with the
	// call's answer: it is awaited before the card is answered).
	select {
	case <-progressed:
	case <-done:
		t.Fatal("the call did not wait for the card")
	case <-time.After(20 * time.Second): // a deadline for a broken build, not a measure
		t.Fatal("no progress notification while the call waited")
	}
	if _, err := r.broker.Answer(context.Background(), "default", c.ID, approval.AllowOnce, "alice", approval.ChannelAPI, c.Digest); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res == nil || res.IsError {
		t.Fatalf("after the approval: %+v", res)
	}
	// A denial fails the call with the reason.
	go func() {
		res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "files_write", Arguments: map[string]any{"path": "b.txt", "content": "x"}})
		done <- res
	}()
	c = <-r.cards
	if _, err := r.broker.Answer(context.Background(), "default", c.ID, approval.Deny, "alice", approval.ChannelAPI, c.Digest); err != nil {
		t.Fatal(err)
	}
	res = <-done
	if res == nil || !res.IsError || !strings.Contains(fmt.Sprint(res.Content[0].(*mcp.TextContent).Text), "approval_denied") {
		t.Errorf("a denied call: %+v", res)
	}
}

func TestElicitationAnswersACard(t *testing.T) {
	r := newRig(t, []byte(askPolicy), nil)
	var asked atomic.Int32
	cs := r.connect(r.token("default", "person", ""), &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow_once"}}, nil
		},
	})
	out, isErr := call(t, cs, "files_write", map[string]any{"path": "a.txt", "content": "x"})
	if isErr || asked.Load() != 1 {
		t.Fatalf("elicited %d times: %v %s", asked.Load(), isErr, out)
	}
	evs := r.audited(audit.Filter{Tenant: "default"})
	if !slices.ContainsFunc(evs, func(e *audit.Event) bool {
		return e.Kind == audit.KindApproval && e.Decision == "allow" && e.Channel == string(approval.ChannelElicitation)
	}) {
		t.Errorf("no approval by elicitation in %v", codes(evs))
	}
}

// upstreamServer is an in-process MCP server reached over loopback HTTP.
func upstreamServer(t *testing.T, hang chan struct{}) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	obj := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"msg": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Msg string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return text("echo: " + a.Msg), nil
		})
	s.AddTool(&mcp.Tool{Name: "issue_key", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(`{"name":"deploy","key":{"$wardenSensitive":{"type":"token","value":"s3cr3t-deploy-key-0042"}}}`), nil
	})
	// use_key declares protectedBindings: Warden gives it the values of the handles it names.
	s.AddTool(&mcp.Tool{Name: "use_key", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
		"protectedBindings": map[string]any{"type": "object"}, "note": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct {
				ProtectedBindings map[string]string
				Note              string
			}
			_ = json.Unmarshal(req.Params.Arguments, &a)
			verdict := "wrong"
			if a.ProtectedBindings["KEY"] == "s3cr3t-deploy-key-0042" {
				verdict = "right" // the value, not a handle
			}
			return text("used the " + verdict + " key " + a.ProtectedBindings["KEY"] + "; note " + a.Note), nil
		})
	s.AddTool(&mcp.Tool{Name: "bad_envelope", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(`{"a":{"$wardenSensitive":{"type":"token","value":"first-value-1234"}},"b":{"$wardenSensitive":{"type":"nonsense","value":"x"}}}`), nil
	})
	s.AddTool(&mcp.Tool{Name: "hang", InputSchema: obj}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-hang:
		case <-ctx.Done():
		}
		return text("late"), nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

func upstreamPolicy(url string) []byte {
	return fmt.Appendf(nil, `
version: 1
builtins:
  - name: shell_exec
connectors:
  - id: up
    effect: read
    discover: true
    upstream: {url: %q, timeoutMs: 1500}
tenants:
  - id: default
    connections: [{id: up, connector: up}]
`, url)
}

func TestUpstreamToolsAndProtectedValues(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	r := newRig(t, upstreamPolicy(upstreamServer(t, hang)), nil)
	cs := r.connect(r.token("default", "person", ""), nil)
	got := names(t, cs)
	want := []string{"mcp__up__bad_envelope", "mcp__up__echo", "mcp__up__hang", "mcp__up__issue_key", "mcp__up__use_key", "shell_exec"}
	if !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if out, isErr := call(t, cs, "mcp__up__echo", map[string]any{"msg": "hi"}); isErr || out != "echo: hi" {
		t.Errorf("echo: %v %q", isErr, out)
	}

	// The secret becomes a handle; the model never sees the value.
	out, isErr := call(t, cs, "mcp__up__issue_key", nil)
	if isErr || strings.Contains(out, "s3cr3t") || !strings.Contains(out, "protected://") {
		t.Fatalf("a protected value reached the model: %v %s", isErr, out)
	}
	var res struct{ Key string }
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	// A sandboxed process bound to the handle gets a placeholder, never the value: whatever it
	// prints holds the placeholder at most (placeholders_test.go has the value reach a host).
	out, isErr = call(t, cs, "shell_exec", map[string]any{
		"command":           `printf '%s\n' "$KEY"; printf '%s' "$KEY" | base64; printf '%s' "$KEY" | od -An -tx1 | tr -d ' \n'; echo`,
		"protectedBindings": map[string]any{"KEY": res.Key},
	})
	if isErr || strings.Contains(out, "s3cr3t") || strings.Contains(out, "czNjcjN0") || strings.Contains(out, "7333637233") {
		t.Errorf("the value leaked through a command's output: %v %s", isErr, out)
	}
	if !strings.Contains(out, egress.PlaceholderPrefix) {
		t.Errorf("the process was not given a placeholder: %s", out)
	}
	// A connector tool that declares protectedBindings gets the value for that call; its
	// answer is redacted. A handle anywhere else is passed as the handle it is.
	out, isErr = call(t, cs, "mcp__up__use_key", map[string]any{
		"protectedBindings": map[string]any{"KEY": res.Key}, "note": res.Key})
	if isErr || strings.Contains(out, "s3cr3t") || out != "used the right key "+res.Key+"; note "+res.Key {
		t.Errorf("a connector call with protectedBindings: %v %s", isErr, out)
	}
	out, isErr = call(t, cs, "mcp__up__use_key", map[string]any{
		"protectedBindings": map[string]any{"KEY": "protected://token/elsewhere.0000"}})
	if !isErr || strings.Contains(out, "s3cr3t") {
		t.Errorf("a binding of an unknown handle: %v %s", isErr, out)
	}
	// A malformed envelope withholds the whole result.
	out, isErr = call(t, cs, "mcp__up__bad_envelope", nil)
	if !isErr || strings.Contains(out, "first-value") {
		t.Errorf("a malformed envelope: %v %s", isErr, out)
	}
	// The audit trail never holds the value.
	for _, e := range r.audited(audit.Filter{}) {
		if b, _ := json.Marshal(e); strings.Contains(string(b), "s3cr3t") {
			t.Errorf("the audit trail holds the value: %s", b)
		}
	}

	// A hanging upstream call times out, and the session keeps working meanwhile.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		out, isErr := call(t, cs, "mcp__up__hang", nil)
		if !isErr || !strings.Contains(out, "did not answer") {
			t.Errorf("a hanging call: %v %s", isErr, out)
		}
	}()
	other := r.connect(r.token("default", "person", ""), nil)
	if out, isErr := call(t, other, "mcp__up__echo", map[string]any{"msg": "meanwhile"}); isErr {
		t.Errorf("another session while one call hangs: %s", out)
	}
	wg.Wait()
}

func TestReloadTellsClientsTheirToolsChanged(t *testing.T) {
	r := newRig(t, examples.Quickstart, nil)
	changed := make(chan struct{}, 4)
	cs := r.connect(r.token("default", "person", ""), &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	before := names(t, cs)
	p, err := policy.Parse("p2.yaml", []byte("version: 1\nbuiltins:\n  - name: files_read\n  - name: files_list\ntenants:\n  - id: default\n"))
	if err != nil {
		t.Fatal(err)
	}
	r.gw.Reload(p, p.Env(policy.MapLookup(nil)))
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
	after := names(t, cs)
	if !slices.Equal(after, []string{"files_list", "files_read"}) || len(before) <= len(after) {
		t.Errorf("tools before %v, after %v", before, after)
	}
	if out, isErr := call(t, cs, "files_write", map[string]any{"path": "a", "content": "b"}); !isErr || !strings.Contains(out, "permission_denied") {
		t.Errorf("a tool the reload removed: %v %s", isErr, out)
	}
}

func TestSubagentHoldsASubsetOfItsParent(t *testing.T) {
	r := newRig(t, examples.Quickstart, nil)
	cs := r.connect(r.token("default", "person", ""), nil)
	out, isErr := call(t, cs, "spawn_subagent", map[string]any{"root": ".", "task": "read the notes"})
	if isErr {
		t.Fatalf("spawn: %s", out)
	}
	var res struct{ Token string }
	if err := json.Unmarshal([]byte(out[strings.IndexByte(out, '{'):]), &res); err != nil || !strings.HasPrefix(res.Token, "protected://") {
		t.Fatalf("the subagent's token is not a handle: %s", out)
	}
	// The process that runs the subagent receives the token through protectedBindings; here
	// the test reads it the same way, from the parent session's registry.
	var parent *session
	r.gw.mu.Lock()
	for _, s := range r.gw.sessions {
		parent = s
	}
	r.gw.mu.Unlock()
	values, err := parent.secrets.Resolve(map[string]string{"WARDEN_TOKEN": res.Token})
	if err != nil {
		t.Fatal(err)
	}
	secret := values["WARDEN_TOKEN"]
	kid := r.connect(secret.Reveal(), nil)
	got := names(t, kid)
	all := names(t, cs)
	for _, n := range got {
		if !slices.Contains(all, n) {
			t.Errorf("the subagent holds %s, which its parent does not", n)
		}
	}
	if slices.Contains(got, "spawn_subagent") {
		t.Errorf("the subagent may delegate again at depth 1: %v", got)
	}
	// When the parent ends, the subagent's token stops working.
	cs.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := r.dial(secret.Reveal(), nil); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the subagent's token outlived its parent")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
