package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/audit"
)

// Append records an event and returns once it is committed, with its ID set (and its Time, if
// it had none, set to now), linked into its tenant's hash chain (audit.Link).
//
// IDs come from a sequence, and a sequence hands out numbers when rows are inserted, not when
// they commit: on its own, an event with ID 7 could become visible after one with ID 8, and a
// reader paging with AfterID = 8 would never see it. So each append holds a shared advisory
// lock from before it takes its ID until it commits (one statement, so the lock and the
// implicit transaction end together), and Query takes the same lock exclusively for a moment
// to learn the highest ID handed out: when it gets the lock, every append that took an ID
// before has committed or rolled back. Appends wait only, briefly, for a Query's barrier, and
// for the appends of the same tenant, whose chain head each locks until it commits.
//
// Because a tenant's appends commit one after another, concurrent appends of one instance are
// committed together (group commit, as on SQLite): those that arrive while a batch is being
// written go in the next one, one transaction and one WAL flush.
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

// appendBatch writes a batch of appends: a lone one in one statement, several in one
// transaction under the first one's context without its cancellation.
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

// appendOne appends one event in one statement; the first event of a tenant first creates
// its chain head.
func (db *DB) appendOne(ctx context.Context, e *audit.Event) error {
	args, err := eventArgs(db.auditKey, e)
	if err != nil {
		return fmt.Errorf("append audit event: %w", err)
	}
	err = db.linkRow(db.pool.QueryRow(ctx, linkEvent, args...), e)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err = db.pool.Exec(ctx, createHeads, db.auditKey, []string{e.Tenant}); err == nil {
			err = db.linkRow(db.pool.QueryRow(ctx, linkEvent, args...), e)
		}
	}
	if err != nil {
		e.ID, e.PrevHash, e.Hash = 0, "", ""
		return db.wrap("append audit event", err)
	}
	if s := db.signer.Load(); s != nil {
		s.Appended(ctx, []*audit.Event{e})
	}
	return nil
}

// AppendAll appends several events in one transaction: all of them or none, sent in one
// round trip (a pipeline in one implicit transaction). The tenants' chain heads are created
// if missing and, for several tenants, locked in tenant order first, so that two batches never
// wait for each other's heads in a cycle.
func (db *DB) AppendAll(ctx context.Context, events []*audit.Event) error {
	if len(events) == 0 {
		return nil
	}
	var tenants []string
	for _, e := range events {
		if !slices.Contains(tenants, e.Tenant) {
			tenants = append(tenants, e.Tenant)
		}
	}
	slices.Sort(tenants)
	b := &pgx.Batch{}
	b.Queue(createHeads, db.auditKey, tenants)
	if len(tenants) > 1 {
		b.Queue(`SELECT 1 FROM audit_chain WHERE tenant = ANY($1) ORDER BY tenant FOR UPDATE`, tenants)
	}
	for _, e := range events {
		args, err := eventArgs(db.auditKey, e)
		if err != nil {
			return fmt.Errorf("append audit events: %w", err)
		}
		b.Queue(linkEvent, args...)
	}
	br := db.pool.SendBatch(ctx, b)
	err := func() error {
		for range len(b.QueuedQueries) - len(events) {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		for _, e := range events {
			if err := db.linkRow(br.QueryRow(), e); err != nil {
				return err
			}
		}
		return nil
	}()
	// The transaction commits at the pipeline's end: only Close says whether it did.
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		for _, e := range events {
			e.ID, e.PrevHash, e.Hash = 0, "", ""
		}
		return db.wrap("append audit events", err)
	}
	if s := db.signer.Load(); s != nil {
		s.Appended(ctx, events)
	}
	return nil
}

// createHeads creates the chain heads of tenants ($2) that have none, under the audit lock
// ($1) taken before any ID.
const createHeads = `WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared($1))
	INSERT INTO audit_chain (tenant, event, prev, hash)
	SELECT t, 0, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea,
		'\x0000000000000000000000000000000000000000000000000000000000000000'::bytea
	FROM held, unnest($2::text[]) AS t
	ON CONFLICT (tenant) DO NOTHING`

// linkEvent links and inserts one event (eventArgs) in one statement: the shared audit lock
// first; then the UPDATE of the tenant's chain head, which locks it and only then computes the
// new values (taking the ID, nextval, in them: under the lock, so a tenant's IDs follow its
// chain; a concurrent update makes PostgreSQL compute them again on the row it waited for);
// then the insert, with hash = sha256(prev || id || the content hash computed in Go). It
// returns no row when the tenant has no chain head yet.
const linkEvent = `WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared($1)),
	link AS MATERIALIZED (
		UPDATE audit_chain c SET (event, prev, hash) = (
			SELECT s.n, c.hash, sha256(c.hash || int8send(s.n) || $24::bytea)
			FROM (SELECT nextval('audit_events_id_seq') AS n) s)
		FROM held WHERE c.tenant = $6
		RETURNING c.event, c.prev, c.hash)
	INSERT INTO audit_events (id, time, time_ns, kind, call_id, tenant, session, principal, role,
		profile, run, tool, digest, decision, blockers, rules, approver, spend, outcome, error, policy_revision, channel, harness,
		prev_hash, hash)
	SELECT link.event, $2, $3, $4, $5, $6, $7, $8, $9,
		$10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, link.prev, link.hash FROM link
	RETURNING id, prev_hash, hash`

// eventArgs are linkEvent's arguments for e, its time set to now if it had none.
func eventArgs(lockKey int64, e *audit.Event) ([]any, error) {
	var blockers, rules, spend []byte
	var err error
	if e.Blockers != nil {
		if blockers, err = json.Marshal(e.Blockers); err != nil {
			return nil, err
		}
	}
	if e.Rules != nil {
		if rules, err = json.Marshal(e.Rules); err != nil {
			return nil, err
		}
	}
	if e.Spend != nil {
		if spend, err = json.Marshal(e.Spend); err != nil {
			return nil, err
		}
	}
	e.Time = orNow(e.Time)
	t, tns := ts(e.Time)
	content := audit.ContentHash(e)
	return []any{lockKey, t, tns, e.Kind, e.CallID, e.Tenant, e.Session, e.Principal, e.Role,
		e.Profile, e.Run, e.Tool, e.Digest, e.Decision, blockers, rules, e.Approver, spend, e.Outcome, e.Error,
		e.PolicyRevision, e.Channel, e.Harness, content[:]}, nil
}

// linkRow reads linkEvent's answer into e.
func (db *DB) linkRow(row pgx.Row, e *audit.Event) error {
	var prev, hash []byte
	if err := row.Scan(&e.ID, &prev, &hash); err != nil {
		return err
	}
	e.PrevHash, e.Hash = audit.HashBytes(prev), audit.HashBytes(hash)
	return nil
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
