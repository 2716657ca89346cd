package postgres

import (
	"context"
	"time"

	"github.com/wardenhq/warden/audit"
)

var _ audit.Checkpointer = (*DB)(nil)

// AddKey records an instance's checkpoint signing key; recording it twice is harmless.
func (db *DB) AddKey(ctx context.Context, k audit.Key) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO audit_keys (key, instance, created) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO NOTHING`, k.Key, k.Instance, orNow(k.Created))
	return db.wrap("record audit key", err)
}

// Keys lists the recorded checkpoint signing keys, oldest first.
func (db *DB) Keys(ctx context.Context) ([]audit.Key, error) {
	rows, err := db.pool.Query(ctx, `SELECT key, instance, created FROM audit_keys ORDER BY created, key`)
	if err != nil {
		return nil, db.wrap("list audit keys", err)
	}
	defer rows.Close()
	var keys []audit.Key
	for rows.Next() {
		var k audit.Key
		if err := rows.Scan(&k.Key, &k.Instance, &k.Created); err != nil {
			return nil, db.wrap("list audit keys", err)
		}
		k.Created = k.Created.UTC()
		keys = append(keys, k)
	}
	return keys, db.wrap("list audit keys", rows.Err())
}

// AddCheckpoint records a signed checkpoint.
func (db *DB) AddCheckpoint(ctx context.Context, c audit.Checkpoint) error {
	t, tns := ts(c.Time)
	_, err := db.pool.Exec(ctx, `INSERT INTO audit_checkpoints (tenant, event, hash, time, time_ns, key, signature)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, c.Tenant, c.Event, c.Hash, t, tns, c.Key, c.Signature)
	return db.wrap("record audit checkpoint", err)
}

// Checkpoints lists the recorded checkpoints in the order they were recorded.
func (db *DB) Checkpoints(ctx context.Context) ([]audit.Checkpoint, error) {
	rows, err := db.pool.Query(ctx, `SELECT tenant, event, hash, time, time_ns, key, signature FROM audit_checkpoints ORDER BY id`)
	if err != nil {
		return nil, db.wrap("list audit checkpoints", err)
	}
	defer rows.Close()
	var cps []audit.Checkpoint
	for rows.Next() {
		var (
			c   audit.Checkpoint
			t   time.Time
			tns int16
		)
		if err := rows.Scan(&c.Tenant, &c.Event, &c.Hash, &t, &tns, &c.Key, &c.Signature); err != nil {
			return nil, db.wrap("list audit checkpoints", err)
		}
		c.Time = fromTS(&t, tns)
		cps = append(cps, c)
	}
	return cps, db.wrap("list audit checkpoints", rows.Err())
}

// SetSigner has s told of every event appended through db from now on, so that it signs
// checkpoints of the tenants' chains.
func (db *DB) SetSigner(s *audit.Signer) { db.signer.Store(s) }
