package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/server"
)

type serveOptions struct {
	addr  string
	store storeOptions
}

func newServeCmd(root *rootOptions) *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8640] [--db FILE | --postgres URL]",
		Short: "Run Warden's HTTP server: health, readiness, the approvals and audit API",
		Long: `Run Warden's server on the embedded SQLite store (./warden.db) or a shared PostgreSQL one.
On its first start against a store, it creates an admin token, prints it once and keeps only its
hash. It serves /healthz, /readyz and the REST API under /api/v1 (approvals: list pending,
answer, list and revoke standing approvals; audit: query). SIGINT or SIGTERM shut it down
gracefully: requests in flight finish first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := root.load(cmd)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd.ErrOrStderr(), p)
		},
	}
	cmd.Flags().StringVar(&o.addr, "addr", "127.0.0.1:8640", "the address to listen on")
	o.store.register(cmd)
	return cmd
}

func (o *serveOptions) run(ctx context.Context, out io.Writer, p *policy.Policy) error {
	logger := slog.New(slog.NewTextHandler(out, nil))
	env := p.Env(os.LookupEnv)
	db, kind, err := o.store.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()

	started := time.Now()
	// Reservations left open by a previous process that died: nobody knows whether those calls
	// ran, so they count as spent.
	if n, err := db.RecoverReservations(ctx, started, started); err != nil {
		return fmt.Errorf("recover open reservations: %w", err)
	} else if n > 0 {
		logger.Warn("settled reservations left open by a previous run at what they reserved", "count", n)
	}
	if err := bootstrapAdmin(ctx, db, out, started); err != nil {
		return err
	}

	timeout := time.Duration(env.ApprovalTimeoutMS()) * time.Millisecond
	broker := approval.NewBroker(approval.Options{Store: db, Timeout: timeout})
	srv := server.New(server.Options{
		Store: db, Broker: broker, Logger: logger,
		Info: map[string]any{"policy": p.Revision, "store": kind},
	})

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	banner(out, p, env, kind, ln.Addr().String())
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(out, "warden: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// banner prints what the server runs with, and what is off.
func banner(out io.Writer, p *policy.Policy, env *policy.Env, store, addr string) {
	name := p.Name
	if name == "" {
		name = "policy"
	}
	fmt.Fprintf(out, "warden: %s (%s, revision %s), store %s\n", name, p.File, p.Revision, store)
	if !env.ApprovalsOn() {
		st, _ := env.Switch(policy.SwitchRequireApproval)
		fmt.Fprintf(out, "warden: approvals are OFF (%s): gated calls run unasked\n", st.Describe())
	}
	fmt.Fprintf(out, "warden: a pending approval waits %d ms before it denies\n", env.ApprovalTimeoutMS())
	for _, r := range env.Reports() {
		fmt.Fprintln(out, "warden: switch:", r)
	}
	fmt.Fprintf(out, "warden: listening on http://%s\n", addr)
}

// bootstrapAdmin creates the first admin token of a store, and prints it once.
func bootstrapAdmin(ctx context.Context, db appStore, out io.Writer, now time.Time) error {
	tokens, err := db.Tokens(ctx)
	if err != nil {
		return fmt.Errorf("read tokens: %w", err)
	}
	for _, t := range tokens {
		if t.Role == auth.RoleAdmin && t.Revoked.IsZero() {
			return nil
		}
	}
	secret, hash, err := auth.NewSecret()
	if err != nil {
		return err
	}
	if err := db.CreateToken(ctx, &auth.Token{ID: newTokenID(), Hash: hash, Role: auth.RoleAdmin, Name: "first admin", Created: now}); err != nil {
		return fmt.Errorf("create the admin token: %w", err)
	}
	fmt.Fprintf(out, "warden: created an admin token; it is shown only now and stored only as a hash:\n%s\n", secret)
	return nil
}
