package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/budget"
)

// race runs n calls at once, call i on instance i mod len(all), and returns their errors.
func race(all []Store, n int, call func(s Store, i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = call(all[i%len(all)], i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// tally counts the nil errors and the errors matching want, and reports any other.
func tally(t *testing.T, errs []error, want error) (ok, refused int) {
	t.Helper()
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, want):
			refused++
		default:
			t.Errorf("call %d: %v, want nil or %v", i, err, want)
		}
	}
	return ok, refused
}

// THE race: 200 reservations of 1 against a per-run figure of 50. Exactly 50 fit, however the
// calls interleave, on one instance or two.
func testRaceReserve(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	mustStart(t, s, newRun("run-race", allow(firecrawl, 50, 1000)))

	const calls, figure = 200, 50
	errs := race(all, calls, func(s Store, i int) error {
		return s.Reserve(context.Background(), reservation(fmt.Sprintf("res-%d", i), "run-race", firecrawl, 1, t0))
	})
	ok, refused := tally(t, errs, budget.ErrRunAllowance)
	if ok != figure || refused != calls-figure {
		t.Fatalf("%d reservations fitted and %d were refused, want exactly %d and %d", ok, refused, figure, calls-figure)
	}
	for _, st := range all {
		wantSpent(t, st, "run-race", firecrawl, figure, 0)
	}

	// settling them all, at once, moves exactly the same amount
	var won []int
	for i, err := range errs {
		if err == nil {
			won = append(won, i)
		}
	}
	errs = race(all, len(won), func(s Store, i int) error {
		return s.Settle(context.Background(), fmt.Sprintf("res-%d", won[i]), 1, at(time.Minute))
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("Settle(res-%d): %v", won[i], err)
		}
	}
	wantSpent(t, s, "run-race", firecrawl, 0, figure)
}

// Calls that reserve and then settle or release, all at once: settled money counts against
// the figure like reserved money, released money is free again, and nothing is lost or counted
// twice (what is left afterwards is exactly the figure less what was settled).
func testRaceReserveSettle(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	mustStart(t, s, newRun("run-race", allow(firecrawl, 50, 1000)))

	const calls, figure = 200, 50
	errs := race(all, calls, func(s Store, i int) error {
		ctx := context.Background()
		id := fmt.Sprintf("res-%d", i)
		if err := s.Reserve(ctx, reservation(id, "run-race", firecrawl, 1, t0)); err != nil {
			return err
		}
		if i%5 == 0 { // some calls fail and give their reservation back ...
			if err := s.Release(ctx, id, at(time.Minute)); err != nil {
				return fmt.Errorf("release: %w", err)
			}
			return errReleased
		}
		return s.Settle(ctx, id, 1, at(time.Minute)) // ... the rest spend it
	})
	var settled, released int
	for i, err := range errs {
		switch {
		case err == nil:
			settled++
		case errors.Is(err, errReleased):
			released++
		case errors.Is(err, budget.ErrRunAllowance):
		default:
			t.Errorf("call %d: %v", i, err)
		}
	}
	if settled > figure || settled == 0 {
		t.Fatalf("%d calls settled (%d released), want between 1 and %d", settled, released, figure)
	}
	wantSpent(t, s, "run-race", firecrawl, 0, float64(settled))
	for i := settled; i < figure; i++ {
		mustReserve(t, s, reservation(fmt.Sprintf("rest-%d", i), "run-race", firecrawl, 1, t0))
	}
	if err := s.Reserve(t.Context(), reservation("one-more", "run-race", firecrawl, 1, t0)); !errors.Is(err, budget.ErrRunAllowance) {
		t.Errorf("Reserve beyond the figure after the race = %v, want ErrRunAllowance", err)
	}
}

var errReleased = errors.New("released")

// Starts racing against a per-day figure: never more runs than the figure allows.
func testRaceStartRunDay(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	const calls, admitted = 40, 10 // per-run 1 against per-day 10: live runs count whole
	errs := race(all, calls, func(s Store, i int) error {
		return s.StartRun(context.Background(), newRun(fmt.Sprintf("run-%d", i), allow(firecrawl, 1, 10)), 0, month)
	})
	ok, refused := tally(t, errs, budget.ErrDayAllowance)
	if ok != admitted || refused != calls-admitted {
		t.Fatalf("%d runs admitted and %d refused, want exactly %d and %d", ok, refused, admitted, calls-admitted)
	}
}

// Starts racing against a concurrency limit.
func testRaceStartRunConcurrency(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	const calls, limit = 20, 3
	errs := race(all, calls, func(s Store, i int) error {
		r := newRun(fmt.Sprintf("run-%d", i))
		r.MaxConcurrent = limit
		return s.StartRun(context.Background(), r, 0, month)
	})
	ok, refused := tally(t, errs, budget.ErrConcurrentRuns)
	if ok != limit || refused != calls-limit {
		t.Fatalf("%d runs admitted and %d refused, want exactly %d and %d", ok, refused, limit, calls-limit)
	}
}

// Turns racing against MaxTurns: each of the first ten gets its own number.
func testRaceTurn(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	r := newRun("run-turns")
	r.MaxTurns = 10
	mustStart(t, s, r)

	const calls = 40
	var (
		mu  sync.Mutex
		got []int
	)
	errs := race(all, calls, func(s Store, _ int) error {
		n, err := s.Turn(context.Background(), "run-turns")
		if err == nil {
			mu.Lock()
			got = append(got, n)
			mu.Unlock()
		}
		return err
	})
	ok, _ := tally(t, errs, budget.ErrTurns)
	slices.Sort(got)
	want := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if ok != 10 || !slices.Equal(got, want) {
		t.Fatalf("turns granted %v, want %v", got, want)
	}
	if n := mustStatus(t, s, "run-turns").Turns; n != 10 {
		t.Errorf("Turns = %d, want 10", n)
	}
}

// Model spend racing: nothing is lost.
func testRaceModelSpend(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	mustStart(t, s, newRun("run-1"))
	const calls = 40
	errs := race(all, calls, func(s Store, i int) error {
		run := ""
		if i%2 == 0 {
			run = "run-1"
		}
		_, _, err := s.ModelSpend(context.Background(), "t1", run, 0.25, month)
		return err
	})
	tally(t, errs, nil)
	if got, err := s.MonthSpend(t.Context(), "t1", month); err != nil || got != 10 {
		t.Errorf("MonthSpend = %v, %v; want 10", got, err)
	}
	if got := mustStatus(t, s, "run-1").ModelUsd; got != 5 {
		t.Errorf("ModelUsd = %v, want 5", got)
	}
}
