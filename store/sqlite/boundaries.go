package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/wardenhq/warden/boundary"
)

var _ boundary.Store = (*DB)(nil)

const boundaryColumns = `tenant, document, revision, author, updated`

func scanBoundaries(row scanner) (*boundary.Stored, error) {
	var (
		s       boundary.Stored
		updated sql.NullString
	)
	if err := row.Scan(&s.Tenant, &s.Data, &s.Revision, &s.By, &updated); err != nil {
		return nil, err
	}
	var err error
	if s.Updated, err = parseTime(updated); err != nil {
		return nil, err
	}
	return &s, nil
}

// Boundaries returns a tenant's stored hard-block document, or nil when it has none.
func (db *DB) Boundaries(ctx context.Context, tenant string) (*boundary.Stored, error) {
	s, err := scanBoundaries(db.r.QueryRowContext(ctx, `SELECT `+boundaryColumns+` FROM boundaries WHERE tenant = ?`, tenant))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, db.fail("read the hard blocks of "+tenant, err)
	}
	return s, nil
}

// ListBoundaries returns every tenant's stored hard-block document, by tenant.
func (db *DB) ListBoundaries(ctx context.Context) ([]*boundary.Stored, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+boundaryColumns+` FROM boundaries ORDER BY tenant`)
	if err != nil {
		return nil, db.fail("list hard blocks", err)
	}
	defer rows.Close()
	var out []*boundary.Stored
	for rows.Next() {
		s, err := scanBoundaries(rows)
		if err != nil {
			return nil, db.fail("list hard blocks", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, db.fail("list hard blocks", err)
	}
	return out, nil
}

// PutBoundaries writes a tenant's document if its revision is ifRevision (see boundary.Store),
// in one transaction: the revision read and the write cannot be split by another writer, in
// this process or another.
func (db *DB) PutBoundaries(ctx context.Context, s *boundary.Stored, ifRevision int64) (*boundary.Stored, error) {
	out := *s
	err := db.tx(ctx, func(w *sql.Conn) error {
		var cur int64
		err := w.QueryRowContext(ctx, `SELECT revision FROM boundaries WHERE tenant = ?`, s.Tenant).Scan(&cur)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if ifRevision != boundary.AnyRevision && ifRevision != cur {
			return fmt.Errorf("revision %d, not %d: %w", cur, ifRevision, boundary.ErrStale)
		}
		out.Revision = cur + 1
		_, err = w.ExecContext(ctx, `INSERT INTO boundaries (`+boundaryColumns+`) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tenant) DO UPDATE SET document = excluded.document, revision = excluded.revision,
				author = excluded.author, updated = excluded.updated`,
			s.Tenant, s.Data, out.Revision, s.By, formatTime(s.Updated))
		return err
	})
	if err != nil {
		if errors.Is(err, boundary.ErrStale) {
			return nil, fmt.Errorf("write the hard blocks of %s: %w", s.Tenant, err)
		}
		return nil, db.fail("write the hard blocks of "+s.Tenant, err)
	}
	db.bounds.fire()
	return &out, nil
}

// WatchBoundaries returns a channel closed when any tenant's document may have changed: at
// once after a PutBoundaries of this process, and within the poll interval for one of
// another process.
func (db *DB) WatchBoundaries(ctx context.Context) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan struct{})
	db.bounds.add(ch)
	// Registered first, read second: a write between the two changes the sum and fires.
	sum, err := db.boundarySum(ctx)
	if err != nil {
		db.bounds.remove(ch)
		return nil, db.fail("watch hard blocks", err)
	}
	db.bounds.seen(ch, sum)
	context.AfterFunc(ctx, func() { db.bounds.remove(ch) })
	return ch, nil
}

// boundarySum grows with every write of any tenant's document (rows are never deleted).
func (db *DB) boundarySum(ctx context.Context) (int64, error) {
	var sum int64
	err := db.r.QueryRowContext(ctx, `SELECT COALESCE(SUM(revision), 0) FROM boundaries`).Scan(&sum)
	return sum, err
}

// boundaryWatch holds this process's hard-block watchers, each with the revision sum it saw.
type boundaryWatch struct {
	mu      sync.Mutex
	waiting map[chan struct{}]int64 // -1 until the sum is read
}

func (b *boundaryWatch) add(ch chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiting == nil {
		b.waiting = map[chan struct{}]int64{}
	}
	b.waiting[ch] = -1
}

func (b *boundaryWatch) seen(ch chan struct{}, sum int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.waiting[ch]; ok {
		b.waiting[ch] = sum
	}
}

func (b *boundaryWatch) remove(ch chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.waiting, ch)
}

// fire wakes every watcher, those still reading their sum too.
func (b *boundaryWatch) fire() { b.fireIf(func(int64) bool { return true }) }

// fireIf wakes the watchers whose sum passes f.
func (b *boundaryWatch) fireIf(f func(seen int64) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch, seen := range b.waiting {
		if f(seen) {
			close(ch)
			delete(b.waiting, ch)
		}
	}
}

func (b *boundaryWatch) watched() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiting) > 0
}

// pollBoundaries wakes the watchers that saw another sum than the store's now.
func (db *DB) pollBoundaries() {
	if !db.bounds.watched() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*db.opts.PollInterval)
	defer cancel()
	sum, err := db.boundarySum(ctx)
	if err != nil {
		return // the next tick tries again
	}
	db.bounds.fireIf(func(seen int64) bool { return seen >= 0 && seen != sum })
}
