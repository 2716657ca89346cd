package sqlite

import (
	"path/filepath"
	"testing"
)

// The pragmas the package documentation promises, on the writer and on a reader.
func TestPragmas(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tests := []struct {
		pragma string
		writer string
		reader string
	}{
		{"journal_mode", "wal", "wal"},
		{"synchronous", "1", "1"}, // NORMAL
		{"foreign_keys", "1", "1"},
		{"busy_timeout", "5000", "5000"},
		{"query_only", "0", "1"},
	}
	for _, tt := range tests {
		var w, r string
		if err := db.w.QueryRowContext(t.Context(), "PRAGMA "+tt.pragma).Scan(&w); err != nil {
			t.Fatal(err)
		}
		if err := db.r.QueryRowContext(t.Context(), "PRAGMA "+tt.pragma).Scan(&r); err != nil {
			t.Fatal(err)
		}
		if w != tt.writer || r != tt.reader {
			t.Errorf("PRAGMA %s: writer %s, reader %s; want %s and %s", tt.pragma, w, r, tt.writer, tt.reader)
		}
	}
}

// Migrations are numbered from 1 without gaps, and the file records every one.
func TestMigrations(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || SchemaVersion() != len(ms) {
		t.Fatalf("%d migrations, SchemaVersion %d", len(ms), SchemaVersion())
	}
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.r.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM schema_version").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(ms) {
		t.Errorf("schema_version records %d migrations, want %d", n, len(ms))
	}
}
