package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/wardenhq/warden/internal/group"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/budget"
)

// The stores a DB is.
var (
	_ approval.Store = (*DB)(nil)
	_ budget.Store   = (*DB)(nil)
	_ audit.Log      = (*DB)(nil)
	_ audit.Batcher  = (*DB)(nil)
	_ auth.Store     = (*DB)(nil)
)

// Errors Open and the store's methods return beyond the interfaces' own; match them with
// errors.Is.
var (
	// ErrNewerSchema: the file was written by a newer Warden; this one does not know its schema.
	ErrNewerSchema = errors.New("the database was written by a newer Warden")
	// ErrLocked: another connection held the database's write lock for longer than the busy
	// timeout.
	ErrLocked = errors.New("the database is locked by another writer")
	// ErrClosed: the DB was closed.
	ErrClosed = errors.New("the store is closed")
)

// DefaultBusyTimeout is how long a write waits for another process's write lock by default.
const DefaultBusyTimeout = 5 * time.Second

// DefaultPollInterval is how often, by default, a DB looks for cards resolved by another
// process while something watches them.
const DefaultPollInterval = 200 * time.Millisecond

// Options tune a DB. The zero value is the default.
type Options struct {
	// BusyTimeout is how long a write waits for the write lock held by another connection
	// before it fails with ErrLocked (0: DefaultBusyTimeout).
	BusyTimeout time.Duration
	// PollInterval is how often watched cards are checked for answers given by other processes
	// (0: DefaultPollInterval).
	PollInterval time.Duration
	// Journal makes Journal write decisions to the store's decision journal, indexed into
	// audit_events behind the calls (see journal.go), where this process can hold it.
	Journal bool
}

// DB is a Warden store in one SQLite file. It is safe for concurrent use; see the package
// documentation for how writes are serialised and what is durable.
type DB struct {
	path string
	opts Options

	// mu serialises this process's writes on the single writer connection w; closed is set
	// under it.
	mu     sync.Mutex
	closed atomic.Bool
	w      *sql.Conn
	wdb    *sql.DB
	ws     writeStmts

	r  *sql.DB // readers
	rs readStmts

	hub     *hub
	bounds  boundaryWatch // hard-block watchers
	revoked boundaryWatch // token revocation watchers (the sum is the count of revoked tokens)
	objects objectWatch   // management-plane object watchers
	// appends commits concurrent audit appends together (see Append).
	appends *group.Commit[pendingEvent]
	// j is the decision journal this process holds (Options.Journal), or nil.
	j *journal
	// chain is the audit trail's end as the writer last saw it (under mu).
	chain chainCache
	// signer, if set, is told of every committed append (audit checkpoints).
	signer atomic.Pointer[audit.Signer]

	writes atomic.Int64   // write calls so far, for the checkpointer
	kick   chan struct{}  // wakes the checkpointer
	stop   chan struct{}  // closed by Close
	bg     sync.WaitGroup // the poller and the checkpointer
}

// Open opens (creating it if needed) the Warden database at path with the default options and
// migrates it to the current schema.
func Open(ctx context.Context, path string) (*DB, error) {
	return OpenWith(ctx, path, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, opts Options) (*DB, error) {
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("open sqlite store %q: want the path of a file", path)
	}
	db := &DB{path: path, opts: opts, hub: newHub(), kick: make(chan struct{}, 1), stop: make(chan struct{})}
	db.appends = group.New(maxAppendBatch, db.appendBatch)
	if err := db.open(ctx); err != nil {
		db.closeConns()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, db.explain(err))
	}
	db.bg.Add(2)
	go db.poll()
	go db.checkpoints()
	return db, nil
}

// dsn is the connection string for path: a file: URI (so that no character of the path is
// taken for a parameter) with the pragmas every connection runs with.
func dsn(path string, busy time.Duration, write bool) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	q := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)", busy.Milliseconds())
	if write {
		q += fmt.Sprintf("&_pragma=wal_autocheckpoint(%d)&_pragma=journal_size_limit(%d)", walFallbackPages, walSizeLimit)
	} else {
		q += "&_pragma=query_only(1)"
	}
	return "file:" + esc + "?" + q
}

func (db *DB) open(ctx context.Context) error {
	var err error
	db.wdb, err = sql.Open("sqlite", dsn(db.path, db.opts.BusyTimeout, true))
	if err != nil {
		return err
	}
	db.wdb.SetMaxOpenConns(1)
	db.wdb.SetMaxIdleConns(1)
	db.wdb.SetConnMaxLifetime(0)
	db.wdb.SetConnMaxIdleTime(0)
	if db.w, err = db.wdb.Conn(ctx); err != nil {
		return err
	}
	if err := db.walMode(ctx); err != nil {
		return fmt.Errorf("set WAL mode: %w", err)
	}
	if err := migrate(ctx, db.w); err != nil {
		return err
	}
	if err := db.ws.prepare(ctx, db.w); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}

	db.r, err = sql.Open("sqlite", dsn(db.path, db.opts.BusyTimeout, false))
	if err != nil {
		return err
	}
	db.r.SetMaxOpenConns(8)
	db.r.SetMaxIdleConns(8)
	db.r.SetConnMaxLifetime(0)
	db.r.SetConnMaxIdleTime(0)
	if err := db.rs.prepare(ctx, db.r); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	// What a journal holds beyond journal_state (a process died with it) is indexed before
	// anything reads the store; with Options.Journal, the journal is kept for this process.
	if db.j, err = db.openJournal(ctx, db.opts.Journal); err != nil {
		return err
	}
	return nil
}

// walMode switches the file to WAL mode (a no-op once it is). Switching a new file needs it to
// itself for a moment, and SQLite reports a busy file at once rather than through the busy
// timeout, so the switch is retried until the busy timeout has passed.
func (db *DB) walMode(ctx context.Context) error {
	deadline := time.Now().Add(db.opts.BusyTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		var mode string
		err := db.w.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil && !strings.EqualFold(mode, "wal") {
			err = fmt.Errorf("the database stays in %s mode", mode)
		}
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Close stops the watch poller and closes the database. Calls after Close fail with ErrClosed;
// closing twice is harmless.
func (db *DB) Close() error {
	var jerr error
	if db.j != nil {
		jerr = db.j.close() // indexes what is pending while the writer is still open
	}
	db.mu.Lock()
	if db.closed.Load() {
		db.mu.Unlock()
		return nil
	}
	db.closed.Store(true)
	db.mu.Unlock()
	close(db.stop)
	db.bg.Wait()
	return errors.Join(jerr, db.closeConns())
}

func (db *DB) closeConns() error {
	var errs []error
	db.ws.close()
	db.rs.close()
	if db.w != nil {
		errs = append(errs, db.w.Close())
	}
	if db.wdb != nil {
		errs = append(errs, db.wdb.Close())
	}
	if db.r != nil {
		errs = append(errs, db.r.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sqlite store %s: %w", db.path, err)
	}
	return nil
}

// Ping checks that the database answers, on both the writer and a reader.
func (db *DB) Ping(ctx context.Context) error {
	err := db.write(ctx, func(w *sql.Conn) error { return w.PingContext(ctx) })
	if err == nil {
		err = db.r.PingContext(ctx)
	}
	if err != nil {
		return db.fail("ping", err)
	}
	return nil
}

// write runs f with the writer connection, holding this process's write lock.
func (db *DB) write(ctx context.Context, f func(w *sql.Conn) error) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed.Load() {
		return ErrClosed
	}
	defer db.wrote()
	return f(db.w)
}

// tx runs f in one transaction on the writer connection: BEGIN IMMEDIATE (SQLite's write lock
// is taken before anything is read), then COMMIT if f returns nil, else ROLLBACK.
func (db *DB) tx(ctx context.Context, f func(w *sql.Conn) error) error {
	return db.write(ctx, func(w *sql.Conn) error {
		if _, err := db.ws.begin.ExecContext(ctx); err != nil {
			return err
		}
		if err := f(w); err != nil {
			db.rollback()
			return err
		}
		if _, err := db.ws.commit.ExecContext(ctx); err != nil {
			db.rollback()
			return err
		}
		return nil
	})
}

// rollback ends a failed transaction, even when the caller's context has ended; an error means
// SQLite already rolled it back.
func (db *DB) rollback() {
	_, _ = db.ws.rollback.ExecContext(context.Background())
}

// fail wraps an error of an operation, naming the database when the cause is SQLite's.
func (db *DB) fail(op string, err error) error {
	if db.closed.Load() && !errors.Is(err, ErrClosed) {
		err = fmt.Errorf("%w: %w", ErrClosed, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) || errors.Is(err, ErrClosed) {
		return fmt.Errorf("%s: sqlite store %s: %w", op, db.path, db.explain(err))
	}
	return fmt.Errorf("%s: %w", op, err)
}

// explain turns SQLite's busy error into ErrLocked, keeping the cause.
func (db *DB) explain(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY:
		return fmt.Errorf("%w (waited %v): %w", ErrLocked, db.opts.BusyTimeout, err)
	case sqlite3.SQLITE_CANTOPEN:
		return fmt.Errorf("cannot open the file (is its directory there, and may Warden write to it?): %w", err)
	}
	return err
}

// Path returns the file the DB was opened on.
func (db *DB) Path() string { return db.path }
