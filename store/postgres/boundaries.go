package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/boundary"
)

var _ boundary.Store = (*DB)(nil)

// boundariesKey is what a hard-block write notifies on the store's channel, and the watchers'
// key in the hub. Card ids never start with "*".
const boundariesKey = "*boundaries"

const boundaryColumns = `tenant, document, revision, author, updated`

func scanBoundaries(row pgx.Row) (*boundary.Stored, error) {
	var (
		s       boundary.Stored
		updated time.Time
	)
	if err := row.Scan(&s.Tenant, &s.Data, &s.Revision, &s.By, &updated); err != nil {
		return nil, err
	}
	s.Updated = updated.UTC()
	return &s, nil
}

// Boundaries returns a tenant's stored hard-block document, or nil when it has none.
func (db *DB) Boundaries(ctx context.Context, tenant string) (*boundary.Stored, error) {
	s, err := scanBoundaries(db.pool.QueryRow(ctx, `SELECT `+boundaryColumns+` FROM boundaries WHERE tenant = $1`, tenant))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, db.wrap("read the hard blocks of "+tenant, err)
	}
	return s, nil
}

// ListBoundaries returns every tenant's stored hard-block document, by tenant.
func (db *DB) ListBoundaries(ctx context.Context) ([]*boundary.Stored, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+boundaryColumns+` FROM boundaries ORDER BY tenant`)
	if err != nil {
		return nil, db.wrap("list hard blocks", err)
	}
	defer rows.Close()
	var out []*boundary.Stored
	for rows.Next() {
		s, err := scanBoundaries(rows)
		if err != nil {
			return nil, db.wrap("list hard blocks", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, db.wrap("list hard blocks", err)
	}
	return out, nil
}

// PutBoundaries writes a tenant's document if its revision is ifRevision (see boundary.Store).
// The row is locked while its revision is compared, so two instances writing at once cannot
// both win; the write notifies every instance's watch when it commits.
func (db *DB) PutBoundaries(ctx context.Context, s *boundary.Stored, ifRevision int64) (*boundary.Stored, error) {
	out := *s
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		// The first write of a tenant has no row to lock: a transaction-scoped advisory lock on
		// the tenant serialises it with any other.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("boundaries", db.schema, s.Tenant)); err != nil {
			return err
		}
		var cur int64
		err := tx.QueryRow(ctx, `SELECT revision FROM boundaries WHERE tenant = $1`, s.Tenant).Scan(&cur)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if ifRevision != boundary.AnyRevision && ifRevision != cur {
			return fmt.Errorf("revision %d, not %d: %w", cur, ifRevision, boundary.ErrStale)
		}
		out.Revision = cur + 1
		if _, err := tx.Exec(ctx, `INSERT INTO boundaries (`+boundaryColumns+`) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (tenant) DO UPDATE SET document = excluded.document, revision = excluded.revision,
				author = excluded.author, updated = excluded.updated`,
			s.Tenant, s.Data, out.Revision, s.By, s.Updated); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, db.channel, boundariesKey)
		return err
	})
	if errors.Is(err, boundary.ErrStale) {
		return nil, fmt.Errorf("write the hard blocks of %s: %w", s.Tenant, err)
	}
	if err != nil {
		return nil, db.wrap("write the hard blocks of "+s.Tenant, err)
	}
	out.Updated = out.Updated.Truncate(time.Microsecond).UTC()
	return &out, nil
}

// WatchBoundaries returns a channel closed when any tenant's document may have changed,
// whichever instance wrote it. While the LISTEN connection is being re-established the
// watch stays registered, and it fires when the connection is back (a write made meanwhile
// was not heard).
func (db *DB) WatchBoundaries(ctx context.Context) (<-chan struct{}, error) {
	if err := db.hub.ensure(ctx); err != nil {
		return nil, err
	}
	w := db.hub.add(boundariesKey)
	db.hub.until(ctx, w)
	return w.ch, nil
}
