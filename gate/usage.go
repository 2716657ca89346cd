package gate

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Usage is what a harness reports of its model for one session: turns it is about to take and
// dollars its model has spent. A harness in any language reports it over HTTP
// (POST /api/v1/runs/{id}/usage) or in the _meta of an MCP call ("warden/usage").
type Usage struct {
	Turns    int
	ModelUsd float64
}

// Check says every problem of a report, or nil: turns is a whole number of at least 0,
// modelUsd a finite number of at least 0.
func (u Usage) Check() []string {
	var problems []string
	if u.Turns < 0 {
		problems = append(problems, fmt.Sprintf("turns is %d: it must be 0 or more", u.Turns))
	}
	if math.IsNaN(u.ModelUsd) || math.IsInf(u.ModelUsd, 0) || u.ModelUsd < 0 {
		problems = append(problems, fmt.Sprintf("modelUsd is %v: it must be a finite number of dollars, 0 or more", u.ModelUsd))
	}
	return problems
}

// Standing is where a session's run stands against its limits, and the tenant's month against
// its model cap. The run's fields are zero for a session without a run (a person's chat).
type Standing struct {
	Run     string
	Tenant  string
	Profile string
	// Ended: the run has ended; no usage is recorded for it any more.
	Ended bool
	// Turns are the turns counted; MaxTurns the run's limit (0: none).
	Turns    int
	MaxTurns int
	// ModelUsd is what the run's model has cost; BudgetUsd its limit (0: none).
	ModelUsd  float64
	BudgetUsd float64
	// Month ("2006-01") is the month the tenant's model spend counts in; MonthUsd that spend,
	// MonthlyCapUsd its cap (0: none).
	Month         string
	MonthUsd      float64
	MonthlyCapUsd float64
	// Stopped says why the session makes no more calls ("" while it may).
	Stopped string
	// Recorded is what of the report was recorded: its dollars, and the turns counted before
	// one was refused.
	Recorded Usage
}

// ErrStopped is matched by the error of a report for a session that was stopped before it:
// nothing of it was recorded.
var ErrStopped = errors.New("the run was stopped")

// ErrInvalidUsage is matched by the error of a report with a negative or non-finite figure:
// nothing of it was recorded.
var ErrInvalidUsage = errors.New("invalid usage")

// Report records a harness's report for a session, in the order the library's runtime calls
// them: the dollars first (ModelSpend: money spent is recorded whatever the limits), then each
// turn (Turn), until one is refused. A report that reaches a limit stops the session, and its
// Standing says why; every later call of the session is refused (run_limit). A report for a
// session already stopped records nothing and returns ErrStopped with the standing.
func (g *Gate) Report(ctx context.Context, s *Session, u Usage) (*Standing, error) {
	if p := u.Check(); len(p) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidUsage, p[0])
	}
	if why := s.stopped().Load(); why != nil {
		st, err := g.Standing(ctx, s)
		if err != nil {
			return nil, err
		}
		return st, fmt.Errorf("%w: %s", ErrStopped, *why)
	}
	var rec Usage
	if u.ModelUsd > 0 {
		if err := g.ModelSpend(ctx, s, u.ModelUsd); err != nil && !errors.Is(err, ErrLimit) {
			return nil, err
		}
		rec.ModelUsd = u.ModelUsd
	}
	for i := 0; i < u.Turns && s.stopped().Load() == nil; i++ {
		if err := g.Turn(ctx, s); errors.Is(err, ErrLimit) {
			break
		} else if err != nil {
			st, serr := g.Standing(ctx, s)
			if serr == nil {
				st.Recorded = rec
			}
			return st, err
		}
		rec.Turns++
	}
	st, err := g.Standing(ctx, s)
	if err != nil {
		return nil, err
	}
	st.Recorded = rec
	return st, nil
}

// Standing reads where a session's run stands, from the ledger (which every instance
// shares), and whether the session was stopped.
func (g *Gate) Standing(ctx context.Context, s *Session) (*Standing, error) {
	sf := s.Review.Surface
	st := &Standing{Tenant: sf.Tenant().ID, Month: month(g.clock.Now()), MonthlyCapUsd: sf.Tenant().MonthlyModelCapUsd}
	if why := s.stopped().Load(); why != nil {
		st.Stopped = *why
	}
	var err error
	if st.MonthUsd, err = g.ledger.MonthSpend(ctx, st.Tenant, st.Month); err != nil {
		return nil, fmt.Errorf("read the month's model spend: %w", err)
	}
	if s.Run == nil {
		return st, nil
	}
	rs, err := g.ledger.RunStatus(ctx, s.Run.ID)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", s.Run.ID, err)
	}
	st.Run, st.Profile = s.Run.ID, s.Run.Profile
	st.Ended = !rs.Run.Ended.IsZero()
	st.Turns, st.MaxTurns = rs.Turns, rs.Run.MaxTurns
	st.ModelUsd, st.BudgetUsd = rs.ModelUsd, rs.Run.BudgetUsd
	return st, nil
}

// StoredStanding reads a run's standing from the ledger alone, for a run no live session of
// this process holds (it has ended, or another instance holds it): budget.ErrNotFound if the
// ledger has no such run.
func (g *Gate) StoredStanding(ctx context.Context, runID string) (*Standing, error) {
	rs, err := g.ledger.RunStatus(ctx, runID)
	if err != nil {
		return nil, err
	}
	st := &Standing{Run: rs.Run.ID, Tenant: rs.Run.Tenant, Profile: rs.Run.Profile, Ended: !rs.Run.Ended.IsZero(),
		Turns: rs.Turns, MaxTurns: rs.Run.MaxTurns, ModelUsd: rs.ModelUsd, BudgetUsd: rs.Run.BudgetUsd,
		Month: month(g.clock.Now())}
	if st.MonthUsd, err = g.ledger.MonthSpend(ctx, st.Tenant, st.Month); err != nil {
		return nil, fmt.Errorf("read the month's model spend: %w", err)
	}
	return st, nil
}

// ErrNotHeld is matched by the error of a report for a run the ledger has as live but no
// session of this process holds: another instance serves its session (or a process that
// died left it open). Nothing was recorded; its session's instance must be told.
var ErrNotHeld = errors.New("the run is live, but no session of this process holds it")
