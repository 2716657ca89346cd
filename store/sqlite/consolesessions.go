package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/server/console/consolesession"
)

var _ consolesession.Store = (*DB)(nil)

const consoleColumns = `id_hash, token_id, csrf, name, tenant, role, created, seen, ended`

// consoleLive is the condition of a live console session, on the row of console_sessions:
// ?1 is now, ?2 the last moment of use that is not idle too long, ?3 the last sign-in that is
// not too old. Its token must be good at now, as TokenByHash's and TokenByID's are.
const consoleLive = `ended IS NULL AND seen > ?2 AND created > ?3 AND EXISTS (SELECT 1 FROM tokens t
	WHERE t.id = console_sessions.token_id AND t.revoked IS NULL AND (t.expires IS NULL OR t.expires > ?1))`

func scanConsoleSession(row scanner) (*consolesession.Record, error) {
	var (
		r                    consolesession.Record
		created, seen, ended sql.NullString
	)
	if err := row.Scan(&r.IDHash, &r.TokenID, &r.CSRF, &r.Name, &r.Tenant, &r.Role, &created, &seen, &ended); err != nil {
		return nil, err
	}
	var err error
	if r.Created, err = parseTime(created); err != nil {
		return nil, err
	}
	if r.Seen, err = parseTime(seen); err != nil {
		return nil, err
	}
	if r.Ended, err = parseTime(ended); err != nil {
		return nil, err
	}
	return &r, nil
}

// consoleArgs are consoleLive's arguments for b.
func consoleArgs(b consolesession.Bounds) []any {
	return []any{formatTime(b.Now), formatTime(b.Now.Add(-b.Idle)), formatTime(b.Now.Add(-b.MaxAge))}
}

// CreateConsoleSession stores a new console session within b, in one write transaction:
// SQLite's write lock serialises it with every other sign-in, in this process and in any other
// on the file, so the bound holds across them.
func (db *DB) CreateConsoleSession(ctx context.Context, r *consolesession.Record, b consolesession.Bounds) error {
	if r.IDHash == "" || r.TokenID == "" {
		return errors.New("create console session: no id hash or no token")
	}
	if b.Max <= 0 {
		return errors.New("create console session: the bound is not positive")
	}
	args := consoleArgs(b)
	err := db.tx(ctx, func(*sql.Conn) error {
		if _, err := db.ws.pruneConsole.ExecContext(ctx, args...); err != nil {
			return err
		}
		var n int
		if err := db.ws.countConsole.QueryRowContext(ctx).Scan(&n); err != nil {
			return err
		}
		if n >= b.Max {
			if _, err := db.ws.evictConsole.ExecContext(ctx, formatTime(b.Now), n-b.Max+1); err != nil {
				return err
			}
		}
		_, err := db.ws.createConsole.ExecContext(ctx, r.IDHash, r.TokenID, r.CSRF, r.Name, r.Tenant, r.Role,
			formatTime(r.Created), formatTime(r.Seen), dbTime(r.Ended))
		return err
	})
	if err != nil {
		return db.fail("create console session", err)
	}
	return nil
}

// UseConsoleSession returns the live console session with the hash, marked used at b.Now, in
// one statement.
func (db *DB) UseConsoleSession(ctx context.Context, idHash string, b consolesession.Bounds) (*consolesession.Record, error) {
	var r *consolesession.Record
	err := db.write(ctx, func(*sql.Conn) error {
		var err error
		r, err = scanConsoleSession(db.ws.useConsole.QueryRowContext(ctx, append(consoleArgs(b), idHash)...))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, consolesession.ErrNotFound
	}
	if err != nil {
		return nil, db.fail("use console session", err)
	}
	return r, nil
}

// ConsoleSession returns the live console session with the hash.
func (db *DB) ConsoleSession(ctx context.Context, idHash string, b consolesession.Bounds) (*consolesession.Record, error) {
	r, err := scanConsoleSession(db.rs.consoleSession.QueryRowContext(ctx, append(consoleArgs(b), idHash)...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, consolesession.ErrNotFound
	}
	if err != nil {
		return nil, db.fail("console session", err)
	}
	return r, nil
}

// EndConsoleSession ends the console session with the hash at at.
func (db *DB) EndConsoleSession(ctx context.Context, idHash string, at time.Time) error {
	if at.IsZero() {
		return fmt.Errorf("end console session: no time")
	}
	err := db.write(ctx, func(*sql.Conn) error {
		_, err := db.ws.endConsole.ExecContext(ctx, formatTime(at), idHash)
		return err
	})
	if err != nil {
		return db.fail("end console session", err)
	}
	return nil
}
