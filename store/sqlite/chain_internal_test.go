package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wardenhq/warden/audit"
)

// TestChainCacheHolds: appends from many goroutines of one process read the chain heads from
// the table once; an append by another connection makes the next one read them again.
func TestChainCacheHolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				e := &audit.Event{Kind: audit.KindDecision, Tenant: fmt.Sprintf("t%d", (g+i)%3)}
				if err := db.Append(context.Background(), e); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	rereads := func() int {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.chain.rereads
	}
	if n := rereads(); n != 1 {
		t.Errorf("800 appends of one process read the chain heads %d times, want once", n)
	}
	other, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Append(t.Context(), &audit.Event{Kind: audit.KindRun, Tenant: "t1"}); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if err := db.Append(t.Context(), &audit.Event{Kind: audit.KindRun, Tenant: "t1"}); err != nil {
		t.Fatal(err)
	}
	if n := rereads(); n != 2 {
		t.Errorf("after another connection appended, the heads were read %d times in all, want 2", n)
	}
	sum, err := audit.VerifyLog(t.Context(), db)
	if err != nil || sum.Events != 802 || sum.Chains != 3 {
		t.Errorf("VerifyLog: %+v, %v", sum, err)
	}
}

// TestChainTwoWritersOneTenant: two processes' stores (two DBs on one file) append to one
// tenant's chain, taking turns in every pattern (one each, runs, batches against lone events),
// then all at once; each append that follows the other writer's finds its cached head stale
// and links after the other's event, so the chain verifies whole.
func TestChainTwoWritersOneTenant(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	var dbs [2]*DB
	for i := range dbs {
		db, err := Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
	}
	n := 0
	event := func() *audit.Event {
		n++
		return &audit.Event{Kind: audit.KindDecision, Tenant: "t1", CallID: fmt.Sprintf("call-%d", n)}
	}
	// Turns: which store appends next, and how many events at once (a batch when more than one).
	turns := []struct{ db, events int }{
		{0, 1}, {1, 1}, {0, 1}, {1, 1}, {0, 1}, {0, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 1},
		{0, 3}, {1, 1}, {1, 2}, {0, 1}, {1, 4}, {0, 2}, {1, 1},
	}
	var want []*audit.Event
	for _, tn := range turns {
		db := dbs[tn.db]
		if tn.events == 1 {
			e := event()
			if err := db.Append(t.Context(), e); err != nil {
				t.Fatal(err)
			}
			want = append(want, e)
			continue
		}
		batch := make([]*audit.Event, tn.events)
		for i := range batch {
			batch[i] = event()
		}
		if err := db.AppendAll(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		want = append(want, batch...)
	}
	// Each event links to the one appended before it, whichever store appended that one.
	for i := 1; i < len(want); i++ {
		if want[i].PrevHash != want[i-1].Hash || want[i].ID <= want[i-1].ID {
			t.Fatalf("event %d (%s) follows %d (%s) with prev %s", want[i].ID, want[i].CallID, want[i-1].ID,
				want[i-1].Hash, want[i].PrevHash)
		}
	}
	for i, db := range dbs {
		db.mu.Lock()
		rereads := db.chain.rereads
		db.mu.Unlock()
		if rereads < 5 {
			t.Errorf("store %d read its chain cache %d times, want one for (nearly) every turn after the other's", i, rereads)
		}
	}
	// Then both at once, from several goroutines each.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				e := &audit.Event{Kind: audit.KindDecision, Tenant: "t1", CallID: fmt.Sprintf("race-%d-%d", g, i)}
				if err := dbs[g%2].Append(context.Background(), e); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, db := range dbs {
		sum, err := audit.VerifyLog(t.Context(), db)
		if err != nil || sum.Events != len(want)+200 || sum.Chains != 1 || sum.Chained != sum.Events {
			t.Errorf("VerifyLog: %+v, %v; want %d chained events in one chain", sum, err, len(want)+200)
		}
	}
}
