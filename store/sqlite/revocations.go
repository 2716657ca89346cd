package sqlite

import (
	"context"
)

// WatchRevocations returns a channel closed when a token may have been revoked after the
// call: at once after a RevokeToken of this process, and within the poll interval for one of
// another process on the same file. When ctx ends the channel stays open.
func (db *DB) WatchRevocations(ctx context.Context) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan struct{})
	db.revoked.add(ch)
	// Registered first, counted second: a revocation between the two changes the count and
	// fires.
	n, err := db.revokedCount(ctx)
	if err != nil {
		db.revoked.remove(ch)
		return nil, db.fail("watch token revocations", err)
	}
	db.revoked.seen(ch, n)
	context.AfterFunc(ctx, func() { db.revoked.remove(ch) })
	return ch, nil
}

// revokedCount grows with every revocation (a revoked token is never unrevoked or deleted).
func (db *DB) revokedCount(ctx context.Context) (int64, error) {
	var n int64
	err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM tokens WHERE revoked IS NOT NULL`).Scan(&n)
	return n, err
}

// pollRevocations wakes the watchers that saw another count of revoked tokens than the
// store's now.
func (db *DB) pollRevocations() {
	if !db.revoked.watched() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*db.opts.PollInterval)
	defer cancel()
	n, err := db.revokedCount(ctx)
	if err != nil {
		return // the next tick tries again
	}
	db.revoked.fireIf(func(seen int64) bool { return seen >= 0 && seen != n })
}
