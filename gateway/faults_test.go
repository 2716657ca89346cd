package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
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

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/store/sqlite"
)

// The fault tests: what a misbehaving client or upstream gets, what the audit trail keeps of
// it, and that nobody else notices. Clients that the SDK's client would never be are played
// with raw HTTP; stdio upstreams are this test binary, run again as TestFaultHelper.

const faultPolicy = `
version: 1
builtins:
  - name: files_read
  - name: files_list
tenants:
  - id: acme
  - id: globex
`

// rpcReply is what a raw request got back: the HTTP status and the JSON-RPC response, read
// from a JSON body or from the first event of an event stream.
type rpcReply struct {
	status int
	body   string
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Code string `json:"code"`
		} `json:"data"`
	} `json:"error"`
}

// request is a raw MCP request with a token, on a session (if named).
func (r *rig) request(method, secret, session string, body io.Reader) *http.Request {
	r.t.Helper()
	req, err := http.NewRequest(method, r.url, body)
	if err != nil {
		r.t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return req
}

// send sends a raw request and reads its reply.
func send(t *testing.T, client *http.Client, req *http.Request) rpcReply {
	t.Helper()
	// A deadline for a hung server, not a measure: a 4 MB request takes tens of seconds
	// under the race detector on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := rpcReply{status: resp.StatusCode, body: string(b)}
	data := b
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data = nil
		for line := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(line, "data: "); ok {
				data = []byte(rest)
				break
			}
		}
	}
	if len(data) > 0 && json.Unmarshal(data, &out) != nil {
		out.Error, out.Result = nil, nil // not JSON-RPC: the caller says what it wanted instead
	}
	return out
}

// post sends one raw JSON-RPC body.
func (r *rig) post(secret, session, body string) rpcReply {
	r.t.Helper()
	return send(r.t, http.DefaultClient, r.request(http.MethodPost, secret, session, strings.NewReader(body)))
}

// wantError checks a reply is the JSON-RPC error expected: the HTTP status, the code, the
// id, Warden's reason in the error's data, and a message that says something.
func wantError(t *testing.T, what string, got rpcReply, status int, code int64, id any, reason, says string) {
	t.Helper()
	switch {
	case got.status != status:
		t.Errorf("%s: HTTP %d, want %d (%s)", what, got.status, status, got.body)
	case got.Error == nil:
		t.Errorf("%s: no JSON-RPC error: %s", what, got.body)
	case got.Error.Code != code || got.Error.Data.Code != reason:
		t.Errorf("%s: error %d (%s), want %d (%s): %s", what, got.Error.Code, got.Error.Data.Code, code, reason, got.body)
	case fmt.Sprint(got.ID) != fmt.Sprint(id):
		t.Errorf("%s: id %v, want %v", what, got.ID, id)
	case !strings.Contains(got.Error.Message, says):
		t.Errorf("%s: the message %q does not say %q", what, got.Error.Message, says)
	}
}

// refusal finds the recorded refusal of a request (by Warden's reason), or says it is missing
// and returns nil.
func (r *rig) refusal(f audit.Filter, reason string) *audit.Event {
	r.t.Helper()
	evs := r.audited(f)
	for _, e := range slices.Backward(evs) {
		if strings.HasPrefix(e.Tool, "mcp:") && e.Decision == "deny" && len(e.Blockers) == 1 && e.Blockers[0].Code == reason {
			return e
		}
	}
	r.t.Errorf("no refusal %s recorded for tenant %q, session %q: %v", reason, f.Tenant, f.Session, codes(evs))
	return nil
}

// mark is the id of the last event of the audit trail: refusals after it are a later request's.
func (r *rig) mark() int64 {
	r.t.Helper()
	evs := r.audited(audit.Filter{})
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].ID
}

// sessionOf is the Warden session an MCP client session is served by.
func (r *rig) sessionOf(cs *mcp.ClientSession) *session {
	r.t.Helper()
	s := r.gw.sessionByMCP(cs.ID())
	if s == nil {
		r.t.Fatalf("no Warden session serves MCP session %s", cs.ID())
	}
	return s
}

// bystander is a well-behaved client that must notice nothing of the others' faults.
type bystander struct {
	t  *testing.T
	cs *mcp.ClientSession
}

func (r *rig) bystander() *bystander {
	return &bystander{t: r.t, cs: r.connect(r.token("acme", "person", ""), nil)}
}

func (b *bystander) stillServed(after string) {
	b.t.Helper()
	if out, isErr := call(b.t, b.cs, "files_list", map[string]any{"path": "."}); isErr {
		b.t.Errorf("after %s, a well-behaved session is not served: %s", after, out)
	}
}

func TestMalformedRequestsGetJSONRPCErrorsAndAreRecorded(t *testing.T) {
	r := newRig(t, []byte(faultPolicy), nil)
	by := r.bystander()
	secret := r.token("acme", "person", "")
	cs := r.connect(secret, nil)
	s := r.sessionOf(cs)

	for _, c := range []struct {
		what, body string
		status     int
		code       int64
		id         any
		reason     string
		says       string
	}{
		{"a body that is not JSON", `{"jsonrpc":"2.0","id":1,"method":"tools/li`, 400, -32700, nil, "parse_error", "not JSON"},
		{"JSON that is not JSON-RPC", `{"id":2,"method":"tools/list"}`, 400, -32600, nil, "invalid_request", "not a JSON-RPC 2.0 message"},
		{"an empty batch", `[]`, 400, -32600, nil, "invalid_request", "empty batch"},
		{"an unknown method", `{"jsonrpc":"2.0","id":3,"method":"tools/destroy","params":{}}`, 400, -32601, 3, "unknown_method", `no method "tools/destroy"`},
		{"an unknown notification", `{"jsonrpc":"2.0","method":"notifications/nonsense"}`, 400, -32601, nil, "unknown_method", "notifications/nonsense"},
		{"a call without params", `{"jsonrpc":"2.0","id":"four","method":"tools/call"}`, 400, -32600, "four", "invalid_request", `missing required "params"`},
		{"params that are not an object", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":["files_read"]}`, 400, -32602, 5, "invalid_params", "must be an object"},
		{"a call that names no tool", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":7}}`, 400, -32602, 6, "invalid_params", "name the tool"},
	} {
		mark := r.mark()
		got := r.post(secret, cs.ID(), c.body)
		wantError(t, c.what, got, c.status, c.code, c.id, c.reason, c.says)
		// Recorded as the session's, under its tenant.
		if e := r.refusal(audit.Filter{Tenant: "acme", Session: s.id, AfterID: mark}, c.reason); e != nil && (e.Principal != "tester" || e.Tool != "mcp:POST") {
			t.Errorf("%s: recorded as %+v", c.what, e)
		}
		by.stillServed(c.what)
	}
	// The session that sent all this is still served too: none of it reached its tools.
	if out, isErr := call(t, cs, "files_list", map[string]any{"path": "."}); isErr {
		t.Errorf("the session after its malformed requests: %s", out)
	}

	// Outside a session (the lobby) the same: refused as JSON-RPC, and recorded.
	mark := r.mark()
	got := r.post(secret, "", `{"jsonrpc":"2.0","id":9,"method":"tools/destroy"}`)
	wantError(t, "an unknown method outside a session", got, 400, -32601, 9, "unknown_method", "tools/destroy")
	r.refusal(audit.Filter{Tenant: "acme", AfterID: mark}, "unknown_method")
	got = r.post(secret, "", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"files_list","arguments":{"path":"."}}}`)
	wantError(t, "a call outside a session", got, 400, -32600, 10, "session_required", "begins with initialize")
	r.refusal(audit.Filter{Tenant: "acme", AfterID: mark}, "session_required")
	got = r.post(secret, "", `not json`)
	wantError(t, "a body that is not JSON outside a session", got, 400, -32700, nil, "parse_error", "not JSON")
	r.refusal(audit.Filter{Tenant: "acme", AfterID: mark}, "parse_error")
}

func TestArgumentsThatDoNotMatchTheSchemaAreToolErrors(t *testing.T) {
	// Arguments that are well-formed JSON-RPC but wrong for the tool are the tool's error
	// (isError), as MCP has it, so the model can correct itself; and each is recorded.
	r := newRig(t, []byte(faultPolicy), nil)
	by := r.bystander()
	secret := r.token("acme", "person", "")
	cs := r.connect(secret, nil)
	s := r.sessionOf(cs)
	for _, c := range []struct{ what, args, says string }{
		{"a number for a path", `{"path":5}`, `input schema: validating /properties/path: type: 5 has type \"integer\", want \"string\"`},
		{"a missing required argument", `{}`, `input schema: required: missing properties: [\"path\"]`},
		{"arguments that are not an object", `["notes.txt"]`, "must be a JSON object"},
	} {
		got := r.post(secret, cs.ID(), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"files_read","arguments":`+c.args+`}}`)
		var res mcp.CallToolResult
		if got.status != http.StatusOK || got.Error != nil || json.Unmarshal(got.Result, &res) != nil {
			t.Errorf("%s: %d %s", c.what, got.status, got.body)
			continue
		}
		if text := string(got.Result); !res.IsError || !strings.Contains(text, "invalid_input") || !strings.Contains(text, c.says) {
			t.Errorf("%s: %s", c.what, got.Result)
		}
		by.stillServed(c.what)
	}
	evs := r.audited(audit.Filter{Tenant: "acme", Session: s.id, Tool: "files_read"})
	if got := codes(evs); len(got) != 3 || slices.ContainsFunc(got, func(c string) bool { return c != "decision:files_read:deny:invalid_input" }) {
		t.Errorf("recorded %v, want three invalid_input denials", got)
	}
}

func TestOversizedRequestsAreRefusedAndRecorded(t *testing.T) {
	r := newRig(t, []byte(faultPolicy), nil)
	by := r.bystander()
	secret := r.token("acme", "person", "")
	cs := r.connect(secret, nil)
	s := r.sessionOf(cs)

	// A body that says it is over the limit is refused before it is read. (The client waits
	// for 100-continue before it sends the body, which it is never asked for: so it never
	// writes into a connection the server is closing.)
	req := r.request(http.MethodPost, secret, cs.ID(), bytes.NewReader(make([]byte, maxBody+1024)))
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	defer client.CloseIdleConnections()
	got := send(t, client, req)
	wantError(t, "a body declared over the limit", got, 413, -32600, nil, "request_too_large", "larger than 4194304 bytes")
	r.refusal(audit.Filter{Tenant: "acme", Session: s.id}, "request_too_large")
	by.stillServed("a body declared over the limit")

	// An argument that takes a call over the limit, sent without a length (chunked): only
	// known to be too large once read. (Over by less than what the server drains after a
	// handler, so the connection closes cleanly.)
	huge := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"files_read","arguments":{"path":"` +
		strings.Repeat("a", maxBody) + `"}}}`
	req = r.request(http.MethodPost, secret, cs.ID(), io.MultiReader(strings.NewReader(huge)))
	if req.ContentLength != 0 {
		t.Fatal("the request declares its length")
	}
	got = send(t, http.DefaultClient, req)
	wantError(t, "an oversized argument", got, 413, -32600, nil, "request_too_large", "larger than 4194304 bytes")
	if evs := r.audited(audit.Filter{Tenant: "acme", Session: s.id}); len(codes(evs)) != 2 {
		t.Errorf("recorded %v, want the two refusals", codes(evs))
	}
	by.stillServed("an oversized argument")

	// Just under the limit is not refused for its size.
	fits := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"files_read","arguments":{"path":"` +
		strings.Repeat("a", maxBody-200) + `"}}}`
	got = send(t, http.DefaultClient, r.request(http.MethodPost, secret, cs.ID(), io.MultiReader(strings.NewReader(fits))))
	if got.status != http.StatusOK || got.Error != nil || strings.Contains(got.body, "request_too_large") {
		t.Errorf("a request under the limit: %d %.300s", got.status, got.body)
	}
	if out, isErr := call(t, cs, "files_list", map[string]any{"path": "."}); isErr {
		t.Errorf("the session after its oversized requests: %s", out)
	}
}

func TestAnotherTokensSessionDoesNotExistForIt(t *testing.T) {
	r := newRig(t, []byte(faultPolicy), nil)
	by := r.bystander()
	victim := r.connect(r.token("acme", "person", ""), nil)
	vs := r.sessionOf(victim)
	globex := r.token("globex", "person", "")
	r.connect(globex, nil) // globex has a session of its own: it is still not let into acme's
	sameTenant := r.token("acme", "person", "")

	for _, c := range []struct {
		what, secret, tenant string
		req                  *http.Request
	}{
		{"another tenant's token calling a tool", globex, "globex", r.request(http.MethodPost, globex, victim.ID(),
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"files_list","arguments":{"path":"."}}}`))},
		{"another tenant's token listening", globex, "globex", r.request(http.MethodGet, globex, victim.ID(), nil)},
		{"another tenant's token ending the session", globex, "globex", r.request(http.MethodDelete, globex, victim.ID(), nil)},
		{"another token of the same tenant", sameTenant, "acme", r.request(http.MethodPost, sameTenant, victim.ID(),
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))},
	} {
		mark := r.mark()
		got := send(t, http.DefaultClient, c.req)
		wantError(t, c.what, got, 404, -32001, nil, "unknown_session", "no such session")
		// Recorded as the intruder's, and not as a request of the victim's session.
		e := r.refusal(audit.Filter{Tenant: c.tenant, AfterID: mark}, "unknown_session")
		if e != nil && (e.Session != "" || e.Tool != "mcp:"+c.req.Method) {
			t.Errorf("%s: recorded as %+v", c.what, e)
		}
		by.stillServed(c.what)
	}
	// The victim's session noticed nothing (the DELETE did not end it).
	if out, isErr := call(t, victim, "files_list", map[string]any{"path": "."}); isErr {
		t.Errorf("the victim's session: %s", out)
	}
	if evs := r.audited(audit.Filter{Session: vs.id}); slices.ContainsFunc(evs, func(e *audit.Event) bool { return e.Decision == "deny" }) {
		t.Errorf("the victim's session holds refusals: %v", codes(evs))
	}
}

func TestRevokedTokenEndsItsSession(t *testing.T) {
	// The gateway remembers good tokens far longer than the test runs: the revocation must
	// take effect through RevokeToken, not because the token was looked up again.
	r := newRig(t, []byte(faultPolicy), nil).with(func(o *Options) { o.TokenTTL = time.Hour })
	by := r.bystander()
	secret := r.token("acme", "person", "")
	cs := r.connect(secret, nil)
	s := r.sessionOf(cs)
	tok, err := r.db.TokenByHash(context.Background(), auth.Hash(secret))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.gw.RevokeToken(context.Background(), tok.ID, time.Now()); err != nil {
		t.Fatal(err)
	}

	// The session ends with the revocation, recorded as the session's; its next request is
	// refused.
	e := r.refusal(audit.Filter{Tenant: "acme", Session: s.id}, tokenRevoked)
	if e != nil && e.Principal != "tester" {
		t.Errorf("recorded as %+v", e)
	}
	got := r.post(secret, cs.ID(), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	wantError(t, "a revoked token on its session", got, 401, -32001, nil, "unauthenticated", "revoked")
	// And the session has ended with its token: Warden's session and the SDK's.
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if !ended || r.gw.sessionByMCP(cs.ID()) != nil {
		t.Error("the session of a revoked token did not end")
	}
	other := r.token("acme", "person", "")
	got = r.post(other, cs.ID(), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	wantError(t, "the ended session, with another token", got, 404, -32001, 2, "unknown_session", "session not found")

	// Without a session, the revoked token is refused as any invalid one (and recorded).
	got = r.post(secret, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	wantError(t, "a revoked token opening a session", got, 401, -32001, nil, "unauthenticated", "revoked")
	if cs, err := r.dial(secret, nil); err == nil {
		cs.Close()
		t.Error("a revoked token opened a session")
	}
	by.stillServed("a revoked token")
}

// with is the rig with a gateway of its own, on the rig's store, gate and broker, whose
// options are the rig's changed by change.
func (r *rig) with(change func(*Options)) *rig {
	r.t.Helper()
	o := r.gw.o
	change(&o)
	gw, err := New(o)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(gw.Close)
	srv := httptest.NewServer(gw.Handler())
	r.t.Cleanup(srv.Close)
	c := *r
	c.gw, c.url = gw, srv.URL
	return &c
}

// failingStore is the rig's store, unable to check tokens while fail is set.
type failingStore struct {
	*sqlite.DB
	fail atomic.Bool
}

func (f *failingStore) TokenByHash(ctx context.Context, hash string) (*auth.Token, error) {
	if f.fail.Load() {
		return nil, errors.New("the database is unreachable")
	}
	return f.DB.TokenByHash(ctx, hash)
}

func TestTokenThatCannotBeCheckedEndsNothing(t *testing.T) {
	// The rig's gateway again, on a store that can fail.
	base := newRig(t, []byte(faultPolicy), nil)
	store := &failingStore{DB: base.db.(*sqlite.DB)}
	r := base.with(func(o *Options) { o.Store = store })
	gw := r.gw

	secret := r.token("acme", "person", "")
	cs := r.connect(secret, nil)
	store.fail.Store(true)
	got := r.post(secret, cs.ID(), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	wantError(t, "a token that cannot be checked", got, 401, -32001, nil, "unauthenticated", "cannot be checked")
	store.fail.Store(false)
	// Its session did not end: only a token known to be invalid ends its session.
	if gw.sessionByMCP(cs.ID()) == nil {
		t.Fatal("a store failure ended a session")
	}
	if out, isErr := call(t, cs, "files_list", map[string]any{"path": "."}); isErr {
		t.Errorf("the session after the store failed: %s", out)
	}
}

func TestTokenOfATenantNotInThePolicy(t *testing.T) {
	r := newRig(t, []byte(faultPolicy), nil)
	by := r.bystander()
	secret := r.token("initech", "person", "")
	r.gw.mu.Lock()
	before := len(r.gw.sessions)
	r.gw.mu.Unlock()

	got := r.post(secret, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	wantError(t, "a tenant the policy does not have", got, 403, -32001, 1, "session_refused", "initech")
	if e := r.refusal(audit.Filter{Tenant: "initech"}, "session_refused"); e != nil && (e.Principal != "tester" || e.Session != "") {
		t.Errorf("recorded as %+v", e)
	}
	if _, err := r.dial(secret, nil); err == nil {
		t.Error("a token of a tenant the policy does not have opened a session")
	}
	r.gw.mu.Lock()
	after := len(r.gw.sessions)
	r.gw.mu.Unlock()
	if after != before {
		t.Errorf("refused sessions left %d sessions behind", after-before)
	}
	by.stillServed("a tenant the policy does not have")
}

// The stdio upstream: this test binary, run again with helperEnv set to a mode.
const helperEnv = "WARDEN_FAULT_HELPER"

func TestFaultHelper(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("a stdio upstream for the fault tests, run by them")
	}
	os.Exit(helper(mode))
}

// helper serves MCP over stdin and stdout:
//   - garbage: writes a line that is not JSON-RPC, and nothing else (until stdin closes);
//   - server: a server whose tools misbehave: garble writes a line that is not JSON-RPC
//     before its result, crash exits mid-call, crash_once exits mid-call the first time
//     (it leaves a mark in $FAULT_DIR), and echo says which process answered.
func helper(mode string) int {
	if mode == "garbage" {
		fmt.Println("Starting up... (a log line on stdout, where JSON-RPC belongs)")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	}
	out := &lockedWriter{w: os.Stdout}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	obj := map[string]any{"type": "object"}
	s := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(fmt.Sprintf("pid %d", os.Getpid())), nil
	})
	s.AddTool(&mcp.Tool{Name: "garble", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(out, "}} not JSON-RPC {{")
		return text("garbled"), nil
	})
	s.AddTool(&mcp.Tool{Name: "crash", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(3)
		return nil, nil
	})
	s.AddTool(&mcp.Tool{Name: "crash_once", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mark := filepath.Join(os.Getenv("FAULT_DIR"), "crashed")
		if _, err := os.Stat(mark); err != nil {
			if err := os.WriteFile(mark, nil, 0o600); err != nil {
				return nil, err
			}
			os.Exit(3)
		}
		return text("survived"), nil
	})
	if err := s.Run(context.Background(), &mcp.IOTransport{Reader: os.Stdin, Writer: nopWriteCloser{out}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// lockedWriter keeps a stray line from landing inside a message the server is writing.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// upstreamFaultPolicy has a well-behaved connector (good, over HTTP) and stdio connectors run
// as the helper in the modes given, by id.
func upstreamFaultPolicy(t *testing.T, dir string, modes map[string]string) []byte {
	t.Helper()
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nbuiltins:\n  - name: files_list\nconnectors:\n")
	fmt.Fprintf(&b, "  - {id: good, effect: read, discover: true, upstream: {url: %q, timeoutMs: 20000}}\n", upstreamServer(t, hang))
	conns := []string{"{id: good, connector: good}"}
	for _, id := range slices.Sorted(maps.Keys(modes)) {
		effect := "read"
		if strings.HasPrefix(id, "writer") {
			effect = "write" // a connector whose tools change things
		}
		fmt.Fprintf(&b, "  - {id: %s, effect: %s, discover: true, upstream: {command: [%q, \"-test.run=^TestFaultHelper$\"], "+
			"env: {%s: %s, FAULT_DIR: %q}, timeoutMs: 20000}}\n", id, effect, exe, helperEnv, modes[id], dir)
		conns = append(conns, fmt.Sprintf("{id: %s, connector: %s}", id, id))
	}
	fmt.Fprintf(&b, "tenants:\n  - id: acme\n    connections: [%s]\n", strings.Join(conns, ", "))
	return []byte(b.String())
}

// goodStillServed checks the well-behaved connector's tools in a session.
func goodStillServed(t *testing.T, cs *mcp.ClientSession, after string) {
	t.Helper()
	if out, isErr := call(t, cs, "mcp__good__echo", map[string]any{"msg": "still here"}); isErr || out != "echo: still here" {
		t.Errorf("after %s, the good connector's tool: %v %q", after, isErr, out)
	}
}

func TestStdioUpstreamThatPrintsGarbage(t *testing.T) {
	r := newRig(t, upstreamFaultPolicy(t, t.TempDir(), map[string]string{"junk": "garbage", "flaky": "server"}), nil)
	cs := r.connect(r.token("acme", "person", ""), nil)

	// An upstream that never speaks JSON-RPC is not connected: its tools are not listed, a
	// call of one says why, and the session has every other connector's tools.
	got := names(t, cs)
	if slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "mcp__junk__") }) ||
		!slices.Contains(got, "mcp__good__echo") || !slices.Contains(got, "mcp__flaky__echo") {
		t.Fatalf("tools %v", got)
	}
	out, isErr := call(t, cs, "mcp__junk__anything", nil)
	if !isErr || !strings.Contains(out, "unsupported_tool") || !strings.Contains(out, "not connected") {
		t.Errorf("a tool of the garbage upstream: %v %s", isErr, out)
	}
	goodStillServed(t, cs, "an upstream that prints garbage")

	// An upstream that prints garbage mid-call: that call fails and says so, and its
	// connection is dropped; the next call of its tools reconnects.
	first, isErr := call(t, cs, "mcp__flaky__echo", nil)
	if isErr {
		t.Fatalf("flaky echo: %s", first)
	}
	out, isErr = call(t, cs, "mcp__flaky__garble", nil)
	if !isErr || !strings.Contains(out, "connector flaky answered with something that is not JSON-RPC") {
		t.Errorf("a call answered with garbage: %v %s", isErr, out)
	}
	goodStillServed(t, cs, "a call answered with garbage")
	again, isErr := call(t, cs, "mcp__flaky__echo", nil)
	if isErr || again == first {
		t.Errorf("the upstream after garbage: %v %s (before: %s)", isErr, again, first)
	}
	evs := r.audited(audit.Filter{Tenant: "acme"})
	for _, want := range []string{"decision:mcp__junk__anything:deny:unsupported_tool", "outcome:mcp__flaky__garble:error"} {
		if !slices.Contains(codes(evs), want) {
			t.Errorf("audit trail %v lacks %s", codes(evs), want)
		}
	}
}

func TestStdioUpstreamThatCrashesMidCall(t *testing.T) {
	dir := t.TempDir()
	r := newRig(t, upstreamFaultPolicy(t, dir, map[string]string{"flaky": "server"}), nil)
	cs := r.connect(r.token("acme", "person", ""), nil)
	other := r.connect(r.token("acme", "person", ""), nil)

	first, isErr := call(t, cs, "mcp__flaky__echo", nil)
	if isErr {
		t.Fatalf("flaky echo: %s", first)
	}
	// A process that exits mid-call: the call reconnects once and is tried again; this one
	// crashes again, and fails saying so.
	out, isErr := call(t, cs, "mcp__flaky__crash", nil)
	if !isErr || !strings.Contains(out, "connector flaky closed its connection during the call, again after reconnecting") {
		t.Errorf("a call that crashes its upstream: %v %s", isErr, out)
	}
	goodStillServed(t, cs, "a crash")
	goodStillServed(t, other, "a crash in another session")
	// The next call starts the upstream again.
	again, isErr := call(t, cs, "mcp__flaky__echo", nil)
	if isErr || again == first {
		t.Errorf("the upstream after a crash: %v %s (before: %s)", isErr, again, first)
	}
	if out, isErr := call(t, other, "mcp__flaky__echo", nil); isErr || out != again {
		t.Errorf("another session shares the restarted upstream: %v %s, want %s", isErr, out, again)
	}
	// A crash the retry recovers from: the caller sees only the result.
	out, isErr = call(t, cs, "mcp__flaky__crash_once", nil)
	if isErr || out != "survived" {
		t.Errorf("a call whose upstream crashed once: %v %s", isErr, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "crashed")); err != nil {
		t.Errorf("the upstream did not crash: %v", err)
	}
	goodStillServed(t, cs, "a crash the retry recovered from")
	evs := r.audited(audit.Filter{Tenant: "acme"})
	for _, want := range []string{"outcome:mcp__flaky__crash:error", "outcome:mcp__flaky__crash_once:ok"} {
		if !slices.Contains(codes(evs), want) {
			t.Errorf("audit trail %v lacks %s", codes(evs), want)
		}
	}
}

// A tool that may change something is not repeated when its upstream dies during the call: it
// may have run.
func TestWritesAreNotRepeatedAfterACrash(t *testing.T) {
	dir := t.TempDir()
	r := newRig(t, upstreamFaultPolicy(t, dir, map[string]string{"writer": "server"}), nil)
	cs := r.connect(r.token("acme", "person", ""), nil)
	out, isErr := call(t, cs, "mcp__writer__crash_once", nil)
	if !isErr || !strings.Contains(out, "the call is not repeated") {
		t.Errorf("a write whose upstream crashed: %v %s", isErr, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "crashed")); err != nil {
		t.Errorf("the upstream did not crash: %v", err)
	}
	// The next call reconnects.
	if out, isErr := call(t, cs, "mcp__writer__crash_once", nil); isErr || out != "survived" {
		t.Errorf("the call after the crash: %v %s", isErr, out)
	}
	goodStillServed(t, cs, "a crashed write")
}

func TestUpstreamCatalogChangesMidSession(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "shifty", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	answer := func(s string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}, nil
		}
	}
	up.AddTool(&mcp.Tool{Name: "stable", InputSchema: obj}, answer("stable"))
	up.AddTool(&mcp.Tool{Name: "stale", InputSchema: obj}, answer("stale"))
	// Closed after the gateway (cleanups run last first), which holds a stream open to it.
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(srv.Close)
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	r := newRig(t, fmt.Appendf(nil, `
version: 1
connectors:
  - {id: good, effect: read, discover: true, upstream: {url: %q, timeoutMs: 20000}}
  - {id: shifty, effect: read, discover: true, upstream: {url: %q, timeoutMs: 20000}}
tenants:
  - id: acme
    connections: [{id: good, connector: good}, {id: shifty, connector: shifty}]
`, upstreamServer(t, hang), srv.URL), nil)
	changed := make(chan struct{}, 16)
	cs := r.connect(r.token("acme", "person", ""), &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	before := names(t, cs)
	if !slices.Contains(before, "mcp__shifty__stale") || slices.Contains(before, "mcp__shifty__fresh") {
		t.Fatalf("tools %v", before)
	}

	up.AddTool(&mcp.Tool{Name: "fresh", InputSchema: obj}, answer("fresh"))
	up.RemoveTools("stale")

	// The client is told, and lists the new catalog; the good connector's tools are as
	// they were.
	want := slices.Clone(before)
	want = slices.DeleteFunc(want, func(n string) bool { return n == "mcp__shifty__stale" })
	want = append(want, "mcp__shifty__fresh")
	slices.Sort(want)
	deadline := time.After(20 * time.Second)
	for got := before; !slices.Equal(got, want); got = names(t, cs) {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("tools %v, want %v", got, want)
		}
	}
	if out, isErr := call(t, cs, "mcp__shifty__fresh", nil); isErr || out != "fresh" {
		t.Errorf("the new tool: %v %s", isErr, out)
	}
	if out, isErr := call(t, cs, "mcp__shifty__stale", nil); !isErr || !strings.Contains(out, "unsupported_tool") {
		t.Errorf("the removed tool: %v %s", isErr, out)
	}
	if out, isErr := call(t, cs, "mcp__shifty__stable", nil); isErr || out != "stable" {
		t.Errorf("the tool that stayed: %v %s", isErr, out)
	}
	goodStillServed(t, cs, "another connector's catalog changed")
}

// An upstream that accepts connections and never answers holds up no session: a new session
// lists what is there after a short wait, the other connector's tools work, and the stuck
// connector's tools are simply not listed while it does not answer.
func TestUpstreamThatNeverAnswersHoldsUpNoSession(t *testing.T) {
	release := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(stuck.Close)
	t.Cleanup(func() { close(release) }) // runs first: the handlers return, and the server can close
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	src := fmt.Sprintf(`
version: 1
connectors:
  - {id: good, effect: read, discover: true, upstream: {url: %q, timeoutMs: 20000}}
  - {id: stuck, effect: read, discover: true, upstream: {url: %q, timeoutMs: 120000}}
tenants:
  - id: acme
    connections: [{id: good, connector: good}, {id: stuck, connector: stuck}]
`, upstreamServer(t, hang), stuck.URL)
	r := newRig(t, []byte(src), nil)
	// The rig's dial gives up after 20 s, long before the stuck dial's 120 s: a session that
	// waited for it would fail here.
	for i := range 2 {
		cs := r.connect(r.token("acme", "person", ""), nil)
		got := names(t, cs)
		if !slices.Contains(got, "mcp__good__echo") || slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "mcp__stuck__") }) {
			t.Errorf("session %d lists %v", i, got)
		}
		goodStillServed(t, cs, "a stuck upstream")
		out, isErr := call(t, cs, "mcp__stuck__anything", nil)
		if !isErr || !strings.Contains(out, "unsupported_tool") {
			t.Errorf("a call of the stuck connector's tool: %v %s", isErr, out)
		}
	}
}
