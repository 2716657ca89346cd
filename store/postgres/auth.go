package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/auth"
)

const tokenColumns = `id, hash, role, tenant, session_role, profile, name, created, created_ns, revoked, revoked_ns, expires, expires_ns, model, harness`

func scanToken(row pgx.Row) (*auth.Token, error) {
	var (
		t                auth.Token
		created          time.Time
		revoked, expires *time.Time
		cns, rns, ens    int16
	)
	if err := row.Scan(&t.ID, &t.Hash, &t.Role, &t.Tenant, &t.SessionRole, &t.Profile, &t.Name, &created, &cns, &revoked, &rns, &expires, &ens, &t.Model, &t.Harness); err != nil {
		return nil, err
	}
	t.Created, t.Revoked, t.Expires = fromTS(&created, cns), fromTS(revoked, rns), fromTS(expires, ens)
	return &t, nil
}

// CreateToken stores a token; an empty ID is filled in. A hash that is stored already is
// ErrDuplicate.
func (db *DB) CreateToken(ctx context.Context, t *auth.Token) error {
	if t.Hash == "" {
		return errors.New("postgres: create token: the token has no hash")
	}
	if t.ID == "" {
		t.ID = newID()
	}
	created, cns := ts(t.Created)
	revoked, rns := tsNull(t.Revoked)
	expires, ens := tsNull(t.Expires)
	_, err := db.pool.Exec(ctx, `INSERT INTO tokens (`+tokenColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		t.ID, t.Hash, t.Role, t.Tenant, t.SessionRole, t.Profile, t.Name, created, cns, revoked, rns, expires, ens, t.Model, t.Harness)
	return db.wrap("create token", err)
}

// TokenByHash returns the good token with the hash (neither revoked nor expired), or
// auth.ErrNotFound.
func (db *DB) TokenByHash(ctx context.Context, hash string) (*auth.Token, error) {
	t, err := scanToken(db.pool.QueryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = $1 AND revoked IS NULL`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, auth.ErrNotFound
	}
	if err != nil {
		return nil, db.wrap("token", err)
	}
	if t.Expired(time.Now()) {
		return nil, auth.ErrNotFound
	}
	return t, nil
}

// TokenByID returns the good token with the id (neither revoked nor expired), or
// auth.ErrNotFound: what the console's calls in process act as (server.ActAs).
func (db *DB) TokenByID(ctx context.Context, id string) (*auth.Token, error) {
	t, err := scanToken(db.pool.QueryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = $1 AND revoked IS NULL`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, auth.ErrNotFound
	}
	if err != nil {
		return nil, db.wrap("token", err)
	}
	if t.Expired(time.Now()) {
		return nil, auth.ErrNotFound
	}
	return t, nil
}

// Tokens lists every token, revoked ones included, in the order they were created.
func (db *DB) Tokens(ctx context.Context) ([]*auth.Token, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY seq`)
	if err != nil {
		return nil, db.wrap("tokens", err)
	}
	defer rows.Close()
	var list []*auth.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, db.wrap("tokens", err)
		}
		list = append(list, t)
	}
	if err := rows.Err(); err != nil {
		return nil, db.wrap("tokens", err)
	}
	return list, nil
}

// RevokeToken revokes a token; auth.ErrNotFound if there is no unrevoked token with the ID.
func (db *DB) RevokeToken(ctx context.Context, id string, at time.Time) error {
	when, ns := ts(orNow(at))
	var n int64
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE tokens SET revoked = $2, revoked_ns = $3 WHERE id = $1 AND revoked IS NULL`, id, when, ns)
		if err != nil {
			return err
		}
		if n = tag.RowsAffected(); n == 0 {
			return nil
		}
		// Every instance's watch hears of it when the revocation commits.
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, db.channel, revocationsKey)
		return err
	})
	if err != nil {
		return db.wrap("revoke token", err)
	}
	if n == 0 {
		return fmt.Errorf("token %q: %w", id, auth.ErrNotFound)
	}
	return nil
}

// revocationsKey is what a token revocation notifies on the store's channel, and its
// watchers' key in the hub (card ids never start with "*").
const revocationsKey = "*tokens"

// WatchRevocations returns a channel closed when a token may have been revoked, by whichever
// instance. While the LISTEN connection is being re-established the watch stays registered,
// and it fires when the connection is back (a revocation made meanwhile was not heard).
func (db *DB) WatchRevocations(ctx context.Context) (<-chan struct{}, error) {
	if err := db.hub.ensure(ctx); err != nil {
		return nil, err
	}
	w := db.hub.add(revocationsKey)
	db.hub.until(ctx, w)
	return w.ch, nil
}
