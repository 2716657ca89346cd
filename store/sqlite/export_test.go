package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/internal/group"
)

// UnchainedAppender returns an append as the store made it before the hash chain (schema
// version 9): through the same group commit, a lone event in one autocommit INSERT with the
// ID SQLite picks, no hashes. It exists for BenchmarkAuditChainCost's baseline only: it writes
// events that break db's chains.
func (db *DB) UnchainedAppender(ctx context.Context) (func(context.Context, *audit.Event) error, error) {
	var ins *sql.Stmt
	err := db.write(ctx, func(w *sql.Conn) error {
		var err error
		ins, err = w.PrepareContext(ctx, `INSERT INTO audit_events (time, kind, call_id, tenant, session, principal, role,
			profile, run, tool, digest, decision, blockers, rules, approver, spend, outcome, error, policy_revision, channel, harness)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		return err
	})
	if err != nil {
		return nil, err
	}
	one := func(ctx context.Context, e *audit.Event) error {
		if e.Time.IsZero() {
			e.Time = time.Now()
		}
		r, err := newEventRow(e)
		if err != nil {
			return fmt.Errorf("append audit event: %w", err)
		}
		var id int64
		err = db.write(ctx, func(*sql.Conn) error {
			res, err := ins.ExecContext(ctx, r.time, e.Kind, e.CallID, e.Tenant, e.Session,
				e.Principal, e.Role, e.Profile, e.Run, e.Tool, e.Digest, e.Decision, r.blockers, r.rules, e.Approver,
				r.spend, e.Outcome, e.Error, e.PolicyRevision, e.Channel, e.Harness)
			if err != nil {
				return err
			}
			id, err = res.LastInsertId()
			return err
		})
		if err != nil {
			return db.fail("append audit event", err)
		}
		e.ID = id
		return nil
	}
	g := group.New(1, func(batch []pendingEvent) error { return one(batch[0].ctx, batch[0].e) })
	return func(ctx context.Context, e *audit.Event) error { return g.Do(pendingEvent{ctx, e}) }, nil
}
