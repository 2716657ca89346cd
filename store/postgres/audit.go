package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/audit"
)

// Append records an event and returns once it is committed, with its ID set (and its Time, if
// it had none, set to now).
//
// IDs come from a sequence, and a sequence hands out numbers when rows are inserted, not when
// they commit: on its own, an event with ID 7 could become visible after one with ID 8, and a
// reader paging with AfterID = 8 would never see it. So each append holds a shared advisory
// lock from before it takes its ID until it commits (one statement, so the lock and the
// implicit transaction end together), and Query takes the same lock exclusively for a moment
// to learn the highest ID handed out: when it gets the lock, every append that took an ID
// before has committed or rolled back. Appends do not wait for each other, only, briefly, for
// a Query's barrier.
func (db *DB) Append(ctx context.Context, e *audit.Event) error {
	id, err := db.insertEvent(ctx, db.pool, e)
	if err != nil {
		return db.wrap("append audit event", err)
	}
	e.ID = id
	if s := db.signer.Load(); s != nil {
		s.Appended(ctx, []*audit.Event{e})
	}
	return nil
}

// AppendAll appends several events in one transaction: all of them or none. The shared
// advisory lock each insert takes is held until the transaction commits, as for Append.
func (db *DB) AppendAll(ctx context.Context, events []*audit.Event) error {
	ids := make([]int64, len(events))
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return db.wrap("append audit events", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
	if err := db.lockHeads(ctx, tx, events); err != nil {
		return db.wrap("append audit events", err)
	}
	for i, e := range events {
		if ids[i], err = db.insertEvent(ctx, tx, e); err != nil {
			return db.wrap("append audit events", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		for _, e := range events {
			e.PrevHash, e.Hash = "", ""
		}
		return db.wrap("append audit events", err)
	}
	for i, e := range events {
		e.ID = ids[i]
	}
	if s := db.signer.Load(); s != nil {
		s.Appended(ctx, events)
	}
	return nil
}

// lockHeads takes, for a batch of several tenants, the advisory lock and then the tenants'
// chain heads in tenant order (creating the missing ones), so that two batches never wait for
// each other's heads in a cycle.
func (db *DB) lockHeads(ctx context.Context, tx pgx.Tx, events []*audit.Event) error {
	var tenants []string
	for _, e := range events {
		if !slices.Contains(tenants, e.Tenant) {
			tenants = append(tenants, e.Tenant)
		}
	}
	if len(tenants) < 2 {
		return nil
	}
	slices.Sort(tenants)
	_, err := tx.Exec(ctx, `WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared($1))
		INSERT INTO audit_chain (tenant, event, hash)
		SELECT t, 0, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea
		FROM held, unnest($2::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n
		ON CONFLICT (tenant) DO NOTHING`, db.auditKey, tenants)
	if err == nil {
		_, err = tx.Exec(ctx, `SELECT 1 FROM audit_chain WHERE tenant = ANY($1) ORDER BY tenant FOR UPDATE`, tenants)
	}
	return err
}

// rowQuerier is a pool or a transaction.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (db *DB) insertEvent(ctx context.Context, q rowQuerier, e *audit.Event) (int64, error) {
	var blockers, rules, spend []byte
	var err error
	if e.Blockers != nil {
		if blockers, err = json.Marshal(e.Blockers); err != nil {
			return 0, err
		}
	}
	if e.Rules != nil {
		if rules, err = json.Marshal(e.Rules); err != nil {
			return 0, err
		}
	}
	if e.Spend != nil {
		if spend, err = json.Marshal(e.Spend); err != nil {
			return 0, err
		}
	}
	e.Time = orNow(e.Time)
	t, tns := ts(e.Time)
	content := audit.ContentHash(e)
	var (
		id         int64
		prev, hash []byte
	)
	// The advisory lock first, then, in audit_link, the tenant's chain head and the ID: every
	// appender takes them in that order, so none waits for a lock another holds while it
	// holds one that other waits for.
	err = q.QueryRow(ctx, `WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared($1)),
		link AS MATERIALIZED (SELECT audit_link($6, $24) AS l FROM held)
		INSERT INTO audit_events (id, time, time_ns, kind, call_id, tenant, session, principal, role,
			profile, run, tool, digest, decision, blockers, rules, approver, spend, outcome, error, policy_revision, channel, harness,
			prev_hash, hash)
		SELECT (l).out_id, $2, $3, $4, $5, $6, $7, $8, $9,
			$10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, (l).out_prev, (l).out_hash FROM link
		RETURNING id, prev_hash, hash`,
		db.auditKey, t, tns, e.Kind, e.CallID, e.Tenant, e.Session, e.Principal, e.Role,
		e.Profile, e.Run, e.Tool, e.Digest, e.Decision, blockers, rules, e.Approver, spend, e.Outcome, e.Error,
		e.PolicyRevision, e.Channel, e.Harness, content[:]).Scan(&id, &prev, &hash)
	if err == nil {
		e.PrevHash, e.Hash = audit.HashBytes(prev), audit.HashBytes(hash)
	}
	return id, err
}

// horizon waits until every append that has taken an ID has committed or rolled back, and
// returns the highest ID handed out (0 if none). Every event with an ID up to it is then
// visible to any statement that starts afterwards, or never will be.
func (db *DB) horizon(ctx context.Context) (int64, error) {
	var last *int64
	err := db.pool.QueryRow(ctx, `WITH barrier AS MATERIALIZED (SELECT pg_advisory_xact_lock($1))
		SELECT pg_sequence_last_value('audit_events_id_seq') FROM barrier`, db.auditKey).Scan(&last)
	if err != nil || last == nil {
		return 0, err
	}
	return *last, nil
}

// Query returns matching events in ID order. Since is inclusive and Until exclusive; Limit 0
// means no limit.
//
// Paging guarantee: Query returns only events whose IDs are at or below the horizon it read
// (see Append), and every event at or below that horizon that will ever exist is visible to
// it. So a reader that pages with AfterID set to the last ID it received never skips an event,
// whichever instances appended them and in whatever order their transactions committed. IDs
// are not dense: an append that failed leaves a gap.
func (db *DB) Query(ctx context.Context, f audit.Filter) ([]*audit.Event, error) {
	hi, err := db.horizon(ctx)
	if err != nil {
		return nil, db.wrap("query audit events", err)
	}
	var (
		where = []string{"id > $1", "id <= $2"}
		args  = []any{f.AfterID, hi}
	)
	eq := func(col, v string) {
		if v != "" {
			args = append(args, v)
			where = append(where, col+" = $"+strconv.Itoa(len(args)))
		}
	}
	eq("tenant", f.Tenant)
	eq("session", f.Session)
	eq("tool", f.Tool)
	eq("decision", f.Decision)
	eq("kind", f.Kind)
	eq("call_id", f.CallID)
	eq("harness", f.Harness)
	cmpTime := func(op string, t time.Time) {
		if !t.IsZero() {
			u, ns := ts(t)
			args = append(args, u, ns)
			where = append(where, fmt.Sprintf("(time, time_ns) %s ($%d, $%d)", op, len(args)-1, len(args)))
		}
	}
	cmpTime(">=", f.Since)
	cmpTime("<", f.Until)
	q := `SELECT id, time, time_ns, kind, call_id, tenant, session, principal, role, profile, run, tool, digest,
		decision, blockers, rules, approver, spend, outcome, error, policy_revision, channel, harness, prev_hash, hash
		FROM audit_events WHERE ` + strings.Join(where, " AND ") + ` ORDER BY id`
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += " LIMIT $" + strconv.Itoa(len(args))
	}
	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, db.wrap("query audit events", err)
	}
	defer rows.Close()
	var events []*audit.Event
	for rows.Next() {
		var (
			e                      audit.Event
			t                      time.Time
			tns                    int16
			blockers, rules, spend []byte
			prev, hash             []byte
		)
		err := rows.Scan(&e.ID, &t, &tns, &e.Kind, &e.CallID, &e.Tenant, &e.Session, &e.Principal, &e.Role,
			&e.Profile, &e.Run, &e.Tool, &e.Digest, &e.Decision, &blockers, &rules, &e.Approver, &spend,
			&e.Outcome, &e.Error, &e.PolicyRevision, &e.Channel, &e.Harness, &prev, &hash)
		if err != nil {
			return nil, db.wrap("query audit events", err)
		}
		e.PrevHash, e.Hash = audit.HashBytes(prev), audit.HashBytes(hash)
		e.Time = fromTS(&t, tns)
		if err := unmarshalNull(blockers, &e.Blockers); err != nil {
			return nil, db.wrap("query audit events", err)
		}
		if err := unmarshalNull(rules, &e.Rules); err != nil {
			return nil, db.wrap("query audit events", err)
		}
		if err := unmarshalNull(spend, &e.Spend); err != nil {
			return nil, db.wrap("query audit events", err)
		}
		events = append(events, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, db.wrap("query audit events", err)
	}
	return events, nil
}

func unmarshalNull(b []byte, v any) error {
	if b == nil {
		return nil
	}
	return json.Unmarshal(b, v)
}
