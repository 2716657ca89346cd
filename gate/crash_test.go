package gate_test

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/instance"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/store/postgres"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/store/storetest"
	"github.com/wardenhq/warden/surface"
)

// The crash test: a child process runs many billed calls through the gate on a store (SQLite,
// and PostgreSQL when WARDEN_TEST_POSTGRES_URL is set), each call appending its id to a file
// when it executes; the parent kills it hard (SIGKILL) in the middle, opens the store again,
// and checks that every executed call is in the audit trail and that the ledger is
// consistent: no reservation left open after recovery, none lost, none counted twice, no run
// above its allowance, and nothing charged for a call with no decision on record.

const crashPolicy = `
version: 1
builtins:
  - name: files_read
connectors:
  - id: meter
    effect: read
    grantable: true
    billing: {unit: credits, cost: 1}
    tools: [{name: mcp__meter__tick}]
limits: {runBudgetUsd: 1, maxTurns: 10, maxConcurrentRuns: 8}
profiles:
  - id: worker
    tools: [files_read]
    grant:
      connectors: [meter]
      allowance: {meter: {perRun: 1000000, perDay: 100000000}}
tenants:
  - id: t
    connections: [{id: m, connector: meter}]
`

const (
	crashRuns    = 4
	crashWorkers = 8 // per run
)

// crashInstance is the child's instance.
const crashInstance = "i-crash-child"

func TestMain(m *testing.M) {
	if db := os.Getenv("WARDEN_CRASH_DB"); db != "" {
		crashChild(db, os.Getenv("WARDEN_CRASH_MARKS"))
		return
	}
	os.Exit(m.Run())
}

// openCrashStore opens the store the crash test runs on: a PostgreSQL URL (with a schema of
// the test's own as its search_path), or an SQLite file.
func openCrashStore(ctx context.Context, where string) (storetest.Store, error) {
	if strings.HasPrefix(where, "postgres://") || strings.HasPrefix(where, "postgresql://") {
		return postgres.Open(ctx, where)
	}
	// The decision journal on: a decision is in the journal when the call runs, and indexed
	// by whoever opens the store next.
	return sqlite.OpenWith(ctx, where, sqlite.Options{Journal: true})
}

func crashSessions(t testing.TB, g *gate.Gate, ws string) []*gate.Session {
	p, err := policy.Parse("crash.yaml", []byte(crashPolicy))
	if err != nil {
		t.Fatal(err)
	}
	env := p.Env(policy.MapLookup(nil))
	paths, err := action.NewResolver(ws, ws)
	if err != nil {
		t.Fatal(err)
	}
	var out []*gate.Session
	for i := range crashRuns {
		sf, err := surface.Open(env, surface.Spec{Role: "specialist", Tenant: "t", Profile: "worker"})
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("crash-%d", i)
		s := &gate.Session{Review: &review.Session{ID: id, Surface: sf, Paths: paths}, Principal: "crash"}
		s.Run = gate.RunFor(sf, id, id, g.Now())
		out = append(out, s)
	}
	return out
}

// fatalf is a testing.TB for the child, which has no test to fail.
type fatalf struct{ testing.TB }

func (fatalf) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, args...)
	os.Exit(3)
}
func (fatalf) Helper() {}

func crashChild(where, marks string) {
	ctx := context.Background()
	die := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	db, err := openCrashStore(ctx, where)
	if err != nil {
		die(err)
	}
	rv, err := review.New(review.Options{})
	if err != nil {
		die(err)
	}
	if _, err := db.Beat(ctx, &instance.Instance{ID: crashInstance, Started: time.Now(), Heartbeat: time.Now()}); err != nil {
		die(err)
	}
	g, err := gate.New(gate.Options{Reviewer: rv, Broker: approval.NewBroker(approval.Options{Store: db, Instance: crashInstance}),
		Ledger: db, Log: db, Clock: clock.Real{}, Instance: crashInstance})
	if err != nil {
		die(err)
	}
	f, err := os.OpenFile(marks, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		die(err)
	}
	sessions := crashSessions(fatalf{}, g, filepath.Dir(marks))
	var wg sync.WaitGroup
	for _, s := range sessions {
		if err := g.StartRun(ctx, s); err != nil {
			die(err)
		}
		for range crashWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					_, err := g.Call(ctx, s, "mcp__meter__tick", map[string]any{"n": 1.0}, func(ctx context.Context, _ *action.Action) (map[string]any, error) {
						// One write: a line is in the file whole or not at all.
						_, err := f.WriteString(gate.CallID(ctx) + "\n")
						return map[string]any{"ok": true}, err
					})
					if err != nil {
						die(err)
					}
				}
			}()
		}
	}
	wg.Wait()
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash test runs a child process for a few seconds")
	}
	t.Run("sqlite", func(t *testing.T) {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		testCrashRecovery(t, dir, filepath.Join(dir, "warden.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		testCrashRecovery(t, dir, crashSchema(t))
	})
}

// crashSchema returns WARDEN_TEST_POSTGRES_URL with a schema of the test's own as its
// search_path, made now and dropped when the test ends; unset, the test skips.
func crashSchema(t *testing.T) string {
	base := os.Getenv("WARDEN_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("WARDEN_TEST_POSTGRES_URL is not set")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema := pgx.Identifier{fmt.Sprintf("warden_test_crash_%d", time.Now().UnixNano())}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", strings.Trim(schema, `"`))
	u.RawQuery = q.Encode()
	return u.String()
}

func testCrashRecovery(t *testing.T, dir, where string) {
	marks := filepath.Join(dir, "executed")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WARDEN_CRASH_DB="+where, "WARDEN_CRASH_MARKS="+marks)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Let it run a few hundred calls, then kill it where it stands.
	deadline := time.Now().Add(60 * time.Second)
	for countLines(t, marks) < 400 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the child made too few calls in a minute: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if strings.Contains(stderr.String(), "crash child:") {
		t.Fatalf("the child failed before it was killed: %s", stderr.String())
	}

	ctx := context.Background()
	db, err := openCrashStore(ctx, where)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The child is dead; a recovery that takes every instance silent until now for dead frees
	// what it held.
	now := time.Now()
	rec := instance.Recovery{Self: "i-crash-test", StaleBefore: now.Add(time.Nanosecond), At: now}
	recovered, err := db.Recover(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(recovered.Runs) != crashRuns || fmt.Sprint(recovered.Instances) != "["+crashInstance+"]" {
		t.Errorf("recovery ended %d runs and forgot %v; want %d and the child", len(recovered.Runs), recovered.Instances, crashRuns)
	}
	if again, err := db.Recover(ctx, rec); err != nil || !again.Empty() {
		t.Fatalf("a second recovery freed %+v more (%v): a row was freed twice", again, err)
	}

	// Every executed call was recorded before it ran.
	allowed := map[string]bool{}
	for after := int64(0); ; {
		evs, err := db.Query(ctx, audit.Filter{Kind: audit.KindDecision, Decision: "allow", AfterID: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			allowed[e.CallID] = true
		}
		if len(evs) < 1000 {
			break
		}
		after = evs[len(evs)-1].ID
	}
	executed := readLines(t, marks)
	for _, id := range executed {
		if !allowed[id] {
			t.Errorf("call %s ran with no decision on record", id)
		}
	}

	// The ledger: nothing left reserved; what was settled is exactly every allowed call (1
	// credit each): the calls that had reserved but not yet recorded their decision when the
	// process died cannot have run, and are released.
	var settled float64
	for i := range crashRuns {
		st, err := db.RunStatus(ctx, fmt.Sprintf("crash-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range st.Spent {
			if sp.Reserved != 0 {
				t.Errorf("run %d still holds %v reserved after recovery", i, sp.Reserved)
			}
			if sp.Settled > sp.PerRun {
				t.Errorf("run %d settled %v, above its allowance %v", i, sp.Settled, sp.PerRun)
			}
			settled += sp.Settled
		}
	}
	if settled != float64(len(allowed)) {
		t.Errorf("settled %v credits for %d allowed calls (recovery settled %d, released %d); want one each",
			settled, len(allowed), recovered.Settled, recovered.Released)
	}
	t.Logf("killed after %d executed calls; %d allowed decisions on record; %v credits settled; at restart %d settled, %d released",
		len(executed), len(allowed), settled, recovered.Settled, recovered.Released)
}

func countLines(t *testing.T, path string) int { return len(readLines(t, path)) }

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
