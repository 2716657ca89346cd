package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/wardenhq/warden/audit"
)

const eventColumns = `id, time, kind, call_id, tenant, session, principal, role, profile, run, tool, digest,
	decision, blockers, rules, approver, spend, outcome, error, policy_revision, channel, harness, prev_hash, hash`

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
// without its cancellation when there are several: the others wait for it too.
func (db *DB) appendBatch(batch []pendingEvent) error {
	if len(batch) == 1 {
		return db.AppendAll(batch[0].ctx, []*audit.Event{batch[0].e})
	}
	events := make([]*audit.Event, len(batch))
	for i, p := range batch {
		events[i] = p.e
	}
	return db.AppendAll(context.WithoutCancel(batch[0].ctx), events)
}

// chainCache is what the writer knows of the audit trail's end: the last event's ID and each
// tenant's chain head (audit.Link). It holds only while no other connection (another process
// on the file) appended. Two guards keep it honest:
//
//   - Every event is inserted with the ID lastID+1, and every writer takes the table's last ID
//     plus one: if another connection appended since, that ID is taken, the insert fails on
//     the primary key, and nothing is written. This guard is exact and costs nothing.
//   - A transaction (a batch, or a relink) first reads PRAGMA data_version, which changes when
//     another connection committed anything, and reads the cache again when it did.
//
// When the first guard trips, the append relinks in a transaction, reading the last ID and
// the heads from the table. It is used and changed under db.mu.
type chainCache struct {
	valid   bool
	version int64
	lastID  int64
	heads   map[string][audit.HashSize]byte
	// rereads counts the times the cache was read again from the table (for the tests).
	rereads int
}

// errStale is an insert that found another connection's append since the cache was read.
var errStale = errors.New("the audit chain cache is stale")

// chainReread reads the cache again from the table, in a write transaction that read
// data_version v.
func (db *DB) chainReread(ctx context.Context, v int64) error {
	c := &db.chain
	c.valid, c.heads, c.version = false, map[string][audit.HashSize]byte{}, v
	c.rereads++
	if err := db.ws.lastEventID.QueryRowContext(ctx).Scan(&c.lastID); err != nil {
		return err
	}
	c.valid = true
	return nil
}

// chainHead is tenant's chain head, from the cache or, the first time, from the table.
func (db *DB) chainHead(ctx context.Context, tenant string) ([audit.HashSize]byte, error) {
	if h, ok := db.chain.heads[tenant]; ok {
		return h, nil
	}
	var b []byte
	err := db.ws.chainHead.QueryRowContext(ctx, tenant).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return audit.Genesis, nil
	}
	if err != nil {
		return audit.Genesis, err
	}
	if len(b) != audit.HashSize {
		return audit.Genesis, fmt.Errorf("tenant %q's last chained event holds a hash of %d bytes, want %d", tenant, len(b), audit.HashSize)
	}
	return [audit.HashSize]byte(b), nil
}

// eventRow is an event's columns that are not its fields as they are, and its content hash
// (audit.ContentHash) once hashed: AppendAll hashes before it takes the write lock, so that
// only the link (the ID, the previous hash) is computed under it.
type eventRow struct {
	time                   string
	blockers, rules, spend any
	content                [audit.HashSize]byte
	hashed                 bool
}

// AppendAll appends several events in one transaction: all of them or none. Each is linked
// into its tenant's chain (audit.Link) under SQLite's write lock, with the ID it is inserted
// with.
func (db *DB) AppendAll(ctx context.Context, events []*audit.Event) error {
	if len(events) == 0 {
		return nil
	}
	rows := make([]eventRow, len(events))
	for i, e := range events {
		if e.Time.IsZero() {
			e.Time = time.Now()
		}
		var err error
		if rows[i], err = newEventRow(e); err != nil {
			return fmt.Errorf("append audit events: %w", err)
		}
		rows[i].content, rows[i].hashed = audit.ContentHash(e), true
	}
	return db.appendChained(ctx, events, rows, nil)
}

// newEventRow is the columns of e that are not its fields as they are.
func newEventRow(e *audit.Event) (eventRow, error) {
	r := eventRow{time: formatTime(e.Time)}
	var err error
	if r.blockers, err = jsonColumn(e.Blockers, e.Blockers == nil); err == nil {
		if r.rules, err = jsonColumn(e.Rules, e.Rules == nil); err == nil {
			r.spend, err = jsonColumn(e.Spend, e.Spend == nil)
		}
	}
	return r, err
}

// appendChained links and inserts events (AppendAll). With also, it runs in the same
// transaction, after the inserts (the decision journal records there how far it is indexed).
func (db *DB) appendChained(ctx context.Context, events []*audit.Event, rows []eventRow, also func() error) error {
	err := db.write(ctx, func(*sql.Conn) error {
		if db.chain.valid && also == nil {
			// A lone event in its own statement (autocommit), several in a transaction.
			err := db.appendLinked(ctx, events, rows, len(events) > 1, nil)
			if !errors.Is(err, errStale) {
				return err
			}
		}
		return db.appendLinked(ctx, events, rows, true, also)
	})
	if err != nil {
		for _, e := range events {
			e.ID, e.PrevHash, e.Hash = 0, "", ""
		}
		return db.fail("append audit events", err)
	}
	if s := db.signer.Load(); s != nil {
		s.Appended(ctx, events)
	}
	return nil
}

// appendLinked links and inserts events, under db.mu: in a transaction if tx (checking
// data_version first, and reading the cache again if another connection committed), else in
// one autocommit statement. It returns errStale, having written nothing, when an insert found
// its ID taken by another connection's append. The cache follows what was committed.
func (db *DB) appendLinked(ctx context.Context, events []*audit.Event, rows []eventRow, tx bool, also func() error) (err error) {
	if tx {
		if _, err := db.ws.begin.ExecContext(ctx); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				db.rollback()
			}
		}()
		var v int64
		if err := db.ws.dataVersion.QueryRowContext(ctx).Scan(&v); err != nil {
			return err
		}
		if !db.chain.valid || v != db.chain.version {
			if err := db.chainReread(ctx, v); err != nil {
				return err
			}
		}
	}
	defer func() {
		if err != nil {
			db.chain.valid = false
		}
	}()
	last := db.chain.lastID
	var one [1]tenantHead
	heads := tenantHeads(one[:0]) // the batch's heads: most batches hold one tenant
	for i, e := range events {
		r := &rows[i]
		if !r.hashed {
			r.content, r.hashed = audit.ContentHash(e), true
		}
		prev, ok := heads.get(e.Tenant)
		if !ok {
			if prev, err = db.chainHead(ctx, e.Tenant); err != nil {
				return err
			}
		}
		last++
		e.ID = last
		hash := e.SealContent(prev, r.content)
		heads = heads.set(e.Tenant, hash)
		link := make([]byte, 2*audit.HashSize) // prev_hash and hash, one allocation
		copy(link, prev[:])
		copy(link[audit.HashSize:], hash[:])
		if _, err := db.ws.appendEvent.ExecContext(ctx, last, r.time, e.Kind, e.CallID, e.Tenant, e.Session,
			e.Principal, e.Role, e.Profile, e.Run, e.Tool, e.Digest, e.Decision, r.blockers, r.rules,
			e.Approver, r.spend, e.Outcome, e.Error, e.PolicyRevision, e.Channel, e.Harness,
			link[:audit.HashSize:audit.HashSize], link[audit.HashSize:]); err != nil {
			var se *sqlite.Error
			if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
				return errStale
			}
			return err
		}
	}
	if tx {
		if also != nil {
			if err := also(); err != nil {
				return err
			}
		}
		if _, err := db.ws.commit.ExecContext(ctx); err != nil {
			return err
		}
	}
	for _, h := range heads {
		db.chain.heads[h.tenant] = h.hash
	}
	db.chain.lastID = last
	return nil
}

// tenantHead is a tenant's chain head within a batch.
type tenantHead struct {
	tenant string
	hash   [audit.HashSize]byte
}

// tenantHeads is the chain heads a batch has moved, in a slice: a batch holds few tenants, and
// a lone append then allocates no map.
type tenantHeads []tenantHead

func (hs tenantHeads) get(tenant string) ([audit.HashSize]byte, bool) {
	for _, h := range hs {
		if h.tenant == tenant {
			return h.hash, true
		}
	}
	return audit.Genesis, false
}

func (hs tenantHeads) set(tenant string, hash [audit.HashSize]byte) tenantHeads {
	for i := range hs {
		if hs[i].tenant == tenant {
			hs[i].hash = hash
			return hs
		}
	}
	return append(hs, tenantHead{tenant, hash})
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
		prev, hash             []byte
	)
	if err := row.Scan(&e.ID, &when, &e.Kind, &e.CallID, &e.Tenant, &e.Session, &e.Principal, &e.Role,
		&e.Profile, &e.Run, &e.Tool, &e.Digest, &e.Decision, &blockers, &rules, &e.Approver, &spend,
		&e.Outcome, &e.Error, &e.PolicyRevision, &e.Channel, &e.Harness, &prev, &hash); err != nil {
		return nil, err
	}
	e.PrevHash, e.Hash = audit.HashBytes(prev), audit.HashBytes(hash)
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
