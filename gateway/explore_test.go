package gateway

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/auth"

	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// explorePolicy has a gated write, a reader and a switch that turns writes off.
const explorePolicy = `
version: 1
switches:
  - {name: NO_WRITES, rule: exactly-true}
builtins:
  - name: files_read
  - name: files_write
    when: "!NO_WRITES"
roles:
  - {id: desk, ceiling: ['*']}
  - {id: reader, ceiling: [files_read]}
tenants:
  - id: acme
`

// The explorer sees what a session would: the surface under the switches asked for, and a
// review with the tenant's stored hard blocks in force.
func TestExplorer(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r := newRigOn(t, db, []byte(explorePolicy), nil, func(o *Options) { o.BoundaryStore = db })
	ctx := context.Background()

	rep, err := r.gw.Surface(ctx, server.SurfaceQuery{Role: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tenant != "acme" || !slices.Equal(rep.Tools, []string{"files_read"}) || len(rep.Absent) != 1 || rep.Absent[0].Filter != "ceiling" ||
		len(rep.Given) != 1 || rep.Given[0].Reason == "" {
		t.Errorf("a reader's surface: %+v", rep)
	}
	rep, err = r.gw.Surface(ctx, server.SurfaceQuery{Role: "desk", Env: map[string]string{"NO_WRITES": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(rep.Tools, "files_write") {
		t.Errorf("files_write given with NO_WRITES=true: %v", rep.Tools)
	}
	if _, err := r.gw.Surface(ctx, server.SurfaceQuery{Tenant: "acme"}); err == nil {
		t.Error("a surface without a role: no error")
	}
	if _, err := r.gw.Surface(ctx, server.SurfaceQuery{Role: "ghost"}); err == nil || errors.Is(err, surface.ErrRefused) {
		t.Errorf("an unknown role: %v; want an error that is not a refusal", err)
	}

	call := server.ReviewQuery{Tool: "files_write", Input: map[string]any{"path": "notes/secret.txt", "content": "x"}, Role: "desk"}
	v, err := r.gw.Review(ctx, call)
	if err != nil || v.Decision != verdict.Allow {
		t.Fatalf("a write before any hard block: %+v %v", v, err)
	}
	doc := `{"version":1,"hardBlocks":[{"id":"no-secret","enabled":true,"type":"path","pattern":"**/secret.txt","match":"glob","operations":["write"]}]}`
	if _, err := r.gw.PutBoundaries(ctx, "acme", []byte(doc), 0, "test"); err != nil {
		t.Fatal(err)
	}
	v, err = r.gw.Review(ctx, call)
	if err != nil || v.Decision != verdict.Deny || !slices.Contains(v.Rules, "no-secret") {
		t.Errorf("the write after the stored rule: %+v %v; want denied by no-secret", v, err)
	}
	if _, err := r.gw.Review(ctx, server.ReviewQuery{Tool: "files_read", Role: "desk", Workspace: "relative/dir"}); err == nil {
		t.Error("a relative workspace: no error")
	}
}

// An agent's review waiting for a card does not hold up a shutdown: its card expires,
// recorded as canceled, and the review answers ask with the card expired; a review after the
// shutdown began is refused as unavailable.
func TestReviewForEndsAtShutdown(t *testing.T) {
	r := newRig(t, []byte(`
version: 1
builtins:
  - {name: files_write, gate: {approval: true}}
roles:
  - {id: desk, approvalChannel: true, ceiling: ['*']}
tenants:
  - id: acme
`), nil)
	tok := &auth.Token{ID: "tok-1", Role: auth.RoleAgent, Tenant: "acme", SessionRole: "desk", Name: "hook"}
	q := server.ReviewQuery{Tool: "files_write", Input: map[string]any{"path": "a.txt", "content": "x"}, Harness: "claude-code", Session: "s-1"}
	done := make(chan *server.ReviewAnswer, 1)
	go func() {
		a, err := r.gw.ReviewFor(context.Background(), tok, q, time.Hour)
		if err != nil {
			t.Error(err)
		}
		done <- a
	}()
	card := <-r.cards
	r.gw.Shutdown(context.Background())
	a := <-done
	if a == nil || a.Verdict.Decision != verdict.Ask || a.Card == nil || a.Card.ID != card.ID || a.Card.State != approval.Expired {
		t.Fatalf("%+v; want ask with the card expired", a)
	}
	stored, err := r.db.Card(context.Background(), "", card.ID)
	if err != nil || stored.Channel != approval.ChannelCanceled {
		t.Errorf("the stored card: %+v %v; want expired as canceled", stored, err)
	}
	if _, err := r.gw.ReviewFor(context.Background(), tok, q, 0); !errors.Is(err, server.ErrUnavailable) {
		t.Errorf("a review after the shutdown: %v; want ErrUnavailable", err)
	}
}
