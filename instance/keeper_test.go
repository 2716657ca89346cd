package instance_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/instance"
	"github.com/wardenhq/warden/store/sqlite"
)

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

// waitForWaiter polls until the keeper's loop waits on the fake clock: it has finished the
// beat before, if any.
func waitForWaiter(t *testing.T, c *clock.Fake) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.Waiters() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the keeper never waited for its next beat")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestKeeper: the keeper beats on its interval, frees and records what an instance that
// stopped beating held, leaves a live one alone, and frees its own at Close.
func TestKeeper(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fake := clock.NewFake(t0)
	if _, err := db.Beat(ctx, &instance.Instance{ID: "i-other", Started: t0, Heartbeat: t0}); err != nil {
		t.Fatal(err)
	}
	run := func(id, inst string) {
		t.Helper()
		r := &budget.Run{ID: id, Tenant: "t1", Profile: id, Session: "s-" + id, Started: t0, Instance: inst,
			Allowances: []budget.Allowance{{Connector: "fc", Unit: "credits", PerRun: 10, PerDay: 100}}}
		if err := db.StartRun(ctx, r, 0, "2026-03"); err != nil {
			t.Fatal(err)
		}
	}
	run("run-other", "i-other")
	card := &approval.Card{ID: "card-other", Tenant: "t1", Session: "s-run-other", Tool: "Bash", Digest: "d",
		Created: t0, Deadline: t0.Add(time.Hour), Instance: "i-other"}
	if err := db.CreateCard(ctx, card); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	k, err := instance.Start(ctx, instance.Options{Store: db, Log: db, Clock: fake, Interval: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	run("run-own", k.ID())
	waitForWaiter(t, fake)

	// One interval on, i-other beat 10 s ago: live, untouched.
	fake.Advance(10 * time.Second)
	waitForWaiter(t, fake)
	if st, _ := db.RunStatus(ctx, "run-other"); !st.Run.Ended.IsZero() {
		t.Fatal("the run of an instance that beat within the bound was ended")
	}

	// Three intervals without a beat: i-other is dead.
	fake.Advance(30 * time.Second)
	waitForWaiter(t, fake)
	if st, _ := db.RunStatus(ctx, "run-other"); st.Run.Ended.IsZero() {
		t.Fatalf("the run of a dead instance is live; logs:\n%s", logs.String())
	}
	if c, _ := db.Card(ctx, "", "card-other"); c.State != approval.Expired || c.Channel != approval.ChannelCanceled {
		t.Errorf("the card of a dead instance is %s (%s), want expired (canceled)", c.State, c.Channel)
	}
	if st, _ := db.RunStatus(ctx, "run-own"); !st.Run.Ended.IsZero() {
		t.Fatal("the keeper ended its own run")
	}
	events, err := db.Query(ctx, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var approvals, ended int
	for _, e := range events {
		switch {
		case e.Kind == audit.KindApproval && e.Decision == "deny" && e.Channel == "canceled" &&
			len(e.Blockers) == 1 && e.Blockers[0].Code == "approval_canceled" && e.Tool == "Bash":
			approvals++
		case e.Kind == audit.KindRun && e.Run == "run-other" && e.Outcome == "ended" && strings.Contains(e.Error, "i-other"):
			ended++
		}
	}
	if approvals != 1 || ended != 1 {
		t.Errorf("recorded %d approval_canceled events and %d recovered-run events, want 1 each: %+v", approvals, ended, events)
	}

	// Close frees the keeper's own run and forgets it.
	if err := k.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := db.RunStatus(ctx, "run-own"); st.Run.Ended.IsZero() {
		t.Error("Close left the keeper's own run live")
	}
	if registered, err := db.Beat(ctx, &instance.Instance{ID: k.ID(), Started: t0, Heartbeat: fake.Now()}); err != nil || !registered {
		t.Errorf("Beat after Close = %v, %v; want the instance forgotten", registered, err)
	}
	if err := k.Close(ctx); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}
