package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Opener{
		New: func(t *testing.T) storetest.Store {
			return open(t, filepath.Join(t.TempDir(), "warden.db"))
		},
		Another: func(t *testing.T, s storetest.Store) storetest.Store {
			return open(t, s.(*sqlite.DB).Path())
		},
		Exec: func(t *testing.T, s storetest.Store, stmts ...string) {
			tamper(t, s.(*sqlite.DB).Path(), stmts...)
		},
	})
}

// tamper runs stmts on the file by hand, as someone with write access to it could: first
// dropping the triggers that keep the audit trail append-only.
func tamper(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db := raw(t, path)
	for _, trig := range []string{"audit_events_no_update", "audit_events_no_delete"} {
		stmts = append([]string{"DROP TRIGGER IF EXISTS " + trig}, stmts...)
	}
	for _, stmt := range stmts {
		if _, err := db.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// open opens path; the caller closes it.
func open(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return db
}

// raw opens path with the driver alone, for what the store does not let a test do.
func raw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// within runs f and fails the test if it has not returned within d: for calls that must not
// hang.
func within[T any](t *testing.T, d time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-done:
		return v
	case <-timer.C:
		t.Fatalf("still waiting after %v", d)
		panic("unreachable")
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
	}{
		{"a directory that does not exist", filepath.Join(dir, "missing", "warden.db")},
		{"a directory", dir},
		{"no path", ""},
		{"memory", ":memory:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := sqlite.Open(t.Context(), tt.path)
			if err == nil {
				db.Close()
				t.Fatalf("Open(%q) succeeded", tt.path)
			}
			if !strings.Contains(err.Error(), tt.path) {
				t.Errorf("Open(%q) error %q does not name the path", tt.path, err)
			}
			t.Log(err)
		})
	}
}

func TestOpenCreatesAndClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	db := open(t, path)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the file was not created: %v", err)
	}
	if err := db.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("Close twice: %v", err)
	}
	err := db.Append(t.Context(), &audit.Event{Kind: audit.KindRun})
	if !errors.Is(err, sqlite.ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if _, err := db.Query(t.Context(), audit.Filter{}); !errors.Is(err, sqlite.ErrClosed) {
		t.Errorf("Query after Close = %v, want ErrClosed", err)
	}
}

// A database whose write lock another connection holds (BEGIN EXCLUSIVE) is reported after
// the busy timeout, naming the file, at Open and on a write; never waited on forever.
func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.db")
	opts := sqlite.Options{BusyTimeout: 300 * time.Millisecond}
	db, err := sqlite.OpenWith(t.Context(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	locker, err := raw(t, path).Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	if _, err := locker.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatalf("BEGIN EXCLUSIVE: %v", err)
	}

	err = within(t, 30*time.Second, func() error {
		db2, err := sqlite.OpenWith(t.Context(), path, opts)
		if err == nil {
			db2.Close()
		}
		return err
	})
	if !errors.Is(err, sqlite.ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Errorf("Open of a locked database = %v, want ErrLocked naming %s", err, path)
	}
	t.Log(err)

	// a store already open waits its busy timeout, then fails clearly
	err = within(t, 30*time.Second, func() error {
		return db.Append(t.Context(), &audit.Event{Kind: audit.KindDecision, Tenant: "t1"})
	})
	if !errors.Is(err, sqlite.ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Errorf("Append to a locked database = %v, want ErrLocked naming %s", err, path)
	}
	t.Log(err)
	// reads go on while the writer is locked out (WAL)
	if _, err := db.Query(t.Context(), audit.Filter{}); err != nil {
		t.Errorf("Query while locked: %v", err)
	}

	if _, err := locker.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatalf("ROLLBACK: %v", err)
	}
	if err := db.Append(t.Context(), &audit.Event{Kind: audit.KindDecision, Tenant: "t1"}); err != nil {
		t.Errorf("Append once the lock is gone: %v", err)
	}
	db2, err := sqlite.OpenWith(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open once the lock is gone: %v", err)
	}
	db2.Close()
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "future.db")
	db := open(t, path)
	db.Close()
	newer := sqlite.SchemaVersion() + 1
	if _, err := raw(t, path).Exec("INSERT INTO schema_version (version, name, applied) VALUES (?, 'from the future', '')", newer); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(t.Context(), path)
	if !errors.Is(err, sqlite.ErrNewerSchema) {
		t.Fatalf("Open = %v, want ErrNewerSchema", err)
	}
	t.Log(err)
	for _, want := range []string{path, strconv.Itoa(newer), strconv.Itoa(sqlite.SchemaVersion())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// Processes opening a new file at once migrate it once.
func TestConcurrentOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := sqlite.Open(context.Background(), path)
			if err == nil {
				err = db.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	var n, max int
	if err := raw(t, path).QueryRow("SELECT COUNT(*), MAX(version) FROM schema_version").Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != sqlite.SchemaVersion() || max != sqlite.SchemaVersion() {
		t.Errorf("schema_version has %d rows up to %d, want %d", n, max, sqlite.SchemaVersion())
	}
}

// snapshot is everything a store holds, read through its interfaces.
type snapshot struct {
	Cards     []*approval.Card
	Standings []*approval.Standing
	Runs      []*budget.RunStatus
	Month     float64
	Events    []*audit.Event
	Tokens    []*auth.Token
}

func take(t *testing.T, db *sqlite.DB) snapshot {
	t.Helper()
	ctx := t.Context()
	var s snapshot
	var err error
	if s.Cards, err = db.Cards(ctx, approval.CardFilter{}); err != nil {
		t.Fatal(err)
	}
	if s.Standings, err = db.Standings(ctx, ""); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"run-1", "run-2"} {
		st, err := db.RunStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		s.Runs = append(s.Runs, st)
	}
	if s.Month, err = db.MonthSpend(ctx, "t1", "2026-03"); err != nil {
		t.Fatal(err)
	}
	if s.Events, err = db.Query(ctx, audit.Filter{}); err != nil {
		t.Fatal(err)
	}
	if s.Tokens, err = db.Tokens(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keep.db")
	db := open(t, path)
	ctx := t.Context()
	t0 := time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.UTC) // nanoseconds are kept
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []string{"card-1", "card-2"} {
		must(db.CreateCard(ctx, &approval.Card{ID: id, Tenant: "t1", Session: "s", Principal: "p", Tool: "tool",
			Digest: "d" + id, PolicyRevision: "rev", Args: json.RawMessage(`{"a":[1,2,{"b":"c"}]}`), Reason: "why",
			Created: t0.Add(time.Duration(i) * time.Second), Deadline: t0.Add(time.Hour)}))
	}
	_, err := db.Resolve(ctx, "card-1", approval.Allowed, approval.AllowTenant, "alice", approval.ChannelAPI, t0.Add(time.Minute))
	must(err)
	must(db.AddStanding(ctx, &approval.Standing{ID: "st-1", Tenant: "t1", Tool: "tool", Digest: "dcard-1", CardID: "card-1", Approver: "alice", Created: t0}))
	must(db.AddStanding(ctx, &approval.Standing{ID: "st-2", Tenant: "t1", Tool: "tool", Digest: "dcard-2", CardID: "card-2", Approver: "bob", Created: t0.Add(time.Second)}))
	must(db.RevokeStanding(ctx, "t1", "st-2", t0.Add(time.Hour)))
	for _, id := range []string{"run-1", "run-2"} {
		must(db.StartRun(ctx, &budget.Run{ID: id, Tenant: "t1", Profile: "p", Session: "s", Attempt: 1, Started: t0, Day: "2026-03-14",
			Allowances:    []budget.Allowance{{Connector: "firecrawl", Unit: "credits", PerRun: 10, PerDay: 100}, {Connector: "dataforseo", Unit: "USD", PerRun: 1, PerDay: 5}},
			MaxConcurrent: 5, BudgetUsd: 0.5, MaxTurns: 10}, 100, "2026-03"))
	}
	must(db.Reserve(ctx, &budget.Reservation{ID: "r1", Run: "run-1", Connector: "firecrawl", Amount: 3, Created: t0}))
	must(db.Reserve(ctx, &budget.Reservation{ID: "r2", Run: "run-1", Connector: "dataforseo", Amount: 0.25, Created: t0}))
	must(db.Settle(ctx, "r2", 0.2, t0.Add(time.Second)))
	_, err = db.Turn(ctx, "run-1")
	must(err)
	_, _, err = db.ModelSpend(ctx, "t1", "run-1", 0.03, "2026-03")
	must(err)
	must(db.EndRun(ctx, "run-2", t0.Add(time.Hour)))
	must(db.Append(ctx, &audit.Event{Time: t0, Kind: audit.KindDecision, CallID: "c1", Tenant: "t1", Decision: "ask",
		Blockers: []audit.Blocker{{Code: "approval_required"}}, Rules: []string{"r"}, Spend: &audit.Spend{Connector: "firecrawl", Unit: "credits", Amount: 3}}))
	must(db.Append(ctx, &audit.Event{Time: t0.Add(time.Second), Kind: audit.KindOutcome, CallID: "c1", Tenant: "t1", Outcome: "ok"}))
	must(db.CreateToken(ctx, &auth.Token{ID: "tok-1", Hash: auth.Hash("a"), Role: auth.RoleAdmin, Created: t0}))
	must(db.CreateToken(ctx, &auth.Token{ID: "tok-2", Hash: auth.Hash("b"), Role: auth.RoleAgent, Tenant: "t1", SessionRole: "coworker", Profile: "p", Created: t0}))
	must(db.RevokeToken(ctx, "tok-2", t0.Add(time.Hour)))

	before := take(t, db)
	must(db.Close())
	db = open(t, path)
	defer db.Close()
	after := take(t, db)
	// times must come back to the nanosecond, so compare them exactly (in UTC)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("reopened store differs (-before +after):\n%s", diff)
	}
	if got := after.Cards[1].Created; !got.Equal(t0) || got.Location() != time.UTC {
		t.Errorf("card created %v, want %v in UTC", got, t0)
	}
}

// TestCrashKeepsCommitted kills a process that is reserving, appending and settling as fast
// as it can, then opens the file again: every call that returned is there, the ledger's
// totals agree with its reservations (nothing lost or counted twice), and recovery settles
// what was left open.
func TestCrashKeepsCommitted(t *testing.T) {
	if path := os.Getenv("WARDEN_SQLITE_CRASH_CHILD"); path != "" {
		crashChild(path, os.Getenv("WARDEN_SQLITE_CRASH_JOURNAL") != "")
		return
	}
	if testing.Short() {
		t.Skip("starts a process")
	}
	// Decisions appended (committed to SQLite), and decisions journaled (Options.Journal: on
	// disk in the journal when Journal returns, indexed by whoever opens the store next).
	t.Run("append", func(t *testing.T) { crashKeepsCommitted(t, false) })
	t.Run("journal", func(t *testing.T) { crashKeepsCommitted(t, true) })
}

func crashKeepsCommitted(t *testing.T, journal bool) {
	path := filepath.Join(t.TempDir(), "crash.db")
	db := open(t, path)
	if err := db.StartRun(t.Context(), &budget.Run{ID: "run-1", Tenant: "t1", Profile: "p", Day: "2026-03-14",
		Allowances: []budget.Allowance{{Connector: "firecrawl", Unit: "credits", PerRun: 1e9, PerDay: 1e9}}}, 0, "2026-03"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashKeepsCommitted$")
	cmd.Env = append(os.Environ(), "WARDEN_SQLITE_CRASH_CHILD="+path)
	if journal {
		cmd.Env = append(cmd.Env, "WARDEN_SQLITE_CRASH_JOURNAL=1")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{} // "reserved 12", "appended 12", "settled 12"
	lines := bufio.NewScanner(out)
	for lines.Scan() && len(done) < 600 {
		done[lines.Text()] = true
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() { // what it said before it died counts too
		done[lines.Text()] = true
	}
	_ = cmd.Wait()
	if len(done) < 600 {
		t.Fatalf("the child reported only %d steps", len(done))
	}

	check := raw(t, path)
	states := map[string]string{}
	rows, err := check.Query("SELECT id, state FROM reservations")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, state string
		if err := rows.Scan(&id, &state); err != nil {
			t.Fatal(err)
		}
		states[id] = state
	}
	rows.Close()
	db = open(t, path)
	defer db.Close()
	events, err := db.Query(t.Context(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	appended := map[string]bool{}
	for _, e := range events {
		appended[e.CallID] = true
	}
	// What a crash left, indexed at this open, chains on unbroken.
	if sum, err := audit.VerifyLog(t.Context(), db); err != nil || sum.Events != len(events) {
		t.Errorf("after the crash the trail verifies: %+v, %v", sum, err)
	}
	for step := range done {
		verb, n, _ := strings.Cut(step, " ")
		id := "res-" + n
		switch verb {
		case "reserved":
			if states[id] == "" {
				t.Errorf("%s returned but is not in the ledger", id)
			}
		case "settled":
			if states[id] != "settled" {
				t.Errorf("%s was settled but is %q", id, states[id])
			}
		case "appended":
			if !appended["call-"+n] {
				t.Errorf("event call-%s was appended but is not in the audit trail", n)
			}
		}
	}

	// the run's totals are exactly its reservations'
	var open, settled float64
	for _, state := range states {
		switch state {
		case "reserved":
			open += 2
		case "settled":
			settled += 1.5
		}
	}
	st, err := db.RunStatus(t.Context(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if sp := st.Spent[0]; sp.Reserved != open || sp.Settled != settled {
		t.Errorf("after the crash: totals reserved %v settled %v, reservations say %v and %v", sp.Reserved, sp.Settled, open, settled)
	}
	n, err := db.RecoverReservations(t.Context(), time.Now().Add(time.Hour), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st, err = db.RunStatus(t.Context(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if sp := st.Spent[0]; sp.Reserved != 0 || sp.Settled != settled+2*float64(n) {
		t.Errorf("after recovery of %d: reserved %v settled %v, want 0 and %v", n, sp.Reserved, sp.Settled, settled+2*float64(n))
	}
	t.Logf("%d steps reported, %d reservations, %d left open and recovered", len(done), len(states), n)
}

// crashChild reserves, appends and settles until it is killed, saying what returned.
func crashChild(path string, journal bool) {
	ctx := context.Background()
	db, err := sqlite.OpenWith(ctx, path, sqlite.Options{Journal: journal})
	if journal && err == nil && !db.Journaling() {
		err = errors.New("the child does not hold the journal")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		id := "res-" + strconv.Itoa(i)
		if err := db.Reserve(ctx, &budget.Reservation{ID: id, Run: "run-1", Connector: "firecrawl", Amount: 2}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println("reserved", i)
		if err := db.Journal(ctx, &audit.Event{Time: time.Now(), Kind: audit.KindDecision, CallID: "call-" + strconv.Itoa(i), Decision: "allow"}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println("appended", i)
		if i%4 == 3 {
			continue // a call in flight when the process dies
		}
		if err := db.Settle(ctx, id, 1.5, time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println("settled", i)
	}
}

// TestRaceAcrossProcesses is the ledger race with real processes: two of them, each with
// several goroutines, reserve 1 at a time against a per-run figure of 50; exactly 50 fit.
func TestRaceAcrossProcesses(t *testing.T) {
	if path := os.Getenv("WARDEN_SQLITE_RACE_CHILD"); path != "" {
		raceChild(path)
		return
	}
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "race.db")
	db := open(t, path)
	defer db.Close()
	if err := db.StartRun(t.Context(), &budget.Run{ID: "run-1", Tenant: "t1", Profile: "p", Day: "2026-03-14",
		Allowances: []budget.Allowance{{Connector: "firecrawl", Unit: "credits", PerRun: 50, PerDay: 50}}}, 0, "2026-03"); err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRaceAcrossProcesses$")
		cmd.Env = append(os.Environ(), "WARDEN_SQLITE_RACE_CHILD="+path)
		out := new(strings.Builder)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	total := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i])
		}
		var n int
		if _, err := fmt.Sscanf(outs[i].String(), "fitted %d", &n); err != nil {
			t.Fatalf("child %d said %q", i, outs[i])
		}
		total += n
	}
	st, err := db.RunStatus(t.Context(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if total != 50 || st.Spent[0].Reserved != 50 {
		t.Errorf("%d reservations fitted, %v reserved; want exactly 50", total, st.Spent[0].Reserved)
	}
}

// raceChild makes 100 reservations of 1 from 4 goroutines and says how many fitted.
func raceChild(path string) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	defer db.Close()
	var (
		mu     sync.Mutex
		fitted int
		wg     sync.WaitGroup
	)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				id := fmt.Sprintf("res-%d-%d-%d", os.Getpid(), g, i)
				err := db.Reserve(ctx, &budget.Reservation{ID: id, Run: "run-1", Connector: "firecrawl", Amount: 1})
				switch {
				case err == nil:
					mu.Lock()
					fitted++
					mu.Unlock()
				case !errors.Is(err, budget.ErrRunAllowance):
					fmt.Println(err)
					os.Exit(2)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("fitted %d\n", fitted)
}

// Closing while calls are running: those calls finish or fail with ErrClosed, and nothing
// races (run with -race).
func TestCloseWhileBusy(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "close.db"))
	ctx := context.Background()
	if err := db.CreateCard(ctx, &approval.Card{ID: "c", Tenant: "t1"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 100)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch (g + i) % 3 {
				case 0:
					err = db.Append(ctx, &audit.Event{Kind: audit.KindDecision})
				case 1:
					_, err = db.Card(ctx, "t1", "c")
				case 2:
					_, err = db.Watch(ctx, "c")
				}
				if err != nil {
					if !errors.Is(err, sqlite.ErrClosed) {
						errs <- err
					}
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond) // let the calls get going; not an assertion
	if err := db.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a call during Close: %v, want ErrClosed", err)
	}
}

// Paths are files, whatever characters they hold: none is taken for a URI parameter.
func TestOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "we?ird #dir%20")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "a&b=c.db")
	db := open(t, path)
	defer db.Close()
	if err := db.Append(t.Context(), &audit.Event{Kind: audit.KindRun}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the file is not where it was asked for: %v", err)
	}
}
