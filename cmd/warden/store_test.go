package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/store/sqlite"
)

// newStoreFile makes an empty SQLite store, as warden serve would, and returns its file.
func newStoreFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A command that reads a store, or adds to one, refuses a --db file that does not exist rather
// than answering from a new, empty store; --create makes one where that is wanted. Before, a
// typo in --db made a new database silently.
func TestStoreCommandsRefuseAMissingFile(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.db")
	doc := filepath.Join(dir, "doc.json")
	writeFile(t, doc, `{"version":1,"hardBlocks":[]}`)
	export := filepath.Join(dir, "export.yaml")
	writeFile(t, export, "version: 1\n")
	for _, tt := range []struct {
		give       []string
		wantCreate bool // the command offers --create
	}{
		{give: []string{"audit"}},
		{give: []string{"token", "create", "--tenant", "default", "--role", "person"}, wantCreate: true},
		{give: []string{"token", "list"}},
		{give: []string{"token", "revoke", "tok_x"}},
		{give: []string{"boundaries", "get"}},
		{give: []string{"boundaries", "set", doc}},
		{give: []string{"approvals", "list"}},
		{give: []string{"approvals", "answer", "card_x", "deny", "--as", "ann"}},
		{give: []string{"export"}},
		{give: []string{"import", export}, wantCreate: true},
		{give: []string{"review", "--role", "person", "--tool", "files_read", "--input", `{"path":"a"}`}},
		{give: []string{"surface", "--role", "person"}},
	} {
		stdout, stderr, code := run(t, append(tt.give, "--db", typo)...)
		want := "no store at " + typo + ": check --db (warden serve makes a new store)"
		if tt.wantCreate {
			want = "no store at " + typo + ": give --create to make a new one"
		}
		if code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("%v: status %d, stdout %q, stderr %q; want the refusal %q", tt.give, code, stdout, stderr, want)
		}
		if _, err := os.Stat(typo); err == nil {
			t.Fatalf("%v made %s", tt.give, typo)
		}
	}

	// --create makes the store where that is wanted; then the others find it.
	out, stderr, code := run(t, "token", "create", "--db", typo, "--create", "--tenant", "default", "--role", "person")
	if code != 0 {
		t.Fatalf("token create --create: status %d: %s", code, stderr)
	}
	if out, stderr, code := run(t, "token", "list", "--db", typo); code != 0 || !strings.Contains(out, "person") {
		t.Errorf("token list after --create: status %d: %s %s", code, out, stderr)
	}
	_ = out
	fresh := filepath.Join(dir, "fresh.db")
	if _, stderr, code := run(t, "import", export, "--db", fresh, "--create"); code != 0 {
		t.Errorf("import --create: status %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, "audit", "--db", fresh); code != 0 {
		t.Errorf("audit of the store import made: status %d: %s", code, stderr)
	}
}
