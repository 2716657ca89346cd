package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
)

// leanUpstream is an MCP server with tools whose results take every shape the lean hop reads,
// served over loopback HTTP (answering with event streams, or with JSON when jsonResponse).
// Its handler can be replaced by a fresh one (forget), which forgets every session, as an
// upstream that restarted does.
func leanUpstream(t *testing.T, jsonResponse bool) (url string, forget func()) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"msg": map[string]any{"type": "string"}}, "required": []string{"msg"}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Msg string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return text("echo: " + a.Msg), nil
		})
	s.AddTool(&mcp.Tool{Name: "structured", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "two"}, &mcp.TextContent{Text: "parts"}},
			StructuredContent: map[string]any{"n": 2, "list": []any{"a", true, nil}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "image", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte("png bytes"), MIMEType: "image/png"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "fails", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it went wrong"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "breaks", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("the tool broke")
	})
	s.AddTool(&mcp.Tool{Name: "secretive", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(`{"name":"deploy","key":{"$wardenSensitive":{"type":"token","value":"s3cr3t-deploy-key-0042"}}}`), nil
	})
	// asks pings the client and asks for its roots before it answers: requests of the
	// upstream's own, on the call's stream, that Warden's client must answer.
	s.AddTool(&mcp.Tool{Name: "asks", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := req.Session.Ping(ctx, nil); err != nil {
			return text("ping failed: " + err.Error()), nil
		}
		//lint:ignore SA1019 upstreams on the 2025 protocol versions still ask for roots, and Warden's client answers
		roots, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return text("roots failed: " + err.Error()), nil
		}
		return text(fmt.Sprintf("pinged; %d roots", len(roots.Roots))), nil
	})
	newHandler := func() http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
	}
	var h atomic.Pointer[http.Handler]
	first := newHandler()
	h.Store(&first)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
	t.Cleanup(func() {
		// Close waits for every request to end, and an event stream of a client session
		// left open (after a reconnect, rarely: not yet understood, see the note)
		// never would: its connection is closed first.
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL, func() {
		fresh := newHandler()
		h.Store(&fresh)
		// As a restart would, the old handler's connections end with it (its event streams
		// would otherwise hang on, on sessions nobody can close now).
		srv.CloseClientConnections()
	}
}

func leanPolicy(streamURL, jsonURL string) []byte {
	return fmt.Appendf(nil, `
version: 1
builtins:
  - name: files_read
connectors:
  - id: up
    effect: read
    discover: true
    upstream: {url: %q, timeoutMs: 20000}
  - id: upjson
    effect: write
    discover: true
    upstream: {url: %q, timeoutMs: 20000}
tenants:
  - id: default
    connections: [{id: up, connector: up}, {id: upjson, connector: upjson}]
`, streamURL, jsonURL)
}

// handles are the session's protected:// handles, which differ from session to session.
var handles = regexp.MustCompile(`protected://[A-Za-z0-9_./-]+`)

// tempDirs are the test's temporary directories, which differ from rig to rig.
var tempDirs = regexp.MustCompile(`/[^ ]*/[0-9]{3}/`)

// TestLeanPathAnswersAsTheSDKDoes makes the same calls through the lean path and hop and
// through the SDK's server and client, and wants the same results and the same audit trail:
// results of every shape, errors of the tool and of the upstream, protected values,
// refusals of Warden's own (unlisted tool, arguments against the schema, a call outside the
// surface), and an upstream that asks the client things during the call; on an upstream
// answering with event streams and on one answering with JSON.
func TestLeanPathAnswersAsTheSDKDoes(t *testing.T) {
	streamURL, _ := leanUpstream(t, false)
	jsonURL, _ := leanUpstream(t, true)
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"mcp__up__echo", map[string]any{"msg": "hello <world> & \u00e9t\u00e9"}},
		{"mcp__up__echo", map[string]any{"msg": 42}}, // against the upstream's schema
		{"mcp__up__structured", nil},
		{"mcp__up__image", nil},
		{"mcp__up__fails", nil},
		{"mcp__up__breaks", nil},
		{"mcp__up__secretive", nil},
		{"mcp__up__asks", nil},
		{"mcp__upjson__echo", map[string]any{"msg": "over json"}},
		{"mcp__upjson__structured", nil},
		{"mcp__upjson__breaks", nil},
		{"mcp__upjson__asks", nil},
		{"mcp__up__nope", nil}, // not listed
		// Large enough to be streamed to the upstream (callBody), with what JSON must escape.
		{"mcp__up__echo", map[string]any{"msg": strings.Repeat("a\u2028<>&\"\\\x01\té\xff", 8000)}},
		{"mcp__upjson__echo", map[string]any{"msg": strings.Repeat("b\u2029\n\x1f", 20000), "n": 1e21, "x": []any{1.5e-7, nil, true}}},
		{"files_read", map[string]any{"path": "../../etc/passwd"}},
	}
	run := func(sdkOnly bool) (results []string, trail []string, r *rig) {
		r = newRig(t, leanPolicy(streamURL, jsonURL), nil).with(func(o *Options) { o.sdkOnly = sdkOnly })
		cs := r.connect(r.token("default", "person", ""), nil)
		r.ready(cs)
		for _, c := range calls {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
			cancel()
			var got string
			if err != nil {
				got = "error: " + err.Error()
			} else {
				b, _ := json.Marshal(res)
				got = string(b)
			}
			got = handles.ReplaceAllString(got, "protected://H")
			got = tempDirs.ReplaceAllString(got, "TMP/")
			results = append(results, c.tool+" → "+got)
		}
		for _, e := range r.audited(audit.Filter{Tenant: "default"}) {
			var bl []string
			for _, b := range e.Blockers {
				bl = append(bl, b.Code)
			}
			trail = append(trail, fmt.Sprintf("%s %s %s %s %v", e.Kind, e.Tool, e.Decision, e.Outcome, bl))
		}
		slices.Sort(trail) // outcomes are written as the calls end, in no fixed order
		return results, trail, r
	}
	leanRes, leanTrail, lean := run(false)
	sdkRes, sdkTrail, sdk := run(true)
	if n := lean.gw.leanServed.Load(); n < uint64(len(calls)) {
		t.Errorf("the lean path served %d of %d calls", n, len(calls))
	}
	if n := lean.gw.upstream.lean.Load(); n < 10 {
		t.Errorf("the lean hop made %d calls, want every upstream call that ran", n)
	}
	if n := sdk.gw.leanServed.Load() + sdk.gw.upstream.lean.Load(); n != 0 {
		t.Errorf("with sdkOnly, %d calls took the lean path or hop", n)
	}
	for i := range calls {
		if leanRes[i] != sdkRes[i] {
			t.Errorf("call %d:\n lean: %s\n  sdk: %s", i, leanRes[i], sdkRes[i])
		}
	}
	if strings.Join(leanTrail, "\n") != strings.Join(sdkTrail, "\n") {
		t.Errorf("the audit trails differ:\nlean:\n%s\nsdk:\n%s", strings.Join(leanTrail, "\n"), strings.Join(sdkTrail, "\n"))
	}
	// What the calls must say, whichever path: not only that the paths agree.
	for i, want := range map[int]string{
		0:  `"text":"echo: hello \u003cworld\u003e \u0026 été"`,
		2:  `"structuredContent":{"list":["a",true,null],"n":2}`,
		3:  `"type":"image"`,
		4:  `"isError":true`,
		6:  `protected://H`,
		7:  `pinged; 0 roots`,
		8:  `echo: over json`,
		11: `pinged; 0 roots`,
		12: `Warden did not run this call`,
		15: `Warden did not run this call`,
	} {
		if !strings.Contains(leanRes[i], want) {
			t.Errorf("call %d: %s\nwant it to hold %s", i, leanRes[i], want)
		}
	}
	if strings.Contains(strings.Join(leanRes, ""), "s3cr3t-deploy-key-0042") {
		t.Error("a protected value reached the client")
	}
}

// TestLeanHopReconnectsToAnUpstreamThatForgotTheSession: an upstream that restarted answers
// the old session's id with 404; a read is tried again on a new connection, and a write is
// not repeated (it may have run), but the next call reconnects.
func TestLeanHopReconnectsToAnUpstreamThatForgotTheSession(t *testing.T) {
	streamURL, forgetStream := leanUpstream(t, false)
	jsonURL, forgetJSON := leanUpstream(t, true)
	r := newRig(t, leanPolicy(streamURL, jsonURL), nil)
	cs := r.connect(r.token("default", "person", ""), nil)
	if got, isErr := call(t, cs, "mcp__up__echo", map[string]any{"msg": "one"}); isErr || got != "echo: one" {
		t.Fatalf("first call: %q", got)
	}
	if got, isErr := call(t, cs, "mcp__upjson__echo", map[string]any{"msg": "one"}); isErr || got != "echo: one" {
		t.Fatalf("first call: %q", got)
	}
	forgetStream()
	forgetJSON()
	if got, isErr := call(t, cs, "mcp__up__echo", map[string]any{"msg": "two"}); isErr || got != "echo: two" {
		t.Errorf("a read after the upstream forgot the session: %q (error %v), want it tried again on a new connection", got, isErr)
	}
	got, isErr := call(t, cs, "mcp__upjson__echo", map[string]any{"msg": "two"})
	if !isErr || !strings.Contains(got, "not repeated") {
		t.Errorf("a write after the upstream forgot the session: %q (error %v), want it refused as not repeated", got, isErr)
	}
	if got, isErr := call(t, cs, "mcp__upjson__echo", map[string]any{"msg": "three"}); isErr || got != "echo: three" {
		t.Errorf("the next write: %q (error %v), want it on a new connection", got, isErr)
	}
	if r.gw.upstream.lean.Load() == 0 {
		t.Error("the lean hop made no call")
	}
}

// TestLeanCallEndsWhenTheClientCancelsIt: a call waiting for a person, served by the lean
// path, ends when the client sends notifications/cancelled for it (the SDK would end its own
// calls so), and its card does not stay pending.
func TestLeanCallEndsWhenTheClientCancelsIt(t *testing.T) {
	r := newRig(t, []byte(askPolicy), nil)
	secret := r.token("default", "person", "")
	resp, err := http.DefaultClient.Do(r.request(http.MethodPost, secret, "", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, sid)
	}
	if got := r.post(secret, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); got.status != http.StatusAccepted {
		t.Fatalf("initialized: HTTP %d %s", got.status, got.body)
	}
	r.readyID(sid)
	done := make(chan rpcReply, 1)
	go func() {
		req := r.request(http.MethodPost, secret, sid, strings.NewReader(
			`{"jsonrpc":"2.0","id":"call-7","method":"tools/call","params":{"name":"files_write","arguments":{"path":"a.txt","content":"x"}}}`))
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		done <- send(t, http.DefaultClient, req)
	}()
	c := r.parked()
	cancel := r.request(http.MethodPost, secret, sid, strings.NewReader(
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-7","reason":"changed my mind"}}`))
	cancel.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if got := send(t, http.DefaultClient, cancel); got.status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: HTTP %d %s", got.status, got.body)
	}
	var got rpcReply
	select {
	case got = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the cancelled call did not end")
	}
	if got.status != http.StatusOK || !strings.Contains(got.body, "did not run") {
		t.Errorf("the cancelled call answered HTTP %d %s, want a result saying it did not run", got.status, got.body)
	}
	if r.gw.leanServed.Load() != 1 {
		t.Errorf("the lean path served %d calls, want the one", r.gw.leanServed.Load())
	}
	card, err := r.db.Card(context.Background(), "default", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if card.State == approval.Pending {
		t.Errorf("the card of the cancelled call is still pending")
	}
	if _, err := r.broker.Answer(context.Background(), "default", c.ID, approval.AllowOnce, "alice", approval.ChannelAPI, c.Digest); err == nil {
		t.Error("the card of the cancelled call could still be allowed")
	}
	if trail := codes(r.audited(audit.Filter{Tenant: "default"})); !slices.Contains(trail, "approval:files_write:deny:approval_canceled") {
		t.Errorf("the cancelled call's card is not recorded as cancelled: %v", trail)
	}
}

// TestLeanCallsKeepTheirSessionAlive: the idle timeout counts every request, those the lean
// path serves included; a session busy with lean calls for longer than the timeout lives,
// and one left idle is reaped.
func TestLeanCallsKeepTheirSessionAlive(t *testing.T) {
	const idle = 2 * time.Second
	streamURL, _ := leanUpstream(t, false)
	jsonURL, _ := leanUpstream(t, true)
	r := newRig(t, leanPolicy(streamURL, jsonURL), nil).with(func(o *Options) { o.IdleTimeout = idle })
	cs := r.connect(r.token("default", "person", ""), nil)
	// Calls for three idle timeouts, one after the other.
	for start := time.Now(); time.Since(start) < 3*idle; {
		if got, isErr := call(t, cs, "mcp__up__echo", map[string]any{"msg": "x"}); isErr || got != "echo: x" {
			t.Fatalf("a call %s into the session: %q", time.Since(start), got)
		}
	}
	if r.gw.sessionByMCP(cs.ID()) == nil {
		t.Fatal("a session busy with calls was reaped as idle")
	}
	if r.gw.leanServed.Load() == 0 {
		t.Fatal("the lean path served none of the calls")
	}
	deadline := time.Now().Add(time.Minute)
	for r.gw.sessionByMCP(cs.ID()) != nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if r.gw.sessionByMCP(cs.ID()) != nil {
		t.Fatal("the session left idle was not reaped")
	}
}

// ready waits until the session's server has seen notifications/initialized: the SDK hands
// it over on a goroutine of its own, and the lean path serves no call before it (the first
// call of a session may otherwise go through the SDK).
func (r *rig) ready(cs *mcp.ClientSession) { r.readyID(cs.ID()) }

func (r *rig) readyID(id string) {
	r.t.Helper()
	s := r.gw.sessionByMCP(id)
	if s == nil {
		r.t.Fatalf("no session %s", id)
	}
	deadline := time.Now().Add(time.Minute)
	for !s.ready.Load() {
		if time.Now().After(deadline) {
			r.t.Fatal("the session's server never saw notifications/initialized")
		}
		time.Sleep(time.Millisecond)
	}
}
