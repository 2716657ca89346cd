package storetest

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/budget"
)

const (
	day1  = "2026-03-14"
	day2  = "2026-03-15"
	month = "2026-03"

	firecrawl  = "firecrawl"
	dataforseo = "dataforseo"
)

// newRun returns a live run of tenant t1 on day1 with the allowances given.
func newRun(id string, allowances ...budget.Allowance) *budget.Run {
	return &budget.Run{
		ID:         id,
		Tenant:     "t1",
		Profile:    "seo-specialist",
		Session:    "sess-" + id,
		Attempt:    1,
		Started:    t0,
		Day:        day1,
		Allowances: allowances,
	}
}

// allow returns an allowance in credits.
func allow(connector string, perRun, perDay float64) budget.Allowance {
	return budget.Allowance{Connector: connector, Unit: "credits", PerRun: perRun, PerDay: perDay}
}

func mustStart(t *testing.T, s budget.Store, r *budget.Run) {
	t.Helper()
	if err := s.StartRun(t.Context(), r, 0, month); err != nil {
		t.Fatalf("StartRun(%s): %v", r.ID, err)
	}
}

func mustEnd(t *testing.T, s budget.Store, id string) {
	t.Helper()
	if err := s.EndRun(t.Context(), id, at(time.Hour)); err != nil {
		t.Fatalf("EndRun(%s): %v", id, err)
	}
}

func reservation(id, run, connector string, amount float64, created time.Time) *budget.Reservation {
	return &budget.Reservation{ID: id, Run: run, Connector: connector, Amount: amount, Created: created}
}

func mustReserve(t *testing.T, s budget.Store, r *budget.Reservation) {
	t.Helper()
	if err := s.Reserve(t.Context(), r); err != nil {
		t.Fatalf("Reserve(%s, %v on %s): %v", r.ID, r.Amount, r.Connector, err)
	}
}

func mustSettle(t *testing.T, s budget.Store, id string, actual float64) {
	t.Helper()
	if err := s.Settle(t.Context(), id, actual, at(time.Minute)); err != nil {
		t.Fatalf("Settle(%s, %v): %v", id, actual, err)
	}
}

func mustStatus(t *testing.T, s budget.Store, id string) *budget.RunStatus {
	t.Helper()
	st, err := s.RunStatus(t.Context(), id)
	if err != nil {
		t.Fatalf("RunStatus(%s): %v", id, err)
	}
	return st
}

// spent returns what a run has reserved and settled on a connector.
func spent(t *testing.T, s budget.Store, run, connector string) (reserved, settled float64) {
	t.Helper()
	for _, sp := range mustStatus(t, s, run).Spent {
		if sp.Connector == connector {
			return sp.Reserved, sp.Settled
		}
	}
	t.Fatalf("RunStatus(%s) has no Spent for %s", run, connector)
	return 0, 0
}

func wantSpent(t *testing.T, s budget.Store, run, connector string, reserved, settled float64) {
	t.Helper()
	r, st := spent(t, s, run, connector)
	if r != reserved || st != settled {
		t.Errorf("run %s on %s: reserved %v settled %v, want reserved %v settled %v", run, connector, r, st, reserved, settled)
	}
}

func testStartRunDayRule(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()

	// prior is a run started before the one under test, in the same tenant, day and connector
	// (firecrawl) unless it says otherwise.
	type prior struct {
		otherTenant bool
		day         string
		connector   string
		perRun      float64
		perDay      float64 // 0: 10
		settle      []float64
		release     int
		hold        float64 // reserved, and left open
		ended       bool
	}
	tests := []struct {
		name   string
		prior  []prior
		give   []budget.Allowance
		wantOK bool
	}{
		{"the first run", nil, []budget.Allowance{allow(firecrawl, 5, 10)}, true},
		{"per-run equal to per-day", nil, []budget.Allowance{allow(firecrawl, 10, 10)}, true},
		{"a live run counts at its per-run figure; the day is exactly full",
			[]prior{{perRun: 5}}, []budget.Allowance{allow(firecrawl, 5, 10)}, true},
		{"live runs fill the day",
			[]prior{{perRun: 5}, {perRun: 5}}, []budget.Allowance{allow(firecrawl, 1, 10)}, false},
		{"a live run counts whole, however little it has spent",
			[]prior{{perRun: 5, settle: []float64{1}}, {perRun: 4}}, []budget.Allowance{allow(firecrawl, 2, 10)}, false},
		{"an ended run counts at what it settled",
			[]prior{{perRun: 5, settle: []float64{1, 1}, ended: true}, {perRun: 5}}, []budget.Allowance{allow(firecrawl, 3, 10)}, true},
		{"an ended run counts at what it settled, and that is enough to refuse",
			[]prior{{perRun: 5, settle: []float64{1, 1}, ended: true}, {perRun: 5}}, []budget.Allowance{allow(firecrawl, 4, 10)}, false},
		{"an ended run that recorded nothing counts for nothing",
			[]prior{{perRun: 5, ended: true}, {perRun: 4}}, []budget.Allowance{allow(firecrawl, 6, 10)}, true},
		{"an ended run whose calls were all released counts for nothing",
			[]prior{{perRun: 5, release: 2, ended: true}, {perRun: 4}}, []budget.Allowance{allow(firecrawl, 6, 10)}, true},
		{"an ended run that recorded nothing leaves the live ones to refuse",
			[]prior{{perRun: 5, ended: true}, {perRun: 4}}, []budget.Allowance{allow(firecrawl, 7, 10)}, false},
		{"an ended run counts what it still holds reserved",
			[]prior{{perRun: 5, hold: 3, ended: true}, {perRun: 4}}, []budget.Allowance{allow(firecrawl, 4, 10)}, false},
		{"an ended run that settled more than it reserved counts at what it settled",
			[]prior{{perRun: 5, settle: []float64{7}, ended: true}}, []budget.Allowance{allow(firecrawl, 3, 10)}, true},
		{"an ended run that settled more than it reserved, refusing",
			[]prior{{perRun: 5, settle: []float64{7}, ended: true}}, []budget.Allowance{allow(firecrawl, 4, 10)}, false},
		{"another day is independent",
			[]prior{{perRun: 5, day: day2}, {perRun: 5, day: day2}}, []budget.Allowance{allow(firecrawl, 10, 10)}, true},
		{"another connector is independent",
			[]prior{{perRun: 5, connector: dataforseo}, {perRun: 5, connector: dataforseo}}, []budget.Allowance{allow(firecrawl, 10, 10)}, true},
		{"another tenant is independent",
			[]prior{{perRun: 5, otherTenant: true}, {perRun: 5, otherTenant: true}}, []budget.Allowance{allow(firecrawl, 10, 10)}, true},
		{"every allowance is checked",
			[]prior{{perRun: 6, connector: dataforseo}}, []budget.Allowance{allow(firecrawl, 5, 10), allow(dataforseo, 5, 10)}, false},
		{"every allowance fits",
			[]prior{{perRun: 5, connector: dataforseo}}, []budget.Allowance{allow(firecrawl, 5, 10), allow(dataforseo, 5, 10)}, true},
		// the suite's reading: "the per-day figure" is the new run's own
		{"the new run's per-day figure decides",
			[]prior{{perRun: 5, perDay: 20}}, []budget.Allowance{allow(firecrawl, 5, 8)}, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tenant := fmt.Sprintf("day-rule-%d", i)
			for j, p := range tt.prior {
				connector, day, perDay := firecrawl, day1, 10.0
				if p.connector != "" {
					connector = p.connector
				}
				if p.day != "" {
					day = p.day
				}
				if p.perDay != 0 {
					perDay = p.perDay
				}
				r := newRun(fmt.Sprintf("%s-prior-%d", tenant, j), allow(connector, p.perRun, perDay))
				r.Tenant, r.Day = tenant, day
				if p.otherTenant {
					r.Tenant = tenant + "-other"
				}
				mustStart(t, s, r)
				for k, actual := range p.settle {
					id := fmt.Sprintf("%s-res-%d", r.ID, k)
					mustReserve(t, s, reservation(id, r.ID, connector, 1, at(time.Minute)))
					mustSettle(t, s, id, actual)
				}
				for k := range p.release {
					id := fmt.Sprintf("%s-rel-%d", r.ID, k)
					mustReserve(t, s, reservation(id, r.ID, connector, 1, at(time.Minute)))
					if err := s.Release(ctx, id, at(2*time.Minute)); err != nil {
						t.Fatalf("Release: %v", err)
					}
				}
				if p.hold > 0 {
					mustReserve(t, s, reservation(r.ID+"-hold", r.ID, connector, p.hold, at(time.Minute)))
				}
				if p.ended {
					mustEnd(t, s, r.ID)
				}
			}
			r := newRun(tenant+"-new", tt.give...)
			r.Tenant = tenant
			err := s.StartRun(ctx, r, 0, month)
			if tt.wantOK {
				if err != nil {
					t.Fatalf("StartRun = %v, want it admitted", err)
				}
				return
			}
			if !errors.Is(err, budget.ErrDayAllowance) {
				t.Fatalf("StartRun = %v, want ErrDayAllowance", err)
			}
			// a refused run is not recorded and counts for nothing
			if _, err := s.RunStatus(ctx, r.ID); !errors.Is(err, budget.ErrNotFound) {
				t.Errorf("RunStatus of a refused run = %v, want ErrNotFound", err)
			}
			if err := s.StartRun(ctx, r, 0, month); !errors.Is(err, budget.ErrDayAllowance) {
				t.Errorf("the same start again = %v, want ErrDayAllowance", err)
			}
		})
	}

	t.Run("a refused run takes nothing from the day", func(t *testing.T) {
		const tenant = "refused"
		start := func(id string, perRun float64) error {
			r := newRun(id, allow(firecrawl, perRun, 10))
			r.Tenant = tenant
			return s.StartRun(ctx, r, 0, month)
		}
		if err := start("refused-1", 6); err != nil {
			t.Fatalf("StartRun: %v", err)
		}
		if err := start("refused-2", 5); !errors.Is(err, budget.ErrDayAllowance) {
			t.Fatalf("StartRun = %v, want ErrDayAllowance", err)
		}
		if err := start("refused-3", 4); err != nil {
			t.Fatalf("StartRun after a refusal = %v, want it admitted", err)
		}
	})
}

func testStartRunInvalid(t *testing.T, o Opener) {
	s := open(t, o)
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		give []budget.Allowance
	}{
		{"per-run above per-day", []budget.Allowance{allow(firecrawl, 11, 10)}},
		{"one of several above", []budget.Allowance{allow(firecrawl, 1, 10), allow(dataforseo, 3, 2)}},
		{"negative per-run", []budget.Allowance{allow(firecrawl, -1, 10)}},
		{"negative per-day", []budget.Allowance{allow(firecrawl, -2, -1)}},
		{"NaN per-run", []budget.Allowance{allow(firecrawl, nan, 10)}},
		{"NaN per-day", []budget.Allowance{allow(firecrawl, 1, nan)}},
		{"infinite per-run", []budget.Allowance{allow(firecrawl, inf, inf)}},
		{"infinite per-day", []budget.Allowance{allow(firecrawl, 1, inf)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRun(fmt.Sprintf("invalid-%d", i), tt.give...)
			if err := s.StartRun(t.Context(), r, 0, month); !errors.Is(err, budget.ErrInvalid) {
				t.Fatalf("StartRun = %v, want ErrInvalid", err)
			}
			if _, err := s.RunStatus(t.Context(), r.ID); !errors.Is(err, budget.ErrNotFound) {
				t.Errorf("RunStatus of a refused run = %v, want ErrNotFound", err)
			}
		})
	}
}

func testStartRunConcurrency(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	run := func(id, tenant, profile string, max int) *budget.Run {
		r := newRun(id)
		r.Tenant, r.Profile, r.MaxConcurrent = tenant, profile, max
		return r
	}
	steps := []struct {
		name    string
		give    *budget.Run
		end     string // a run to end before this step
		wantErr error
	}{
		{"first", run("r1", "t1", "p", 2), "", nil},
		{"second", run("r2", "t1", "p", 2), "", nil},
		{"third is one too many", run("r3", "t1", "p", 2), "", budget.ErrConcurrentRuns},
		{"another profile", run("r4", "t1", "q", 2), "", nil},
		{"another tenant", run("r5", "t2", "p", 2), "", nil},
		{"after one ends", run("r6", "t1", "p", 2), "r1", nil},
		{"full again", run("r7", "t1", "p", 2), "", budget.ErrConcurrentRuns},
		{"the new run's limit decides", run("r8", "t1", "p", 3), "", nil},
		{"no limit", run("r9", "t1", "p", 0), "", nil},
		{"limit of one with others live", run("r10", "t1", "p", 1), "", budget.ErrConcurrentRuns},
	}
	for _, st := range steps {
		if st.end != "" {
			mustEnd(t, s, st.end)
		}
		err := s.StartRun(ctx, st.give, 0, month)
		if !errors.Is(err, st.wantErr) {
			t.Errorf("%s: StartRun(%s) = %v, want %v", st.name, st.give.ID, err, st.wantErr)
		}
	}
}

func testStartRunMonthlyCap(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	if _, _, err := s.ModelSpend(ctx, "t1", "", 10, month); err != nil {
		t.Fatalf("ModelSpend: %v", err)
	}
	if _, _, err := s.ModelSpend(ctx, "t3", "", 9.5, month); err != nil {
		t.Fatalf("ModelSpend: %v", err)
	}
	tests := []struct {
		name    string
		tenant  string
		cap     float64
		month   string
		wantErr error
	}{
		{"reached", "t1", 10, month, budget.ErrMonthlyCap},
		{"passed", "t1", 5, month, budget.ErrMonthlyCap},
		{"not yet reached", "t1", 10.5, month, nil},
		{"no cap", "t1", 0, month, nil},
		{"another month", "t1", 10, "2026-04", nil},
		{"another tenant", "t2", 10, month, nil},
		{"below", "t3", 10, month, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRun(fmt.Sprintf("cap-%d", i))
			r.Tenant = tt.tenant
			if err := s.StartRun(ctx, r, tt.cap, tt.month); !errors.Is(err, tt.wantErr) {
				t.Fatalf("StartRun = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func testRunStatus(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	r := &budget.Run{
		ID:            "run-1",
		Tenant:        "t1",
		Profile:       "seo-specialist",
		Session:       "sess-9",
		Attempt:       2,
		Started:       at(time.Second),
		Day:           day1,
		Allowances:    []budget.Allowance{{Connector: firecrawl, Unit: "credits", PerRun: 50, PerDay: 200}, {Connector: dataforseo, Unit: "USD", PerRun: 2.5, PerDay: 10}},
		MaxConcurrent: 3,
		BudgetUsd:     0.5,
		MaxTurns:      10,
	}
	want := *r
	mustStart(t, s, r)
	check := func(want budget.RunStatus) {
		t.Helper()
		got := mustStatus(t, s, "run-1")
		if diff := cmp.Diff(&want, got, cmpOpts...); diff != "" {
			t.Errorf("RunStatus mismatch (-want +got):\n%s", diff)
		}
	}
	// the suite's reading: Spent follows the order of the run's allowances
	check(budget.RunStatus{Run: want, Spent: []budget.Spent{
		{Connector: firecrawl, Unit: "credits", PerRun: 50, PerDay: 200},
		{Connector: dataforseo, Unit: "USD", PerRun: 2.5, PerDay: 10},
	}})

	mustReserve(t, s, reservation("res-1", "run-1", firecrawl, 2, at(time.Minute)))
	mustReserve(t, s, reservation("res-2", "run-1", dataforseo, 1.5, at(time.Minute)))
	mustSettle(t, s, "res-2", 1.25)
	for range 2 {
		if _, err := s.Turn(ctx, "run-1"); err != nil {
			t.Fatalf("Turn: %v", err)
		}
	}
	if _, _, err := s.ModelSpend(ctx, "t1", "run-1", 0.125, month); err != nil {
		t.Fatalf("ModelSpend: %v", err)
	}
	mustEnd(t, s, "run-1")
	want.Ended = at(time.Hour)
	check(budget.RunStatus{Run: want, Spent: []budget.Spent{
		{Connector: firecrawl, Unit: "credits", PerRun: 50, PerDay: 200, Reserved: 2},
		{Connector: dataforseo, Unit: "USD", PerRun: 2.5, PerDay: 10, Settled: 1.25},
	}, Turns: 2, ModelUsd: 0.125})

	if _, err := s.RunStatus(ctx, "run-404"); !errors.Is(err, budget.ErrNotFound) {
		t.Errorf("RunStatus(unknown) = %v, want ErrNotFound", err)
	}
}

func testEndRun(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	mustStart(t, s, newRun("run-1"))
	if err := s.EndRun(ctx, "run-1", at(time.Hour)); err != nil {
		t.Fatalf("EndRun: %v", err)
	}
	if err := s.EndRun(ctx, "run-1", at(2*time.Hour)); !errors.Is(err, budget.ErrRunEnded) {
		t.Errorf("EndRun twice = %v, want ErrRunEnded", err)
	}
	if err := s.EndRun(ctx, "run-404", at(time.Hour)); !errors.Is(err, budget.ErrRunEnded) {
		t.Errorf("EndRun(never started) = %v, want ErrRunEnded", err)
	}
	if got := mustStatus(t, s, "run-1").Run.Ended; !got.Equal(at(time.Hour)) {
		t.Errorf("Ended = %v, want the first EndRun's time %v", got, at(time.Hour))
	}
}

func testReserve(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	mustStart(t, s, newRun("run-1", allow(firecrawl, 10, 100), allow(dataforseo, 5, 50)))
	mustStart(t, s, newRun("run-ended", allow(firecrawl, 10, 100)))
	mustEnd(t, s, "run-ended")

	nan := math.NaN()
	steps := []struct {
		name    string
		give    *budget.Reservation
		release string // a reservation to release before this step
		wantErr error
	}{
		{"within the figure", reservation("r1", "run-1", firecrawl, 4, t0), "", nil},
		{"exactly up to the figure", reservation("r2", "run-1", firecrawl, 6, t0), "", nil},
		{"above the figure", reservation("r3", "run-1", firecrawl, 0.5, t0), "", budget.ErrRunAllowance},
		{"another connector has its own figure", reservation("r4", "run-1", dataforseo, 1, t0), "", nil},
		// the suite's reading: a connector without an allowance has none to spend
		{"a connector without an allowance", reservation("r5", "run-1", "serpapi", 1, t0), "", budget.ErrRunAllowance},
		{"negative", reservation("r6", "run-1", dataforseo, -1, t0), "", budget.ErrInvalid},
		{"NaN", reservation("r7", "run-1", dataforseo, nan, t0), "", budget.ErrInvalid},
		{"infinite", reservation("r8", "run-1", dataforseo, math.Inf(1), t0), "", budget.ErrInvalid},
		{"negative infinite", reservation("r9", "run-1", dataforseo, math.Inf(-1), t0), "", budget.ErrInvalid},
		{"an ended run", reservation("r10", "run-ended", firecrawl, 1, t0), "", budget.ErrRunEnded},
		{"a run never started", reservation("r11", "run-404", firecrawl, 1, t0), "", budget.ErrRunEnded},
		{"a release gives room back", reservation("r12", "run-1", firecrawl, 6, t0), "r2", nil},
		{"and the figure holds again", reservation("r13", "run-1", firecrawl, 1, t0), "", budget.ErrRunAllowance},
		{"the rest of the second connector", reservation("r14", "run-1", dataforseo, 4, t0), "", nil},
		{"the second connector is full", reservation("r15", "run-1", dataforseo, 0.01, t0), "", budget.ErrRunAllowance},
	}
	for _, st := range steps {
		if st.release != "" {
			if err := s.Release(ctx, st.release, at(time.Minute)); err != nil {
				t.Fatalf("%s: Release(%s): %v", st.name, st.release, err)
			}
		}
		err := s.Reserve(ctx, st.give)
		if !errors.Is(err, st.wantErr) {
			t.Errorf("%s: Reserve(%s) = %v, want %v", st.name, st.give.ID, err, st.wantErr)
		}
		if st.wantErr != nil {
			// the suite's reading: a reservation that was refused does not exist, and settling
			// or releasing an unknown reservation is ErrNotFound
			if err := s.Release(ctx, st.give.ID, at(time.Minute)); !errors.Is(err, budget.ErrNotFound) {
				t.Errorf("%s: Release of a refused reservation = %v, want ErrNotFound", st.name, err)
			}
		}
	}
	wantSpent(t, s, "run-1", firecrawl, 10, 0)
	wantSpent(t, s, "run-1", dataforseo, 5, 0)
	wantSpent(t, s, "run-ended", firecrawl, 0, 0)
}

func testSettleAndRelease(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	mustStart(t, s, newRun("run-1", allow(firecrawl, 10, 100)))
	settle := func(id string, actual float64) error { return s.Settle(ctx, id, actual, at(time.Minute)) }
	release := func(id string) error { return s.Release(ctx, id, at(time.Minute)) }

	mustReserve(t, s, reservation("r1", "run-1", firecrawl, 3, t0))
	if err := settle("r1", 3); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	wantSpent(t, s, "run-1", firecrawl, 0, 3)

	mustReserve(t, s, reservation("r2", "run-1", firecrawl, 3, t0))
	if err := settle("r2", 1); err != nil { // below what was reserved
		t.Fatalf("Settle below: %v", err)
	}
	wantSpent(t, s, "run-1", firecrawl, 0, 4)

	mustReserve(t, s, reservation("r3", "run-1", firecrawl, 2, t0))
	if err := settle("r3", 5); err != nil { // above what was reserved: the money was spent
		t.Fatalf("Settle above: %v", err)
	}
	wantSpent(t, s, "run-1", firecrawl, 0, 9)

	mustReserve(t, s, reservation("r4", "run-1", firecrawl, 1, t0))
	wantSpent(t, s, "run-1", firecrawl, 1, 9)
	if err := release("r4"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	wantSpent(t, s, "run-1", firecrawl, 0, 9)

	mustReserve(t, s, reservation("r5", "run-1", firecrawl, 1, t0))
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := settle("r5", bad); !errors.Is(err, budget.ErrInvalid) {
			t.Errorf("Settle(%v) = %v, want ErrInvalid", bad, err)
		}
	}
	wantSpent(t, s, "run-1", firecrawl, 1, 9) // still reserved
	if err := settle("r5", 1); err != nil {
		t.Fatalf("Settle after refused settles: %v", err)
	}
	wantSpent(t, s, "run-1", firecrawl, 0, 10)
	if err := s.Reserve(ctx, reservation("r6", "run-1", firecrawl, 0.5, t0)); !errors.Is(err, budget.ErrRunAllowance) {
		t.Errorf("Reserve with the figure settled = %v, want ErrRunAllowance", err)
	}

	errs := []struct {
		name    string
		do      func() error
		wantErr error
	}{
		{"settle twice", func() error { return settle("r1", 3) }, budget.ErrNotReserved},
		{"settle at another amount twice", func() error { return settle("r2", 2) }, budget.ErrNotReserved},
		{"release a settled one", func() error { return release("r3") }, budget.ErrNotReserved},
		{"release twice", func() error { return release("r4") }, budget.ErrNotReserved},
		{"settle a released one", func() error { return settle("r4", 1) }, budget.ErrNotReserved},
		{"settle unknown", func() error { return settle("r-404", 1) }, budget.ErrNotFound},
		{"release unknown", func() error { return release("r-404") }, budget.ErrNotFound},
	}
	for _, tt := range errs {
		if err := tt.do(); !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.wantErr)
		}
	}
	wantSpent(t, s, "run-1", firecrawl, 0, 10)

	// the suite's reading: a call in flight when its run ends still settles or releases (Settle
	// and Release document no other error than ErrNotReserved)
	mustStart(t, s, newRun("run-2", allow(firecrawl, 10, 100)))
	mustReserve(t, s, reservation("b1", "run-2", firecrawl, 2, t0))
	mustReserve(t, s, reservation("b2", "run-2", firecrawl, 3, t0))
	mustEnd(t, s, "run-2")
	if err := settle("b1", 2); err != nil {
		t.Errorf("Settle after the run ended: %v", err)
	}
	if err := release("b2"); err != nil {
		t.Errorf("Release after the run ended: %v", err)
	}
	wantSpent(t, s, "run-2", firecrawl, 0, 2)
}

func testRecoverReservations(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	mustStart(t, s, newRun("run-a", allow(firecrawl, 100, 1000)))
	mustStart(t, s, newRun("run-b", allow(firecrawl, 100, 1000)))
	mustReserve(t, s, reservation("a1", "run-a", firecrawl, 1, at(1*time.Minute)))
	mustReserve(t, s, reservation("a2", "run-a", firecrawl, 2, at(2*time.Minute)))
	mustReserve(t, s, reservation("a3", "run-a", firecrawl, 3, at(3*time.Minute)))
	mustReserve(t, s, reservation("a4", "run-a", firecrawl, 4, at(4*time.Minute)))
	mustReserve(t, s, reservation("a5", "run-a", firecrawl, 5, at(5*time.Minute)))
	mustReserve(t, s, reservation("b1", "run-b", firecrawl, 7, at(2*time.Minute)))
	mustSettle(t, s, "a2", 1.5)
	if err := s.Release(ctx, "a3", at(3*time.Minute)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	mustEnd(t, s, "run-b") // a run that ended with a call in flight

	// a5 was made at the given time, not before it
	n, err := s.RecoverReservations(ctx, at(5*time.Minute), at(time.Hour))
	if err != nil {
		t.Fatalf("RecoverReservations: %v", err)
	}
	if n != 3 {
		t.Errorf("RecoverReservations settled %d, want 3 (a1, a4, b1)", n)
	}
	wantSpent(t, s, "run-a", firecrawl, 5, 1+1.5+4)
	wantSpent(t, s, "run-b", firecrawl, 0, 7)
	for _, id := range []string{"a1", "a4", "b1"} {
		if err := s.Release(ctx, id, at(2*time.Hour)); !errors.Is(err, budget.ErrNotReserved) {
			t.Errorf("Release(%s) after recovery = %v, want ErrNotReserved", id, err)
		}
	}
	if n, err := s.RecoverReservations(ctx, at(5*time.Minute), at(time.Hour)); err != nil || n != 0 {
		t.Errorf("RecoverReservations again = %d, %v; want 0, nil", n, err)
	}
	if err := s.Release(ctx, "a5", at(2*time.Hour)); err != nil {
		t.Errorf("Release(a5), made at the cut-off: %v", err)
	}
	wantSpent(t, s, "run-a", firecrawl, 0, 6.5)
}

func testTurn(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	limited := newRun("run-limited")
	limited.MaxTurns = 3
	mustStart(t, s, limited)
	mustStart(t, s, newRun("run-unlimited"))
	ended := newRun("run-ended")
	ended.MaxTurns = 3
	mustStart(t, s, ended)
	mustEnd(t, s, "run-ended")

	for want := 1; want <= 3; want++ {
		got, err := s.Turn(ctx, "run-limited")
		if err != nil || got != want {
			t.Fatalf("Turn %d = %d, %v", want, got, err)
		}
	}
	for range 2 {
		if _, err := s.Turn(ctx, "run-limited"); !errors.Is(err, budget.ErrTurns) {
			t.Errorf("Turn beyond MaxTurns = %v, want ErrTurns", err)
		}
	}
	if got := mustStatus(t, s, "run-limited").Turns; got != 3 {
		t.Errorf("Turns = %d after refused turns, want 3", got)
	}
	for want := 1; want <= 20; want++ {
		if got, err := s.Turn(ctx, "run-unlimited"); err != nil || got != want {
			t.Fatalf("Turn %d without a limit = %d, %v", want, got, err)
		}
	}
	if _, err := s.Turn(ctx, "run-ended"); !errors.Is(err, budget.ErrRunEnded) {
		t.Errorf("Turn of an ended run = %v, want ErrRunEnded", err)
	}
	if _, err := s.Turn(ctx, "run-404"); !errors.Is(err, budget.ErrRunEnded) {
		t.Errorf("Turn of a run never started = %v, want ErrRunEnded", err)
	}
	if got := mustStatus(t, s, "run-ended").Turns; got != 0 {
		t.Errorf("Turns of an ended run = %d, want 0", got)
	}
}

func testModelSpend(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	r := newRun("run-1")
	r.BudgetUsd = 1
	mustStart(t, s, r)
	mustStart(t, s, newRun("run-2"))

	steps := []struct {
		name         string
		tenant, run  string
		usd          float64
		month        string
		wantRun      float64
		wantMonth    float64
		wantErr      error
		endRunBefore string
	}{
		{name: "a run's turn", tenant: "t1", run: "run-1", usd: 0.5, month: month, wantRun: 0.5, wantMonth: 0.5},
		{name: "person chat", tenant: "t1", usd: 2, month: month, wantRun: 0, wantMonth: 2.5},
		{name: "the same run again", tenant: "t1", run: "run-1", usd: 0.25, month: month, wantRun: 0.75, wantMonth: 2.75},
		{name: "another run of the tenant", tenant: "t1", run: "run-2", usd: 1, month: month, wantRun: 1, wantMonth: 3.75},
		{name: "above the run's budget: recorded all the same", tenant: "t1", run: "run-1", usd: 1, month: month, wantRun: 1.75, wantMonth: 4.75},
		{name: "another month", tenant: "t1", usd: 3, month: "2026-04", wantRun: 0, wantMonth: 3},
		{name: "another tenant", tenant: "t2", usd: 0.125, month: month, wantRun: 0, wantMonth: 0.125},
		{name: "an ended run: the money was spent", tenant: "t1", run: "run-1", usd: 0.25, month: month, wantRun: 2, wantMonth: 5, endRunBefore: "run-1"},
		{name: "negative", tenant: "t1", run: "run-2", usd: -1, month: month, wantErr: budget.ErrInvalid},
		{name: "NaN", tenant: "t1", usd: math.NaN(), month: month, wantErr: budget.ErrInvalid},
		{name: "infinite", tenant: "t1", usd: math.Inf(1), month: month, wantErr: budget.ErrInvalid},
	}
	for _, st := range steps {
		if st.endRunBefore != "" {
			mustEnd(t, s, st.endRunBefore)
		}
		runUsd, monthUsd, err := s.ModelSpend(ctx, st.tenant, st.run, st.usd, st.month)
		if !errors.Is(err, st.wantErr) {
			t.Errorf("%s: ModelSpend = %v, want %v", st.name, err, st.wantErr)
			continue
		}
		if st.wantErr == nil && (runUsd != st.wantRun || monthUsd != st.wantMonth) {
			t.Errorf("%s: ModelSpend = run %v month %v, want run %v month %v", st.name, runUsd, monthUsd, st.wantRun, st.wantMonth)
		}
	}
	months := []struct {
		tenant, month string
		want          float64
	}{
		{"t1", month, 5},
		{"t1", "2026-04", 3},
		{"t1", "2026-02", 0},
		{"t2", month, 0.125},
		{"t9", month, 0},
	}
	for _, m := range months {
		got, err := s.MonthSpend(ctx, m.tenant, m.month)
		if err != nil || got != m.want {
			t.Errorf("MonthSpend(%s, %s) = %v, %v; want %v", m.tenant, m.month, got, err, m.want)
		}
	}
	if got := mustStatus(t, s, "run-1").ModelUsd; got != 2 {
		t.Errorf("run-1 ModelUsd = %v, want 2", got)
	}
	if got := mustStatus(t, s, "run-2").ModelUsd; got != 1 {
		t.Errorf("run-2 ModelUsd = %v, want 1 (a refused spend records nothing)", got)
	}
}

// testDaySpend: a profile's model dollars in a tenant on a day sum its runs of that day, live
// and ended, and no other profile's, tenant's or day's.
func testDaySpend(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	runs := []*budget.Run{newRun("ds-1"), newRun("ds-2"), newRun("ds-other-profile"), newRun("ds-other-tenant"), newRun("ds-other-day")}
	runs[2].Profile = "goal_reviewer"
	runs[3].Tenant = "t2"
	runs[4].Day = "2026-03-15"
	for _, r := range runs {
		mustStart(t, s, r)
		if _, _, err := s.ModelSpend(ctx, r.Tenant, r.ID, 0.125, "2026-03"); err != nil {
			t.Fatalf("ModelSpend(%s): %v", r.ID, err)
		}
	}
	mustEnd(t, s, "ds-1")
	if got, err := s.DaySpend(ctx, "t1", "seo-specialist", day1); err != nil || got != 0.25 {
		t.Errorf("DaySpend = %v, %v; want 0.25 (two runs, one ended)", got, err)
	}
	if got, err := s.DaySpend(ctx, "t1", "nobody", day1); err != nil || got != 0 {
		t.Errorf("DaySpend of a profile without runs = %v, %v; want 0", got, err)
	}
}
