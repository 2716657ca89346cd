package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/instance"
)

var _ instance.Sessions = (*DB)(nil)

const sessionColumns = `id, warden, token, tenant, principal, profile, model, harness, protocol, init, initialized, run, instance, opened, seen, ended, why`

// OpenSession records a new MCP session.
func (db *DB) OpenSession(ctx context.Context, s *instance.Session) error {
	init := string(s.Init)
	if init == "" {
		init = "{}"
	}
	err := db.tx(ctx, func(w *sql.Conn) error {
		_, err := w.ExecContext(ctx, `INSERT INTO mcp_sessions (`+sessionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, '')`,
			s.ID, s.Warden, s.Token, s.Tenant, s.Principal, s.Profile, s.Model, s.Harness, s.Protocol, init, s.Initialized, s.Run, s.Instance,
			formatTime(s.Opened), formatTime(s.Seen))
		return err
	})
	if err != nil {
		return db.fail("record session "+s.ID, err)
	}
	return nil
}

// Session returns the record of an MCP session.
func (db *DB) Session(ctx context.Context, id string) (*instance.Session, error) {
	s, err := scanSession(db.r.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM mcp_sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session %s: %w", id, instance.ErrNoSession)
	}
	if err != nil {
		return nil, db.fail("read session "+id, err)
	}
	return s, nil
}

// SessionOfRun returns the record of the session whose run is run.
func (db *DB) SessionOfRun(ctx context.Context, run string) (*instance.Session, error) {
	s, err := scanSession(db.r.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM mcp_sessions WHERE run = ? AND run <> ''`, run))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("the session of run %s: %w", run, instance.ErrNoSession)
	}
	if err != nil {
		return nil, db.fail("read the session of run "+run, err)
	}
	return s, nil
}

func scanSession(row scanner) (*instance.Session, error) {
	var s instance.Session
	var init string
	var opened, seen, ended sql.NullString
	if err := row.Scan(&s.ID, &s.Warden, &s.Token, &s.Tenant, &s.Principal, &s.Profile, &s.Model, &s.Harness, &s.Protocol, &init, &s.Initialized,
		&s.Run, &s.Instance, &opened, &seen, &ended, &s.Why); err != nil {
		return nil, err
	}
	s.Init = []byte(init)
	var err error
	if s.Opened, err = parseTime(opened); err != nil {
		return nil, err
	}
	if s.Seen, err = parseTime(seen); err != nil {
		return nil, err
	}
	if s.Ended, err = parseTime(ended); err != nil {
		return nil, err
	}
	return &s, nil
}

// TouchSession records that a request of a live session was seen.
func (db *DB) TouchSession(ctx context.Context, id string, at time.Time, initialized bool) (bool, error) {
	var n int64
	err := db.tx(ctx, func(w *sql.Conn) error {
		res, err := w.ExecContext(ctx, `UPDATE mcp_sessions SET seen = max(seen, ?), initialized = initialized OR ?
			WHERE id = ? AND ended IS NULL`, formatTime(at), initialized, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, db.fail("touch session "+id, err)
	}
	return n > 0, nil
}

// EndSession ends a live MCP session.
func (db *DB) EndSession(ctx context.Context, id string, at time.Time, why string) (bool, error) {
	var n int64
	err := db.tx(ctx, func(w *sql.Conn) error {
		res, err := w.ExecContext(ctx, `UPDATE mcp_sessions SET ended = ?, why = ? WHERE id = ? AND ended IS NULL`, formatTime(at), why, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, db.fail("end session "+id, err)
	}
	return n > 0, nil
}

// ExpireSessions ends the live sessions idle or open past their bounds, in one write
// transaction: SQLite's write lock makes each expiry one instance's.
func (db *DB) ExpireSessions(ctx context.Context, seenBefore, openedBefore, at time.Time, why string, limit int) ([]*instance.Session, error) {
	var out []*instance.Session
	err := db.tx(ctx, func(w *sql.Conn) error {
		out = nil
		rows, err := w.QueryContext(ctx, `UPDATE mcp_sessions SET ended = ?, why = ?
			WHERE id IN (SELECT id FROM mcp_sessions WHERE ended IS NULL AND (seen < ? OR opened < ?) ORDER BY seen LIMIT ?)
			RETURNING `+sessionColumns, formatTime(at), why, formatTime(seenBefore), formatTime(openedBefore), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			s, err := scanSession(rows)
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, db.fail("expire sessions", err)
	}
	return out, nil
}

// PutChild records a subagent's token.
func (db *DB) PutChild(ctx context.Context, c *instance.Child) error {
	err := db.tx(ctx, func(w *sql.Conn) error {
		_, err := w.ExecContext(ctx, `INSERT INTO mcp_children (hash, token, parent, tenant, role, profile, name, spawned, root, created)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.Hash, c.Token, c.Parent, c.Tenant, c.Role, c.Profile, c.Name, c.Spawned, c.Root, formatTime(c.Created))
		return err
	})
	if err != nil {
		return db.fail("record subagent token "+c.Token, err)
	}
	return nil
}

// Child returns a live subagent token by its secret's hash.
func (db *DB) Child(ctx context.Context, hash string) (*instance.Child, error) {
	var c instance.Child
	var created sql.NullString
	err := db.r.QueryRowContext(ctx, `SELECT c.hash, c.token, c.parent, c.tenant, c.role, c.profile, c.name, c.spawned, c.root, c.created
		FROM mcp_children c JOIN mcp_sessions s ON s.id = c.parent WHERE c.hash = ? AND s.ended IS NULL`, hash).
		Scan(&c.Hash, &c.Token, &c.Parent, &c.Tenant, &c.Role, &c.Profile, &c.Name, &c.Spawned, &c.Root, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, instance.ErrNoSession
	}
	if err != nil {
		return nil, db.fail("read subagent token", err)
	}
	if c.Created, err = parseTime(created); err != nil {
		return nil, err
	}
	return &c, nil
}
