package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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
	_, err := db.pool.Exec(ctx, `INSERT INTO mcp_sessions (`+sessionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, NULL, '')`,
		s.ID, s.Warden, s.Token, s.Tenant, s.Principal, s.Profile, s.Model, s.Harness, s.Protocol, init, s.Initialized, s.Run, s.Instance, s.Opened, s.Seen)
	return db.wrap("record session "+s.ID, err)
}

// Session returns the record of an MCP session.
func (db *DB) Session(ctx context.Context, id string) (*instance.Session, error) {
	s, err := scanSession(db.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM mcp_sessions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("session %s: %w", id, instance.ErrNoSession)
	}
	if err != nil {
		return nil, db.wrap("read session "+id, err)
	}
	return s, nil
}

// SessionOfRun returns the record of the session whose run is run.
func (db *DB) SessionOfRun(ctx context.Context, run string) (*instance.Session, error) {
	s, err := scanSession(db.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM mcp_sessions WHERE run = $1 AND run <> ''`, run))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("the session of run %s: %w", run, instance.ErrNoSession)
	}
	if err != nil {
		return nil, db.wrap("read the session of run "+run, err)
	}
	return s, nil
}

func scanSession(row pgx.Row) (*instance.Session, error) {
	var s instance.Session
	var init string
	var ended *time.Time
	if err := row.Scan(&s.ID, &s.Warden, &s.Token, &s.Tenant, &s.Principal, &s.Profile, &s.Model, &s.Harness, &s.Protocol, &init, &s.Initialized,
		&s.Run, &s.Instance, &s.Opened, &s.Seen, &ended, &s.Why); err != nil {
		return nil, err
	}
	s.Init = []byte(init)
	if ended != nil {
		s.Ended = *ended
	}
	return &s, nil
}

// TouchSession records that a request of a live session was seen.
func (db *DB) TouchSession(ctx context.Context, id string, at time.Time, initialized bool) (bool, error) {
	tag, err := db.pool.Exec(ctx, `UPDATE mcp_sessions SET seen = greatest(seen, $1), initialized = initialized OR $2
		WHERE id = $3 AND ended IS NULL`, at, initialized, id)
	if err != nil {
		return false, db.wrap("touch session "+id, err)
	}
	return tag.RowsAffected() > 0, nil
}

// EndSession ends a live MCP session.
func (db *DB) EndSession(ctx context.Context, id string, at time.Time, why string) (bool, error) {
	tag, err := db.pool.Exec(ctx, `UPDATE mcp_sessions SET ended = $1, why = $2 WHERE id = $3 AND ended IS NULL`, at, why, id)
	if err != nil {
		return false, db.wrap("end session "+id, err)
	}
	return tag.RowsAffected() > 0, nil
}

// ExpireSessions ends the live sessions idle or open past their bounds. Rows are locked and
// skipped when another instance holds them, so each expiry is one instance's.
func (db *DB) ExpireSessions(ctx context.Context, seenBefore, openedBefore, at time.Time, why string, limit int) ([]*instance.Session, error) {
	rows, err := db.pool.Query(ctx, `UPDATE mcp_sessions SET ended = $1, why = $2
		WHERE id IN (SELECT id FROM mcp_sessions WHERE ended IS NULL AND (seen < $3 OR opened < $4)
			ORDER BY seen LIMIT $5 FOR UPDATE SKIP LOCKED)
		AND ended IS NULL
		RETURNING `+sessionColumns, at, why, seenBefore, openedBefore, limit)
	if err != nil {
		return nil, db.wrap("expire sessions", err)
	}
	defer rows.Close()
	var out []*instance.Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, db.wrap("expire sessions", err)
		}
		out = append(out, s)
	}
	return out, db.wrap("expire sessions", rows.Err())
}

// PutChild records a subagent's token.
func (db *DB) PutChild(ctx context.Context, c *instance.Child) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO mcp_children (hash, token, parent, tenant, role, profile, name, spawned, root, created)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, c.Hash, c.Token, c.Parent, c.Tenant, c.Role, c.Profile, c.Name, c.Spawned, c.Root, c.Created)
	return db.wrap("record subagent token "+c.Token, err)
}

// Child returns a live subagent token by its secret's hash.
func (db *DB) Child(ctx context.Context, hash string) (*instance.Child, error) {
	var c instance.Child
	err := db.pool.QueryRow(ctx, `SELECT c.hash, c.token, c.parent, c.tenant, c.role, c.profile, c.name, c.spawned, c.root, c.created
		FROM mcp_children c JOIN mcp_sessions s ON s.id = c.parent WHERE c.hash = $1 AND s.ended IS NULL`, hash).
		Scan(&c.Hash, &c.Token, &c.Parent, &c.Tenant, &c.Role, &c.Profile, &c.Name, &c.Spawned, &c.Root, &c.Created)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, instance.ErrNoSession
	}
	if err != nil {
		return nil, db.wrap("read subagent token", err)
	}
	return &c, nil
}
