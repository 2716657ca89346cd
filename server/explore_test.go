package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// explorePolicy has the fixture's two tenants and a gated write.
const explorePolicy = `
version: 1
builtins:
  - name: files_read
  - name: files_write
    gate: {approval: true}
roles:
  - {id: desk, approvalChannel: true, ceiling: ['*']}
  - {id: reader, ceiling: [files_read]}
tenants:
  - id: acme
  - id: beta
`

// policyExplorer is server.Explorer over a real policy, surface and reviewer, as the gateway
// implements it (its own tests cover the hard blocks in force).
type policyExplorer struct {
	t *testing.T
	p *policy.Policy
	r *review.Reviewer
}

func newPolicyExplorer(t *testing.T) policyExplorer {
	t.Helper()
	p, err := policy.Parse("explore.yaml", []byte(explorePolicy))
	if err != nil {
		t.Fatal(err)
	}
	r, err := review.New(review.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return policyExplorer{t: t, p: p, r: r}
}

func (e policyExplorer) open(tenant, role, profile string, env map[string]string) (*surface.Surface, *policy.Env, error) {
	if tenant == "" || role == "" {
		return nil, nil, errors.New("tenant and role are required")
	}
	pe := e.p.Env(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	sf, err := surface.Open(pe, surface.Spec{Tenant: tenant, Role: role, Profile: profile})
	return sf, pe, err
}

func (e policyExplorer) Surface(_ context.Context, q server.SurfaceQuery) (*server.SurfaceReport, error) {
	sf, env, err := e.open(q.Tenant, q.Role, q.Profile, q.Env)
	if err != nil {
		return nil, err
	}
	rep := &server.SurfaceReport{Report: surface.NewReport(sf, env), Given: []surface.ReportTool{}}
	for _, name := range rep.Tools {
		rep.Given = append(rep.Given, surface.ReportTool{Tool: name, Reason: sf.Explain(name).Reason})
	}
	return rep, nil
}

func (e policyExplorer) Review(_ context.Context, q server.ReviewQuery) (*review.Verdict, error) {
	sf, _, err := e.open(q.Tenant, q.Role, q.Profile, nil)
	if err != nil {
		return nil, err
	}
	dir := e.t.TempDir()
	paths, err := action.NewResolver(dir, dir)
	if err != nil {
		return nil, err
	}
	v := e.r.Review(&review.Session{ID: "explore", Surface: sf, Paths: paths}, q.Tool, q.Input)
	return &v, nil
}

// ReviewFor stands for the gateway's judging of an agent's call (which cmd/warden's tests
// take through a served stack): the review in the session the token binds, recording nothing.
func (e policyExplorer) ReviewFor(ctx context.Context, tok *auth.Token, q server.ReviewQuery, _ time.Duration) (*server.ReviewAnswer, error) {
	q.Tenant, q.Role, q.Profile = tok.Tenant, tok.SessionRole, tok.Profile
	v, err := e.Review(ctx, q)
	if err != nil {
		return nil, err
	}
	v.Token = ""
	a := &server.ReviewAnswer{Verdict: *v, Call: "call-1"}
	if v.Decision == verdict.Ask {
		a.Card = &server.ReviewCard{ID: "card-1", State: approval.Expired} // as after a wait of 0
	}
	return a, nil
}

// OutcomeFor stands for the gateway's recording of an outcome: the calls judged were call-1
// and, in each tenant, call-<tenant>.
func (e policyExplorer) OutcomeFor(_ context.Context, tok *auth.Token, q server.OutcomeReport) error {
	if q.Call != "call-1" && q.Call != "call-"+tok.Tenant {
		return server.ErrNoSuchCall
	}
	return nil
}

func exploreFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, func(o *server.Options, _ *sqlite.DB) {
		o.Explorer = newPolicyExplorer(t)
		o.Agents = newPolicyExplorer(t)
		o.Cards = &server.CardFeed{}
	})
}

// The explorer routes: a tenant's token explores its own tenant only (another is 404, as
// everywhere), an agent token nothing, and a verdict carries no token to run the call with.
func TestExplorerRoutes(t *testing.T) {
	f := exploreFixture(t)
	code, body, raw := f.do("GET", "/api/v1/surface?role=desk", "acme-viewer", "")
	if code != http.StatusOK || body["tenant"] != "acme" || !strings.Contains(raw, `"files_write"`) {
		t.Fatalf("the viewer's own surface: %d %s", code, raw)
	}
	code, body, raw = f.do("GET", "/api/v1/surface?role=reader", "acme-viewer", "")
	absent, _ := body["absent"].([]any)
	if code != http.StatusOK || len(absent) != 1 || absent[0].(map[string]any)["filter"] != "ceiling" {
		t.Errorf("a reader's surface: %d %s; want files_write absent by its ceiling", code, raw)
	}
	for _, tt := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/api/v1/surface?tenant=beta&role=desk", "acme-viewer", "", 404},
		{"GET", "/api/v1/surface?tenant=beta&role=desk", "admin", "", 200},
		{"GET", "/api/v1/surface?role=desk", "agent", "", 403},
		{"GET", "/api/v1/surface?role=nobody", "acme-viewer", "", 400},
		{"GET", "/api/v1/surface?role=desk&env=nope", "acme-viewer", "", 400},
		{"POST", "/api/v1/review", "acme-viewer", `{"tool":"files_write","input":{"path":"a.txt","content":"x"},"role":"desk"}`, 200},
		{"POST", "/api/v1/review", "acme-viewer", `{"tool":"files_write","tenant":"beta","role":"desk"}`, 404},
		{"POST", "/api/v1/review", "acme-approver", `{"tool":"files_write","role":"desk"}`, 403},
		{"POST", "/api/v1/review", "acme-viewer", `{"input":{}}`, 400},
		{"POST", "/api/v1/review", "acme-viewer", `{"tool":"files_read","role":"desk","wait":3}`, 400},
		{"POST", "/api/v1/review", "agent", `{"tool":"files_read","input":{"path":"a.txt"},"harness":"claude-code","session":"s-1"}`, 200},
		{"POST", "/api/v1/review", "agent", `{"tool":"files_read","role":"reader"}`, 403},
		{"POST", "/api/v1/review", "agent", `{"tool":"files_read","tenant":"beta"}`, 404},
		{"POST", "/api/v1/review", "agent", `{"tool":"files_read","harness":"a b"}`, 400},
		{"POST", "/api/v1/review", "agent", `{"tool":"files_read","wait":-1}`, 400},
	} {
		if code, _, raw := f.do(tt.method, tt.path, tt.token, tt.body); code != tt.want {
			t.Errorf("%s %s as %s: %d %s; want %d", tt.method, tt.path, tt.token, code, raw, tt.want)
		}
	}
	_, body, raw = f.do("POST", "/api/v1/review", "admin", `{"tool":"files_write","input":{"path":"a.txt","content":"x"},"tenant":"acme","role":"desk"}`)
	if body["decision"] != "ask" || body["token"] != nil {
		t.Errorf("a gated write: %s; want ask, and no token", raw)
	}
}

// The event stream of a tenant's token carries its tenant's card changes and no other's.
func TestApprovalEvents(t *testing.T) {
	feed := &server.CardFeed{}
	f := newFixtureWith(t, func(o *server.Options, _ *sqlite.DB) { o.Cards = feed })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/api/v1/approvals/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.tokens["acme-viewer"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	card := func(tenant, id string) *approval.Card {
		return &approval.Card{ID: id, Tenant: tenant, Tool: "files_write", State: approval.Pending, Created: time.Now(), Deadline: time.Now().Add(time.Minute)}
	}
	// The stream is subscribed once its first comment arrived.
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), ":") {
		t.Fatalf("the stream's first line: %q", lines.Text())
	}
	feed.Publish(card("beta", "hidden"))
	feed.Publish(card("acme", "seen"))
	var data string
	for lines.Scan() {
		if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
			data = d
			break
		}
	}
	var got struct{ ID, Tenant string }
	if err := json.Unmarshal([]byte(data), &got); err != nil || got.ID != "seen" {
		t.Errorf("the first card event: %q (%v); want acme's card seen, never beta's", data, err)
	}
}

// A card another instance creates or answers reaches the stream when it reads the store again
// (every ping), though this instance's feed never carried it.
func TestApprovalEventsFromAnotherInstance(t *testing.T) {
	defer server.SetEventPing(50 * time.Millisecond)()
	f := newFixtureWith(t, func(o *server.Options, _ *sqlite.DB) { o.Cards = &server.CardFeed{} })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/api/v1/approvals/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.tokens["acme-viewer"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	next := func() (id, state string) {
		t.Helper()
		for lines.Scan() {
			if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				var c struct{ ID, State string }
				if err := json.Unmarshal([]byte(d), &c); err != nil {
					t.Fatal(err)
				}
				return c.ID, c.State
			}
		}
		t.Fatalf("the stream ended: %v", lines.Err())
		return "", ""
	}
	f.card("beta", "theirs")
	f.card("acme", "elsewhere")
	if id, state := next(); id != "elsewhere" || state != "pending" {
		t.Fatalf("the first event: %s %s; want acme's card elsewhere, pending", id, state)
	}
	if _, err := f.db.Resolve(context.Background(), "elsewhere", approval.Denied, approval.Deny, "bob", approval.ChannelCLI, time.Now()); err != nil {
		t.Fatal(err)
	}
	if id, state := next(); id != "elsewhere" || state != "denied" {
		t.Errorf("the next event: %s %s; want elsewhere, denied", id, state)
	}
}
