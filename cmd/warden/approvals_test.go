package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/store/postgres"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/surface"
)

// approvalCards stores cards in every state a person meets on the CLI, and returns the store's
// file.
func approvalCards(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.db")
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UTC()
	card := func(id, tenant string, deadline time.Duration) *approval.Card {
		return &approval.Card{ID: id, Tenant: tenant, Session: "s-" + tenant, Tool: "mcp__sheets__sheets_append",
			Digest: "d-" + id, Args: json.RawMessage(`{"spreadsheet":"q3"}`), Reason: "writes to a\nshared sheet",
			State: approval.Pending, Created: now.Add(-time.Minute), Deadline: now.Add(deadline)}
	}
	for _, c := range []*approval.Card{
		card("open", "acme", time.Hour),
		card("other", "beta", time.Hour),
		card("answered", "acme", time.Hour),
		card("ended", "acme", time.Hour),
		card("timedout", "acme", time.Hour),
		card("overdue", "acme", -time.Second),
	} {
		if err := db.CreateCard(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct {
		id      string
		state   approval.State
		answer  approval.Answer
		who     string
		channel approval.Channel
	}{
		{"answered", approval.Denied, approval.Deny, "bob", approval.ChannelAPI},
		{"ended", approval.Expired, "", "", approval.ChannelCanceled},
		{"timedout", approval.Expired, "", "", approval.ChannelDeadline},
	} {
		if _, err := db.Resolve(ctx, r.id, r.state, r.answer, r.who, r.channel, now); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// warden approvals list shows the cards a flag selects, as a table or as the API's JSON.
func TestApprovalsList(t *testing.T) {
	db := approvalCards(t)
	out, stderr, code := run(t, "approvals", "list", "--db", db)
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(rows) != 7 || !strings.HasPrefix(rows[0], "ID") || !strings.Contains(rows[0], "REASON") {
		t.Fatalf("list: status %d: %s%s", code, out, stderr)
	}
	for _, want := range []string{"due in ", "overdue ", "denied ", "call ended ", "expired ", "writes to a shared sheet"} {
		if !strings.Contains(out, want) {
			t.Errorf("list: no %q in\n%s", want, out)
		}
	}

	out, stderr, code = run(t, "approvals", "list", "--db", db, "--state", "pending", "--tenant", "acme", "--json")
	var list struct {
		Approvals []struct {
			ID, Tenant, State string
			Offers            []string
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("list --json: status %d: %s%s", code, out, stderr)
	}
	var ids []string
	for _, c := range list.Approvals {
		ids = append(ids, c.ID)
		if c.Tenant != "acme" || c.State != "pending" || len(c.Offers) != 3 {
			t.Errorf("listed %+v", c)
		}
	}
	if strings.Join(ids, " ") != "overdue open" && strings.Join(ids, " ") != "open overdue" {
		t.Errorf("acme's pending cards: %v; want open and overdue", ids)
	}

	if _, stderr, code := run(t, "approvals", "list", "--db", db, "--state", "waiting"); code != 2 ||
		!strings.Contains(stderr, `--state "waiting": want pending, allowed, denied or expired`) {
		t.Errorf("a bad state: status %d: %s", code, stderr)
	}
}

// warden approvals answer records the answer, its approver and the channel cli, and says
// clearly why a card cannot be answered.
func TestApprovalsAnswer(t *testing.T) {
	db := approvalCards(t)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"open", "maybe", "--as", "alice"}, 2, `answer "maybe": want allow_once, allow_tenant or deny`},
		{[]string{"open", "allow_once"}, 2, "--as NAME is required"},
		{[]string{"open", "allow_once", "--as", "  "}, 2, "--as NAME is required"},
		{[]string{"open"}, 1, "accepts 2 arg(s)"},
		{[]string{"nosuch", "deny", "--as", "alice"}, 1, "answer nosuch: no such approval card in sqlite"},
		{[]string{"other", "deny", "--as", "alice", "--tenant", "acme"}, 1, "answer other: no such approval card in tenant acme"},
		{[]string{"answered", "allow_once", "--as", "alice"}, 1, "the card was already answered (deny by bob through api"},
		{[]string{"ended", "allow_once", "--as", "alice"}, 1, "the call this card was for ended at"},
		{[]string{"timedout", "allow_once", "--as", "alice"}, 1, "the card expired unanswered at"},
		{[]string{"overdue", "allow_once", "--as", "alice"}, 1, "its deadline passed at"},
	} {
		out, stderr, code := run(t, append([]string{"approvals", "answer", "--db", db}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) || out != "" {
			t.Errorf("answer %v: status %d, stdout %q, stderr %q; want status %d and %q", tt.args, code, out, stderr, tt.code, tt.want)
		}
	}

	out, stderr, code := run(t, "approvals", "answer", "open", "allow_tenant", "--as", "alice", "--tenant", "acme", "--db", db)
	if code != 0 || !strings.Contains(out, "allowed open for tenant acme") || !strings.Contains(out, "answered by alice through cli") {
		t.Fatalf("answer: status %d: %s%s", code, out, stderr)
	}
	if _, stderr, code := run(t, "approvals", "answer", "open", "deny", "--as", "carol", "--db", db); code != 1 ||
		!strings.Contains(stderr, "the card was already answered (allow_tenant by alice through cli") {
		t.Errorf("answering twice: status %d: %s", code, stderr)
	}

	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.Card(context.Background(), "", "open")
	if err != nil || c.State != approval.Allowed || c.Answer != approval.AllowTenant || c.Approver != "alice" || c.Channel != approval.ChannelCLI {
		t.Fatalf("the answered card: %+v, %v", c, err)
	}
	if s, err := st.FindStanding(context.Background(), "acme", c.Tool, c.Digest); err != nil || s.Approver != "alice" || s.CardID != "open" {
		t.Errorf("allow_tenant saved no standing approval by alice: %+v, %v", s, err)
	}
	if _, err := st.FindStanding(context.Background(), "beta", c.Tool, c.Digest); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("the standing approval reaches another tenant: %v", err)
	}
}

// A call waiting on a card in one process's gate runs once the card is answered by warden
// approvals answer, which opens the store on its own: the store's watch wakes the call, and
// the audit trail records who answered and through which channel.
func TestApprovalsAnswerWakesWaitingCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	answerWakesWaitingCall(t, db, "--db", path)
}

// The same on PostgreSQL, where the answer reaches the waiting call as a notification.
func TestApprovalsAnswerWakesWaitingCallPostgres(t *testing.T) {
	base := os.Getenv("WARDEN_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("WARDEN_TEST_POSTGRES_URL is not set: skipping the PostgreSQL variant " +
			"(set it to e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	schema := "warden_test_approvals_" + newTokenID()
	db, err := postgres.OpenSchema(t.Context(), base, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	answerWakesWaitingCall(t, db, "--postgres", base, "--postgres-schema", schema)
}

// answerWakesWaitingCall parks a call of a gate on db, answers its card with the CLI on the
// store storeArgs name (a connection of its own), and checks that the call ran.
func answerWakesWaitingCall(t *testing.T, db appStore, storeArgs ...string) {
	t.Helper()
	ctx := context.Background()
	rv, err := review.New(review.Options{Key: []byte("a test key of thirty-two bytes!!")})
	if err != nil {
		t.Fatal(err)
	}
	parked := make(chan *approval.Card, 4)
	// No deadline can pass during the test: only the answer ends the wait.
	broker := approval.NewBroker(approval.Options{Store: db, Timeout: 24 * time.Hour, OnCard: func(c *approval.Card) {
		if c.State == approval.Pending {
			parked <- c
		}
	}})
	g, err := gate.New(gate.Options{Reviewer: rv, Broker: broker, Ledger: db, Log: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)

	p, err := policy.Parse("scout.yaml", examples.Scout)
	if err != nil {
		t.Fatal(err)
	}
	sf, err := surface.Open(p.Env(policy.MapLookup(nil)), surface.Spec{Role: "person", Tenant: "acme", Model: "google/gemini-3.8-flash"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	paths, err := action.NewResolver(ws, ws)
	if err != nil {
		t.Fatal(err)
	}
	s := &gate.Session{Review: &review.Session{ID: "s1", Surface: sf, Paths: paths}, Principal: "tester"}

	type result struct {
		out    *gate.Outcome
		err    error
		answer approval.Answer
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.out, r.err = g.Call(ctx, s, "mcp__sheets__sheets_append", map[string]any{"spreadsheet": "q3", "rows": []any{"a"}},
			func(ctx context.Context, _ *action.Action) (map[string]any, error) {
				r.answer, _ = gate.Answer(ctx)
				return map[string]any{"ok": true}, nil
			})
		done <- r
	}()
	card := <-parked

	out, stderr, code := run(t, append([]string{"approvals", "list", "--state", "pending"}, storeArgs...)...)
	if code != 0 || !strings.Contains(out, card.ID) || !strings.Contains(out, "mcp__sheets__sheets_append") {
		t.Fatalf("the waiting card is not listed: status %d: %s%s", code, out, stderr)
	}
	out, stderr, code = run(t, append([]string{"approvals", "answer", card.ID, "allow_once", "--as", "alice"}, storeArgs...)...)
	if code != 0 {
		t.Fatalf("answer: status %d: %s%s", code, out, stderr)
	}
	r := <-done
	if r.err != nil || !r.out.Ran || r.out.Approver != "alice" || r.answer != approval.AllowOnce {
		t.Fatalf("the call after the answer: %+v, %v (the executor saw %q)", r.out, r.err, r.answer)
	}
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := db.Query(ctx, audit.Filter{CallID: r.out.CallID, Kind: audit.KindApproval})
	if err != nil || len(evs) != 1 || evs[0].Decision != "allow" || evs[0].Approver != "alice" || evs[0].Channel != string(approval.ChannelCLI) {
		t.Errorf("the approval event: %+v, %v; want allow by alice through cli", evs, err)
	}
}
