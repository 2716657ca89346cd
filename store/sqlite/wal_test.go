package sqlite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/audit"
)

// The WAL does not grow with the writes: checkpoints run in the background, and the writer
// itself restarts the WAL when it reaches walHardPages (whatever the background checkpointer
// is doing: on a loaded machine it can be slow enough for the whole run to pass through it).
// The WAL file's size is looked at after every write, as the file is cut again each time the
// WAL starts over.
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
	var most int64
	at := 0
	for i := range appends {
		if err := db.Append(t.Context(), &audit.Event{Kind: audit.KindOutcome, Tenant: "t1", Error: big}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > most {
			most, at = fi.Size(), i+1
		}
	}
	const frame = 4096 + 24
	if max := int64(walFallbackPages+1000) * frame; most > max {
		t.Errorf("the WAL reached %d bytes (after append %d of %d), want at most %d", most, at, appends, max)
	}
	t.Logf("the WAL was at most %d bytes", most)
}
