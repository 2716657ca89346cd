package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/postgres"
	"github.com/wardenhq/warden/store/sqlite"
)

// defaultDB is the embedded store's file when neither --db nor --postgres is given.
const defaultDB = "warden.db"

// appStore is everything `warden serve` keeps.
type appStore interface {
	server.Store
	budget.Store
	boundary.Store
	Close() error
}

// storeOptions are the flags that choose the store.
type storeOptions struct {
	db       string
	postgres string
	schema   string
}

func (o *storeOptions) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.db, "db", "", "the embedded SQLite store's file (default ./"+defaultDB+")")
	cmd.Flags().StringVar(&o.postgres, "postgres", "", "a PostgreSQL URL, for several instances sharing one store")
	cmd.Flags().StringVar(&o.schema, "postgres-schema", "", "the PostgreSQL schema to keep Warden's tables in, created if missing (default: the URL's search_path, else public)")
}

// open opens the chosen store, and says which it is.
// files are the embedded store's files (none for PostgreSQL): no sandboxed command may read
// them.
func (o *storeOptions) files() []string {
	if o.postgres != "" {
		return nil
	}
	path := o.db
	if path == "" {
		path = defaultDB
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	return []string{abs, abs + "-wal", abs + "-shm", abs + "-journal"}
}

func (o *storeOptions) open(ctx context.Context) (appStore, string, error) {
	switch {
	case o.db != "" && o.postgres != "":
		return nil, "", errors.New("give --db or --postgres, not both")
	case o.schema != "" && o.postgres == "":
		return nil, "", usagef("--postgres-schema %q: give --postgres too (SQLite has no schemas)", o.schema)
	case o.postgres != "":
		db, err := postgres.OpenSchema(ctx, o.postgres, o.schema)
		if err != nil {
			return nil, "", err
		}
		return db, "postgres (schema " + db.Schema() + ")", nil
	}
	path := o.db
	if path == "" {
		path = defaultDB
	}
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, "", err
	}
	return db, fmt.Sprintf("sqlite %s", path), nil
}
