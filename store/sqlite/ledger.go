package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/wardenhq/warden/budget"
)

// epsilon absorbs the rounding of float sums (0.1+0.2 against a figure of 0.3): far below a
// cent or a credit, so it can never let a real overspend through.
const epsilon = 1e-9

// validAmount: amounts are finite and not negative.
func validAmount(x float64) bool { return x >= 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// StartRun records a live run after checking, in one write transaction, the tenant's monthly
// model cap, the profile's concurrency limit and every allowance's per-day figure.
func (db *DB) StartRun(ctx context.Context, r *budget.Run, monthlyCapUsd float64, month string) error {
	if r.ID == "" {
		return errors.New("start run: no id")
	}
	if err := validRun(r, monthlyCapUsd); err != nil {
		return fmt.Errorf("start run %s: %w", r.ID, err)
	}
	if r.Day == "" {
		r.Day = r.Started.UTC().Format(time.DateOnly)
	}
	err := db.tx(ctx, func(*sql.Conn) error {
		if monthlyCapUsd > 0 {
			var usd float64
			if err := db.ws.monthSpend.QueryRowContext(ctx, r.Tenant, month).Scan(&usd); err != nil {
				return err
			}
			if usd+epsilon >= monthlyCapUsd {
				return fmt.Errorf("%w: %s spent %v USD of %v in %s", budget.ErrMonthlyCap, r.Tenant, usd, monthlyCapUsd, month)
			}
		}
		if r.MaxConcurrent > 0 {
			var live int
			if err := db.ws.liveRuns.QueryRowContext(ctx, r.Tenant, r.Profile).Scan(&live); err != nil {
				return err
			}
			if live >= r.MaxConcurrent {
				return fmt.Errorf("%w: %s has %d live runs of %d", budget.ErrConcurrentRuns, r.Profile, live, r.MaxConcurrent)
			}
		}
		for _, a := range r.Allowances {
			var counted float64
			if err := db.ws.daySpent.QueryRowContext(ctx, r.Tenant, r.Day, a.Connector).Scan(&counted); err != nil {
				return err
			}
			if counted+a.PerRun > a.PerDay+epsilon {
				return fmt.Errorf("%w: %s on %s: %v %s counted, %v more for this run, per-day figure %v",
					budget.ErrDayAllowance, a.Connector, r.Day, counted, a.Unit, a.PerRun, a.PerDay)
			}
		}
		if _, err := db.ws.insertRun.ExecContext(ctx, r.ID, r.Tenant, r.Profile, r.Session, r.Attempt,
			dbTime(r.Started), r.Day, r.MaxConcurrent, r.BudgetUsd, r.MaxTurns, r.Instance); err != nil {
			return err
		}
		for i, a := range r.Allowances {
			if _, err := db.ws.insertAllowance.ExecContext(ctx, r.ID, a.Connector, i, a.Unit, a.PerRun, a.PerDay,
				r.Tenant, r.Day); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return db.fail("start run "+r.ID, err)
	}
	return nil
}

// validRun checks a run's figures: ErrInvalid for a negative or non-finite amount, a per-run
// figure above its per-day figure, or a connector given two allowances.
func validRun(r *budget.Run, monthlyCapUsd float64) error {
	seen := make(map[string]bool, len(r.Allowances))
	for _, a := range r.Allowances {
		switch {
		case !validAmount(a.PerRun) || !validAmount(a.PerDay):
			return fmt.Errorf("%w: allowance for %s: per-run %v, per-day %v", budget.ErrInvalid, a.Connector, a.PerRun, a.PerDay)
		case a.PerRun > a.PerDay:
			return fmt.Errorf("%w: allowance for %s: per-run %v is above per-day %v", budget.ErrInvalid, a.Connector, a.PerRun, a.PerDay)
		case seen[a.Connector]:
			return fmt.Errorf("%w: two allowances for %s", budget.ErrInvalid, a.Connector)
		}
		seen[a.Connector] = true
	}
	if !validAmount(r.BudgetUsd) {
		return fmt.Errorf("%w: budget %v USD", budget.ErrInvalid, r.BudgetUsd)
	}
	if !validAmount(monthlyCapUsd) {
		return fmt.Errorf("%w: monthly cap %v USD", budget.ErrInvalid, monthlyCapUsd)
	}
	return nil
}

// EndRun marks a run ended; budget.ErrRunEnded if it was not live.
func (db *DB) EndRun(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		at = time.Now()
	}
	err := db.tx(ctx, func(*sql.Conn) error {
		res, err := db.ws.endRun.ExecContext(ctx, formatTime(at), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return budget.ErrRunEnded
		}
		_, err = db.ws.endRunAllowances.ExecContext(ctx, id)
		return err
	})
	if err != nil {
		return db.fail("end run "+id, err)
	}
	return nil
}

// RunStatus returns a run and what it has used, read in one statement (one snapshot); Spent
// follows the order of the run's allowances.
func (db *DB) RunStatus(ctx context.Context, id string) (*budget.RunStatus, error) {
	rows, err := db.rs.runStatus.QueryContext(ctx, id)
	if err != nil {
		return nil, db.fail("run status "+id, err)
	}
	defer rows.Close()
	var st *budget.RunStatus
	for rows.Next() {
		var (
			r                                 budget.Run
			started, ended                    sql.NullString
			turns                             int
			modelUsd                          float64
			connector, unit                   sql.NullString
			perRun, perDay, reserved, settled sql.NullFloat64
		)
		if err := rows.Scan(&r.ID, &r.Tenant, &r.Profile, &r.Session, &r.Attempt, &started, &r.Day, &ended,
			&r.MaxConcurrent, &r.BudgetUsd, &r.MaxTurns, &turns, &modelUsd, &r.Instance,
			&connector, &unit, &perRun, &perDay, &reserved, &settled); err != nil {
			return nil, db.fail("run status "+id, err)
		}
		if st == nil {
			if r.Started, err = parseTime(started); err != nil {
				return nil, db.fail("run status "+id, err)
			}
			if r.Ended, err = parseTime(ended); err != nil {
				return nil, db.fail("run status "+id, err)
			}
			st = &budget.RunStatus{Run: r, Turns: turns, ModelUsd: modelUsd}
		}
		if !connector.Valid {
			continue
		}
		st.Run.Allowances = append(st.Run.Allowances, budget.Allowance{
			Connector: connector.String, Unit: unit.String, PerRun: perRun.Float64, PerDay: perDay.Float64})
		st.Spent = append(st.Spent, budget.Spent{Connector: connector.String, Unit: unit.String,
			PerRun: perRun.Float64, PerDay: perDay.Float64, Reserved: reserved.Float64, Settled: settled.Float64})
	}
	if err := rows.Err(); err != nil {
		return nil, db.fail("run status "+id, err)
	}
	if st == nil {
		return nil, fmt.Errorf("run %s: %w", id, budget.ErrNotFound)
	}
	return st, nil
}

// Reserve holds r.Amount for a call in one write transaction: a conditional update of the
// run's totals that fits the per-run figure or changes nothing, then the reservation's row. A
// reservation without an ID is given a random one, and one without a time is made now.
func (db *DB) Reserve(ctx context.Context, r *budget.Reservation) error {
	if !validAmount(r.Amount) {
		return fmt.Errorf("reserve %s: %w: amount %v", r.ID, budget.ErrInvalid, r.Amount)
	}
	if r.ID == "" {
		r.ID = newID()
	}
	if r.Created.IsZero() {
		r.Created = time.Now()
	}
	err := db.tx(ctx, func(*sql.Conn) error {
		res, err := db.ws.reserve.ExecContext(ctx, r.Amount, r.Run, r.Connector, epsilon)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return db.whyNotReserved(ctx, r)
		}
		_, err = db.ws.insertReservation.ExecContext(ctx, r.ID, r.Run, r.Connector, r.Amount, formatTime(r.Created), r.Call)
		return err
	})
	if err != nil {
		return db.fail("reserve "+r.ID, err)
	}
	r.State, r.Actual, r.Done = budget.Reserved, 0, time.Time{}
	return nil
}

// whyNotReserved says why the conditional update changed nothing; inside Reserve's
// transaction, so it sees what the update saw.
func (db *DB) whyNotReserved(ctx context.Context, r *budget.Reservation) error {
	var ended, has bool
	err := db.ws.runAllowance.QueryRowContext(ctx, r.Run, r.Connector).Scan(&ended, &has)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: run %s was never started", budget.ErrRunEnded, r.Run)
	case err != nil:
		return err
	case ended:
		return fmt.Errorf("%w: run %s", budget.ErrRunEnded, r.Run)
	case !has:
		return fmt.Errorf("%w: run %s has no allowance for %s", budget.ErrRunAllowance, r.Run, r.Connector)
	}
	return fmt.Errorf("%w: run %s on %s, %v more", budget.ErrRunAllowance, r.Run, r.Connector, r.Amount)
}

// Settle records what a reserved call actually cost.
func (db *DB) Settle(ctx context.Context, id string, actual float64, at time.Time) error {
	if !validAmount(actual) {
		return fmt.Errorf("settle %s: %w: amount %v", id, budget.ErrInvalid, actual)
	}
	return db.finish(ctx, "settle", id, budget.Settled, actual, at)
}

// Release gives a reservation back: the call did not run.
func (db *DB) Release(ctx context.Context, id string, at time.Time) error {
	return db.finish(ctx, "release", id, budget.Released, 0, at)
}

// finish moves a reservation out of reserved and its amount out of the run's reserved total.
func (db *DB) finish(ctx context.Context, op, id string, state budget.ReservationState, actual float64, at time.Time) error {
	if at.IsZero() {
		at = time.Now()
	}
	err := db.tx(ctx, func(*sql.Conn) error {
		var (
			run, connector string
			amount         float64
		)
		err := db.ws.closeReservation.QueryRowContext(ctx, string(state), actual, formatTime(at), id).Scan(&run, &connector, &amount)
		if errors.Is(err, sql.ErrNoRows) {
			var current string
			switch err := db.ws.reservationState.QueryRowContext(ctx, id).Scan(&current); {
			case errors.Is(err, sql.ErrNoRows):
				return budget.ErrNotFound
			case err != nil:
				return err
			}
			return fmt.Errorf("%w: it is %s", budget.ErrNotReserved, current)
		}
		if err != nil {
			return err
		}
		if state == budget.Settled {
			_, err = db.ws.settleAllowance.ExecContext(ctx, run, connector, amount, actual)
		} else {
			_, err = db.ws.releaseAllowance.ExecContext(ctx, run, connector, amount)
		}
		return err
	})
	if err != nil {
		return db.fail(op+" "+id, err)
	}
	return nil
}

// RecoverReservations settles, at the amount reserved, every open reservation made before the
// given time, in one write transaction.
func (db *DB) RecoverReservations(ctx context.Context, before, at time.Time) (int, error) {
	if at.IsZero() {
		at = time.Now()
	}
	var n int64
	err := db.tx(ctx, func(*sql.Conn) error {
		if _, err := db.ws.recoverAllowances.ExecContext(ctx, formatTime(before)); err != nil {
			return err
		}
		res, err := db.ws.recoverReservations.ExecContext(ctx, formatTime(before), formatTime(at))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, db.fail("recover reservations", err)
	}
	return int(n), nil
}

// Turn counts one more model turn, in one statement.
func (db *DB) Turn(ctx context.Context, runID string) (int, error) {
	var turns int
	err := db.write(ctx, func(*sql.Conn) error {
		err := db.ws.turn.QueryRowContext(ctx, runID).Scan(&turns)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var ended bool
		switch err := db.ws.turnState.QueryRowContext(ctx, runID).Scan(&ended); {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("%w: run %s was never started", budget.ErrRunEnded, runID)
		case err != nil:
			return err
		case ended:
			return budget.ErrRunEnded
		}
		return budget.ErrTurns
	})
	if err != nil {
		return 0, db.fail("turn of run "+runID, err)
	}
	return turns, nil
}

// ModelSpend records model dollars for the tenant's month and, when runID is not empty, the
// run (ended or not: the money was spent); budget.ErrNotFound for a run that does not exist.
func (db *DB) ModelSpend(ctx context.Context, tenant, runID string, usd float64, month string) (runUsd, monthUsd float64, err error) {
	if !validAmount(usd) {
		return 0, 0, fmt.Errorf("model spend: %w: %v USD", budget.ErrInvalid, usd)
	}
	err = db.tx(ctx, func(*sql.Conn) error {
		if runID != "" {
			err := db.ws.runModelSpend.QueryRowContext(ctx, usd, runID).Scan(&runUsd)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("run %s: %w", runID, budget.ErrNotFound)
			}
			if err != nil {
				return err
			}
		}
		return db.ws.addMonthSpend.QueryRowContext(ctx, tenant, month, usd).Scan(&monthUsd)
	})
	if err != nil {
		return 0, 0, db.fail("model spend", err)
	}
	return runUsd, monthUsd, nil
}

// MonthSpend returns a tenant's model dollars in a month.
func (db *DB) MonthSpend(ctx context.Context, tenant, month string) (float64, error) {
	var usd float64
	if err := db.rs.monthSpend.QueryRowContext(ctx, tenant, month).Scan(&usd); err != nil {
		return 0, db.fail("month spend", err)
	}
	return usd, nil
}

// DaySpend returns the model dollars of a profile's runs in a tenant on a day.
func (db *DB) DaySpend(ctx context.Context, tenant, profile, day string) (float64, error) {
	var usd float64
	err := db.r.QueryRowContext(ctx, `SELECT coalesce(sum(model_usd), 0) FROM runs WHERE tenant = ? AND profile = ? AND day = ?`,
		tenant, profile, day).Scan(&usd)
	if err != nil {
		return 0, db.fail("day spend", err)
	}
	return usd, nil
}
