package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/instance"
)

var _ instance.Store = (*DB)(nil)

// Beat records an instance's heartbeat, registering it if it is not registered.
func (db *DB) Beat(ctx context.Context, inst *instance.Instance) (registered bool, err error) {
	if inst.ID == "" {
		return false, errors.New("postgres: instance heartbeat: no id")
	}
	// xmax = 0 only on a row this statement inserted.
	err = db.pool.QueryRow(ctx, `INSERT INTO instances (id, started, heartbeat) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET heartbeat = excluded.heartbeat
		RETURNING xmax = 0`, inst.ID, inst.Started, inst.Heartbeat).Scan(&registered)
	if err != nil {
		return false, db.wrap("heartbeat of instance "+inst.ID, err)
	}
	return registered, nil
}

// liveInstances selects the instances recovery leaves alone: $1 is the staleness bound, $2 the
// recovering instance, $3 whether it is leaving. Every other name on a row (stale, shut down,
// never seen) is dead.
const liveInstances = `SELECT id FROM instances WHERE (heartbeat >= $1 OR id = $2) AND NOT (id = $2 AND $3)`

// Recover frees what dead instances held, in one transaction. Recoveries are serialised by the
// advisory lock RecoverReservations takes, and every row moves only from the state it was read
// in (a run from live, a card from pending, a reservation from reserved), so a row is freed
// once whoever recovers it. Runs are ended before their reservations are resolved, the order
// EndRun and Settle take their locks in.
func (db *DB) Recover(ctx context.Context, r instance.Recovery) (*instance.Recovered, error) {
	stale := r.StaleBefore.Truncate(time.Microsecond)
	when, ns := ts(orNow(r.At))
	var got *instance.Recovered
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		got = &instance.Recovered{}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, db.recoverKey); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `WITH ended AS (
				UPDATE runs SET ended = $4, ended_ns = $5
				WHERE ended IS NULL AND instance <> '' AND instance NOT IN (`+liveInstances+`)
				RETURNING id, tenant, profile, session, instance
			), closed AS (
				UPDATE run_allowances SET live = false WHERE run_id IN (SELECT id FROM ended) RETURNING 1
			)
			SELECT id, tenant, profile, session, instance FROM ended ORDER BY id`, stale, r.Self, r.Leaving, when, ns)
		if err != nil {
			return err
		}
		got.Runs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (budget.Run, error) {
			run := budget.Run{Ended: orNow(r.At)}
			err := row.Scan(&run.ID, &run.Tenant, &run.Profile, &run.Session, &run.Instance)
			return run, err
		})
		if err != nil {
			return err
		}

		// A reservation is settled at its amount when its call's decision to run is on record
		// (the call may have run), or when it names no call (made before calls were recorded on
		// reservations); else released: the gate records the decision before anything runs.
		err = tx.QueryRow(ctx, `WITH pending AS (
				SELECT v.id, v.call_id = '' OR EXISTS (SELECT 1 FROM audit_events e
					WHERE e.call_id = v.call_id AND e.kind = 'decision' AND e.decision = 'allow') AS settle
				FROM reservations v JOIN runs u ON u.id = v.run_id
				WHERE v.state = 'reserved' AND u.instance <> '' AND u.instance NOT IN (`+liveInstances+`)
			), done AS (
				UPDATE reservations v
				SET state = CASE WHEN o.settle THEN 'settled' ELSE 'released' END,
				    actual = CASE WHEN o.settle THEN v.amount ELSE 0 END, done = $4, done_ns = $5
				FROM pending o WHERE v.id = o.id AND v.state = 'reserved'
				RETURNING v.run_id, v.connector, v.amount, o.settle
			), per AS (
				SELECT run_id, connector, sum(amount) AS amount,
					coalesce(sum(amount) FILTER (WHERE settle), 0) AS settled, count(*) FILTER (WHERE settle) AS n
				FROM done GROUP BY run_id, connector
			), moved AS (
				UPDATE run_allowances a
				SET reserved = a.reserved - per.amount, settled = a.settled + per.settled, settled_n = a.settled_n + per.n
				FROM per WHERE a.run_id = per.run_id AND a.connector = per.connector
				RETURNING 1
			)
			SELECT (SELECT count(*) FROM done WHERE settle)::int, (SELECT count(*) FROM done WHERE NOT settle)::int`,
			stale, r.Self, r.Leaving, when, ns).Scan(&got.Settled, &got.Released)
		if err != nil {
			return err
		}

		rows, err = tx.Query(ctx, `UPDATE cards SET state = 'expired', channel = 'canceled', answered = $4, answered_ns = $5
			WHERE state = 'pending' AND instance <> '' AND instance NOT IN (`+liveInstances+`)
			RETURNING `+cardColumns, stale, r.Self, r.Leaving, when, ns)
		if err != nil {
			return err
		}
		got.Cards, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*approval.Card, error) { return scanCard(row) })
		if err != nil {
			return err
		}
		for _, c := range got.Cards {
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, db.channel, c.ID); err != nil {
				return err
			}
		}

		rows, err = tx.Query(ctx, `DELETE FROM instances WHERE id NOT IN (`+liveInstances+`) RETURNING id`, stale, r.Self, r.Leaving)
		if err != nil {
			return err
		}
		got.Instances, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, db.wrap("recover what stopped instances held", err)
	}
	return got, nil
}
