package sqlite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/audit"
)

// The WAL does not grow with the writes: checkpoints run (in the background, and at the latest
// when the WAL reaches walFallbackPages).
func TestWALIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes for a while")
	}
	path := filepath.Join(t.TempDir(), "wal.db")
	db, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	big := strings.Repeat("x", 24<<10) // about seven pages an event
	const appends = 2500               // about 17,500 pages of WAL were nothing checkpointed
	for range appends {
		if err := db.Append(t.Context(), &audit.Event{Kind: audit.KindOutcome, Tenant: "t1", Error: big}); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	const frame = 4096 + 24
	if max := int64(walFallbackPages+1000) * frame; fi.Size() > max {
		t.Errorf("the WAL is %d bytes after %d appends, want at most %d", fi.Size(), appends, max)
	}
	t.Logf("WAL %d bytes", fi.Size())
}
