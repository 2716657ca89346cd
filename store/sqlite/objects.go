package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wardenhq/warden/manage"
)

var _ manage.Store = (*DB)(nil)

const objectColumns = `kind, id, tenant, data, revision, deleted, author, updated`

func scanObject(row scanner) (*manage.Object, error) {
	var (
		o       manage.Object
		kind    string
		data    []byte
		updated sql.NullString
	)
	if err := row.Scan(&kind, &o.ID, &o.Tenant, &data, &o.Revision, &o.Deleted, &o.By, &updated); err != nil {
		return nil, err
	}
	o.Kind = manage.Kind(kind)
	if data == nil {
		data = []byte{}
	}
	o.Data = data
	var err error
	if o.Updated, err = parseTime(updated); err != nil {
		return nil, err
	}
	return &o, nil
}

// Objects returns the live objects of a kind, by id, after the id after, at most limit of them
// (0: all); a tenant other than "" keeps only that tenant's.
func (db *DB) Objects(ctx context.Context, kind manage.Kind, tenant, after string, limit int) ([]*manage.Object, error) {
	op := "list " + string(kind) + " objects"
	if limit < 0 {
		return nil, fmt.Errorf("%s: limit %d: want 0 (all) or more", op, limit)
	}
	lim := int64(limit)
	if limit == 0 {
		lim = -1 // SQLite: no limit
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+objectColumns+` FROM objects
		WHERE kind = ? AND deleted = 0 AND (? = '' OR tenant = ?) AND id > ?
		ORDER BY id LIMIT ?`, string(kind), tenant, tenant, after, lim)
	if err != nil {
		return nil, db.fail(op, err)
	}
	out, err := collectObjects(rows)
	if err != nil {
		return nil, db.fail(op, err)
	}
	return out, nil
}

func collectObjects(rows *sql.Rows) ([]*manage.Object, error) {
	defer rows.Close()
	var out []*manage.Object
	for rows.Next() {
		o, err := scanObject(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// AllObjects returns every live object, by kind and id (as the strings sort), and the change
// count (the sum of every row's revision, deleted ones included), both read in one read
// transaction so that the count is the one of the objects returned.
func (db *DB) AllObjects(ctx context.Context) ([]*manage.Object, int64, error) {
	tx, err := db.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, db.fail("read every object", err)
	}
	defer func() { _ = tx.Rollback() }()
	// The first read starts the snapshot that the second one sees too.
	var sum int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(revision), 0) FROM objects`).Scan(&sum); err != nil {
		return nil, 0, db.fail("read every object", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+objectColumns+` FROM objects WHERE deleted = 0 ORDER BY kind, id`)
	if err != nil {
		return nil, 0, db.fail("read every object", err)
	}
	out, err := collectObjects(rows)
	if err != nil {
		return nil, 0, db.fail("read every object", err)
	}
	return out, sum, nil
}

// Object returns one live object; manage.ErrNotFound if there is none or it was deleted.
func (db *DB) Object(ctx context.Context, kind manage.Kind, id string) (*manage.Object, error) {
	o, err := scanObject(db.r.QueryRowContext(ctx, `SELECT `+objectColumns+` FROM objects
		WHERE kind = ? AND id = ? AND deleted = 0`, string(kind), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read %s: %w", manage.ObjectName(kind, id), manage.ErrNotFound)
	}
	if err != nil {
		return nil, db.fail("read "+manage.ObjectName(kind, id), err)
	}
	return o, nil
}

// PutObject writes o if its current revision is ifRevision (see manage.Store), in one
// transaction: the revision read and the write cannot be split by another writer, in this
// process or another.
func (db *DB) PutObject(ctx context.Context, o *manage.Object, ifRevision int64) (*manage.Object, error) {
	op := "write " + manage.ObjectName(o.Kind, o.ID)
	if err := manage.CheckObject(o); err != nil {
		return nil, fmt.Errorf("write an object: %w", err)
	}
	out := *o
	if out.Data == nil {
		out.Data = []byte{}
	}
	out.Deleted = false
	err := db.tx(ctx, func(w *sql.Conn) error {
		var (
			cur     int64
			tenant  string
			deleted bool
		)
		err := w.QueryRowContext(ctx, `SELECT revision, tenant, deleted FROM objects WHERE kind = ? AND id = ?`,
			string(o.Kind), o.ID).Scan(&cur, &tenant, &deleted)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := manage.CheckWrite(cur, tenant, deleted, o.Tenant, ifRevision); err != nil {
			return err
		}
		out.Revision = cur + 1
		_, err = w.ExecContext(ctx, `INSERT INTO objects (`+objectColumns+`) VALUES (?, ?, ?, ?, ?, 0, ?, ?)
			ON CONFLICT (kind, id) DO UPDATE SET tenant = excluded.tenant, data = excluded.data,
				revision = excluded.revision, deleted = 0, author = excluded.author, updated = excluded.updated`,
			string(o.Kind), o.ID, o.Tenant, []byte(out.Data), out.Revision, o.By, formatTime(o.Updated))
		return err
	})
	if err != nil {
		if errors.Is(err, manage.ErrStale) {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		return nil, db.fail(op, err)
	}
	db.objects.fire()
	return &out, nil
}

// DeleteObject deletes an object if its revision is ifRevision (see manage.Store). The row
// stays, marked deleted with one more revision, so that a revision never repeats.
func (db *DB) DeleteObject(ctx context.Context, kind manage.Kind, id string, ifRevision int64, by string, at time.Time) error {
	op := "delete " + manage.ObjectName(kind, id)
	err := db.tx(ctx, func(w *sql.Conn) error {
		var (
			cur     int64
			deleted bool
		)
		err := w.QueryRowContext(ctx, `SELECT revision, deleted FROM objects WHERE kind = ? AND id = ?`,
			string(kind), id).Scan(&cur, &deleted)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := manage.CheckDelete(cur, deleted, ifRevision); err != nil {
			return err
		}
		_, err = w.ExecContext(ctx, `UPDATE objects SET deleted = 1, revision = ?, author = ?, updated = ?
			WHERE kind = ? AND id = ?`, cur+1, by, formatTime(at), string(kind), id)
		return err
	})
	if err != nil {
		if errors.Is(err, manage.ErrStale) || errors.Is(err, manage.ErrNotFound) {
			return fmt.Errorf("%s: %w", op, err)
		}
		return db.fail(op, err)
	}
	db.objects.fire()
	return nil
}

// WatchObjects returns a channel closed when any object may have changed: at once after a
// write of this process, within the poll interval for one of another process, and when ctx
// ends.
func (db *DB) WatchObjects(ctx context.Context) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan struct{})
	db.objects.add(ch)
	// Registered first, read second: a write between the two changes the sum and fires.
	sum, err := db.objectSum(ctx)
	if err != nil {
		db.objects.end(ch)
		return nil, db.fail("watch objects", err)
	}
	db.objects.seen(ch, sum)
	db.objects.until(ctx, ch)
	return ch, nil
}

// objectSum grows with every write and deletion of any object (rows are never removed).
func (db *DB) objectSum(ctx context.Context) (int64, error) {
	var sum int64
	err := db.r.QueryRowContext(ctx, `SELECT COALESCE(SUM(revision), 0) FROM objects`).Scan(&sum)
	return sum, err
}

// pollObjects wakes the object watchers that saw another sum than the store's now.
func (db *DB) pollObjects() {
	if !db.objects.watched() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*db.opts.PollInterval)
	defer cancel()
	sum, err := db.objectSum(ctx)
	if err != nil {
		return // the next tick tries again
	}
	db.objects.fireIf(func(seen int64) bool { return seen >= 0 && seen != sum })
}

// objectWatch holds this process's object watchers, each with the revision sum it saw and the
// function that stops its context's clean-up. Unlike the hard-block watch, a watcher is closed
// when its context ends, and the clean-up is stopped when it fires: a caller that watches
// again and again with one long context leaves nothing behind.
type objectWatch struct {
	mu      sync.Mutex
	waiting map[chan struct{}]*objectWatcher
}

type objectWatcher struct {
	seen int64 // -1 until the sum is read
	stop func() bool
}

func (b *objectWatch) add(ch chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiting == nil {
		b.waiting = map[chan struct{}]*objectWatcher{}
	}
	b.waiting[ch] = &objectWatcher{seen: -1}
}

func (b *objectWatch) seen(ch chan struct{}, sum int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w, ok := b.waiting[ch]; ok {
		w.seen = sum
	}
}

// until closes ch when ctx ends, unless it fired first.
func (b *objectWatch) until(ctx context.Context, ch chan struct{}) {
	stop := context.AfterFunc(ctx, func() { b.end(ch) })
	b.mu.Lock()
	w, ok := b.waiting[ch]
	if ok {
		w.stop = stop
	}
	b.mu.Unlock()
	if !ok {
		stop()
	}
}

// end closes ch if it is still waiting.
func (b *objectWatch) end(ch chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closeLocked(ch)
}

func (b *objectWatch) closeLocked(ch chan struct{}) {
	w, ok := b.waiting[ch]
	if !ok {
		return
	}
	delete(b.waiting, ch)
	close(ch)
	if w.stop != nil {
		w.stop()
	}
}

// fire wakes every watcher, those still reading their sum too.
func (b *objectWatch) fire() { b.fireIf(func(int64) bool { return true }) }

// fireIf wakes the watchers whose sum passes f.
func (b *objectWatch) fireIf(f func(seen int64) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch, w := range b.waiting {
		if f(w.seen) {
			b.closeLocked(ch)
		}
	}
}

func (b *objectWatch) watched() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiting) > 0
}
