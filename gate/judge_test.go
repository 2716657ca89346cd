package gate_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// Judge records a call an agent's runtime runs as the gate records its own, with the harness
// named, runs nothing, and for an ask waits no longer than it is told; the deadline passes on
// the fake clock.
func TestJudge(t *testing.T) {
	r := newRig(t, time.Hour)
	s := r.session(examples.Quickstart, nil, surface.Spec{Role: "person", Tenant: "default"}, "hook-session")
	ctx := context.Background()

	j, err := r.gate.Judge(ctx, s, "files_read", map[string]any{"path": "a.txt"}, "claude-code", 0)
	if err != nil || j.Verdict.Decision != verdict.Allow || j.Verdict.Token != "" || j.Card != nil {
		t.Fatalf("a read: %+v %v; want allow without a token or a card", j, err)
	}
	evs, _ := r.db.Query(ctx, audit.Filter{CallID: j.CallID})
	if len(evs) != 1 || evs[0].Harness != "claude-code" || evs[0].Session != "hook-session" || evs[0].Decision != "allow" {
		t.Errorf("the read's events: %+v", evs)
	}

	j, _ = r.gate.Judge(ctx, s, "mcp__nowhere__x", nil, "claude-code", 0)
	if j.Verdict.Decision != verdict.Deny || !slices.Equal(r.events(j.CallID), []string{"decision:deny"}) {
		t.Errorf("a tool outside the surface: %+v %v", j, r.events(j.CallID))
	}

	// An ask waits 30 s on the fake clock, not the broker's hour.
	done := make(chan *gate.Judgement, 1)
	go func() {
		j, _ := r.gate.Judge(ctx, s, "shell_exec", map[string]any{"command": "rm -r build"}, "claude-code", 30*time.Second)
		done <- j
	}()
	for r.clock.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	r.clock.Advance(30 * time.Second)
	j = <-done
	if j.Verdict.Decision != verdict.Ask || j.Card == nil || j.Card.State != approval.Expired || !j.Card.Deadline.Equal(start.Add(30*time.Second)) {
		t.Fatalf("an ask nobody answered: %+v; want ask, its card expired at 30 s", j)
	}
	if got := r.events(j.CallID); !slices.Equal(got, []string{"decision:ask", "approval:ask"}) {
		t.Errorf("the unanswered ask's events: %v", got)
	}
}

// A tool the policy does not know reaches the audit trail by its name, and the metrics as
// "(unknown)": a client of the review API cannot grow a metric's labels without end.
func TestJudgeUnknownToolObserved(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rv, err := review.New(review.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	g, err := gate.New(gate.Options{Reviewer: rv, Broker: approval.NewBroker(approval.Options{Store: db, Clock: clock.NewFake(start)}),
		Ledger: db, Log: db, Observe: func(e *audit.Event, _ time.Duration) {
			mu.Lock()
			seen = append(seen, e.Tool)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	r := &rig{t: t, db: db, clock: clock.NewFake(start), gate: g, rv: rv, ws: t.TempDir()}
	s := r.session(examples.Quickstart, nil, surface.Spec{Role: "person", Tenant: "default"}, "s")
	j, err := g.Judge(context.Background(), s, "no_such_tool_4711", nil, "ci-bot", 0)
	if err != nil || j.Verdict.Decision != verdict.Deny {
		t.Fatalf("%+v %v; want a deny", j, err)
	}
	if _, err := g.Judge(context.Background(), s, "files_read", map[string]any{"path": "a"}, "ci-bot", 0); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, []string{"(unknown)", "files_read"}) {
		t.Errorf("observed tools %v", seen)
	}
	evs, _ := db.Query(context.Background(), audit.Filter{CallID: j.CallID})
	if len(evs) != 1 || evs[0].Tool != "no_such_tool_4711" || evs[0].Harness != "ci-bot" {
		t.Errorf("the audit trail: %+v", evs)
	}
}
