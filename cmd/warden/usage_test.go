package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/postgres"
	"github.com/wardenhq/warden/store/sqlite"
)

// usagePolicy is the quickstart with a reviewer of three turns and $0.25 (eight at once, so
// that no test waits for a run to end), and a tenant whose models may spend $0.40 a month.
func usagePolicy(t *testing.T) *policy.Policy {
	t.Helper()
	src := string(examples.Quickstart)
	src = strings.Replace(src, "      runBudgetUsd: 0.25\n      maxTurns: 20", "      runBudgetUsd: 0.25\n      maxTurns: 3", 1)
	src = strings.Replace(src, "  maxConcurrentRuns: 1\n", "  maxConcurrentRuns: 8\n", 1)
	src = strings.Replace(src, "    owner: true", "    owner: true\n    monthlyModelCapUsd: 0.4", 1)
	p, err := policy.Parse("usage.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// usageRig is `warden serve`'s stack behind a real HTTP listener: /mcp and the REST API.
type usageRig struct {
	t   *testing.T
	db  appStore
	url string
}

func newUsageRig(t *testing.T, db appStore, dir string) *usageRig {
	t.Helper()
	return newUsageRigFor(t, usagePolicy(t), db, dir)
}

// newUsageRigFor is newUsageRig on another policy.
func newUsageRigFor(t *testing.T, p *policy.Policy, db appStore, dir string, tune ...func(*gateway.Options)) *usageRig {
	t.Helper()
	st, err := newStack(p, db, filepath.Join(dir, "ws"), &sandboxState{}, slog.New(slog.NewTextHandler(io.Discard, nil)), "", tune...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.close)
	srv := server.New(server.Options{Store: revokeThrough{appStore: db, gw: st.gateway}, Broker: st.broker,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Boundaries: st.gateway, Runs: st.gateway,
		ValidateToken: tokenValidator(func() *policy.Policy { return p })})
	mux := http.NewServeMux()
	mux.Handle("/mcp", st.gateway.Handler())
	mux.Handle("/", srv)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &usageRig{t: t, db: db, url: hs.URL}
}

func openUsageDB(t *testing.T, dir string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(dir, "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// token makes a token and returns its secret.
func (r *usageRig) token(role, sessionRole, profile string) (string, *auth.Token) {
	r.t.Helper()
	secret, hash, err := auth.NewSecret()
	if err != nil {
		r.t.Fatal(err)
	}
	tok := &auth.Token{ID: newTokenID(), Hash: hash, Role: role, Tenant: "default", SessionRole: sessionRole,
		Profile: profile, Created: time.Now()}
	if role == auth.RoleAdmin {
		tok.Tenant = ""
	}
	if err := r.db.CreateToken(r.t.Context(), tok); err != nil {
		r.t.Fatal(err)
	}
	return secret, tok
}

// do sends one request as curl would, and returns the status, the headers and the JSON body
// (the first event's data of an event stream).
func (r *usageRig) do(method, path, secret, session, body string) (int, http.Header, map[string]any) {
	r.t.Helper()
	req, err := http.NewRequestWithContext(r.t.Context(), method, r.url+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
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
	var out map[string]any
	if len(bytesTrim(data)) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			r.t.Fatalf("%s %s: HTTP %d, not JSON: %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, resp.Header, out
}

func bytesTrim(b []byte) string { return strings.TrimSpace(string(b)) }

// open initializes an MCP session and returns its id, the run the result's _meta names, and
// the run the Warden-Run header names.
func (r *usageRig) open(secret string) (session, metaRun, headerRun string, refused map[string]any) {
	r.t.Helper()
	code, h, out := r.do(http.MethodPost, "/mcp", secret, "",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`)
	if code != http.StatusOK {
		return "", "", "", out
	}
	session = h.Get("Mcp-Session-Id")
	res, _ := out["result"].(map[string]any)
	meta, _ := res["_meta"].(map[string]any)
	run, _ := meta["warden/run"].(map[string]any)
	metaRun, _ = run["id"].(string)
	if code, _, _ := r.do(http.MethodPost, "/mcp", secret, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		r.t.Fatalf("notifications/initialized: HTTP %d", code)
	}
	return session, metaRun, h.Get("Warden-Run"), nil
}

// call calls git_status (a tool the reviewer holds), with a _meta if one is given, and returns
// the text of its result and whether it is an error.
func (r *usageRig) call(secret, session, meta string) (string, bool) {
	r.t.Helper()
	params := `{"name":"git_status","arguments":{}`
	if meta != "" {
		params += `,"_meta":` + meta
	}
	params += "}"
	code, _, out := r.do(http.MethodPost, "/mcp", secret, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":`+params+`}`)
	res, _ := out["result"].(map[string]any)
	if code != http.StatusOK || res == nil {
		r.t.Fatalf("tools/call: HTTP %d %v", code, out)
	}
	var text strings.Builder
	for _, c := range res["content"].([]any) {
		text.WriteString(c.(map[string]any)["text"].(string))
	}
	isErr, _ := res["isError"].(bool)
	return text.String(), isErr
}

// usage posts a usage report for a run.
func (r *usageRig) usage(secret, run, body string) (int, map[string]any) {
	r.t.Helper()
	code, _, out := r.do(http.MethodPost, "/api/v1/runs/"+run+"/usage", secret, "", body)
	return code, out
}

func wantRunLimit(t *testing.T, what, text string, isErr bool) {
	t.Helper()
	if !isErr || !strings.Contains(text, "run_limit") {
		t.Fatalf("%s: %q (error %v); want a refusal with run_limit", what, text, isErr)
	}
}

func wantRan(t *testing.T, what, text string, isErr bool) {
	t.Helper()
	if isErr && strings.Contains(text, "Warden did not run this call") {
		t.Fatalf("%s was refused: %s", what, text)
	}
}

// Turns reported over HTTP up to maxTurns pass; the report past it stops the run, and the next
// call is refused with run_limit. The client learns its run from initialize.
func TestRunUsageOverHTTPTurns(t *testing.T) {
	dir := t.TempDir()
	r := newUsageRig(t, openUsageDB(t, dir), dir)
	agent, _ := r.token(auth.RoleAgent, "coworker", "reviewer")
	session, run, header, refused := r.open(agent)
	if refused != nil || run == "" || header != run {
		t.Fatalf("initialize: _meta names run %q, the header %q (%v); want the same run in both", run, header, refused)
	}
	for i := 1; i <= 3; i++ {
		code, st := r.usage(agent, run, `{"turns": 1}`)
		if code != http.StatusOK || st["turns"] != float64(i) || st["stopped"] != false || st["turnsLeft"] != float64(3-i) {
			t.Fatalf("turn %d of 3: HTTP %d %v", i, code, st)
		}
		text, isErr := r.call(agent, session, "")
		wantRan(t, fmt.Sprintf("a call after turn %d of 3", i), text, isErr)
	}
	code, st := r.usage(agent, run, `{"turns": 1, "modelUsd": 0.01}`)
	if code != http.StatusOK || st["stopped"] != true || !strings.Contains(fmt.Sprint(st["stoppedBecause"]), "no turns left") ||
		st["recorded"].(map[string]any)["turns"] != float64(0) {
		t.Fatalf("turn 4 of 3: HTTP %d %v; want the run stopped and the turn not counted", code, st)
	}
	text, isErr := r.call(agent, session, "")
	wantRunLimit(t, "a call after the turns ran out", text, isErr)
	code, body := r.usage(agent, run, `{"turns": 1}`)
	if code != http.StatusConflict || body["error"].(map[string]any)["code"] != "run_stopped" {
		t.Fatalf("a report to a stopped run: HTTP %d %v; want 409 run_stopped", code, body)
	}
}

// Model dollars past runBudgetUsd stop the run; past the tenant's monthly cap they stop it and
// refuse the next run.
func TestRunUsageOverHTTPDollars(t *testing.T) {
	dir := t.TempDir()
	r := newUsageRig(t, openUsageDB(t, dir), dir)
	agent, _ := r.token(auth.RoleAgent, "coworker", "reviewer")
	session, run, _, _ := r.open(agent)
	code, st := r.usage(agent, run, `{"modelUsd": 0.2}`)
	if code != http.StatusOK || st["stopped"] != false || st["modelUsd"] != 0.2 {
		t.Fatalf("$0.20 of $0.25: HTTP %d %v", code, st)
	}
	text, isErr := r.call(agent, session, "")
	wantRan(t, "a call within the budget", text, isErr)
	code, st = r.usage(agent, run, `{"modelUsd": 0.1}`)
	if code != http.StatusOK || st["stopped"] != true || !strings.Contains(fmt.Sprint(st["stoppedBecause"]), "above its budget") {
		t.Fatalf("$0.30 of $0.25: HTTP %d %v; want the run stopped", code, st)
	}
	text, isErr = r.call(agent, session, "")
	wantRunLimit(t, "a call over the run's budget", text, isErr)

	// An operator of the tenant reports too (the harness may report from elsewhere): $0.45 is
	// over the month's $0.40.
	session, run, _, refused := r.open(agent)
	if refused != nil {
		t.Fatalf("a second run under the monthly cap was refused: %v", refused)
	}
	operator, _ := r.token(auth.RoleOperator, "", "")
	code, st = r.usage(operator, run, `{"modelUsd": 0.15}`)
	if code != http.StatusOK || st["stopped"] != true || !strings.Contains(fmt.Sprint(st["stoppedBecause"]), "this month") ||
		st["monthUsd"].(float64) <= 0.4 {
		t.Fatalf("$0.45 of the month's $0.40: HTTP %d %v; want the run stopped at the monthly cap", code, st)
	}
	text, isErr = r.call(agent, session, "")
	wantRunLimit(t, "a call over the monthly cap", text, isErr)
	if _, _, _, refused := r.open(agent); refused == nil || !strings.Contains(fmt.Sprint(refused), "cap") {
		t.Fatalf("a run after the monthly cap was reached: %v; want it refused", refused)
	}
}

// The same limits through MCP: a call's _meta carries the usage, recorded before the call is
// judged.
func TestRunUsageInMeta(t *testing.T) {
	dir := t.TempDir()
	r := newUsageRig(t, openUsageDB(t, dir), dir)
	agent, _ := r.token(auth.RoleAgent, "coworker", "reviewer")
	session, run, _, _ := r.open(agent)
	for i := 1; i <= 3; i++ {
		text, isErr := r.call(agent, session, `{"warden/usage": {"turns": 1, "modelUsd": 0.002}}`)
		wantRan(t, fmt.Sprintf("call %d of 3 turns", i), text, isErr)
	}
	text, isErr := r.call(agent, session, `{"warden/usage": {"turns": 1}}`)
	wantRunLimit(t, "a call past maxTurns", text, isErr)
	admin, _ := r.token(auth.RoleAdmin, "", "")
	if code, st := r.usage(admin, run, `{}`); code != http.StatusConflict || st["run"].(map[string]any)["turns"] != float64(3) {
		t.Fatalf("the standing after three turns in _meta: HTTP %d %v", code, st)
	}

	other, _ := r.token(auth.RoleAgent, "coworker", "reviewer")
	session, _, _, _ = r.open(other)
	text, isErr = r.call(other, session, `{"warden/usage": {"turns": -1, "modelUsd": "x", "tokens": 3}}`)
	if !isErr || !strings.Contains(text, "invalid_input") || !strings.Contains(text, "turns") ||
		!strings.Contains(text, "modelUsd") || !strings.Contains(text, "tokens") {
		t.Fatalf("a malformed _meta usage: %q; want invalid_input naming every problem", text)
	}
	text, isErr = r.call(other, session, `{"warden/usage": {"modelUsd": 0.3}}`)
	wantRunLimit(t, "a call whose _meta takes the run over budget", text, isErr)
}

// Who may report, what a bad body gets, and a run no session of this instance holds.
func TestRunUsageRefusals(t *testing.T) {
	dir := t.TempDir()
	db := openUsageDB(t, dir)
	r := newUsageRig(t, db, dir)
	agent, _ := r.token(auth.RoleAgent, "coworker", "reviewer")
	_, run, _, _ := r.open(agent)

	stranger, _ := r.token(auth.RoleAgent, "coworker", "reviewer")
	if code, _ := r.usage(stranger, run, `{"turns": 1}`); code != http.StatusNotFound {
		t.Errorf("another agent token's report: HTTP %d, want 404", code)
	}
	viewer, _ := r.token(auth.RoleViewer, "", "")
	if code, _ := r.usage(viewer, run, `{"turns": 1}`); code != http.StatusForbidden {
		t.Errorf("a viewer's report: HTTP %d, want 403", code)
	}
	if code, _ := r.usage(agent, "run-nothing", `{"turns": 1}`); code != http.StatusNotFound {
		t.Errorf("an unknown run: HTTP %d, want 404", code)
	}
	code, body := r.usage(agent, run, `{"turns": -1, "modelUsd": -2, "model": "x"}`)
	fields, _ := body["error"].(map[string]any)["fields"].([]any)
	if code != http.StatusUnprocessableEntity || len(fields) != 3 {
		t.Errorf("a body with three problems: HTTP %d %v; want 422 naming all three", code, body)
	}
	if code, _ := r.usage(agent, run, `{"turns": 1.5}`); code != http.StatusUnprocessableEntity {
		t.Errorf("half a turn: HTTP %d, want 422", code)
	}
	if code, _ := r.usage(agent, run, `not json`); code != http.StatusBadRequest {
		t.Errorf("a body that is not JSON: HTTP %d, want 400", code)
	}
	if code, st := r.usage(agent, run, `{}`); code != http.StatusOK || st["turns"] != float64(0) {
		t.Errorf("an empty report (the standing): HTTP %d %v", code, st)
	}

	// Another instance on the same store does not hold the run: it says so, and records nothing.
	elsewhere(t, r, newUsageRig(t, db, t.TempDir()), agent, run)
}

// elsewhere checks that an instance that does not hold a run refuses its usage, clearly, and
// that the instance that holds it still counts it.
func elsewhere(t *testing.T, holder, other *usageRig, agent, run string) {
	t.Helper()
	code, body := other.usage(agent, run, `{"turns": 1}`)
	if code != http.StatusConflict || body["error"].(map[string]any)["code"] != "run_elsewhere" ||
		body["run"].(map[string]any)["held"] != false {
		t.Fatalf("a run held by another instance: HTTP %d %v; want 409 run_elsewhere", code, body)
	}
	if code, st := holder.usage(agent, run, `{"turns": 1}`); code != http.StatusOK || st["turns"] != float64(1) {
		t.Errorf("the run after a report to another instance: HTTP %d %v; want only its own instance's turn counted", code, st)
	}
}

// Two instances on one PostgreSQL database: a report that reaches the instance without the
// run's session is refused as such, never counted where it could stop nothing.
func TestRunUsageElsewherePostgres(t *testing.T) {
	su := pgSchemaURL(t, "warden_test_usage")
	open := func() appStore {
		db, err := postgres.Open(t.Context(), su)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a := newUsageRig(t, open(), t.TempDir())
	b := newUsageRig(t, open(), t.TempDir())
	agent, _ := a.token(auth.RoleAgent, "coworker", "reviewer")
	_, run, _, refused := a.open(agent)
	if refused != nil {
		t.Fatalf("initialize: %v", refused)
	}
	elsewhere(t, a, b, agent, run)
}

// TestRunUsageAcrossInstances: two instances on one PostgreSQL store serve one session as
// serve does behind a balancer: usage reported to either counts against the same run, calls
// through either run, and the report past maxTurns on one stops the session's calls on both.
func TestRunUsageAcrossInstances(t *testing.T) {
	u := pgSchemaURL(t, "warden_test_usage")
	open := func() appStore {
		db, err := postgres.Open(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	dir := t.TempDir()
	shared := func(db appStore, name string) func(*gateway.Options) {
		return func(o *gateway.Options) { o.Sessions, o.Instance = db, name }
	}
	dbA, dbB := open(), open()
	a := newUsageRigFor(t, usagePolicy(t), dbA, dir, shared(dbA, "instance-a"))
	b := newUsageRigFor(t, usagePolicy(t), dbB, dir, shared(dbB, "instance-b"))
	agent, _ := a.token(auth.RoleAgent, "coworker", "reviewer")
	session, run, _, refused := a.open(agent)
	if refused != nil || run == "" {
		t.Fatalf("initialize: %v", refused)
	}
	rigs := []*usageRig{b, a, b}
	for i, r := range rigs {
		code, st := r.usage(agent, run, `{"turns": 1}`)
		if code != http.StatusOK || st["turns"] != float64(i+1) || st["stopped"] != false {
			t.Fatalf("turn %d of 3 on instance %d: HTTP %d %v", i+1, i%2, code, st)
		}
		text, isErr := rigs[(i+1)%len(rigs)].call(agent, session, "")
		wantRan(t, fmt.Sprintf("a call after turn %d of 3", i+1), text, isErr)
	}
	code, st := a.usage(agent, run, `{"turns": 1}`)
	if code != http.StatusOK || st["stopped"] != true {
		t.Fatalf("turn 4 of 3: HTTP %d %v; want the run stopped", code, st)
	}
	text, isErr := a.call(agent, session, "")
	wantRunLimit(t, "a call on the instance that stopped the run", text, isErr)
	// The stop reaches the other instance's copy through the store's notifications.
	deadline := time.Now().Add(30 * time.Second)
	for {
		text, isErr := b.call(agent, session, "")
		if isErr && strings.Contains(text, "run_limit") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other instance still runs the stopped session's calls: %q", text)
		}
		time.Sleep(20 * time.Millisecond) // polling the other instance's answer
	}
}
