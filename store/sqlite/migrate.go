package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

// migrationFiles are the numbered schema steps, "NNNN_name.sql", applied in order, each once.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in order; their numbers run 1, 2, 3, ...
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: want NNNN_name.sql", base)
		}
		body, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want number %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema this build of Warden writes: the number of its last migration.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrate brings the database up to the current schema in one write transaction, so that two
// processes opening a new file at once apply each step once, and refuses a newer schema.
func migrate(ctx context.Context, w *sql.Conn) (err error) {
	ms, err := migrations()
	if err != nil {
		return err
	}
	if _, err := w.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer func() {
		if err != nil {
			_, _ = w.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	if _, err := w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version INTEGER PRIMARY KEY,
		name    TEXT NOT NULL,
		applied TEXT NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var current int
	if err := w.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&current); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	latest := len(ms)
	if current > latest {
		return fmt.Errorf("%w: its schema is version %d, this Warden knows versions up to %d; upgrade Warden", ErrNewerSchema, current, latest)
	}
	for _, m := range ms[current:] {
		if _, err := w.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migrate to version %d (%s): %w", m.version, m.name, err)
		}
		if _, err := w.ExecContext(ctx, "INSERT INTO schema_version (version, name, applied) VALUES (?, ?, ?)",
			m.version, m.name, formatTime(time.Now())); err != nil {
			return fmt.Errorf("migrate to version %d: %w", m.version, err)
		}
	}
	if _, err := w.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
