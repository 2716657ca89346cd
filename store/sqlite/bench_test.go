package sqlite_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/budget"
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

// BenchmarkAuditAppend is one decision written to the audit trail, committed.
func BenchmarkAuditAppend(b *testing.B) {
	db := benchDB(b)
	ctx := context.Background()
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		e := &audit.Event{Time: now, Kind: audit.KindDecision, CallID: "call-1", Tenant: "t1", Session: "sess-1",
			Principal: "agent:coworker-7", Role: "specialist", Profile: "seo", Run: "run-1", Tool: "mcp__firecrawl__scrape",
			Digest: "sha256:0123456789abcdef0123456789abcdef", Decision: "allow",
			Blockers: []audit.Blocker{{Code: "approval_required", Rule: "r1"}}, Rules: []string{"r1"},
			Spend: &audit.Spend{Connector: "firecrawl", Unit: "credits", Amount: 2}, PolicyRevision: "rev-42"}
		if err := db.Append(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}
