package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/instance"
)

var _ instance.Store = (*DB)(nil)

// Beat records an instance's heartbeat, registering it if it is not registered.
func (db *DB) Beat(ctx context.Context, inst *instance.Instance) (registered bool, err error) {
	if inst.ID == "" {
		return false, errors.New("instance heartbeat: no id")
	}
	err = db.tx(ctx, func(*sql.Conn) error {
		res, err := db.ws.updateBeat.ExecContext(ctx, formatTime(inst.Heartbeat), inst.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		registered = true
		_, err = db.ws.insertInstance.ExecContext(ctx, inst.ID, formatTime(inst.Started), formatTime(inst.Heartbeat))
		return err
	})
	if err != nil {
		return false, db.fail("heartbeat of instance "+inst.ID, err)
	}
	return registered, nil
}

// Recover frees what dead instances held, in one write transaction: SQLite's write lock
// serialises it with every other writer, in this process and in any other on the file.
func (db *DB) Recover(ctx context.Context, r instance.Recovery) (*instance.Recovered, error) {
	if r.At.IsZero() {
		r.At = time.Now()
	}
	// A reservation is settled or released by whether its call's decision is on record: every
	// decision journaled is indexed first.
	if err := db.indexJournal(ctx); err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	stale, at := formatTime(r.StaleBefore), formatTime(r.At)
	var got *instance.Recovered
	err := db.tx(ctx, func(*sql.Conn) error {
		got = &instance.Recovered{}
		type open struct {
			id     string
			amount float64
			settle bool
		}
		var opens []open
		rows, err := db.ws.deadReservations.QueryContext(ctx, stale, r.Self, r.Leaving)
		if err != nil {
			return err
		}
		for rows.Next() {
			var o open
			if err := rows.Scan(&o.id, &o.amount, &o.settle); err != nil {
				rows.Close()
				return err
			}
			opens = append(opens, o)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, o := range opens {
			state, actual := budget.Released, 0.0
			if o.settle {
				state, actual = budget.Settled, o.amount
			}
			var (
				run, connector string
				amount         float64
			)
			if err := db.ws.closeReservation.QueryRowContext(ctx, string(state), actual, at, o.id).Scan(&run, &connector, &amount); err != nil {
				return fmt.Errorf("reservation %s: %w", o.id, err)
			}
			if o.settle {
				_, err = db.ws.settleAllowance.ExecContext(ctx, run, connector, amount, actual)
				got.Settled++
			} else {
				_, err = db.ws.releaseAllowance.ExecContext(ctx, run, connector, amount)
				got.Released++
			}
			if err != nil {
				return err
			}
		}

		rows, err = db.ws.deadRuns.QueryContext(ctx, stale, r.Self, r.Leaving, at)
		if err != nil {
			return err
		}
		for rows.Next() {
			var run budget.Run
			if err := rows.Scan(&run.ID, &run.Tenant, &run.Profile, &run.Session, &run.Instance); err != nil {
				rows.Close()
				return err
			}
			run.Ended = r.At
			got.Runs = append(got.Runs, run)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, run := range got.Runs {
			if _, err := db.ws.endRunAllowances.ExecContext(ctx, run.ID); err != nil {
				return err
			}
		}

		rows, err = db.ws.deadCards.QueryContext(ctx, stale, r.Self, r.Leaving, at)
		if err != nil {
			return err
		}
		for rows.Next() {
			c, err := scanCard(rows)
			if err != nil {
				rows.Close()
				return err
			}
			got.Cards = append(got.Cards, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}

		rows, err = db.ws.forgetDead.QueryContext(ctx, stale, r.Self, r.Leaving)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			got.Instances = append(got.Instances, id)
		}
		rows.Close()
		return rows.Err()
	})
	if err != nil {
		return nil, db.fail("recover what stopped instances held", err)
	}
	// Watchers in this process (a leaving instance's own) learn that their cards expired.
	for _, c := range got.Cards {
		db.hub.fire(c.ID)
	}
	return got, nil
}
