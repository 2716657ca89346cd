package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/audit"
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
	instance.Sessions
	manage.Store
	audit.Checkpointer
	// SetSigner has the store tell s of every audit event it appends (checkpoints).
	SetSigner(s *audit.Signer)
	Close() error
}

// storeOptions are the flags that choose the store.
//
// A command that only reads a store, or adds to one, refuses an SQLite file that does not exist:
// a typo in --db must not answer from a new, empty store as if it were the real one. Commands
// whose job may be to start a store register --create (registerCreate); warden serve and warden
// mcp set creates, as making the store is part of their job.
type storeOptions struct {
	db        string
	postgres  string
	schema    string
	heartbeat time.Duration
	// create is --create: make the SQLite file if it does not exist.
	create bool
	// hasCreate says --create was registered, so a refusal may name it.
	hasCreate bool
	// creates makes the SQLite file without being asked (serve, mcp).
	creates bool
	// journal: the long-running gateway (serve, mcp) writes decisions to the store's decision
	// journal, indexed behind the calls (sqlite.Options.Journal).
	journal bool
}

func (o *storeOptions) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.db, "db", "", "the embedded SQLite store's file (default ./"+defaultDB+")")
	cmd.Flags().StringVar(&o.postgres, "postgres", "", "a PostgreSQL URL, for several instances sharing one store")
	cmd.Flags().StringVar(&o.schema, "postgres-schema", "", "the PostgreSQL schema to keep Warden's tables in, created if missing (default: the URL's search_path, else public)")
	cmd.Flags().DurationVar(&o.heartbeat, "heartbeat", instance.DefaultInterval,
		fmt.Sprintf("how often this process tells the store it is alive and frees what stopped ones held; one silent for %d heartbeats is taken for dead", instance.StaleBeats))
}

// registerCreate registers the store flags and --create, for a command that may start a store.
func (o *storeOptions) registerCreate(cmd *cobra.Command) {
	o.register(cmd)
	cmd.Flags().BoolVar(&o.create, "create", false, "make a new SQLite store if the --db file does not exist (otherwise a missing file is refused)")
	o.hasCreate = true
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
	return []string{abs, abs + "-wal", abs + "-shm", abs + "-journal", sqlite.JournalPath(abs)}
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
	if !o.creates && !o.create {
		if err := o.exists(path); err != nil {
			return nil, "", err
		}
	}
	db, err := sqlite.OpenWith(ctx, path, sqlite.Options{Journal: o.journal})
	if err != nil {
		return nil, "", err
	}
	return db, fmt.Sprintf("sqlite %s", path), nil
}

// exists refuses an SQLite file that is not there, saying how to make one.
func (o *storeOptions) exists(path string) error {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store %s: %w", path, err)
	case o.hasCreate:
		return fmt.Errorf("no store at %s: give --create to make a new one", path)
	default:
		return fmt.Errorf("no store at %s: check --db (warden serve makes a new store)", path)
	}
}
