package postgres

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/store/storetest"
)

// serverURL is the server the tests use: WARDEN_TEST_POSTGRES_URL. Unset, the tests skip (a
// user's machine); CI sets it and must never skip.
func serverURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("WARDEN_TEST_POSTGRES_URL")
	if u == "" {
		t.Skip("WARDEN_TEST_POSTGRES_URL is not set: skipping the PostgreSQL store's tests " +
			"(set it to e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return u
}

// withParams returns the URL u with query parameters set (u must be a postgres:// URL).
func withParams(t testing.TB, u string, kv ...string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "postgres" && p.Scheme != "postgresql") {
		t.Fatalf("WARDEN_TEST_POSTGRES_URL must be a postgres:// URL")
	}
	q := p.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	p.RawQuery = q.Encode()
	return p.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newSchema creates a schema of the test's own, warden_test_<random>, drops it when the test
// ends, and returns a URL that selects it. Other test runs may share the database.
func newSchema(t testing.TB) string {
	t.Helper()
	base := serverURL(t)
	schema := "warden_test_" + randomHex(8)
	admin(t, base, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
	t.Cleanup(func() {
		admin(t, base, `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	})
	return withParams(t, base, "search_path", schema)
}

// admin runs one statement on a connection of its own.
func admin(t testing.TB, u, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// openURL opens a store and closes it when the test ends (before the schema is dropped).
func openURL(t testing.TB, u string) *DB {
	t.Helper()
	db, err := Open(t.Context(), u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// two opens two instances on one fresh schema, as two Warden processes would.
func two(t testing.TB) (*DB, *DB, string) {
	u := newSchema(t)
	return openURL(t, u), openURL(t, u), u
}

func TestConformance(t *testing.T) {
	serverURL(t)
	urls := sync.Map{} // *DB -> URL of its schema
	storetest.Run(t, storetest.Opener{
		New: func(t *testing.T) storetest.Store {
			u := newSchema(t)
			db := openURL(t, u)
			urls.Store(db, u)
			return db
		},
		Another: func(t *testing.T, s storetest.Store) storetest.Store {
			u, ok := urls.Load(s)
			if !ok {
				t.Fatalf("Another: not a store this test opened")
			}
			return openURL(t, u.(string))
		},
		Exec: func(t *testing.T, s storetest.Store, stmts ...string) {
			u, ok := urls.Load(s)
			if !ok {
				t.Fatalf("Exec: not a store this test opened")
			}
			for _, stmt := range stmts {
				admin(t, u.(string), stmt)
			}
		},
	})
}

var t0 = time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.UTC) // nanoseconds on purpose

// ctxT is a context for one step of a test.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestOpenUnreachable(t *testing.T) {
	serverURL(t)
	// a port nothing listens on; the password must not appear in the error
	_, err := Open(ctxT(t), "postgres://warden:s3cr3t-pw@127.0.0.1:1/test?sslmode=disable&connect_timeout=5")
	if err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "127.0.0.1:1") {
		t.Errorf("error does not name the host: %v", err)
	}
	if strings.Contains(msg, "s3cr3t-pw") {
		t.Errorf("error shows the password: %v", err)
	}
	for _, bad := range []string{
		"postgres://warden:s3cr3t-pw@127.0.0.1:notaport/test",
		"postgres://warden:s3cr3t-pw@127.0.0.1/test?pool_max_conns=many",
	} {
		_, err := Open(ctxT(t), bad)
		if err == nil {
			t.Errorf("Open(%q) succeeded", bad)
			continue
		}
		if strings.Contains(err.Error(), "s3cr3t-pw") {
			t.Errorf("Open(bad URL) error shows the password: %v", err)
		}
	}
}

func TestOpenNoSchema(t *testing.T) {
	u := withParams(t, serverURL(t), "search_path", "warden_test_does_not_exist_"+randomHex(4))
	_, err := Open(ctxT(t), u)
	if err == nil || !strings.Contains(err.Error(), "search_path names no existing schema") {
		t.Fatalf("Open with a missing schema: %v, want a clear error", err)
	}
}

// Instances starting together migrate once, under the advisory lock.
func TestOpenConcurrentMigrations(t *testing.T) {
	u := newSchema(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			db, err := Open(ctxT(t), u)
			if err == nil {
				db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	db := openURL(t, u)
	var rows, max int
	if err := db.pool.QueryRow(ctxT(t), `SELECT count(*), max(version) FROM schema_version`).Scan(&rows, &max); err != nil {
		t.Fatal(err)
	}
	if rows != SchemaVersion() || max != SchemaVersion() {
		t.Errorf("schema_version has %d rows up to %d, want %d", rows, max, SchemaVersion())
	}
}

func TestOpenSchemaTooNew(t *testing.T) {
	u := newSchema(t)
	db := openURL(t, u)
	if _, err := db.pool.Exec(ctxT(t), `INSERT INTO schema_version (version, name) VALUES ($1, 'from the future')`, SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctxT(t), u)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("version %d", SchemaVersion()+1)) {
		t.Errorf("error does not say the version: %v", err)
	}
}

// Times keep their nanoseconds, though timestamptz keeps microseconds.
func TestTimesExact(t *testing.T) {
	db := openURL(t, newSchema(t))
	ctx := ctxT(t)
	c := &approval.Card{ID: "c", Tenant: "t", Created: t0, Deadline: t0.Add(time.Nanosecond)}
	if err := db.CreateCard(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := db.Resolve(ctx, "c", approval.Denied, approval.Deny, "alice", approval.ChannelAPI, t0.Add(999*time.Nanosecond))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Created.Equal(t0) || !got.Deadline.Equal(t0.Add(time.Nanosecond)) || !got.Answered.Equal(t0.Add(999*time.Nanosecond)) {
		t.Errorf("times changed: created %v deadline %v answered %v", got.Created, got.Deadline, got.Answered)
	}
	old := time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC) // before the Unix epoch, and tiny
	e := &audit.Event{Time: old, Kind: audit.KindRun}
	if err := db.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	evs, err := db.Query(ctx, audit.Filter{Since: old, Until: old.Add(time.Nanosecond)})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || !evs[0].Time.Equal(old) {
		t.Errorf("Query by a nanosecond window: %v", evs)
	}
}

// Money is decimal: 0.1 + 0.2 fits a per-run figure of 0.3, as a person would expect.
func TestMoneyDecimal(t *testing.T) {
	db := openURL(t, newSchema(t))
	ctx := ctxT(t)
	r := &budget.Run{ID: "r", Tenant: "t", Started: t0, Allowances: []budget.Allowance{{Connector: "dfs", Unit: "USD", PerRun: 0.3, PerDay: 0.9}}}
	if err := db.StartRun(ctx, r, 0, "2026-03"); err != nil {
		t.Fatal(err)
	}
	for _, amt := range []float64{0.1, 0.2} {
		if err := db.Reserve(ctx, &budget.Reservation{Run: "r", Connector: "dfs", Amount: amt, Created: t0}); err != nil {
			t.Fatalf("Reserve(%v): %v", amt, err)
		}
	}
	if err := db.Reserve(ctx, &budget.Reservation{Run: "r", Connector: "dfs", Amount: 1e-9, Created: t0}); !errors.Is(err, budget.ErrRunAllowance) {
		t.Fatalf("Reserve above the figure: %v, want ErrRunAllowance", err)
	}
	st, err := db.RunStatus(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if st.Spent[0].Reserved != 0.3 {
		t.Errorf("reserved %v, want 0.3", st.Spent[0].Reserved)
	}
}

// backend waits until a connection of the application app waits on a lock, and returns its pid.
func backend(t *testing.T, u, app string) uint32 {
	t.Helper()
	ctx := ctxT(t)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for {
		var pid uint32
		err := conn.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock' LIMIT 1`, app).Scan(&pid)
		if err == nil {
			return pid
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("the call never waited on the lock")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func terminate(t *testing.T, pid uint32) {
	t.Helper()
	admin(t, serverURL(t), `SELECT pg_terminate_backend($1)`, int32(pid))
}

// ledgerConsistent checks that every allowance row holds exactly what its reservations say.
func ledgerConsistent(t *testing.T, db *DB) {
	t.Helper()
	rows, err := db.pool.Query(ctxT(t), `SELECT a.run_id, a.connector, a.reserved, a.settled, a.settled_n,
			coalesce(sum(r.amount) FILTER (WHERE r.state = 'reserved'), 0),
			coalesce(sum(r.actual) FILTER (WHERE r.state = 'settled'), 0),
			count(r.id) FILTER (WHERE r.state = 'settled')
		FROM run_allowances a LEFT JOIN reservations r ON r.run_id = a.run_id AND r.connector = a.connector
		GROUP BY a.run_id, a.connector, a.reserved, a.settled, a.settled_n`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			run, conn                 string
			reserved, settled, hr, hs float64
			n, hn                     int
		)
		if err := rows.Scan(&run, &conn, &reserved, &settled, &n, &hr, &hs, &hn); err != nil {
			t.Fatal(err)
		}
		if reserved != hr || settled != hs || n != hn {
			t.Errorf("run %s, %s: ledger says reserved %v settled %v (%d calls), reservations say %v, %v (%d)",
				run, conn, reserved, settled, n, hr, hs, hn)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// A connection killed in the middle of a call gives an error, never a false success, and the
// transaction it was in leaves nothing behind.
func TestConnectionKilledMidCall(t *testing.T) {
	const month = "2026-03"
	tests := []struct {
		name string
		// lock is run in a transaction of the test's own before the call, so the call blocks
		// on it (after its earlier statements, where it has any).
		lock  string
		call  func(ctx context.Context, db *DB) error
		check func(t *testing.T, db *DB)
	}{{
		// a single statement: the allowance row is held
		name: "Reserve",
		lock: `SELECT 1 FROM run_allowances WHERE run_id = 'r' FOR UPDATE`,
		call: func(ctx context.Context, db *DB) error {
			return db.Reserve(ctx, &budget.Reservation{ID: "res-killed", Run: "r", Connector: "fc", Amount: 3, Created: t0})
		},
		check: func(t *testing.T, db *DB) {
			st, err := db.RunStatus(ctxT(t), "r")
			if err != nil {
				t.Fatal(err)
			}
			if st.Spent[0].Reserved != 1 || st.Spent[0].Settled != 0 {
				t.Errorf("after the killed Reserve: %+v, want the first reservation only", st.Spent[0])
			}
			if err := db.Release(ctxT(t), "res-killed", t0); !errors.Is(err, budget.ErrNotFound) {
				t.Errorf("the killed reservation: %v, want ErrNotFound", err)
			}
		},
	}, {
		// a transaction that has ended the run and waits to close its allowances
		name: "EndRun",
		lock: `SELECT 1 FROM run_allowances WHERE run_id = 'r' FOR UPDATE`,
		call: func(ctx context.Context, db *DB) error { return db.EndRun(ctx, "r", t0) },
		check: func(t *testing.T, db *DB) {
			st, err := db.RunStatus(ctxT(t), "r")
			if err != nil {
				t.Fatal(err)
			}
			if !st.Run.Ended.IsZero() {
				t.Errorf("the killed EndRun ended the run")
			}
			if err := db.Reserve(ctxT(t), &budget.Reservation{Run: "r", Connector: "fc", Amount: 1, Created: t0}); err != nil {
				t.Errorf("Reserve after the killed EndRun: %v", err)
			}
		},
	}, {
		// a transaction that has added to the run and waits to add to the month
		name: "ModelSpend",
		lock: `SELECT 1 FROM model_months WHERE tenant = 't' FOR UPDATE`,
		call: func(ctx context.Context, db *DB) error {
			_, _, err := db.ModelSpend(ctx, "t", "r", 5, month)
			return err
		},
		check: func(t *testing.T, db *DB) {
			st, err := db.RunStatus(ctxT(t), "r")
			if err != nil {
				t.Fatal(err)
			}
			m, err := db.MonthSpend(ctxT(t), "t", month)
			if err != nil {
				t.Fatal(err)
			}
			if st.ModelUsd != 0 || m != 1 {
				t.Errorf("after the killed ModelSpend: run %v, month %v, want 0 and 1", st.ModelUsd, m)
			}
		},
	}, {
		// a start that has taken its locks and made its checks, and waits to insert the run
		// (the test's transaction inserts a run with the same id)
		name: "StartRun",
		lock: `INSERT INTO runs (id, tenant, profile, session, attempt, started, started_ns, day, max_concurrent, budget_usd, max_turns)
			VALUES ('r2', 'x', '', '', 0, now(), 0, 'x', 0, 0, 0)`,
		call: func(ctx context.Context, db *DB) error {
			r := &budget.Run{ID: "r2", Tenant: "t", Started: t0, Allowances: []budget.Allowance{{Connector: "fc", Unit: "credits", PerRun: 10, PerDay: 100}}}
			return db.StartRun(ctx, r, 0, month)
		},
		check: func(t *testing.T, db *DB) {
			if _, err := db.RunStatus(ctxT(t), "r2"); !errors.Is(err, budget.ErrNotFound) {
				t.Errorf("the killed start: %v, want ErrNotFound", err)
			}
			r := &budget.Run{ID: "r2", Tenant: "t", Started: t0, Allowances: []budget.Allowance{{Connector: "fc", Unit: "credits", PerRun: 10, PerDay: 100}}}
			if err := db.StartRun(ctxT(t), r, 0, month); err != nil {
				t.Errorf("StartRun after the killed one: %v", err)
			}
		},
	}, {
		// an answer waiting for the card's row
		name: "Resolve",
		lock: `SELECT 1 FROM cards WHERE id = 'c' FOR UPDATE`,
		call: func(ctx context.Context, db *DB) error {
			_, err := db.Resolve(ctx, "c", approval.Allowed, approval.AllowOnce, "alice", approval.ChannelAPI, t0)
			return err
		},
		check: func(t *testing.T, db *DB) {
			c, err := db.Card(ctxT(t), "", "c")
			if err != nil {
				t.Fatal(err)
			}
			if c.State != approval.Pending {
				t.Errorf("the killed answer moved the card to %s", c.State)
			}
		},
	}, {
		// an append waiting for a Query's barrier
		name: "Append",
		lock: `SELECT pg_advisory_xact_lock(%d)`,
		call: func(ctx context.Context, db *DB) error {
			return db.Append(ctx, &audit.Event{Time: t0, Kind: audit.KindDecision, CallID: "killed"})
		},
		check: func(t *testing.T, db *DB) {
			evs, err := db.Query(ctxT(t), audit.Filter{CallID: "killed"})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 0 {
				t.Errorf("the killed append was recorded")
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := "warden_kill_" + randomHex(4)
			u := newSchema(t)
			db := openURL(t, withParams(t, u, "application_name", app))
			ctx := ctxT(t)
			r := &budget.Run{ID: "r", Tenant: "t", Started: t0, Allowances: []budget.Allowance{{Connector: "fc", Unit: "credits", PerRun: 10, PerDay: 100}}}
			if err := db.StartRun(ctx, r, 0, month); err != nil {
				t.Fatal(err)
			}
			if err := db.Reserve(ctx, &budget.Reservation{ID: "res-1", Run: "r", Connector: "fc", Amount: 1, Created: t0}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := db.ModelSpend(ctx, "t", "", 1, month); err != nil {
				t.Fatal(err)
			}

			blocker, err := pgx.Connect(ctx, withParams(t, u, "application_name", "blocker"))
			if err != nil {
				t.Fatal(err)
			}
			defer blocker.Close(ctx)
			tx, err := blocker.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.CreateCard(ctx, &approval.Card{ID: "c", Tenant: "t", Created: t0, Deadline: t0}); err != nil {
				t.Fatal(err)
			}
			lock := tt.lock
			if strings.Contains(lock, "%d") {
				lock = fmt.Sprintf(lock, db.auditKey)
			}
			if _, err := tx.Exec(ctx, lock); err != nil {
				t.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() { errc <- tt.call(ctx, db) }()
			terminate(t, backend(t, serverURL(t), app))
			if err := <-errc; err == nil {
				t.Fatal("the call whose connection was killed returned no error")
			} else {
				t.Logf("the killed call: %v", err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			tt.check(t, db)
			ledgerConsistent(t, db)
			if err := db.Ping(ctx); err != nil {
				t.Errorf("Ping after the kill: %v", err)
			}
		})
	}
}

func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// The LISTEN connection is killed: watches still wake, both for an answer given while it was
// away (found by the re-read after reconnecting) and for one given after.
func TestWatchSurvivesListenerKill(t *testing.T) {
	a, b, _ := two(t)
	ctx := ctxT(t)
	for _, id := range []string{"c1", "c2"} {
		if err := a.CreateCard(ctx, &approval.Card{ID: id, Tenant: "t", Created: t0, Deadline: t0}); err != nil {
			t.Fatal(err)
		}
	}
	ch1, err := a.Watch(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	terminate(t, a.hub.pid.Load())
	// answered at once: most likely while the listener is away
	if _, err := b.Resolve(ctx, "c1", approval.Allowed, approval.AllowOnce, "alice", approval.ChannelAPI, t0); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(ch1, 10*time.Second) {
		t.Fatal("a watch did not wake after its listener was killed")
	}
	for a.hub.reconnect.Load() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the listener did not reconnect")
		case <-time.After(5 * time.Millisecond):
		}
	}
	// answered once the listener is back: the notification itself wakes it
	ch2, err := a.Watch(ctx, "c2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Resolve(ctx, "c2", approval.Denied, approval.Deny, "bob", approval.ChannelAPI, t0); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(ch2, 10*time.Second) {
		t.Fatal("a watch did not wake after the listener reconnected")
	}
}

// The listener checks its connection when nothing arrives for a while; the check does not
// break a healthy connection.
func TestListenerHealthCheck(t *testing.T) {
	a, b, _ := two(t)
	a.hub.health = 20 * time.Millisecond // before the first Watch starts the listener
	ctx := ctxT(t)
	if err := a.CreateCard(ctx, &approval.Card{ID: "c", Tenant: "t", Created: t0, Deadline: t0}); err != nil {
		t.Fatal(err)
	}
	ch, err := a.Watch(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	// Several health checks, however long the loaded machine takes to make them.
	for deadline := time.Now().Add(time.Minute); a.hub.pings.Load() < 5; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d health checks answered in a minute", a.hub.pings.Load())
		}
	}
	if _, err := b.Resolve(ctx, "c", approval.Allowed, approval.AllowOnce, "alice", approval.ChannelAPI, t0); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(ch, 10*time.Second) {
		t.Fatal("the watch did not wake")
	}
	if n := a.hub.reconnect.Load(); n != 0 {
		t.Errorf("the listener reconnected %d times; health checks broke it", n)
	}
}

// After Close, Watch says so, and a watch of the closed store does not hang its caller's
// goroutines.
func TestWatchAfterClose(t *testing.T) {
	db := openURL(t, newSchema(t))
	db.Close()
	if _, err := db.Watch(ctxT(t), "c"); !errors.Is(err, ErrClosed) {
		t.Errorf("Watch after Close: %v, want ErrClosed", err)
	}
}

// An append that has taken its ID but not committed holds back every Query, so a reader paging
// with AfterID cannot step past its ID.
func TestAuditQueryWaitsForEarlierAppends(t *testing.T) {
	a, b, u := two(t)
	ctx := ctxT(t)
	first := &audit.Event{Time: t0, Kind: audit.KindDecision}
	if err := a.Append(ctx, first); err != nil {
		t.Fatal(err)
	}
	// another instance's append, stopped between taking its ID and committing
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var slow int64
	err = tx.QueryRow(ctx, `WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared($1))
		INSERT INTO audit_events (id, time, time_ns, kind, call_id, tenant, session, principal, role, profile,
			run, tool, digest, decision, approver, outcome, error, policy_revision)
		SELECT nextval('audit_events_id_seq'), now(), 0, 'decision', 'slow', '', '', '', '', '', '', '', '', '', '', '', '', ''
		FROM held RETURNING id`, a.auditKey).Scan(&slow)
	if err != nil {
		t.Fatal(err)
	}
	// a later append commits first, with a higher ID
	later := &audit.Event{Time: t0, Kind: audit.KindDecision, CallID: "later"}
	if err := b.Append(ctx, later); err != nil {
		t.Fatal(err)
	}
	if later.ID <= slow {
		t.Fatalf("IDs %d then %d", slow, later.ID)
	}
	got := make(chan []*audit.Event, 1)
	go func() {
		evs, err := b.Query(ctx, audit.Filter{AfterID: first.ID})
		if err != nil {
			t.Error(err)
		}
		got <- evs
	}()
	select {
	case evs := <-got:
		t.Fatalf("Query returned %d events while an earlier append was in flight", len(evs))
	case <-time.After(200 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	evs := <-got
	if len(evs) != 2 || evs[0].ID != slow || evs[1].ID != later.ID {
		t.Fatalf("Query after the slow append committed: %d events, want IDs %d and %d", len(evs), slow, later.ID)
	}
}

// Readers paging with AfterID while appenders on two instances append never skip an event.
func TestAuditPagingWhileAppending(t *testing.T) {
	a, b, _ := two(t)
	const writers, each = 8, 50
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		written = map[int64]bool{}
		done    = make(chan struct{})
	)
	for w := range writers {
		wg.Go(func() {
			s := []*DB{a, b}[w%2]
			for i := range each {
				e := &audit.Event{Time: t0, Kind: audit.KindDecision, CallID: fmt.Sprintf("w%d-%d", w, i)}
				if err := s.Append(context.Background(), e); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				written[e.ID] = true
				mu.Unlock()
			}
		})
	}
	go func() { wg.Wait(); close(done) }()

	seen := map[int64]bool{}
	var after int64
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		evs, err := []*DB{a, b}[len(seen)%2].Query(ctxT(t), audit.Filter{AfterID: after, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.ID <= after {
				t.Fatalf("ID %d after %d", e.ID, after)
			}
			seen[e.ID], after = true, e.ID
		}
		if finished && len(evs) == 0 {
			break
		}
	}
	if len(seen) != writers*each {
		t.Errorf("the pager saw %d events, want %d", len(seen), writers*each)
	}
	for id := range written {
		if !seen[id] {
			t.Errorf("the pager skipped event %d", id)
		}
	}
}

// Three instances reserve, settle and release against one run at once; the figure is never
// passed and the ledger always agrees with the reservations.
func TestLedgerAcrossThreeInstances(t *testing.T) {
	u := newSchema(t)
	dbs := []*DB{openURL(t, u), openURL(t, u), openURL(t, u)}
	ctx := ctxT(t)
	r := &budget.Run{ID: "r", Tenant: "t", Started: t0, Allowances: []budget.Allowance{{Connector: "fc", Unit: "credits", PerRun: 50, PerDay: 50}}}
	if err := dbs[0].StartRun(ctx, r, 0, "2026-03"); err != nil {
		t.Fatal(err)
	}
	var (
		wg      sync.WaitGroup
		settled atomic.Int64
	)
	for i := range 300 {
		wg.Go(func() {
			db := dbs[i%3]
			res := &budget.Reservation{Run: "r", Connector: "fc", Amount: 1, Created: t0}
			err := db.Reserve(context.Background(), res)
			if errors.Is(err, budget.ErrRunAllowance) {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			// every other one is given back, on another instance
			if i%2 == 0 {
				err = dbs[(i+1)%3].Release(context.Background(), res.ID, t0)
			} else {
				err = dbs[(i+2)%3].Settle(context.Background(), res.ID, 1, t0)
				settled.Add(1)
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	st, err := dbs[1].RunStatus(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if st.Spent[0].Settled != float64(settled.Load()) || st.Spent[0].Reserved != 0 || st.Spent[0].Settled > 50 {
		t.Errorf("spent %+v, %d settled", st.Spent[0], settled.Load())
	}
	ledgerConsistent(t, dbs[2])
}

// TestMain runs the helper instance when the hard-kill test starts this binary as one.
func TestMain(m *testing.M) {
	if u := os.Getenv("WARDEN_TEST_POSTGRES_HELPER"); u != "" {
		helperInstance(u)
		return
	}
	os.Exit(m.Run())
}

// helperInstance is a Warden instance busy with calls until it is killed: sixteen goroutines
// reserve on run "r", then settle, release or leave the reservation open (a call in flight),
// and print each step they completed.
func helperInstance(u string) {
	ctx := context.Background()
	db, err := Open(ctx, u)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	var out sync.Mutex
	for g := range 16 {
		go func() {
			for i := 0; ; i++ {
				res := &budget.Reservation{Run: "r", Connector: "fc", Amount: 2, Created: t0}
				if err := db.Reserve(ctx, res); err != nil {
					fmt.Println("reserve:", err)
					os.Exit(2)
				}
				switch i % 3 {
				case 0:
					err = db.Settle(ctx, res.ID, 1.5, t0)
				case 1:
					err = db.Release(ctx, res.ID, t0)
				}
				if err != nil {
					fmt.Println("finish:", err)
					os.Exit(2)
				}
				out.Lock()
				fmt.Println("done", g, i)
				out.Unlock()
			}
		}()
	}
	select {}
}

// An instance killed hard in the middle of many calls leaves the ledger consistent: every
// reservation that exists is counted once, and recovery settles the ones left open.
func TestInstanceKilledHard(t *testing.T) {
	u := newSchema(t)
	db := openURL(t, u)
	ctx := ctxT(t)
	r := &budget.Run{ID: "r", Tenant: "t", Started: t0, Allowances: []budget.Allowance{{Connector: "fc", Unit: "credits", PerRun: 1e9, PerDay: 1e9}}}
	if err := db.StartRun(ctx, r, 0, "2026-03"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	app := "warden_helper_" + randomHex(4)
	cmd.Env = append(os.Environ(), "WARDEN_TEST_POSTGRES_HELPER="+withParams(t, u, "application_name", app))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for n := 0; n < 300 && lines.Scan(); n++ {
		if !strings.HasPrefix(lines.Text(), "done") {
			t.Fatalf("helper: %s", lines.Text())
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup of any kind
		t.Fatal(err)
	}
	cmd.Wait()
	// the server finishes or rolls back what the dead instance had sent; each step is atomic, so
	// the ledger is consistent at every moment, but recovery must come after the last of them
	ledgerConsistent(t, db)
	for {
		var left int
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the killed instance's connections never went away")
		case <-time.After(10 * time.Millisecond):
		}
	}
	ledgerConsistent(t, db)
	var open int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM reservations WHERE state = 'reserved'`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open == 0 {
		t.Log("no call was in flight when the helper died")
	}
	// after the crash nobody knows whether the open calls ran: they count as spent
	n, err := db.RecoverReservations(ctx, t0.Add(time.Hour), t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n < open {
		t.Errorf("recovered %d reservations, %d were open", n, open)
	}
	ledgerConsistent(t, db)
	st, err := db.RunStatus(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if st.Spent[0].Reserved != 0 {
		t.Errorf("after recovery %v is still reserved", st.Spent[0].Reserved)
	}
	t.Logf("killed with %v settled; recovery counted the %d reservations left open as spent", st.Spent[0].Settled-float64(2*n), n)
}

// TestAuditChainContention: two instances append to one tenant from many goroutines, so that
// appends wait for the tenant's chain head held by the other instance's transaction and take
// their IDs after it; the chain verifies in ID order.
func TestAuditChainContention(t *testing.T) {
	serverURL(t)
	a, b, _ := two(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := []*DB{a, b}[g%2]
			for i := range 25 {
				e := &audit.Event{Kind: audit.KindDecision, Tenant: "t1", CallID: fmt.Sprintf("%d-%d", g, i)}
				if err := db.Append(context.Background(), e); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sum, err := audit.VerifyLog(ctxT(t), a)
	if err != nil || sum.Events != 800 || sum.Chains != 1 {
		t.Fatalf("VerifyLog: %+v, %v; want 800 events in 1 chain", sum, err)
	}
}
