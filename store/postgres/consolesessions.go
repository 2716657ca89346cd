package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/server/console/consolesession"
)

var _ consolesession.Store = (*DB)(nil)

const consoleColumns = `id_hash, token_id, csrf, name, tenant, role, created, seen, ended`

// consoleLive is the condition of a live console session, on the row of console_sessions:
// $1 is now, $2 the last moment of use that is not idle too long, $3 the last sign-in that is
// not too old. Its token must be good at now: a token's expiry is compared at the microsecond
// (its nanoseconds apart), so one ends up to a microsecond early, never late.
const consoleLive = `ended IS NULL AND seen > $2 AND created > $3 AND EXISTS (SELECT 1 FROM tokens t
	WHERE t.id = console_sessions.token_id AND t.revoked IS NULL AND (t.expires IS NULL OR t.expires > $1))`

func scanConsoleSession(row pgx.Row) (*consolesession.Record, error) {
	var (
		r     consolesession.Record
		ended *time.Time
	)
	if err := row.Scan(&r.IDHash, &r.TokenID, &r.CSRF, &r.Name, &r.Tenant, &r.Role, &r.Created, &r.Seen, &ended); err != nil {
		return nil, err
	}
	r.Created, r.Seen = r.Created.UTC(), r.Seen.UTC()
	if ended != nil {
		r.Ended = ended.UTC()
	}
	return &r, nil
}

// consoleArgs are consoleLive's arguments for b.
func consoleArgs(b consolesession.Bounds) []any {
	return []any{b.Now, b.Now.Add(-b.Idle), b.Now.Add(-b.MaxAge)}
}

// CreateConsoleSession stores a new console session within b, in one transaction under an
// advisory lock of the schema's console sessions: two instances signing people in at once
// take turns, so the bound holds across them.
func (db *DB) CreateConsoleSession(ctx context.Context, r *consolesession.Record, b consolesession.Bounds) error {
	if r.IDHash == "" || r.TokenID == "" {
		return errors.New("postgres: create console session: no id hash or no token")
	}
	if b.Max <= 0 {
		return errors.New("postgres: create console session: the bound is not positive")
	}
	args := consoleArgs(b)
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("console_sessions", db.schema)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE NOT (`+consoleLive+`)`, args...); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM console_sessions WHERE ended IS NULL`).Scan(&n); err != nil {
			return err
		}
		if n >= b.Max {
			if _, err := tx.Exec(ctx, `UPDATE console_sessions SET ended = $1 WHERE id_hash IN (SELECT id_hash
				FROM console_sessions WHERE ended IS NULL ORDER BY seen, created, id_hash LIMIT $2)`, b.Now, n-b.Max+1); err != nil {
				return err
			}
		}
		var ended *time.Time
		if !r.Ended.IsZero() {
			ended = &r.Ended
		}
		_, err := tx.Exec(ctx, `INSERT INTO console_sessions (`+consoleColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			r.IDHash, r.TokenID, r.CSRF, r.Name, r.Tenant, r.Role, r.Created, r.Seen, ended)
		return err
	})
	return db.wrap("create console session", err)
}

// UseConsoleSession returns the live console session with the hash, marked used at b.Now, in
// one statement.
func (db *DB) UseConsoleSession(ctx context.Context, idHash string, b consolesession.Bounds) (*consolesession.Record, error) {
	// Seen never goes back: the instances' clocks may differ a little.
	r, err := scanConsoleSession(db.pool.QueryRow(ctx, `UPDATE console_sessions SET seen = greatest(seen, $1)
		WHERE id_hash = $4 AND `+consoleLive+` RETURNING `+consoleColumns, append(consoleArgs(b), idHash)...))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, consolesession.ErrNotFound
	}
	if err != nil {
		return nil, db.wrap("use console session", err)
	}
	return r, nil
}

// ConsoleSession returns the live console session with the hash.
func (db *DB) ConsoleSession(ctx context.Context, idHash string, b consolesession.Bounds) (*consolesession.Record, error) {
	r, err := scanConsoleSession(db.pool.QueryRow(ctx, `SELECT `+consoleColumns+` FROM console_sessions
		WHERE id_hash = $4 AND `+consoleLive, append(consoleArgs(b), idHash)...))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, consolesession.ErrNotFound
	}
	if err != nil {
		return nil, db.wrap("console session", err)
	}
	return r, nil
}

// EndConsoleSession ends the console session with the hash at at.
func (db *DB) EndConsoleSession(ctx context.Context, idHash string, at time.Time) error {
	if at.IsZero() {
		return fmt.Errorf("postgres: end console session: no time")
	}
	_, err := db.pool.Exec(ctx, `UPDATE console_sessions SET ended = $1 WHERE id_hash = $2 AND ended IS NULL`, at, idHash)
	return db.wrap("end console session", err)
}
