package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/sqlite"
)

type fixture struct {
	t      *testing.T
	db     *sqlite.DB
	broker *approval.Broker
	srv    *httptest.Server
	tokens map[string]string // name → secret
	ready  error
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, nil)
}

// newFixtureWith is newFixture with the server's options changed by opt first.
func newFixtureWith(t *testing.T, opt func(*server.Options, *sqlite.DB)) *fixture {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{t: t, db: db, broker: approval.NewBroker(approval.Options{Store: db}), tokens: map[string]string{}}
	o := server.Options{Store: db, Broker: f.broker, Info: map[string]any{"policy": "rev1"},
		Ready: func(context.Context) error { return f.ready }}
	if opt != nil {
		opt(&o, db)
	}
	s := server.New(o)
	f.srv = httptest.NewServer(s)
	t.Cleanup(f.srv.Close)
	for _, tk := range []struct{ name, role, tenant, session string }{
		{"admin", auth.RoleAdmin, "", ""},
		{"acme-approver", auth.RoleApprover, "acme", ""},
		{"acme-viewer", auth.RoleViewer, "acme", ""},
		{"beta-approver", auth.RoleApprover, "beta", ""},
		{"agent", auth.RoleAgent, "acme", "desk"},
	} {
		secret, hash, err := auth.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		if err := db.CreateToken(context.Background(), &auth.Token{ID: "tok-" + tk.name, Hash: hash, Role: tk.role, Tenant: tk.tenant, SessionRole: tk.session, Name: tk.name, Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
		f.tokens[tk.name] = secret
	}
	return f
}

func (f *fixture) card(tenant, id string) *approval.Card {
	f.t.Helper()
	c := &approval.Card{ID: id, Tenant: tenant, Session: "s", Tool: "mcp__sheets__sheets_append", Digest: "d-" + id,
		PolicyRevision: "rev1", Args: json.RawMessage(`{"rows":1}`), Reason: "asks", State: approval.Pending,
		Created: time.Now(), Deadline: time.Now().Add(time.Hour)}
	if err := f.db.CreateCard(context.Background(), c); err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) do(method, path, token, body string) (int, map[string]any, string) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+f.tokens[token])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, string(raw)
}

func TestAuth(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"an agent token", "agent", http.StatusForbidden},
		{"a viewer may list", "acme-viewer", http.StatusOK},
	} {
		if code, _, body := f.do("GET", "/api/v1/approvals?state=pending", tt.token, ""); code != tt.want {
			t.Errorf("%s: %d %s; want %d", tt.name, code, body, tt.want)
		}
	}
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/approvals", nil)
	req.Header.Set("Authorization", "Bearer wdn_not-a-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token") {
		t.Errorf("a wrong token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if code, _, _ := f.do("POST", "/api/v1/approvals/x", "acme-viewer", `{"answer":"deny"}`); code != http.StatusForbidden {
		t.Errorf("a viewer answering: %d; want 403", code)
	}
	if err := f.db.RevokeToken(context.Background(), "tok-acme-viewer", time.Now()); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := f.do("GET", "/api/v1/approvals", "acme-viewer", ""); code != http.StatusUnauthorized {
		t.Errorf("a revoked token: %d; want 401", code)
	}
}

func TestApprovalsAPI(t *testing.T) {
	f := newFixture(t)
	f.card("acme", "c1")
	f.card("beta", "c2")
	code, body, raw := f.do("GET", "/api/v1/approvals?state=pending", "acme-approver", "")
	list, _ := body["approvals"].([]any)
	if code != http.StatusOK || len(list) != 1 || list[0].(map[string]any)["id"] != "c1" {
		t.Fatalf("acme's pending cards: %d %s", code, raw)
	}
	if offers := list[0].(map[string]any)["offers"]; len(offers.([]any)) != 3 {
		t.Errorf("a pending card offers the three answers: %v", offers)
	}
	if ch, ok := list[0].(map[string]any)["channel"]; ok {
		t.Errorf("a pending card has channel %v; want none", ch)
	}
	if code, body, _ := f.do("GET", "/api/v1/approvals", "admin", ""); code != http.StatusOK || len(body["approvals"].([]any)) != 2 {
		t.Errorf("the admin sees every tenant's cards: %d %v", code, body)
	}
	// Another tenant's card does not exist, as far as acme can tell.
	if code, _, _ := f.do("POST", "/api/v1/approvals/c2", "acme-approver", `{"answer":"allow_once"}`); code != http.StatusNotFound {
		t.Errorf("answering beta's card as acme: %d; want 404", code)
	}
	if code, _, _ := f.do("GET", "/api/v1/approvals/c2", "acme-approver", ""); code != http.StatusNotFound {
		t.Errorf("reading beta's card as acme: %d; want 404", code)
	}
	for _, tt := range []struct{ body string }{{`{"answer":"maybe"}`}, {`not json`}, {`{"answer":"deny","extra":1}`}} {
		if code, _, raw := f.do("POST", "/api/v1/approvals/c1", "acme-approver", tt.body); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s; want 400", tt.body, code, raw)
		}
	}
	if code, _, _ := f.do("POST", "/api/v1/approvals/c1", "acme-approver", `{"answer":"allow_once","digest":"another call"}`); code != http.StatusConflict {
		t.Errorf("an answer for another call: %d; want 409", code)
	}
	code, body, raw = f.do("POST", "/api/v1/approvals/c1", "acme-approver", `{"answer":"allow_tenant","digest":"d-c1"}`)
	if code != http.StatusOK || body["state"] != "allowed" || body["approver"] != "acme-approver" || body["channel"] != "api" {
		t.Fatalf("answer: %d %s", code, raw)
	}
	if code, body, raw := f.do("GET", "/api/v1/approvals/c1", "acme-approver", ""); code != http.StatusOK || body["channel"] != "api" {
		t.Errorf("the answered card: %d %s; want channel api", code, raw)
	}
	if code, _, _ := f.do("POST", "/api/v1/approvals/c1", "acme-approver", `{"answer":"deny"}`); code != http.StatusConflict {
		t.Errorf("a replayed answer: %d; want 409", code)
	}
	if code, _, _ := f.do("POST", "/api/v1/approvals/nope", "acme-approver", `{"answer":"deny"}`); code != http.StatusNotFound {
		t.Errorf("an unknown card: %d; want 404", code)
	}
	// allow_tenant saved a standing approval.
	code, body, raw = f.do("GET", "/api/v1/approvals/standing", "acme-approver", "")
	st, _ := body["standing"].([]any)
	if code != http.StatusOK || len(st) != 1 {
		t.Fatalf("standing: %d %s", code, raw)
	}
	id := st[0].(map[string]any)["id"].(string)
	if code, _, _ := f.do("DELETE", "/api/v1/approvals/standing/"+id, "beta-approver", ""); code != http.StatusNotFound {
		t.Errorf("beta revoking acme's standing approval: %d; want 404", code)
	}
	if code, _, _ := f.do("DELETE", "/api/v1/approvals/standing/"+id, "acme-approver", ""); code != http.StatusNoContent {
		t.Errorf("revoke: %d", code)
	}
	if code, _, _ := f.do("DELETE", "/api/v1/approvals/standing/"+id, "acme-approver", ""); code != http.StatusNotFound {
		t.Errorf("revoking twice: %d; want 404", code)
	}
	if _, err := f.db.FindStanding(context.Background(), "acme", "mcp__sheets__sheets_append", "d-c1"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("a revoked standing approval still applies: %v", err)
	}
}

func TestAuditAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i, e := range []audit.Event{
		{Kind: audit.KindDecision, Tenant: "acme", Session: "s1", Tool: "Bash", Decision: "deny", Blockers: []audit.Blocker{{Code: "permission_denied"}}},
		{Kind: audit.KindDecision, Tenant: "acme", Session: "s1", Tool: "files_read", Decision: "allow"},
		{Kind: audit.KindDecision, Tenant: "beta", Session: "s2", Tool: "Bash", Decision: "allow"},
	} {
		e.Time = time.Date(2026, 11, 30, 12, i, 0, 0, time.UTC)
		if err := f.db.Append(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	code, body, raw := f.do("GET", "/api/v1/audit?decision=deny", "acme-viewer", "")
	evs, _ := body["events"].([]any)
	if code != http.StatusOK || len(evs) != 1 || evs[0].(map[string]any)["tool"] != "Bash" {
		t.Fatalf("acme's denials: %d %s", code, raw)
	}
	if _, body, _ := f.do("GET", "/api/v1/audit?tenant=beta", "acme-viewer", ""); len(body["events"].([]any)) != 0 {
		t.Errorf("acme reading beta's audit: %v", body)
	}
	if _, body, _ := f.do("GET", "/api/v1/audit?since=2026-11-30T12:01:00Z", "admin", ""); len(body["events"].([]any)) != 2 {
		t.Errorf("since: %v", body)
	}
	code, _, raw = f.do("GET", "/api/v1/audit?format=jsonl", "admin", "")
	if code != http.StatusOK || strings.Count(raw, "\n") != 3 {
		t.Errorf("JSON lines: %d %q", code, raw)
	}
	if code, _, _ := f.do("GET", "/api/v1/audit?since=yesterday", "admin", ""); code != http.StatusBadRequest {
		t.Errorf("a bad time: %d; want 400", code)
	}
}

// A filter the audit API cannot apply is refused with a JSON error naming the parameter (and,
// for kind and decision, the values it may take), never answered as "no such events".
func TestAuditAPIRefusesBadFilters(t *testing.T) {
	f := newFixture(t)
	if err := f.db.Append(context.Background(), &audit.Event{Time: time.Now(), Kind: audit.KindDecision, Tenant: "acme",
		Tool: "Bash", Decision: "deny"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ query, want string }{
		{"kind=decisions", `kind "decisions": want one of decision, outcome, approval, run, egress, boundaries`},
		{"decision=denied", `decision "denied": want one of allow, ask, deny`},
		{"kind=decision&decision=Deny", `decision "Deny"`},
		{"since=yesterday", `since "yesterday": want an RFC 3339 time`},
		{"until=2026-11-30", `until "2026-11-30": want an RFC 3339 time`},
		{"limit=0", "limit must be a whole number from 1 to 10000"},
		{"limit=ten", "limit must be"},
		{"after=-1", `after "-1": want an event id`},
		{"after=x", `after "x"`},
	} {
		code, body, raw := f.do("GET", "/api/v1/audit?"+tt.query, "acme-viewer", "")
		e, _ := body["error"].(map[string]any)
		if code != http.StatusBadRequest || e == nil || e["code"] != "bad_request" || !strings.Contains(fmt.Sprint(e["message"]), tt.want) {
			t.Errorf("?%s: %d %s; want 400 with %q", tt.query, code, raw, tt.want)
		}
	}
	for _, q := range []string{"kind=decision&decision=deny", "kind=egress", "decision=ask"} {
		if code, _, raw := f.do("GET", "/api/v1/audit?"+q, "acme-viewer", ""); code != http.StatusOK {
			t.Errorf("?%s: %d %s; want 200", q, code, raw)
		}
	}
}

func TestHealth(t *testing.T) {
	f := newFixture(t)
	if code, _, _ := f.do("GET", "/healthz", "", ""); code != http.StatusOK {
		t.Errorf("healthz %d", code)
	}
	if code, body, _ := f.do("GET", "/readyz", "", ""); code != http.StatusOK || body["policy"] != "rev1" {
		t.Errorf("readyz %d %v", code, body)
	}
	f.ready = errors.New("sandbox: landlock unavailable")
	if code, body, _ := f.do("GET", "/readyz", "", ""); code != http.StatusServiceUnavailable || !strings.Contains(body["problems"].([]any)[0].(string), "landlock") {
		t.Errorf("not ready: %d %v", code, body)
	}
}

// An answer to a card that can no longer be answered says why: its call ended (it can no
// longer run), it expired, or it was answered.
func TestAnswerToAnEndedCardSaysWhy(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		id      string
		state   approval.State
		answer  approval.Answer
		channel approval.Channel
		code    string
		says    string
	}{
		{"gone", approval.Expired, "", approval.ChannelCanceled, "approval_canceled", "can no longer run"},
		{"late", approval.Expired, "", approval.ChannelDeadline, "approval_expired", "expired unanswered"},
		{"done", approval.Denied, approval.Deny, approval.ChannelAPI, "already_answered", "deny by bob"},
	} {
		f.card("acme", tt.id)
		if _, err := f.db.Resolve(context.Background(), tt.id, tt.state, tt.answer, "bob", tt.channel, time.Now()); err != nil {
			t.Fatal(err)
		}
		code, body, raw := f.do("POST", "/api/v1/approvals/"+tt.id, "acme-approver", `{"answer":"allow_once"}`)
		e, _ := body["error"].(map[string]any)
		if code != http.StatusConflict || e["code"] != tt.code || !strings.Contains(fmt.Sprint(e["message"]), tt.says) {
			t.Errorf("answering a card %s through %s: %d %s; want 409 %s saying %q", tt.state, tt.channel, code, raw, tt.code, tt.says)
		}
	}
}

// GET /api/v1/audit/keys lists the keys instances sign audit checkpoints with, and events carry
// their chain's hashes.
func TestAuditKeys(t *testing.T) {
	f := newFixture(t)
	if code, body, _ := f.do("GET", "/api/v1/audit/keys", "admin", ""); code != 200 || len(body["keys"].([]any)) != 0 {
		t.Fatalf("no keys yet: %d %v", code, body)
	}
	signer, err := audit.NewSigner(t.Context(), f.db, "instance-a", 10)
	if err != nil {
		t.Fatal(err)
	}
	code, body, _ := f.do("GET", "/api/v1/audit/keys", "acme-viewer", "")
	keys, _ := body["keys"].([]any)
	if code != 200 || len(keys) != 1 {
		t.Fatalf("keys: %d %v", code, body)
	}
	k := keys[0].(map[string]any)
	if k["key"] != signer.Key().Key || k["instance"] != "instance-a" {
		t.Errorf("key listed %v, want %+v", k, signer.Key())
	}
	if err := f.db.Append(t.Context(), &audit.Event{Kind: audit.KindRun, Tenant: "acme"}); err != nil {
		t.Fatal(err)
	}
	_, body, _ = f.do("GET", "/api/v1/audit", "admin", "")
	ev := body["events"].([]any)[0].(map[string]any)
	if ev["prev_hash"] != strings.Repeat("0", 64) || len(ev["hash"].(string)) != 64 {
		t.Errorf("event without its chain's hashes: %v", ev)
	}
}
