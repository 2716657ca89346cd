package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

type mcpOptions struct {
	store      storeOptions
	sandbox    sandboxFlags
	token      string
	workspaces string
	logs       logOptions
}

func newMCPCmd(root *rootOptions) *cobra.Command {
	o := &mcpOptions{}
	cmd := &cobra.Command{
		Use:   "mcp --token TOKEN [--db FILE | --postgres URL] [--workspaces DIR]",
		Short: "Serve one MCP session over stdio, for a local client",
		Long: `Serve one MCP session on standard input and output, for clients that start their servers as
commands. The token (from warden token create; or $WARDEN_TOKEN) binds the tenant, role and
profile exactly as on warden serve's /mcp; calls are reviewed, gated and recorded in the same
store. Logs go to standard error.` + envHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := o.logs.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if o.token == "" {
				return errors.New("give --token (or set WARDEN_TOKEN): an agent token from warden token create")
			}
			p, err := root.load(cmd)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			sb, err := o.sandbox.setup(ctx, os.LookupEnv, o.store.files())
			if err != nil {
				return err
			}
			if sb.native.Off || sb.unavailable != nil {
				logger.Warn("shell_exec's sandbox: " + sb.summary())
			}
			db, _, err := o.store.open(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			keeper, err := o.store.keep(ctx, db, logger)
			if err != nil {
				return err
			}
			defer closeKeeper(context.WithoutCancel(ctx), keeper, logger)
			st, err := newStack(p, db, o.workspaces, sb, logger, keeper.ID())
			if err != nil {
				return err
			}
			defer st.close()
			name, data, err := root.policyBytes()
			if err != nil {
				return err
			}
			if err := st.withData(ctx, db, name, data, logger); err != nil {
				return err
			}
			return st.gateway.ServeStdio(ctx, o.token, os.Stdin, os.Stdout)
		},
	}
	cmd.Flags().StringVar(&o.token, "token", "", "the agent token the session runs with (default $WARDEN_TOKEN)")
	cmd.Flags().StringVar(&o.workspaces, "workspaces", "workspaces", "the directory of the tenants' workspaces (<dir>/<tenant>)")
	o.store.register(cmd)
	o.store.creates = true
	o.store.journal = true
	o.sandbox.register(cmd)
	o.logs.register(cmd, "warn")
	return cmd
}
