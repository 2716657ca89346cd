package sqlite

import (
	"context"
	"database/sql"

	"github.com/wardenhq/warden/audit"
)

var _ audit.Checkpointer = (*DB)(nil)

// AddKey records an instance's checkpoint signing key; recording it twice is harmless.
func (db *DB) AddKey(ctx context.Context, k audit.Key) error {
	err := db.write(ctx, func(w *sql.Conn) error {
		_, err := w.ExecContext(ctx, `INSERT INTO audit_keys (key, instance, created) VALUES (?, ?, ?)
			ON CONFLICT (key) DO NOTHING`, k.Key, k.Instance, formatTime(k.Created))
		return err
	})
	if err != nil {
		return db.fail("record audit key", err)
	}
	return nil
}

// Keys lists the recorded checkpoint signing keys, oldest first.
func (db *DB) Keys(ctx context.Context) ([]audit.Key, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT key, instance, created FROM audit_keys ORDER BY created, key`)
	if err != nil {
		return nil, db.fail("list audit keys", err)
	}
	defer rows.Close()
	var keys []audit.Key
	for rows.Next() {
		var (
			k       audit.Key
			created sql.NullString
		)
		if err := rows.Scan(&k.Key, &k.Instance, &created); err != nil {
			return nil, db.fail("list audit keys", err)
		}
		if k.Created, err = parseTime(created); err != nil {
			return nil, db.fail("list audit keys", err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, db.fail("list audit keys", err)
	}
	return keys, nil
}

// AddCheckpoint records a signed checkpoint.
func (db *DB) AddCheckpoint(ctx context.Context, c audit.Checkpoint) error {
	err := db.write(ctx, func(w *sql.Conn) error {
		_, err := w.ExecContext(ctx, `INSERT INTO audit_checkpoints (tenant, event, hash, time, key, signature)
			VALUES (?, ?, ?, ?, ?, ?)`, c.Tenant, c.Event, c.Hash, formatTime(c.Time), c.Key, c.Signature)
		return err
	})
	if err != nil {
		return db.fail("record audit checkpoint", err)
	}
	return nil
}

// Checkpoints lists the recorded checkpoints in the order they were recorded.
func (db *DB) Checkpoints(ctx context.Context) ([]audit.Checkpoint, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT tenant, event, hash, time, key, signature FROM audit_checkpoints ORDER BY id`)
	if err != nil {
		return nil, db.fail("list audit checkpoints", err)
	}
	defer rows.Close()
	var cps []audit.Checkpoint
	for rows.Next() {
		var (
			c    audit.Checkpoint
			when sql.NullString
		)
		if err := rows.Scan(&c.Tenant, &c.Event, &c.Hash, &when, &c.Key, &c.Signature); err != nil {
			return nil, db.fail("list audit checkpoints", err)
		}
		if c.Time, err = parseTime(when); err != nil {
			return nil, db.fail("list audit checkpoints", err)
		}
		cps = append(cps, c)
	}
	if err := rows.Err(); err != nil {
		return nil, db.fail("list audit checkpoints", err)
	}
	return cps, nil
}

// SetSigner has s told of every event appended through db from now on, so that it signs
// checkpoints of the tenants' chains.
func (db *DB) SetSigner(s *audit.Signer) { db.signer.Store(s) }
