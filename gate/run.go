package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// RunFor describes the run of a session that runs a profile: its allowances come from the
// profile's grant, its limits from the profile. It returns nil for a session without a profile
// (a person's chat), which spends without allowances.
func RunFor(sf *surface.Surface, id, session string, started time.Time) *budget.Run {
	pr := sf.Profile()
	if pr == nil {
		return nil
	}
	l := pr.Limits
	r := &budget.Run{
		ID: id, Tenant: sf.Tenant().ID, Profile: pr.ID, Session: session, Attempt: sf.Attempt(),
		Started: started.UTC(), Day: started.UTC().Format(time.DateOnly),
		MaxConcurrent: l.MaxConcurrentRuns, BudgetUsd: l.RunBudgetUsd, MaxTurns: l.MaxTurns,
		DailyBudgetUsd: l.DailyBudgetUsd,
	}
	if g := pr.Grant; g != nil {
		for _, c := range g.ConnectorList {
			if a, ok := g.Allowances[c.ID]; ok {
				r.Allowances = append(r.Allowances, budget.Allowance{Connector: c.ID, Unit: a.Unit, PerRun: a.PerRun, PerDay: a.PerDay})
			}
		}
	}
	return r
}

func month(t time.Time) string { return t.UTC().Format("2006-01") }

// StartRun starts the session's run: refused when a per-day allowance could be exceeded, when
// the profile already has as many live runs as it may, or when the tenant's monthly model cap
// is reached. The start or refusal is recorded.
func (g *Gate) StartRun(ctx context.Context, s *Session) error {
	if s.Run == nil {
		return errors.New("the session has no run to start (it runs no profile)")
	}
	sf := s.Review.Surface
	now := g.clock.Now()
	if s.Run.Instance == "" && !s.Run.Shared {
		s.Run.Instance = g.instance
	}
	e := audit.Event{Time: now, Kind: audit.KindRun, Tenant: s.Run.Tenant, Session: s.Review.ID,
		Principal: s.Principal, Role: sf.Role().ID, Profile: s.Run.Profile, Run: s.Run.ID,
		PolicyRevision: sf.Policy().Revision, Decision: verdict.Allow.String(), Outcome: "started"}
	err := g.dailyCap(ctx, s.Run)
	if err == nil {
		err = g.ledger.StartRun(ctx, s.Run, sf.Tenant().MonthlyModelCapUsd, month(now))
	}
	if err != nil {
		e.Decision, e.Outcome = verdict.Deny.String(), "refused"
		e.Blockers = []audit.Blocker{{Code: string(verdict.RunLimit), Detail: err.Error()}}
	}
	if aerr := g.log.Append(ctx, &e); aerr != nil {
		if err == nil {
			_ = g.ledger.EndRun(context.WithoutCancel(ctx), s.Run.ID, now)
		}
		return fmt.Errorf("%w: %v", ErrNotRecorded, aerr)
	}
	return err
}

// ErrDailyCap is matched by the refusal of a run whose profile has spent its daily model
// budget in the tenant, or whose day's spend cannot be read.
var ErrDailyCap = errors.New("the profile's daily model budget")

// dailyCap refuses a run whose profile has reached its daily model budget in the tenant. A day
// whose spend cannot be read refuses too: the cap is only a cap if it is checked. Two runs
// starting at once may both pass; a profile that needs the cap exact runs one at a time
// (Scout's goal reviewer does).
func (g *Gate) dailyCap(ctx context.Context, r *budget.Run) error {
	if r.DailyBudgetUsd <= 0 {
		return nil
	}
	spent, err := g.ledger.DaySpend(ctx, r.Tenant, r.Profile, r.Day)
	if err != nil {
		return fmt.Errorf("%w: today's spend of profile %s in tenant %s cannot be read, so no run starts: %v", ErrDailyCap, r.Profile, r.Tenant, err)
	}
	if spent >= r.DailyBudgetUsd {
		return fmt.Errorf("%w: profile %s has spent %.4f USD on models in tenant %s on %s, its daily cap is %.4f", ErrDailyCap, r.Profile, spent, r.Tenant, r.Day, r.DailyBudgetUsd)
	}
	return nil
}

// EndRun ends the session's run; what it settled then counts for the day.
func (g *Gate) EndRun(ctx context.Context, s *Session) error {
	if s.Run == nil {
		return errors.New("the session has no run")
	}
	now := g.clock.Now()
	if err := g.ledger.EndRun(ctx, s.Run.ID, now); err != nil {
		return err
	}
	g.stop(s, "the run has ended")
	e := audit.Event{Time: now, Kind: audit.KindRun, Tenant: s.Run.Tenant, Session: s.Review.ID,
		Principal: s.Principal, Profile: s.Run.Profile, Run: s.Run.ID, Outcome: "ended"}
	return g.log.Append(ctx, &e)
}

// ErrLimit is matched by the error of a turn that a run's or tenant's limits refuse; the
// runtime must stop the session.
var ErrLimit = errors.New("limit reached")

// Turn counts one model turn of a session before it is taken: refused when the run has used
// its turns, or when the tenant's model spend this month has reached its cap (person chat
// included). A refused turn stops the session, as ModelSpend does: its later calls are refused.
func (g *Gate) Turn(ctx context.Context, s *Session) error {
	sf := s.Review.Surface
	if cap := sf.Tenant().MonthlyModelCapUsd; cap > 0 {
		spent, err := g.ledger.MonthSpend(ctx, sf.Tenant().ID, month(g.clock.Now()))
		if err != nil {
			return err
		}
		if spent >= cap {
			why := fmt.Sprintf("tenant %s has spent %.2f USD on models this month, its cap is %.2f", sf.Tenant().ID, spent, cap)
			g.stop(s, why)
			return fmt.Errorf("%w: %s", ErrLimit, why)
		}
	}
	if h := sf.Harness(); h != nil && h.MaxModelCalls > 0 {
		u := s.harnessUsed()
		u.mu.Lock()
		n := u.calls
		if n < h.MaxModelCalls {
			u.calls++
		}
		u.mu.Unlock()
		if n >= h.MaxModelCalls {
			why := fmt.Sprintf("the session has made %d model calls on harness %s, its cap", n, h.ID)
			g.stop(s, why)
			return fmt.Errorf("%w: %s", ErrLimit, why)
		}
	}
	if s.Run == nil {
		return nil
	}
	if _, err := g.ledger.Turn(ctx, s.Run.ID); err != nil {
		if errors.Is(err, budget.ErrTurns) || errors.Is(err, budget.ErrRunEnded) {
			g.stop(s, err.Error())
			return fmt.Errorf("%w: %v", ErrLimit, err)
		}
		return err
	}
	return nil
}

// ModelSpend records what the session's model cost, as the runtime reports it. The money is
// recorded whatever the limits; a run that has gone over its dollar budget, or a tenant over
// its monthly cap, makes no more calls (ErrLimit).
func (g *Gate) ModelSpend(ctx context.Context, s *Session, usd float64) error {
	sf := s.Review.Surface
	runID := ""
	if s.Run != nil {
		runID = s.Run.ID
	}
	runUsd, monthUsd, err := g.ledger.ModelSpend(ctx, sf.Tenant().ID, runID, usd, month(g.clock.Now()))
	if err != nil {
		return err
	}
	if s.Run != nil && s.Run.BudgetUsd > 0 && runUsd > s.Run.BudgetUsd {
		why := fmt.Sprintf("run %s has spent %.4f USD on models, above its budget of %.4f", s.Run.ID, runUsd, s.Run.BudgetUsd)
		g.stop(s, why)
		return fmt.Errorf("%w: %s", ErrLimit, why)
	}
	if h := sf.Harness(); h != nil && h.SessionBudgetUsd > 0 {
		u := s.harnessUsed()
		u.mu.Lock()
		u.usd += usd
		spent := u.usd
		u.mu.Unlock()
		if spent > h.SessionBudgetUsd {
			why := fmt.Sprintf("the session has spent %.4f USD on models on harness %s, above its cap of %.4f", spent, h.ID, h.SessionBudgetUsd)
			g.stop(s, why)
			return fmt.Errorf("%w: %s", ErrLimit, why)
		}
	}
	if s.Run != nil {
		if err := g.dailyCap(ctx, s.Run); err != nil {
			g.stop(s, err.Error())
			return fmt.Errorf("%w: %v", ErrLimit, err)
		}
	}
	if cap := sf.Tenant().MonthlyModelCapUsd; cap > 0 && monthUsd >= cap {
		why := fmt.Sprintf("tenant %s has spent %.2f USD on models this month, its cap is %.2f", sf.Tenant().ID, monthUsd, cap)
		g.stop(s, why)
		return fmt.Errorf("%w: %s", ErrLimit, why)
	}
	return nil
}

// stop makes the session refuse every further call, saying why, and tells OnStop.
func (g *Gate) stop(s *Session, why string) {
	if s.stopped().CompareAndSwap(nil, &why) && s.OnStop != nil {
		s.OnStop(why)
	}
}

// Stop makes the session refuse every further call, saying why, as the gate does when the
// run's limits are reached: for a session another instance stopped. OnStop is not told.
func (s *Session) Stop(why string) { s.stopped().CompareAndSwap(nil, &why) }

// EndRunOf ends a run that no live gate session holds here: the run of a session kept in the
// store that another instance served, ended by whichever instance finds it ended or idle. It is
// recorded as EndRun records it.
func (g *Gate) EndRunOf(ctx context.Context, r *budget.Run, session, principal string) error {
	now := g.clock.Now()
	if err := g.ledger.EndRun(ctx, r.ID, now); err != nil {
		return err
	}
	e := audit.Event{Time: now, Kind: audit.KindRun, Tenant: r.Tenant, Session: session,
		Principal: principal, Profile: r.Profile, Run: r.ID, Outcome: "ended"}
	return g.log.Append(ctx, &e)
}
