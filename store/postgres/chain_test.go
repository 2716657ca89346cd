package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/wardenhq/warden/audit"
)

// TestChainTwoInstancesOneTenant: two instances append to one tenant's chain, taking turns in
// every pattern (one each, runs, batches against lone events), then all at once; each event
// links to the one appended before it, whichever instance appended that one, and the chain
// verifies whole.
func TestChainTwoInstancesOneTenant(t *testing.T) {
	a, b, _ := two(t)
	dbs := [2]*DB{a, b}
	n := 0
	event := func() *audit.Event {
		n++
		return &audit.Event{Time: t0, Kind: audit.KindDecision, Tenant: "t1", CallID: fmt.Sprintf("call-%d", n)}
	}
	turns := []struct{ db, events int }{
		{0, 1}, {1, 1}, {0, 1}, {1, 1}, {0, 1}, {0, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 1},
		{0, 3}, {1, 1}, {1, 2}, {0, 1}, {1, 4}, {0, 2}, {1, 1},
	}
	var want []*audit.Event
	for _, tn := range turns {
		db := dbs[tn.db]
		if tn.events == 1 {
			e := event()
			if err := db.Append(ctxT(t), e); err != nil {
				t.Fatal(err)
			}
			want = append(want, e)
			continue
		}
		batch := make([]*audit.Event, tn.events)
		for i := range batch {
			batch[i] = event()
		}
		if err := db.AppendAll(ctxT(t), batch); err != nil {
			t.Fatal(err)
		}
		want = append(want, batch...)
	}
	if want[0].PrevHash != fmt.Sprintf("%x", audit.Genesis) {
		t.Fatalf("the first event chains from %s, want the genesis", want[0].PrevHash)
	}
	for i := 1; i < len(want); i++ {
		if want[i].PrevHash != want[i-1].Hash || want[i].ID <= want[i-1].ID {
			t.Fatalf("event %d (%s) follows %d (%s) with prev %s", want[i].ID, want[i].CallID, want[i-1].ID,
				want[i-1].Hash, want[i].PrevHash)
		}
	}
	// Then both at once, from several goroutines each, lone events and batches.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				e := &audit.Event{Time: t0, Kind: audit.KindDecision, Tenant: "t1", CallID: fmt.Sprintf("race-%d-%d", g, i)}
				var err error
				if i%5 == 4 {
					f := *e
					f.CallID += "-b"
					err = dbs[g%2].AppendAll(context.Background(), []*audit.Event{e, &f})
				} else {
					err = dbs[g%2].Append(context.Background(), e)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	total := len(want) + 8*20 + 8*4
	for _, db := range dbs {
		sum, err := audit.VerifyLog(ctxT(t), db)
		if err != nil || sum.Events != total || sum.Chains != 1 || sum.Chained != total {
			t.Errorf("VerifyLog: %+v, %v; want %d chained events in one chain", sum, err, total)
		}
	}
}
