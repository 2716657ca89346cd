package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/budget"
)

// benchDB opens a store on a fresh schema with a connection for each goroutine.
func benchDB(b *testing.B, goroutines int) *DB {
	u := withParams(b, newSchema(b), "pool_max_conns", fmt.Sprint(max(4, goroutines)))
	return openURL(b, u)
}

// spread runs op b.N times over n goroutines and returns the operations per second.
func spread(b *testing.B, n int, op func() error) float64 {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	b.ResetTimer()
	start := time.Now()
	for range n {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := op(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(b.N) / time.Since(start).Seconds()
}

// BenchmarkReserveSettle measures reserve-and-settle pairs per second: on one run from one
// goroutine and from sixteen (every pair takes the same allowance row's lock until its commit
// is durable, so they queue), and on sixteen runs from sixteen goroutines (a busy gateway).
func BenchmarkReserveSettle(b *testing.B) {
	for _, bb := range []struct{ goroutines, runs int }{{1, 1}, {16, 1}, {16, 16}} {
		b.Run(fmt.Sprintf("goroutines=%d/runs=%d", bb.goroutines, bb.runs), func(b *testing.B) {
			db := benchDB(b, bb.goroutines)
			ctx := context.Background()
			for i := range bb.runs {
				r := &budget.Run{ID: fmt.Sprint("r", i), Tenant: "t", Started: t0,
					Allowances: []budget.Allowance{{Connector: "fc", Unit: "credits", PerRun: 1e12, PerDay: 1e15}}}
				if err := db.StartRun(ctx, r, 0, "2026-03"); err != nil {
					b.Fatal(err)
				}
			}
			var g atomic.Int64
			rate := spread(b, bb.goroutines, func() error {
				res := &budget.Reservation{Run: fmt.Sprint("r", g.Add(1)%int64(bb.runs)), Connector: "fc", Amount: 1, Created: t0}
				if err := db.Reserve(ctx, res); err != nil {
					return err
				}
				return db.Settle(ctx, res.ID, 1, t0)
			})
			b.ReportMetric(rate, "pairs/s")
		})
	}
}

// BenchmarkAuditAppend measures committed audit appends per second, from one goroutine and
// from sixteen.
func BenchmarkAuditAppend(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			db := benchDB(b, n)
			ctx := context.Background()
			rate := spread(b, n, func() error {
				return db.Append(ctx, &audit.Event{Time: t0, Kind: audit.KindDecision, Tenant: "t", Session: "s",
					Tool: "mcp__firecrawl__scrape", Digest: "sha256:0123", Decision: "allow",
					Blockers: []audit.Blocker{{Code: "approval_required"}}, Rules: []string{"r1"}})
			})
			b.ReportMetric(rate, "appends/s")
		})
	}
}

// unchainedAppend appends e as the store did before the hash chain (schema version 8): one
// statement, the shared audit lock then the insert with the next ID, no chain head, no hashes.
// It is the baseline BenchmarkAuditChainCost compares the chained append with.
func (db *DB) unchainedAppend(ctx context.Context, e *audit.Event) error {
	var blockers, rules, spend []byte
	var err error
	if e.Blockers != nil {
		if blockers, err = json.Marshal(e.Blockers); err != nil {
			return err
		}
	}
	if e.Rules != nil {
		if rules, err = json.Marshal(e.Rules); err != nil {
			return err
		}
	}
	if e.Spend != nil {
		if spend, err = json.Marshal(e.Spend); err != nil {
			return err
		}
	}
	e.Time = orNow(e.Time)
	t, tns := ts(e.Time)
	return db.pool.QueryRow(ctx, `WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared($1))
		INSERT INTO audit_events (id, time, time_ns, kind, call_id, tenant, session, principal, role,
			profile, run, tool, digest, decision, blockers, rules, approver, spend, outcome, error, policy_revision, channel, harness)
		SELECT nextval('audit_events_id_seq'), $2, $3, $4, $5, $6, $7, $8, $9,
			$10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23 FROM held
		RETURNING id`,
		db.auditKey, t, tns, e.Kind, e.CallID, e.Tenant, e.Session, e.Principal, e.Role,
		e.Profile, e.Run, e.Tool, e.Digest, e.Decision, blockers, rules, e.Approver, spend, e.Outcome, e.Error,
		e.PolicyRevision, e.Channel, e.Harness).Scan(&e.ID)
}

// BenchmarkAuditChainCost is what the hash chain adds to an append from one goroutine: the
// chained Append on one store and the unchained append (unchainedAppend) on another, in pairs
// of rounds of chainRound appends, one round of each side (which goes first alternates), in
// one run, so that the machine's load falls on both alike. It reports each side's time per
// append and, when the server runs on this machine, the CPU time of each side's server
// process (/proc's schedstat) per append, and the ratios on/off: the median over the pairs of
// the ratio within each, so that a burst of load during a few rounds does not sway it. Each side has one connection, so one server
// process. It runs with synchronous_commit on (as deployed: each commit waits for its WAL
// flush) and off (the work of an append apart from the flush).
func BenchmarkAuditChainCost(b *testing.B) {
	for _, sync := range []string{"on", "off"} {
		b.Run("synchronous_commit="+sync, func(b *testing.B) { benchChainCost(b, sync) })
	}
}

func benchChainCost(b *testing.B, sync string) {
	ctx := context.Background()
	on := openURL(b, withParams(b, newSchema(b), "pool_max_conns", "1", "synchronous_commit", sync))
	off := openURL(b, withParams(b, newSchema(b), "pool_max_conns", "1", "synchronous_commit", sync))
	event := func() *audit.Event {
		return &audit.Event{Time: t0, Kind: audit.KindDecision, CallID: "call-1", Tenant: "t1", Session: "sess-1",
			Principal: "agent:coworker-7", Role: "specialist", Profile: "seo", Run: "run-1", Tool: "mcp__firecrawl__scrape",
			Digest: "sha256:0123456789abcdef0123456789abcdef", Decision: "allow",
			Blockers: []audit.Blocker{{Code: "approval_required", Rule: "r1"}}, Rules: []string{"r1"},
			Spend: &audit.Spend{Connector: "firecrawl", Unit: "credits", Amount: 2}, PolicyRevision: "rev-42"}
	}
	sides := []struct {
		append    func(context.Context, *audit.Event) error
		pid       int32
		took, cpu time.Duration
		n         int
	}{{append: off.unchainedAppend}, {append: on.Append}}
	for i, db := range []*DB{off, on} {
		if err := db.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&sides[i].pid); err != nil {
			b.Fatal(err)
		}
	}
	// Warm both: connections, prepared statements, the chain head.
	for i := range sides {
		for range 10 {
			if err := sides[i].append(ctx, event()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	var ratios, cpuRatios []float64
	for pair := 0; sides[0].n < b.N; pair++ {
		k := min(chainRound, b.N-sides[0].n)
		var took, cpu [2]time.Duration
		for j := range 2 {
			i := j ^ pair&1
			s := &sides[i]
			c, start := serverCPU(s.pid), time.Now()
			for range k {
				if err := s.append(ctx, event()); err != nil {
					b.Fatal(err)
				}
			}
			took[i], cpu[i] = time.Since(start), serverCPU(s.pid)-c
			s.took += took[i]
			s.cpu += cpu[i]
			s.n += k
		}
		ratios = append(ratios, float64(took[1])/float64(took[0]))
		cpuRatios = append(cpuRatios, float64(cpu[1])/float64(max(cpu[0], 1)))
	}
	b.StopTimer()
	offNs := float64(sides[0].took.Nanoseconds()) / float64(sides[0].n)
	onNs := float64(sides[1].took.Nanoseconds()) / float64(sides[1].n)
	b.ReportMetric(offNs, "off-ns/append")
	b.ReportMetric(onNs, "on-ns/append")
	b.ReportMetric(median(ratios), "on/off")
	if sides[0].cpu > 0 && sides[1].cpu > 0 {
		offCPU := float64(sides[0].cpu.Nanoseconds()) / float64(sides[0].n)
		onCPU := float64(sides[1].cpu.Nanoseconds()) / float64(sides[1].n)
		b.ReportMetric(offCPU, "off-server-cpu-ns/append")
		b.ReportMetric(onCPU, "on-server-cpu-ns/append")
		b.ReportMetric(median(cpuRatios), "server-cpu-on/off")
	}
}

// median is the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

// serverCPU is the CPU time the server process pid has used, when it runs on this machine
// (else 0): the first field of /proc/<pid>/schedstat, in nanoseconds.
func serverCPU(pid int32) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(n)
}

// chainRound is how many appends one side of BenchmarkAuditChainCost makes before the other's
// turn.
const chainRound = 50
