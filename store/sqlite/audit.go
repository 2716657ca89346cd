package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/wardenhq/warden/audit"
)

const eventColumns = `id, time, kind, call_id, tenant, session, principal, role, profile, run, tool, digest,
	decision, blockers, rules, approver, spend, outcome, error, policy_revision, channel, harness`

// jsonColumn is v as JSON text, or NULL when empty.
func jsonColumn(v any, empty bool) (any, error) {
	if empty {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// Append writes one event, committed before it returns. Concurrent appends are committed
// together (group commit): an append that arrives while another batch is being written is
// written with the next one, in one transaction, so that under load one commit serves many
// decisions and a lone append waits for nobody.
func (db *DB) Append(ctx context.Context, e *audit.Event) error {
	return db.appends.Do(pendingEvent{ctx, e})
}

// maxAppendBatch bounds the appends one transaction commits.
const maxAppendBatch = 256

// pendingEvent is an append waiting for its batch.
type pendingEvent struct {
	ctx context.Context
	e   *audit.Event
}

// appendBatch writes a batch of appends in one transaction, under the first one's context
// without its cancellation: the others wait for it too.
func (db *DB) appendBatch(batch []pendingEvent) error {
	if len(batch) == 1 {
		return db.appendOne(batch[0].ctx, batch[0].e)
	}
	events := make([]*audit.Event, len(batch))
	for i, p := range batch {
		events[i] = p.e
	}
	return db.AppendAll(context.WithoutCancel(batch[0].ctx), events)
}

// AppendAll appends several events in one transaction: all of them or none.
func (db *DB) AppendAll(ctx context.Context, events []*audit.Event) error {
	type row struct {
		time                   string
		blockers, rules, spend any
	}
	rows := make([]row, len(events))
	for i, e := range events {
		if e.Time.IsZero() {
			e.Time = time.Now()
		}
		var err error
		rows[i].time = formatTime(e.Time)
		if rows[i].blockers, err = jsonColumn(e.Blockers, e.Blockers == nil); err == nil {
			if rows[i].rules, err = jsonColumn(e.Rules, e.Rules == nil); err == nil {
				rows[i].spend, err = jsonColumn(e.Spend, e.Spend == nil)
			}
		}
		if err != nil {
			return fmt.Errorf("append audit events: %w", err)
		}
	}
	ids := make([]int64, len(events))
	err := db.tx(ctx, func(w *sql.Conn) error {
		for i, e := range events {
			res, err := db.ws.appendEvent.ExecContext(ctx, rows[i].time, e.Kind, e.CallID, e.Tenant, e.Session,
				e.Principal, e.Role, e.Profile, e.Run, e.Tool, e.Digest, e.Decision, rows[i].blockers, rows[i].rules,
				e.Approver, rows[i].spend, e.Outcome, e.Error, e.PolicyRevision, e.Channel, e.Harness)
			if err != nil {
				return err
			}
			if ids[i], err = res.LastInsertId(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return db.fail("append audit events", err)
	}
	for i, e := range events {
		e.ID = ids[i]
	}
	return nil
}

// Query returns matching events in ID order. Since is inclusive, Until exclusive.
func (db *DB) Query(ctx context.Context, f audit.Filter) ([]*audit.Event, error) {
	if db.j != nil {
		// What this process journaled before the query is in it.
		if err := db.j.sync(ctx); err != nil {
			return nil, fmt.Errorf("query audit events: %w", err)
		}
	}
	var (
		where []string
		args  []any
	)
	eq := func(col, v string) {
		if v != "" {
			where, args = append(where, col+" = ?"), append(args, v)
		}
	}
	eq("tenant", f.Tenant)
	eq("session", f.Session)
	eq("tool", f.Tool)
	eq("decision", f.Decision)
	eq("kind", f.Kind)
	eq("call_id", f.CallID)
	eq("harness", f.Harness)
	if !f.Since.IsZero() {
		where, args = append(where, "time >= ?"), append(args, formatTime(f.Since))
	}
	if !f.Until.IsZero() {
		where, args = append(where, "time < ?"), append(args, formatTime(f.Until))
	}
	if f.AfterID > 0 {
		where, args = append(where, "id > ?"), append(args, f.AfterID)
	}
	q := "SELECT " + eventColumns + " FROM audit_events"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id"
	if f.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, f.Limit)
	}
	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.fail("query audit events", err)
	}
	defer rows.Close()
	var events []*audit.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, db.fail("query audit events", err)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, db.fail("query audit events", err)
	}
	return events, nil
}

func scanEvent(row scanner) (*audit.Event, error) {
	var (
		e                      audit.Event
		when                   sql.NullString
		blockers, rules, spend sql.NullString
	)
	if err := row.Scan(&e.ID, &when, &e.Kind, &e.CallID, &e.Tenant, &e.Session, &e.Principal, &e.Role,
		&e.Profile, &e.Run, &e.Tool, &e.Digest, &e.Decision, &blockers, &rules, &e.Approver, &spend,
		&e.Outcome, &e.Error, &e.PolicyRevision, &e.Channel, &e.Harness); err != nil {
		return nil, err
	}
	var err error
	if e.Time, err = parseTime(when); err != nil {
		return nil, err
	}
	if blockers.Valid {
		if err := json.Unmarshal([]byte(blockers.String), &e.Blockers); err != nil {
			return nil, fmt.Errorf("event %d blockers: %w", e.ID, err)
		}
	}
	if rules.Valid {
		if err := json.Unmarshal([]byte(rules.String), &e.Rules); err != nil {
			return nil, fmt.Errorf("event %d rules: %w", e.ID, err)
		}
	}
	if spend.Valid {
		e.Spend = new(audit.Spend)
		if err := json.Unmarshal([]byte(spend.String), e.Spend); err != nil {
			return nil, fmt.Errorf("event %d spend: %w", e.ID, err)
		}
	}
	return &e, nil
}

// appendOne writes one event in its own (autocommit) statement.
func (db *DB) appendOne(ctx context.Context, e *audit.Event) error {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	blockers, err := jsonColumn(e.Blockers, e.Blockers == nil)
	if err != nil {
		return fmt.Errorf("append audit event: %w", err)
	}
	rules, err := jsonColumn(e.Rules, e.Rules == nil)
	if err != nil {
		return fmt.Errorf("append audit event: %w", err)
	}
	spend, err := jsonColumn(e.Spend, e.Spend == nil)
	if err != nil {
		return fmt.Errorf("append audit event: %w", err)
	}
	var id int64
	err = db.write(ctx, func(*sql.Conn) error {
		res, err := db.ws.appendEvent.ExecContext(ctx, formatTime(e.Time), e.Kind, e.CallID, e.Tenant, e.Session,
			e.Principal, e.Role, e.Profile, e.Run, e.Tool, e.Digest, e.Decision, blockers, rules, e.Approver,
			spend, e.Outcome, e.Error, e.PolicyRevision, e.Channel, e.Harness)
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
