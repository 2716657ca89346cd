package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// migrations are the schema's numbered steps, NNNN_name.sql, applied in order; each is applied
// once and recorded in schema_version. A released migration is never edited: a change is a new
// file.
//
//go:embed migrations/*.sql
var migrations embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %q is not named NNNN_name.sql", e.Name())
		}
		b, err := migrations.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migrations are not numbered 1, 2, 3, ...: %s", m.name)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this Warden migrates databases to.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		panic(err) // the embedded files are checked by the tests
	}
	return len(ms)
}

// migrate brings the schema up to date in one transaction, under an advisory lock that
// serialises every instance migrating the same schema.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("migrate", db.schema)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			version integer PRIMARY KEY,
			name    text NOT NULL,
			applied timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return err
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&current); err != nil {
			return err
		}
		if current > len(ms) {
			return fmt.Errorf("postgres: %w: schema %q is at version %d, this Warden knows up to %d; upgrade Warden",
				ErrSchemaTooNew, db.schema, current, len(ms))
		}
		for _, m := range ms[current:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrSchemaTooNew) {
			return err
		}
		return fmt.Errorf("postgres: migrate %s: %w", db.where, err)
	}
	return nil
}
