package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/instance"
	"github.com/wardenhq/warden/store/sqlite"
)

func benchDB(b *testing.B) *sqlite.DB {
	b.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkReserveSettle is one paid call's ledger work: a reservation against the run's
// per-run figure, then its settlement. The aim is 5,000 pairs a second.
func BenchmarkReserveSettle(b *testing.B) {
	db := benchDB(b)
	ctx := context.Background()
	run := &budget.Run{ID: "run-bench", Tenant: "t1", Profile: "p", Started: time.Now(), Day: "2026-03-14",
		Allowances: []budget.Allowance{{Connector: "firecrawl", Unit: "credits", PerRun: 1e12, PerDay: 1e12}}}
	if err := db.StartRun(ctx, run, 0, "2026-03"); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		id := "res-" + strconv.Itoa(i)
		if err := db.Reserve(ctx, &budget.Reservation{ID: id, Run: "run-bench", Connector: "firecrawl", Amount: 2, Created: now}); err != nil {
			b.Fatal(err)
		}
		if err := db.Settle(ctx, id, 1.5, now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

// BenchmarkAuditAppend is decisions written to the audit trail, each committed before Append
// returns: from one goroutine, and from sixteen at once (as the gateway's concurrent calls
// write them).
func BenchmarkAuditAppend(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) {
			db := benchDB(b)
			ctx := context.Background()
			now := time.Now()
			b.ReportAllocs()
			b.SetParallelism((n + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					e := &audit.Event{Time: now, Kind: audit.KindDecision, CallID: "call-1", Tenant: "t1", Session: "sess-1",
						Principal: "agent:coworker-7", Role: "specialist", Profile: "seo", Run: "run-1", Tool: "mcp__firecrawl__scrape",
						Digest: "sha256:0123456789abcdef0123456789abcdef", Decision: "allow",
						Blockers: []audit.Blocker{{Code: "approval_required", Rule: "r1"}}, Rules: []string{"r1"},
						Spend: &audit.Spend{Connector: "firecrawl", Unit: "credits", Amount: 2}, PolicyRevision: "rev-42"}
					if err := db.Append(ctx, e); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// BenchmarkAuditJournal is BenchmarkAuditAppend's decisions through the decision journal
// (Options.Journal, as warden serve runs): each durable when Journal returns, indexed into
// audit_events behind it. ns/op is the time on a call's path; the benchmark ends with a
// Query, which waits for the index, so the indexing's CPU is in the run too (cpu-ns/op is the
// process's CPU time per event, both sides included).
func BenchmarkAuditJournal(b *testing.B) {
	for _, journal := range []bool{false, true} {
		b.Run(fmt.Sprintf("journal=%v", journal), func(b *testing.B) {
			db, err := sqlite.OpenWith(b.Context(), filepath.Join(b.TempDir(), "warden.db"), sqlite.Options{Journal: journal})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			now := time.Now()
			var before syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				e := &audit.Event{Time: now, Kind: audit.KindDecision, CallID: "call-1", Tenant: "t1", Session: "sess-1",
					Principal: "agent:coworker-7", Role: "specialist", Profile: "seo", Run: "run-1", Tool: "mcp__firecrawl__scrape",
					Digest: "sha256:0123456789abcdef0123456789abcdef", Decision: "allow",
					Blockers: []audit.Blocker{{Code: "approval_required", Rule: "r1"}}, Rules: []string{"r1"},
					Spend: &audit.Spend{Connector: "firecrawl", Unit: "credits", Amount: 2}, PolicyRevision: "rev-42"}
				if err := db.Journal(ctx, e); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := db.Query(ctx, audit.Filter{CallID: "none"}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			var after syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkRecoverIdle is what every instance's heartbeat costs when nobody died: a beat and
// a recovery that frees nothing, beside 1,000 live runs, each with an open reservation, held
// by a live instance, and 1,000 pending cards.
func BenchmarkRecoverIdle(b *testing.B) {
	db := benchDB(b)
	ctx := context.Background()
	now := time.Now()
	live := &instance.Instance{ID: "i-live", Started: now, Heartbeat: now}
	if _, err := db.Beat(ctx, live); err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		id := "run-" + strconv.Itoa(i)
		run := &budget.Run{ID: id, Tenant: "t1", Profile: id, Started: now, Day: "2026-03-14", Instance: "i-live",
			Allowances: []budget.Allowance{{Connector: "firecrawl", Unit: "credits", PerRun: 10, PerDay: 1e6}}}
		if err := db.StartRun(ctx, run, 0, "2026-03"); err != nil {
			b.Fatal(err)
		}
		if err := db.Reserve(ctx, &budget.Reservation{Run: id, Call: "call-" + id, Connector: "firecrawl", Amount: 1, Created: now}); err != nil {
			b.Fatal(err)
		}
		if err := db.CreateCard(ctx, &approval.Card{ID: "card-" + id, Tenant: "t1", Created: now, Deadline: now, Instance: "i-live"}); err != nil {
			b.Fatal(err)
		}
	}
	self := &instance.Instance{ID: "i-self", Started: now, Heartbeat: now}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := db.Beat(ctx, self); err != nil {
			b.Fatal(err)
		}
		got, err := db.Recover(ctx, instance.Recovery{Self: "i-self", StaleBefore: now.Add(-time.Minute), At: now})
		if err != nil || !got.Empty() {
			b.Fatalf("Recover = %+v, %v; want nothing freed", got, err)
		}
	}
}

// BenchmarkAuditChainCost is what the hash chain adds to an append from one goroutine: the
// chained Append on one store and the append as it was before the chain (UnchainedAppender)
// on another, in pairs of rounds of chainRound appends, one round of each side (which goes
// first alternates), in one run, so that the machine's load falls on both alike. It reports
// each side's time and CPU time per append (the CPU time of the appending thread: the append
// runs on it, SQLite included; the background checkpoints are not in it) and the ratios
// on/off: the median over the pairs of the ratio within each, so that a burst of load on the
// machine during a few rounds does not sway it.
func BenchmarkAuditChainCost(b *testing.B) {
	ctx := context.Background()
	on, off := benchDB(b), benchDB(b)
	unchained, err := off.UnchainedAppender(ctx)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	event := func() *audit.Event {
		return &audit.Event{Time: now, Kind: audit.KindDecision, CallID: "call-1", Tenant: "t1", Session: "sess-1",
			Principal: "agent:coworker-7", Role: "specialist", Profile: "seo", Run: "run-1", Tool: "mcp__firecrawl__scrape",
			Digest: "sha256:0123456789abcdef0123456789abcdef", Decision: "allow",
			Blockers: []audit.Blocker{{Code: "approval_required", Rule: "r1"}}, Rules: []string{"r1"},
			Spend: &audit.Spend{Connector: "firecrawl", Unit: "credits", Amount: 2}, PolicyRevision: "rev-42"}
	}
	sides := [2]chainSide{{append: unchained}, {append: on.Append}}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Warm both: statements, the chain cache.
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
			c, start := threadCPU(), time.Now()
			for range k {
				if err := sides[i].append(ctx, event()); err != nil {
					b.Fatal(err)
				}
			}
			took[i], cpu[i] = time.Since(start), threadCPU()-c
			sides[i].took += took[i]
			sides[i].cpu += cpu[i]
			sides[i].n += k
		}
		ratios = append(ratios, float64(took[1])/float64(took[0]))
		cpuRatios = append(cpuRatios, float64(cpu[1])/float64(max(cpu[0], 1)))
	}
	b.StopTimer()
	reportChainCost(b, sides, median(ratios), median(cpuRatios))
}

// median is the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

// chainRound is how many appends one side of BenchmarkAuditChainCost makes before the other's
// turn.
const chainRound = 50

// chainSide is one side of BenchmarkAuditChainCost: off (unchained) or on.
type chainSide struct {
	append    func(context.Context, *audit.Event) error
	took, cpu time.Duration
	n         int
}

// reportChainCost reports both sides' time and CPU time per append and the ratios on/off
// (medians of the pairs').
func reportChainCost(b *testing.B, sides [2]chainSide, ratio, cpuRatio float64) {
	per := func(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / float64(n) }
	off, on := sides[0], sides[1]
	b.ReportMetric(per(off.took, off.n), "off-ns/append")
	b.ReportMetric(per(on.took, on.n), "on-ns/append")
	b.ReportMetric(ratio, "on/off")
	b.ReportMetric(per(off.cpu, off.n), "off-cpu-ns/append")
	b.ReportMetric(per(on.cpu, on.n), "on-cpu-ns/append")
	b.ReportMetric(cpuRatio, "cpu-on/off")
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_THREAD, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
