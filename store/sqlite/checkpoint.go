package sqlite

import (
	"context"
	"os"
	"time"
)

// A checkpoint copies the WAL's pages back into the database file and syncs it, which can take
// milliseconds; by default SQLite runs one inside a write every 1000 pages of WAL, and the
// caller waits. Here passive checkpoints run in the background instead (on a reader connection;
// they block nobody), and the writer's own checkpoint is only a fallback, at walFallbackPages:
// under sustained writes a passive checkpoint never quite catches up, so the WAL restarts when
// it reaches that size (about 40 MB), by when most of its pages have been copied already and the
// inline checkpoint is short. Measured on the benchmarks, this is worth about a fifth of the
// reservation throughput and half again of the audit's.
const (
	// checkpointEvery wakes the checkpointer after this many writes.
	checkpointEvery = 256
	// checkpointInterval is how often the checkpointer runs anyway while there were writes.
	checkpointInterval = 100 * time.Millisecond
	// walFallbackPages is the writer's own automatic checkpoint, in pages, should the
	// background one fall behind (SQLite's default is 1000).
	walFallbackPages = 10000
	// walSizeLimit is what a WAL file is truncated to when the WAL starts again from its
	// beginning (SQLite's journal_size_limit): no more than walFallbackPages, so that the
	// file only grows past walHardPages when the WAL itself holds that many (see bound).
	walSizeLimit = walFallbackPages * walFrame
	// walHardPages is the WAL's size, in pages, at which the writer stops and restarts it
	// itself (see bound). SQLite's own fallback at walFallbackPages is passive: it gives up
	// whenever another connection is checkpointing, and on a loaded machine the background
	// checkpointer can be slow enough for thousands of pages to be written meanwhile.
	walHardPages = walFallbackPages + 500
	// walCheckEvery is how many writes apart the writer looks at the WAL's size.
	walCheckEvery = 32
	// walFrame is the size of one WAL frame of a 4 KiB page.
	walFrame = 4096 + 24
)

// wrote counts a write, keeps the WAL bounded (see bound) and wakes the checkpointer every
// checkpointEvery writes. It is called with db.mu held.
func (db *DB) wrote() {
	n := db.writes.Add(1)
	db.bound(n)
	if n%checkpointEvery == 0 {
		select {
		case db.kick <- struct{}{}:
		default:
		}
	}
}

// bound keeps the WAL at most about walHardPages long, whatever the load: every walCheckEvery
// writes the writer (db.mu held, so this process writes nothing meanwhile) looks at the WAL
// file's size, and past walHardPages runs a RESTART checkpoint, which copies the WAL back and
// waits for readers to leave it so that the next write starts it again from the beginning. A
// checkpoint that another connection is running makes it SQLITE_BUSY at once (the busy handler
// is not called for the checkpoint lock), so it is tried again until the busy timeout; past
// that the WAL is left to the next check. The file is cut to walSizeLimit whenever the WAL
// starts again, so a file longer than walHardPages pages is a WAL that holds them.
func (db *DB) bound(n int64) {
	if n%walCheckEvery != 0 {
		return
	}
	fi, err := os.Stat(db.path + "-wal")
	if err != nil || fi.Size() <= walHardPages*walFrame {
		return
	}
	deadline := time.Now().Add(db.opts.BusyTimeout)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 10*time.Millisecond) {
		var busy, log, done int64
		err := db.w.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &log, &done)
		if err == nil && busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(wait)
	}
}

// checkpoints runs PASSIVE checkpoints (they never block the writer or readers) when woken or
// every checkpointInterval while there were writes, until Close.
func (db *DB) checkpoints() {
	defer db.bg.Done()
	tick := time.NewTicker(checkpointInterval)
	defer tick.Stop()
	var done int64
	for {
		select {
		case <-db.stop:
			return
		case <-db.kick:
		case <-tick.C:
		}
		n := db.writes.Load()
		if n == done {
			continue
		}
		done = n
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// an error (a busy file, say) leaves the work to the next round or to the fallback
		_, _ = db.r.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
		cancel()
	}
}
