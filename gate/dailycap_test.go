package gate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/surface"
)

// Scout's goal reviewer has a daily cap of $0.25 per brand (dailyBudgetUsd): reviews run until
// the day's model spend reaches it, then none starts until the next UTC day; a review that
// takes the day to the cap is stopped; and when the day's spend cannot be read no review
// starts (fail closed). The spend is reported through gate.Report, as a harness reports it.
func TestGoalReviewerDailyCap(t *testing.T) {
	r := newRig(t, time.Minute)
	ctx := context.Background()
	review := func(id string) *gate.Session {
		t.Helper()
		s := r.session(examples.Scout, nil, surface.Spec{Role: "goal_reviewer", Tenant: "acme", Profile: "goal_reviewer"}, id)
		if s.Run == nil || s.Run.DailyBudgetUsd != 0.25 {
			t.Fatalf("the reviewer's run: %+v", s.Run)
		}
		return s
	}
	// Two reviews of $0.10 each run and end.
	for _, id := range []string{"r1", "r2"} {
		s := review(id)
		if err := r.gate.StartRun(ctx, s); err != nil {
			t.Fatalf("review %s: %v", id, err)
		}
		if st, err := r.gate.Report(ctx, s, gate.Usage{Turns: 1, ModelUsd: 0.1}); err != nil || st.Stopped != "" {
			t.Fatalf("review %s's report: %+v, %v", id, st, err)
		}
		if err := r.gate.EndRun(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// The third starts ($0.20 < $0.25) and is stopped when its spend takes the day to the cap.
	s := review("r3")
	if err := r.gate.StartRun(ctx, s); err != nil {
		t.Fatalf("review r3: %v", err)
	}
	st, err := r.gate.Report(ctx, s, gate.Usage{ModelUsd: 0.05})
	if err != nil || !strings.Contains(st.Stopped, "its daily cap is 0.2500") {
		t.Fatalf("the report that reaches the cap: %+v, %v", st, err)
	}
	if err := r.gate.EndRun(ctx, s); err != nil {
		t.Fatal(err)
	}
	// At the cap no review starts, until the next UTC day.
	if err := r.gate.StartRun(ctx, review("r4")); !errors.Is(err, gate.ErrDailyCap) || !strings.Contains(err.Error(), "has spent 0.2500 USD") {
		t.Fatalf("a review at the cap: %v; want ErrDailyCap", err)
	}
	r.clock.Advance(24 * time.Hour)
	next := review("r5")
	if err := r.gate.StartRun(ctx, next); err != nil {
		t.Fatalf("a review the next day: %v", err)
	}
	if err := r.gate.EndRun(ctx, next); err != nil {
		t.Fatal(err)
	}

	// The day's spend cannot be read (the real store, failing that one read): no review
	// starts, and the refusal is on record.
	g, err := gate.New(gate.Options{Reviewer: r.rv, Broker: r.broker, Ledger: unreadableDay{r.db}, Log: r.db, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.StartRun(ctx, review("r6")); !errors.Is(err, gate.ErrDailyCap) || !strings.Contains(err.Error(), "cannot be read, so no run starts") {
		t.Fatalf("a review whose day's spend cannot be read: %v; want ErrDailyCap", err)
	}
	if st, err := r.db.RunStatus(ctx, "r6-run"); err == nil {
		t.Errorf("the refused review's run was recorded: %+v", st)
	}
}

// unreadableDay is the SQLite store with a day's spend that cannot be read.
type unreadableDay struct{ *sqlite.DB }

func (unreadableDay) DaySpend(context.Context, string, string, string) (float64, error) {
	return 0, errors.New("disk I/O error")
}
