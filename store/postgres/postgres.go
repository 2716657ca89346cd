// Package postgres is Warden's PostgreSQL store (E2): several Warden instances behind a load
// balancer share one database, and so share approval cards, the spending ledger, the audit
// trail and tokens.
//
// A *DB implements approval.Store, budget.Store, audit.Log and auth.Store. Every step that
// must not race is atomic across every *DB on the database, not only within one process:
//
//   - Resolve moves a card out of pending with UPDATE ... WHERE state = 'pending', so exactly one
//     answer wins, and in the same transaction NOTIFYs the card's id. Each *DB keeps one LISTEN
//     connection (started by the first Watch, reconnected when it drops) and wakes its watchers;
//     after a reconnection it re-reads every watched card, so an answer given while it was
//     disconnected is not missed.
//   - Reserve is one statement that raises the run's held amount only where the per-run figure
//     still allows it (PostgreSQL rechecks the condition on the locked row) and inserts the
//     reservation: concurrent reservations, on any number of instances, never pass the figure.
//   - StartRun checks the per-day figures and the concurrency limit and inserts the run while
//     holding transaction-scoped advisory locks on (tenant, day, connector) and (tenant,
//     profile), so racing starts are serialised.
//   - Append commits before it returns. IDs come from a sequence; Query first waits for every
//     append that has taken an ID to commit or roll back (an advisory-lock barrier) and returns
//     only IDs up to that point, so paging with AfterID never skips an event, even while other
//     instances are appending. See (*DB).Query. Each event is linked into its tenant's hash
//     chain in the same statement, under the tenant's head row in audit_chain, whose lock
//     orders a tenant's appends across instances; concurrent appends of one instance are
//     committed together. See (*DB).Append.
//   - PutObject and DeleteObject (manage.Store, the management plane's objects) compare the
//     object's revision and write it under a transaction-scoped advisory lock on its kind and
//     id, so of writers racing from one revision exactly one wins, and NOTIFY "*objects" so
//     every instance's WatchObjects wakes (a reconnected listener wakes them too).
//
// # Failures and retries
//
// A call that returns nil has committed. A connection that drops mid-call (or a context that
// ends mid-call) returns an error, never a false success: the server rolls back the statement
// or transaction it was in, unless the drop came after the server had received the commit (for
// a single statement: the statement itself), when the write may have committed and the caller
// cannot tell. Every write is one statement or one transaction, so it is whole or absent,
// never half done. Which calls are safe to retry after such an error:
//
//   - Reads (Card, Cards, FindStanding, Standings, RunStatus, MonthSpend, Query, TokenByHash,
//     Tokens, Ping): always.
//   - Calls that change a state only from the state they expect (Resolve, Settle, Release,
//     EndRun, RevokeStanding, RevokeToken, RecoverReservations): a retry never applies twice;
//     if the first attempt did commit, the retry reports ErrNotPending, ErrNotReserved,
//     ErrRunEnded or ErrNotFound (or, for RecoverReservations, settles nothing more).
//   - PutObject and DeleteObject with a revision: a retry after a committed first attempt
//     reports manage.ErrStale or manage.ErrNotFound. With manage.AnyRevision a retried
//     PutObject writes the same data again as one more revision.
//   - Inserts (CreateCard, AddStanding, CreateToken, StartRun, Reserve): the ID is set on the
//     value before the first attempt (generated when empty), so retrying with the same value
//     either succeeds or fails with ErrDuplicate, which says the first attempt committed.
//   - Turn, ModelSpend and Append are not idempotent: a blind retry may count a turn or model
//     spend twice, or record an event twice (a duplicate audit event is the safe way to err).
//
// A zero time given for when something happened (the at of Resolve, EndRun, Settle, Release,
// RecoverReservations and the revocations; an event's Time; a reservation's Created) is taken
// as now, so that nothing ended, answered or revoked reads back as if it had not.
//
// Tests isolate themselves in a schema of their own: the URL may carry search_path, which pgx
// passes to the server as a runtime parameter, and every table, advisory lock key and
// notification channel is scoped to the schema the search path selects.
package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/internal/group"
)

var (
	_ approval.Store = (*DB)(nil)
	_ budget.Store   = (*DB)(nil)
	_ audit.Log      = (*DB)(nil)
	_ audit.Batcher  = (*DB)(nil)
	_ auth.Store     = (*DB)(nil)
)

// Errors of this store; callers match them with errors.Is. The errors of the store interfaces
// (approval.ErrNotFound, budget.ErrRunAllowance, ...) are returned as those interfaces document.
var (
	// ErrDuplicate: a row with the same ID (or token hash) exists already. After a failed
	// call, it means an earlier attempt with the same value did commit.
	ErrDuplicate = errors.New("a record with this id already exists")
	// ErrSchemaTooNew: the database was migrated by a newer Warden than this one.
	ErrSchemaTooNew = errors.New("the database schema is newer than this Warden")
	// ErrClosed: the *DB was closed.
	ErrClosed = errors.New("the store is closed")
)

// DB is a Warden store on one PostgreSQL database (and one schema in it). It is safe for
// concurrent use by any number of goroutines, and any number of *DB, in this process or in
// others, may share the database.
type DB struct {
	pool   *pgxpool.Pool
	schema string
	// where names the server in errors, without the password.
	where string

	// Keys of the advisory locks this schema uses, and the channel Resolve notifies.
	auditKey, recoverKey int64
	channel              string

	hub *hub
	// signer, if set, is told of every committed append (audit checkpoints).
	signer atomic.Pointer[audit.Signer]
	// appends commits concurrent audit appends together (see Append).
	appends *group.Commit[pendingEvent]

	closeOnce sync.Once
	ctx       context.Context // ends when the DB is closed
	cancel    context.CancelFunc
}

// Open connects to the database at url (a postgres:// URL or a key=value string), checks that
// it answers, and migrates it to this Warden's schema. Migrations run in one transaction under
// an advisory lock, so instances starting together do not race; a database migrated by a newer
// Warden is refused with ErrSchemaTooNew. The URL's search_path, if any, selects the schema.
//
// Pool settings (pool_max_conns, ...) may be given in the URL as pgxpool documents them.
func Open(ctx context.Context, url string) (*DB, error) {
	return OpenSchema(ctx, url, "")
}

// OpenSchema is Open with every table in the named schema, created if it is missing; with
// schema "", it is Open (the URL's search_path selects the schema). Two schemas on one database are two
// independent stores: their tables, advisory locks and notification channel are apart.
func OpenSchema(ctx context.Context, url, schema string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message redacts the password.
		return nil, fmt.Errorf("postgres: cannot parse the database URL: %w", err)
	}
	if schema != "" {
		if err := createSchema(ctx, cfg.ConnConfig, schema); err != nil {
			return nil, err
		}
		// Every connection of the pool, and the listener's (a copy of this configuration),
		// works in the schema.
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	// The atomicity arguments in this package are made for READ COMMITTED, whatever the
	// server's default.
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	where := net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	if cfg.ConnConfig.Database != "" {
		where += "/" + cfg.ConnConfig.Database
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect to %s: %w", where, err)
	}
	db := &DB{pool: pool, where: where}
	db.appends = group.New(maxAppendBatch, db.appendBatch)
	db.ctx, db.cancel = context.WithCancel(context.Background())
	if err := db.start(ctx); err != nil {
		db.cancel()
		pool.Close()
		return nil, err
	}
	return db, nil
}

func (db *DB) start(ctx context.Context) error {
	var schema *string
	if err := db.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("postgres: connect to %s: %w", db.where, err)
	}
	if schema == nil {
		return fmt.Errorf("postgres: %s: the search_path names no existing schema", db.where)
	}
	db.schema = *schema
	db.recoverKey = lockKey("recover", db.schema)
	db.auditKey = lockKey("audit", db.schema)
	// Channels are per database; the schema's hash keeps two schemas' cards apart and the name
	// within PostgreSQL's 63 bytes.
	db.channel = fmt.Sprintf("warden_cards_%016x", uint64(lockKey("channel", db.schema)))
	if err := db.migrate(ctx); err != nil {
		return err
	}
	db.hub = newHub(db)
	return nil
}

// createSchema creates the schema if it is missing, on a connection of its own.
func createSchema(ctx context.Context, cc *pgx.ConnConfig, schema string) error {
	conn, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return fmt.Errorf("postgres: connect to %s:%d/%s to create schema %q: %w", cc.Host, cc.Port, cc.Database, schema, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("postgres: create schema %q: %w", schema, err)
	}
	return nil
}

// Close stops the notification listener and closes every connection. Watches that are still
// waiting are not closed: their contexts end them.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.cancel()
		db.hub.stop()
		db.pool.Close()
	})
	return nil
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: ping %s: %w", db.where, err)
	}
	return nil
}

// Schema is the schema the store's tables are in.
func (db *DB) Schema() string { return db.schema }

// lockKey hashes its parts into a key for pg_advisory_xact_lock. Advisory locks are per
// database; the schema is always one of the parts, so tests in different schemas do not
// contend. A collision only serialises two unrelated steps, never unserialises related ones.
func lockKey(parts ...string) int64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

// newID returns a random ID for a record whose caller left the ID empty.
func newID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// orNow stamps a time the caller left zero with the time now: an ended run, a revoked token or
// a settled reservation whose time read back as zero would look live, good or open.
func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// ts splits a time into what a timestamptz holds (microseconds) and the nanoseconds below.
func ts(t time.Time) (time.Time, int16) {
	return t.Truncate(time.Microsecond), int16(t.Nanosecond() % 1000)
}

// tsNull is ts for a time that is zero while something has not happened: zero is NULL.
func tsNull(t time.Time) (*time.Time, int16) {
	if t.IsZero() {
		return nil, 0
	}
	u, ns := ts(t)
	return &u, ns
}

// fromTS joins what ts split; a NULL is the zero time.
func fromTS(t *time.Time, ns int16) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Add(time.Duration(ns)).UTC()
}

// wrap adds the store's prefix to an error, and maps a unique violation to ErrDuplicate.
func (db *DB) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("postgres: %s: %w (%s)", op, ErrDuplicate, pgErr.ConstraintName)
	}
	if db.ctx.Err() != nil {
		return fmt.Errorf("postgres: %s: %w", op, ErrClosed)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// inTx runs f in a READ COMMITTED transaction and commits it. f's errors roll it back.
func (db *DB) inTx(ctx context.Context, f func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, f)
}
