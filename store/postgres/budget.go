package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/budget"
)

// finite reports whether an amount is one a ledger can hold: finite and not negative.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= 0 }

func checkAllowances(as []budget.Allowance) error {
	seen := map[string]bool{}
	for _, a := range as {
		switch {
		case !finite(a.PerRun) || !finite(a.PerDay):
			return fmt.Errorf("allowance for %q: %w: per-run %v, per-day %v", a.Connector, budget.ErrInvalid, a.PerRun, a.PerDay)
		case a.PerRun > a.PerDay:
			return fmt.Errorf("allowance for %q: %w: per-run figure %v is above the per-day figure %v", a.Connector, budget.ErrInvalid, a.PerRun, a.PerDay)
		case seen[a.Connector]:
			return fmt.Errorf("allowance for %q: %w: the connector is listed twice", a.Connector, budget.ErrInvalid)
		}
		seen[a.Connector] = true
	}
	return nil
}

// StartRun records a live run. The checks and the insert run in one transaction holding
// advisory locks on (tenant, day, connector) for each allowance and on (tenant, profile), taken
// in a fixed order: two starts that could together pass a per-day figure or the concurrency
// limit are serialised, on one instance or several, and the second sees the first's run. The
// monthly cap is read without a lock: model spend is recorded whatever the limits, so a start
// racing a spend can only see the month a moment early.
//
// An empty ID is filled in; an empty Day is the UTC day of Started.
func (db *DB) StartRun(ctx context.Context, r *budget.Run, monthlyCapUsd float64, month string) error {
	if err := checkAllowances(r.Allowances); err != nil {
		return err
	}
	if !finite(r.BudgetUsd) || !finite(monthlyCapUsd) || r.MaxTurns < 0 || r.MaxConcurrent < 0 {
		return fmt.Errorf("run %q: %w: negative or non-finite limit", r.ID, budget.ErrInvalid)
	}
	if r.ID == "" {
		r.ID = newID()
	}
	if r.Day == "" {
		r.Day = r.Started.UTC().Format("2006-01-02")
	}
	keys := []int64{lockKey("run", db.schema, r.Tenant, r.Profile)}
	for _, a := range r.Allowances {
		keys = append(keys, lockKey("day", db.schema, r.Tenant, r.Day, a.Connector))
	}
	// One order for every instance: no two starts wait for each other in a cycle.
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })

	started, sns := ts(r.Started)
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		for i, k := range keys {
			if i > 0 && k == keys[i-1] {
				continue
			}
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, k); err != nil {
				return err
			}
		}
		// Locked: every statement from here sees every run started before ours.
		for _, a := range r.Allowances {
			var over bool
			// Live runs count at their whole per-run figure (they may yet spend it); ended
			// runs at what they recorded: settled, and what they still hold reserved.
			err := tx.QueryRow(ctx, `SELECT coalesce(sum(
					CASE WHEN r.ended IS NULL THEN a.per_run ELSE a.settled + a.reserved END), 0)
					+ $4::numeric > $5::numeric
				FROM runs r JOIN run_allowances a ON a.run_id = r.id
				WHERE r.tenant = $1 AND r.day = $2 AND a.connector = $3`,
				r.Tenant, r.Day, a.Connector, a.PerRun, a.PerDay).Scan(&over)
			if err != nil {
				return err
			}
			if over {
				return fmt.Errorf("run %q, connector %q, day %s: %w", r.ID, a.Connector, r.Day, budget.ErrDayAllowance)
			}
		}
		if r.MaxConcurrent > 0 {
			var live int
			err := tx.QueryRow(ctx, `SELECT count(*) FROM runs WHERE tenant = $1 AND profile = $2 AND ended IS NULL`,
				r.Tenant, r.Profile).Scan(&live)
			if err != nil {
				return err
			}
			if live >= r.MaxConcurrent {
				return fmt.Errorf("run %q, profile %q: %d live: %w", r.ID, r.Profile, live, budget.ErrConcurrentRuns)
			}
		}
		if monthlyCapUsd > 0 {
			var reached bool
			err := tx.QueryRow(ctx, `SELECT coalesce((SELECT usd FROM model_months WHERE tenant = $1 AND month = $2), 0) >= $3::numeric`,
				r.Tenant, month, monthlyCapUsd).Scan(&reached)
			if err != nil {
				return err
			}
			if reached {
				return fmt.Errorf("tenant %q, month %s: %w", r.Tenant, month, budget.ErrMonthlyCap)
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO runs (id, tenant, profile, session, attempt, started, started_ns, day,
				max_concurrent, budget_usd, max_turns, instance)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			r.ID, r.Tenant, r.Profile, r.Session, r.Attempt, started, sns, r.Day, r.MaxConcurrent, r.BudgetUsd, r.MaxTurns, r.Instance)
		if err != nil {
			return err
		}
		for i, a := range r.Allowances {
			_, err := tx.Exec(ctx, `INSERT INTO run_allowances (run_id, connector, ord, unit, per_run, per_day)
				VALUES ($1, $2, $3, $4, $5, $6)`, r.ID, a.Connector, i, a.Unit, a.PerRun, a.PerDay)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if isLedgerError(err) {
		return err
	}
	if err != nil {
		return db.wrap("start run", err)
	}
	r.Ended = time.Time{}
	return nil
}

func isLedgerError(err error) bool {
	for _, e := range []error{budget.ErrNotFound, budget.ErrRunAllowance, budget.ErrDayAllowance,
		budget.ErrConcurrentRuns, budget.ErrMonthlyCap, budget.ErrRunEnded, budget.ErrTurns,
		budget.ErrNotReserved, budget.ErrInvalid} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// EndRun marks a run ended, and closes its allowances to new reservations under their row
// locks (a Reserve that raced it either committed first or finds the allowance closed).
func (db *DB) EndRun(ctx context.Context, id string, at time.Time) error {
	when, ns := ts(orNow(at))
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET ended = $2, ended_ns = $3 WHERE id = $1 AND ended IS NULL`, id, when, ns)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("run %q: %w", id, budget.ErrRunEnded)
		}
		_, err = tx.Exec(ctx, `UPDATE run_allowances SET live = false WHERE run_id = $1`, id)
		return err
	})
	if isLedgerError(err) {
		return err
	}
	return db.wrap("end run", err)
}

// RunStatus returns a run, its allowances and what it has used.
func (db *DB) RunStatus(ctx context.Context, id string) (*budget.RunStatus, error) {
	var (
		st      budget.RunStatus
		r       = &st.Run
		started time.Time
		ended   *time.Time
		sns, ns int16
	)
	err := db.pool.QueryRow(ctx, `SELECT id, tenant, profile, session, attempt, started, started_ns, day,
			ended, ended_ns, max_concurrent, budget_usd, max_turns, turns, model_usd, instance
		FROM runs WHERE id = $1`, id).Scan(&r.ID, &r.Tenant, &r.Profile, &r.Session, &r.Attempt, &started, &sns,
		&r.Day, &ended, &ns, &r.MaxConcurrent, &r.BudgetUsd, &r.MaxTurns, &st.Turns, &st.ModelUsd, &r.Instance)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("run %q: %w", id, budget.ErrNotFound)
	}
	if err != nil {
		return nil, db.wrap("run status", err)
	}
	r.Started, r.Ended = fromTS(&started, sns), fromTS(ended, ns)
	rows, err := db.pool.Query(ctx, `SELECT connector, unit, per_run, per_day, reserved, settled
		FROM run_allowances WHERE run_id = $1 ORDER BY ord`, id)
	if err != nil {
		return nil, db.wrap("run status", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s budget.Spent
		if err := rows.Scan(&s.Connector, &s.Unit, &s.PerRun, &s.PerDay, &s.Reserved, &s.Settled); err != nil {
			return nil, db.wrap("run status", err)
		}
		st.Spent = append(st.Spent, s)
		r.Allowances = append(r.Allowances, budget.Allowance{Connector: s.Connector, Unit: s.Unit, PerRun: s.PerRun, PerDay: s.PerDay})
	}
	if err := rows.Err(); err != nil {
		return nil, db.wrap("run status", err)
	}
	return &st, nil
}

// Reserve holds an amount for a call in one statement: the allowance row is updated only where
// the run is live and reserved + settled + amount stays within the per-run figure (PostgreSQL
// re-evaluates that condition on the newest row version once it holds the row lock, so under
// READ COMMITTED concurrent reservations queue on the row and each sees the others' amounts),
// and the reservation is inserted from the updated row, so both happen or neither does.
//
// An empty ID is filled in, a zero Created is now; State becomes Reserved.
func (db *DB) Reserve(ctx context.Context, r *budget.Reservation) error {
	if !finite(r.Amount) {
		return fmt.Errorf("reservation on run %q: %w: amount %v", r.Run, budget.ErrInvalid, r.Amount)
	}
	if r.ID == "" {
		r.ID = newID()
	}
	r.Created = orNow(r.Created)
	created, cns := ts(r.Created)
	var ok bool
	err := db.pool.QueryRow(ctx, `WITH held AS (
			UPDATE run_allowances SET reserved = reserved + $4
			WHERE run_id = $2 AND connector = $3 AND live AND reserved + settled + $4 <= per_run
			RETURNING run_id, connector
		), ins AS (
			INSERT INTO reservations (id, run_id, connector, amount, state, created, created_ns, call_id)
			SELECT $1, run_id, connector, $4, 'reserved', $5, $6, $7 FROM held
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM ins)`, r.ID, r.Run, r.Connector, r.Amount, created, cns, r.Call).Scan(&ok)
	if err != nil {
		return db.wrap("reserve", err)
	}
	if ok {
		r.State, r.Actual, r.Done = budget.Reserved, 0, time.Time{}
		return nil
	}
	// Nothing was reserved; say why. (The reason is read after the fact and may have changed
	// since, but the refusal itself was atomic.)
	var live, known *bool
	err = db.pool.QueryRow(ctx, `SELECT r.ended IS NULL,
			(SELECT true FROM run_allowances a WHERE a.run_id = r.id AND a.connector = $2)
		FROM runs r WHERE r.id = $1`, r.Run, r.Connector).Scan(&live, &known)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("run %q: %w", r.Run, budget.ErrRunEnded)
	case err != nil:
		return db.wrap("reserve", err)
	case !*live:
		return fmt.Errorf("run %q: %w", r.Run, budget.ErrRunEnded)
	case known == nil:
		return fmt.Errorf("run %q has no allowance for %q: %w", r.Run, r.Connector, budget.ErrRunAllowance)
	default:
		return fmt.Errorf("run %q, connector %q, amount %v: %w", r.Run, r.Connector, r.Amount, budget.ErrRunAllowance)
	}
}

// Settle records what a reserved call cost, in one statement: the reservation moves out of
// reserved (only one Settle or Release can), and the allowance row trades its hold for the
// actual cost.
func (db *DB) Settle(ctx context.Context, id string, actual float64, at time.Time) error {
	if !finite(actual) {
		return fmt.Errorf("reservation %q: %w: actual %v", id, budget.ErrInvalid, actual)
	}
	return db.finish(ctx, "settle", id, budget.Settled, actual, at)
}

// Release gives a reservation back: the call did not run.
func (db *DB) Release(ctx context.Context, id string, at time.Time) error {
	return db.finish(ctx, "release", id, budget.Released, 0, at)
}

func (db *DB) finish(ctx context.Context, op, id string, state budget.ReservationState, actual float64, at time.Time) error {
	when, ns := ts(orNow(at))
	settled := state == budget.Settled
	var ok bool
	err := db.pool.QueryRow(ctx, `WITH done AS (
			UPDATE reservations SET state = $2, actual = $3, done = $4, done_ns = $5
			WHERE id = $1 AND state = 'reserved'
			RETURNING run_id, connector, amount
		), moved AS (
			UPDATE run_allowances a
			SET reserved = a.reserved - done.amount,
			    settled = a.settled + $3,
			    settled_n = a.settled_n + CASE WHEN $6 THEN 1 ELSE 0 END
			FROM done WHERE a.run_id = done.run_id AND a.connector = done.connector
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM moved)`, id, string(state), actual, when, ns, settled).Scan(&ok)
	if err != nil {
		return db.wrap(op, err)
	}
	if ok {
		return nil
	}
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM reservations WHERE id = $1)`, id).Scan(&exists); err != nil {
		return db.wrap(op, err)
	}
	if !exists {
		return fmt.Errorf("reservation %q: %w", id, budget.ErrNotFound)
	}
	return fmt.Errorf("reservation %q: %w", id, budget.ErrNotReserved)
}

// RecoverReservations settles, at the amount reserved, every open reservation made before the
// given time, in one statement. Recoveries are serialised by an advisory lock (two instances
// recovering at once would otherwise lock the same rows in different orders); each
// reservation is settled once whoever recovers it, so recovering twice is harmless.
func (db *DB) RecoverReservations(ctx context.Context, before, at time.Time) (int, error) {
	b, bns := ts(before)
	when, ns := ts(orNow(at))
	var n int
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, db.recoverKey); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `WITH done AS (
				UPDATE reservations SET state = 'settled', actual = amount, done = $3, done_ns = $4
				WHERE state = 'reserved' AND (created, created_ns) < ($1, $2)
				RETURNING run_id, connector, amount
			), per AS (
				SELECT run_id, connector, sum(amount) AS amount, count(*) AS n FROM done GROUP BY run_id, connector
			), moved AS (
				UPDATE run_allowances a
				SET reserved = a.reserved - per.amount, settled = a.settled + per.amount, settled_n = a.settled_n + per.n
				FROM per WHERE a.run_id = per.run_id AND a.connector = per.connector
				RETURNING 1
			)
			SELECT (SELECT count(*) FROM done)::int`, b, bns, when, ns).Scan(&n)
	})
	if err != nil {
		return 0, db.wrap("recover reservations", err)
	}
	return n, nil
}

// Turn counts a model turn in one statement that checks the run is live and has a turn left.
func (db *DB) Turn(ctx context.Context, runID string) (int, error) {
	var n int
	err := db.pool.QueryRow(ctx, `UPDATE runs SET turns = turns + 1
		WHERE id = $1 AND ended IS NULL AND (max_turns = 0 OR turns < max_turns)
		RETURNING turns`, runID).Scan(&n)
	if err == nil {
		return n, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, db.wrap("turn", err)
	}
	var live bool
	err = db.pool.QueryRow(ctx, `SELECT ended IS NULL FROM runs WHERE id = $1`, runID).Scan(&live)
	switch {
	case errors.Is(err, pgx.ErrNoRows) || err == nil && !live:
		return 0, fmt.Errorf("run %q: %w", runID, budget.ErrRunEnded)
	case err != nil:
		return 0, db.wrap("turn", err)
	}
	return 0, fmt.Errorf("run %q: %w", runID, budget.ErrTurns)
}

// ModelSpend adds model dollars to the tenant's month and, when runID is not empty, to the run,
// in one transaction. An unknown run is ErrNotFound and records nothing.
func (db *DB) ModelSpend(ctx context.Context, tenant, runID string, usd float64, month string) (runUsd, monthUsd float64, err error) {
	if !finite(usd) {
		return 0, 0, fmt.Errorf("model spend: %w: %v", budget.ErrInvalid, usd)
	}
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		if runID != "" {
			err := tx.QueryRow(ctx, `UPDATE runs SET model_usd = model_usd + $2 WHERE id = $1 RETURNING model_usd`,
				runID, usd).Scan(&runUsd)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("run %q: %w", runID, budget.ErrNotFound)
			}
			if err != nil {
				return err
			}
		}
		return tx.QueryRow(ctx, `INSERT INTO model_months (tenant, month, usd) VALUES ($1, $2, $3)
			ON CONFLICT (tenant, month) DO UPDATE SET usd = model_months.usd + excluded.usd
			RETURNING usd`, tenant, month, usd).Scan(&monthUsd)
	})
	if isLedgerError(err) {
		return 0, 0, err
	}
	if err != nil {
		return 0, 0, db.wrap("model spend", err)
	}
	return runUsd, monthUsd, nil
}

// MonthSpend returns a tenant's model dollars in a month (0 if none were recorded).
func (db *DB) MonthSpend(ctx context.Context, tenant, month string) (float64, error) {
	var usd float64
	err := db.pool.QueryRow(ctx, `SELECT coalesce((SELECT usd FROM model_months WHERE tenant = $1 AND month = $2), 0)`,
		tenant, month).Scan(&usd)
	if err != nil {
		return 0, db.wrap("month spend", err)
	}
	return usd, nil
}

// DaySpend returns the model dollars of a profile's runs in a tenant on a day.
func (db *DB) DaySpend(ctx context.Context, tenant, profile, day string) (float64, error) {
	var usd float64
	err := db.pool.QueryRow(ctx, `SELECT coalesce(sum(model_usd), 0)::float8 FROM runs WHERE tenant = $1 AND profile = $2 AND day = $3`,
		tenant, profile, day).Scan(&usd)
	if err != nil {
		return 0, db.wrap("day spend", err)
	}
	return usd, nil
}
