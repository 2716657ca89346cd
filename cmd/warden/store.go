package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/instance"
	"github.com/wardenhq/warden/manage"
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
	instance.Store
	manage.Store
	Close() error
}

// storeOptions are the flags that choose the store.
type storeOptions struct {
	db        string
	postgres  string
	schema    string
	heartbeat time.Duration
}

func (o *storeOptions) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.db, "db", "", "the embedded SQLite store's file (default ./"+defaultDB+")")
	cmd.Flags().StringVar(&o.postgres, "postgres", "", "a PostgreSQL URL, for several instances sharing one store")
	cmd.Flags().StringVar(&o.schema, "postgres-schema", "", "the PostgreSQL schema to keep Warden's tables in, created if missing (default: the URL's search_path, else public)")
	cmd.Flags().DurationVar(&o.heartbeat, "heartbeat", instance.DefaultInterval,
		fmt.Sprintf("how often this process tells the store it is alive and frees what stopped ones held; one silent for %d heartbeats is taken for dead", instance.StaleBeats))
}

// keep registers this process as an instance on the store and recovers what stopped ones
// held: their runs end, their cards expire, their reservations are settled or released.
func (o *storeOptions) keep(ctx context.Context, db appStore, logger *slog.Logger) (*instance.Keeper, error) {
	return instance.Start(ctx, instance.Options{Store: db, Log: db, Interval: o.heartbeat, Logger: logger})
}

// closeKeeper frees what this process still holds as it shuts down; what it cannot free, the
// next recovery by any instance does, once this one's heartbeat is stale.
func closeKeeper(ctx context.Context, k *instance.Keeper, logger *slog.Logger) {
	if err := k.Close(ctx); err != nil {
		logger.Error("could not free what this process held; another instance will, after the staleness bound", "err", err)
	}
}

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

// open opens the chosen store, and says which it is.
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
