package sqlite

import (
	"context"
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
	// walSizeLimit is what a WAL file is truncated to after a checkpoint empties it.
	walSizeLimit = 64 << 20
)

// wrote counts a write and wakes the checkpointer every checkpointEvery writes.
func (db *DB) wrote() {
	if db.writes.Add(1)%checkpointEvery == 0 {
		select {
		case db.kick <- struct{}{}:
		default:
		}
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
