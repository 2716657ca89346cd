package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/approval"
)

const standingColumns = `id, tenant, tool, digest, card_id, approver, created, revoked`

func scanStanding(row scanner) (*approval.Standing, error) {
	var (
		s                approval.Standing
		created, revoked sql.NullString
	)
	if err := row.Scan(&s.ID, &s.Tenant, &s.Tool, &s.Digest, &s.CardID, &s.Approver, &created, &revoked); err != nil {
		return nil, err
	}
	var err error
	if s.Created, err = parseTime(created); err != nil {
		return nil, err
	}
	if s.Revoked, err = parseTime(revoked); err != nil {
		return nil, err
	}
	return &s, nil
}

// newID returns a random id, for records saved without one.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// AddStanding saves a standing approval; one without an ID is given a random one.
func (db *DB) AddStanding(ctx context.Context, s *approval.Standing) error {
	if s.ID == "" {
		s.ID = newID()
	}
	err := db.write(ctx, func(*sql.Conn) error {
		_, err := db.ws.addStanding.ExecContext(ctx, s.ID, s.Tenant, s.Tool, s.Digest, s.CardID, s.Approver,
			dbTime(s.Created), dbTime(s.Revoked))
		return err
	})
	if err != nil {
		return db.fail("add standing approval "+s.ID, err)
	}
	return nil
}

// FindStanding returns the tenant's active standing approval for the tool and digest (the
// newest, should there be several), or approval.ErrNotFound. Tenant, tool and digest match
// exactly; an empty tenant matches no tenant.
func (db *DB) FindStanding(ctx context.Context, tenant, tool, digest string) (*approval.Standing, error) {
	s, err := scanStanding(db.rs.findStanding.QueryRowContext(ctx, tenant, tool, digest))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("standing approval for %s in %q: %w", tool, tenant, approval.ErrNotFound)
	}
	if err != nil {
		return nil, db.fail("find standing approval", err)
	}
	return s, nil
}

// Standings lists a tenant's standing approvals (every tenant's for ""), revoked ones
// included, newest first.
func (db *DB) Standings(ctx context.Context, tenant string) ([]*approval.Standing, error) {
	q := "SELECT " + standingColumns + " FROM standings"
	var args []any
	if tenant != "" {
		q += " WHERE tenant = ?"
		args = append(args, tenant)
	}
	q += " ORDER BY created DESC, id DESC"
	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.fail("list standing approvals", err)
	}
	defer rows.Close()
	var list []*approval.Standing
	for rows.Next() {
		s, err := scanStanding(rows)
		if err != nil {
			return nil, db.fail("list standing approvals", err)
		}
		list = append(list, s)
	}
	if err := rows.Err(); err != nil {
		return nil, db.fail("list standing approvals", err)
	}
	return list, nil
}

// RevokeStanding revokes a standing approval of the tenant ("" any);
// approval.ErrNotFound if there is none or it is revoked already.
func (db *DB) RevokeStanding(ctx context.Context, tenant, id string, at time.Time) error {
	if at.IsZero() {
		at = time.Now()
	}
	var n int64
	err := db.write(ctx, func(*sql.Conn) error {
		res, err := db.ws.revokeStanding.ExecContext(ctx, id, formatTime(at), tenant)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return db.fail("revoke standing approval "+id, err)
	}
	if n == 0 {
		return fmt.Errorf("revoke standing approval %s: %w", id, approval.ErrNotFound)
	}
	return nil
}
