package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/manage"
)

var _ manage.Store = (*DB)(nil)

// objectsKey is what an object write notifies on the store's channel, and the watchers' key in
// the hub. Card ids never start with "*".
const objectsKey = "*objects"

const objectColumns = `kind, id, tenant, data, revision, deleted, author, updated`

func scanObject(row pgx.Row) (*manage.Object, error) {
	var (
		o       manage.Object
		kind    string
		data    []byte
		updated time.Time
	)
	if err := row.Scan(&kind, &o.ID, &o.Tenant, &data, &o.Revision, &o.Deleted, &o.By, &updated); err != nil {
		return nil, err
	}
	o.Kind = manage.Kind(kind)
	if data == nil {
		data = []byte{}
	}
	o.Data = data
	o.Updated = updated.UTC()
	return &o, nil
}

func collectObjects(rows pgx.Rows) ([]*manage.Object, error) {
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

// Objects returns the live objects of a kind, by id, after the id after, at most limit of them
// (0: all); a tenant other than "" keeps only that tenant's.
func (db *DB) Objects(ctx context.Context, kind manage.Kind, tenant, after string, limit int) ([]*manage.Object, error) {
	op := "list " + string(kind) + " objects"
	if limit < 0 {
		return nil, fmt.Errorf("postgres: %s: limit %d: want 0 (all) or more", op, limit)
	}
	var lim any // NULL: no limit
	if limit > 0 {
		lim = limit
	}
	rows, err := db.pool.Query(ctx, `SELECT `+objectColumns+` FROM objects
		WHERE kind = $1 AND NOT deleted AND ($2 = '' OR tenant = $2) AND id > $3
		ORDER BY id LIMIT $4`, string(kind), tenant, after, lim)
	if err != nil {
		return nil, db.wrap(op, err)
	}
	out, err := collectObjects(rows)
	if err != nil {
		return nil, db.wrap(op, err)
	}
	return out, nil
}

// AllObjects returns every live object, by kind and id (bytewise), and the change count (the
// sum of every row's revision, deleted ones included), read in one snapshot so that the count
// is the one of the objects returned.
func (db *DB) AllObjects(ctx context.Context) ([]*manage.Object, int64, error) {
	var (
		out []*manage.Object
		sum int64
	)
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(revision), 0) FROM objects`).Scan(&sum); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+objectColumns+` FROM objects WHERE NOT deleted ORDER BY kind, id`)
		if err != nil {
			return err
		}
		out, err = collectObjects(rows)
		return err
	})
	if err != nil {
		return nil, 0, db.wrap("read every object", err)
	}
	return out, sum, nil
}

// Object returns one live object; manage.ErrNotFound if there is none or it was deleted.
func (db *DB) Object(ctx context.Context, kind manage.Kind, id string) (*manage.Object, error) {
	o, err := scanObject(db.pool.QueryRow(ctx, `SELECT `+objectColumns+` FROM objects
		WHERE kind = $1 AND id = $2 AND NOT deleted`, string(kind), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: read %s: %w", manage.ObjectName(kind, id), manage.ErrNotFound)
	}
	if err != nil {
		return nil, db.wrap("read "+manage.ObjectName(kind, id), err)
	}
	return o, nil
}

// PutObject writes o if its current revision is ifRevision (see manage.Store). An advisory
// lock on the kind and id serialises the writers of one object on every instance (the first
// write has no row to lock), so two cannot both win; the write notifies every instance's watch
// when it commits.
func (db *DB) PutObject(ctx context.Context, o *manage.Object, ifRevision int64) (*manage.Object, error) {
	op := "write " + manage.ObjectName(o.Kind, o.ID)
	if err := manage.CheckObject(o); err != nil {
		return nil, fmt.Errorf("postgres: write an object: %w", err)
	}
	out := *o
	if out.Data == nil {
		out.Data = []byte{}
	}
	out.Deleted = false
	updated := o.Updated.Truncate(time.Microsecond)
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("objects", db.schema, string(o.Kind), o.ID)); err != nil {
			return err
		}
		var (
			cur     int64
			tenant  string
			deleted bool
		)
		err := tx.QueryRow(ctx, `SELECT revision, tenant, deleted FROM objects WHERE kind = $1 AND id = $2`,
			string(o.Kind), o.ID).Scan(&cur, &tenant, &deleted)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := manage.CheckWrite(cur, tenant, deleted, o.Tenant, ifRevision); err != nil {
			return err
		}
		out.Revision = cur + 1
		if _, err := tx.Exec(ctx, `INSERT INTO objects (`+objectColumns+`) VALUES ($1, $2, $3, $4, $5, false, $6, $7)
			ON CONFLICT (kind, id) DO UPDATE SET tenant = excluded.tenant, data = excluded.data,
				revision = excluded.revision, deleted = false, author = excluded.author, updated = excluded.updated`,
			string(o.Kind), o.ID, o.Tenant, []byte(out.Data), out.Revision, o.By, updated); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, db.channel, objectsKey)
		return err
	})
	if errors.Is(err, manage.ErrStale) {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	if err != nil {
		return nil, db.wrap(op, err)
	}
	// This instance's watchers wake at once; the notification wakes the others' (and ours
	// again, harmlessly).
	db.hub.notify(objectsKey)
	out.Updated = updated.UTC()
	return &out, nil
}

// DeleteObject deletes an object if its revision is ifRevision (see manage.Store). The row
// stays, marked deleted with one more revision, so that a revision never repeats; the deletion
// notifies every instance's watch when it commits.
func (db *DB) DeleteObject(ctx context.Context, kind manage.Kind, id string, ifRevision int64, by string, at time.Time) error {
	op := "delete " + manage.ObjectName(kind, id)
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		// The lock PutObject takes: a write that read the revision first cannot write after.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("objects", db.schema, string(kind), id)); err != nil {
			return err
		}
		var (
			cur     int64
			deleted bool
		)
		err := tx.QueryRow(ctx, `SELECT revision, deleted FROM objects WHERE kind = $1 AND id = $2`,
			string(kind), id).Scan(&cur, &deleted)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := manage.CheckDelete(cur, deleted, ifRevision); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE objects SET deleted = true, revision = $1, author = $2, updated = $3
			WHERE kind = $4 AND id = $5`, cur+1, by, at.Truncate(time.Microsecond), string(kind), id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, db.channel, objectsKey)
		return err
	})
	if errors.Is(err, manage.ErrStale) || errors.Is(err, manage.ErrNotFound) {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	if err != nil {
		return db.wrap(op, err)
	}
	db.hub.notify(objectsKey)
	return nil
}

// WatchObjects returns a channel closed when any object may have changed, whichever instance
// wrote it, and when ctx ends. While the LISTEN connection is being re-established the watch
// stays registered, and it fires when the connection is back (a write made meanwhile was not
// heard).
func (db *DB) WatchObjects(ctx context.Context) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := db.hub.ensure(ctx); err != nil {
		return nil, err
	}
	w := db.hub.add(objectsKey)
	db.hub.closeWhen(ctx, w)
	return w.ch, nil
}
