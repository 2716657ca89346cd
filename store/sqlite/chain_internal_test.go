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
