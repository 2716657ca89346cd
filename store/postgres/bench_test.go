package postgres

import (
	"context"
	"fmt"
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
