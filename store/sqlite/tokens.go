package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/auth"
)

const tokenColumns = `id, hash, role, tenant, session_role, profile, name, created, revoked, expires, model, harness`

func scanToken(row scanner) (*auth.Token, error) {
	var (
		t                         auth.Token
		created, revoked, expires sql.NullString
	)
	if err := row.Scan(&t.ID, &t.Hash, &t.Role, &t.Tenant, &t.SessionRole, &t.Profile, &t.Name, &created, &revoked, &expires, &t.Model, &t.Harness); err != nil {
		return nil, err
	}
	var err error
	if t.Created, err = parseTime(created); err != nil {
		return nil, err
	}
	if t.Revoked, err = parseTime(revoked); err != nil {
		return nil, err
	}
	if t.Expires, err = parseTime(expires); err != nil {
		return nil, err
	}
	return &t, nil
}

// CreateToken stores a token (its hash, never its secret); one without an ID is given a
// random one.
func (db *DB) CreateToken(ctx context.Context, t *auth.Token) error {
	if t.Hash == "" {
		return errors.New("create token: no hash")
	}
	if t.ID == "" {
		t.ID = newID()
	}
	err := db.write(ctx, func(*sql.Conn) error {
		_, err := db.ws.createToken.ExecContext(ctx, t.ID, t.Hash, t.Role, t.Tenant, t.SessionRole, t.Profile,
			t.Name, dbTime(t.Created), dbTime(t.Revoked), dbTime(t.Expires), t.Model, t.Harness)
		return err
	})
	if err != nil {
		return db.fail("create token "+t.ID, err)
	}
	return nil
}

// TokenByHash returns the good token with the hash (neither revoked nor expired), or
// auth.ErrNotFound.
func (db *DB) TokenByHash(ctx context.Context, hash string) (*auth.Token, error) {
	t, err := scanToken(db.rs.tokenByHash.QueryRowContext(ctx, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, auth.ErrNotFound
	}
	if err != nil {
		return nil, db.fail("token by hash", err)
	}
	if t.Expired(time.Now()) {
		return nil, auth.ErrNotFound
	}
	return t, nil
}

// TokenByID returns the good token with the id (neither revoked nor expired), or
// auth.ErrNotFound: what the console's calls in process act as (server.ActAs).
func (db *DB) TokenByID(ctx context.Context, id string) (*auth.Token, error) {
	t, err := scanToken(db.rs.tokenByID.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, auth.ErrNotFound
	}
	if err != nil {
		return nil, db.fail("token by id", err)
	}
	if t.Expired(time.Now()) {
		return nil, auth.ErrNotFound
	}
	return t, nil
}

// Tokens lists every token, revoked ones included, oldest first.
func (db *DB) Tokens(ctx context.Context) ([]*auth.Token, error) {
	rows, err := db.rs.tokens.QueryContext(ctx)
	if err != nil {
		return nil, db.fail("list tokens", err)
	}
	defer rows.Close()
	var list []*auth.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, db.fail("list tokens", err)
		}
		list = append(list, t)
	}
	if err := rows.Err(); err != nil {
		return nil, db.fail("list tokens", err)
	}
	return list, nil
}

// RevokeToken revokes a token; auth.ErrNotFound if there is no unrevoked token with the id.
func (db *DB) RevokeToken(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		at = time.Now()
	}
	var n int64
	err := db.write(ctx, func(*sql.Conn) error {
		res, err := db.ws.revokeToken.ExecContext(ctx, formatTime(at), id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return db.fail("revoke token "+id, err)
	}
	if n == 0 {
		return fmt.Errorf("revoke token %s: %w", id, auth.ErrNotFound)
	}
	db.revoked.fire()
	return nil
}
