package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/auth"
)

// OpenSchema keeps every table in the schema it names, creating it; two schemas on one
// database are independent stores.
func TestOpenSchemaKeepsStoresApart(t *testing.T) {
	base := serverURL(t)
	ctx := t.Context()
	names := []string{"warden_test_a_" + randomHex(6), "warden_test_b_" + randomHex(6)}
	var dbs []*DB
	for _, name := range names {
		t.Cleanup(func() { admin(t, base, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`) })
		db, err := OpenSchema(ctx, base, name) // created here: it does not exist yet
		if err != nil {
			t.Fatalf("OpenSchema(%s): %v", name, err)
		}
		t.Cleanup(func() { db.Close() })
		if db.Schema() != name {
			t.Errorf("Schema() = %q, want %q", db.Schema(), name)
		}
		dbs = append(dbs, db)
	}
	// The tables are in the schemas, migrated there.
	for _, name := range names {
		var n int
		if err := dbs[0].pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
			WHERE table_schema = $1 AND table_name IN ('tokens', 'cards', 'audit', 'schema_version')`, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n < 3 {
			t.Errorf("schema %s holds %d of Warden's tables", name, n)
		}
	}
	tok := &auth.Token{ID: "tok_a", Hash: auth.Hash("wdn_a"), Role: auth.RoleAdmin, Created: time.Now()}
	if err := dbs[0].CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[1].TokenByHash(ctx, tok.Hash); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("schema B sees schema A's token: %v", err)
	}
	if got, err := dbs[0].TokenByHash(ctx, tok.Hash); err != nil || got.ID != "tok_a" {
		t.Errorf("schema A's own token: %v, %v", got, err)
	}
	// A revocation in A is heard by A's watchers, not B's.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chB, err := dbs[1].WatchRevocations(wctx)
	if err != nil {
		t.Fatal(err)
	}
	chA, err := dbs[0].WatchRevocations(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := dbs[0].RevokeToken(ctx, "tok_a", time.Now()); err != nil {
		t.Fatal(err)
	}
	<-chA // NOTIFY is delivered after the commit, to every listener of the channel
	select {
	case <-chB:
		t.Error("schema B's watcher heard schema A's revocation")
	default:
	}
	// Opening it again finds it migrated, not new.
	again, err := OpenSchema(ctx, base, names[0])
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if list, err := again.Tokens(ctx); err != nil || len(list) != 1 {
		t.Errorf("schema A opened again: %d tokens, %v", len(list), err)
	}
}
