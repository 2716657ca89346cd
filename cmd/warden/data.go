package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/manage"
	"github.com/wardenhq/warden/policy"
)

// withData puts the store's management data (tenants, connections, profiles, egress
// allowlists written through the API) in force over the policy file, and follows the store
// until the stack closes, so that a change made through another instance reaches this one's
// live sessions.
func (st *stack) withData(ctx context.Context, db appStore, name string, data []byte, logger *slog.Logger) error {
	svc, err := manage.New(ctx, manage.Options{Store: db, Log: db, Name: name, Data: data, Logger: logger, Apply: st.apply})
	if err != nil {
		return fmt.Errorf("the management data: %w", err)
	}
	st.data = svc
	if svc.Policy().Revision != st.gateway.Policy().Revision {
		st.apply(svc.Policy())
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	st.stopData = cancel
	st.following.Add(1)
	go func() {
		defer st.following.Done()
		svc.Watch(wctx)
	}()
	return nil
}

// apply puts a compiled policy in force for every live session.
func (st *stack) apply(p *policy.Policy) {
	st.env = p.Env(os.LookupEnv)
	st.gateway.Reload(p, st.env)
}

// whoAmI names the user running a command, for the audit trail.
func whoAmI() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}

type dataOptions struct {
	store  storeOptions
	output string
	prune  bool
	dry    bool
}

func newExportCmd(root *rootOptions) *cobra.Command {
	o := &dataOptions{}
	cmd := &cobra.Command{
		Use:   "export [-o FILE] [--db FILE | --postgres URL]",
		Short: "Write the runtime data (tenants, connections, profiles, egress, hard blocks) as YAML",
		Long: `Write what changed while Warden ran, the tenants, connections, profiles (with their grants
and allowances) and egress allowlists written through the API or the console, and each
tenant's stored hard-block document, as one YAML document: to keep in git next to the policy
file, and to load into a store with warden import. Objects the policy file declares are not
written: the file holds them. Credentials are references (env:NAME, file:/path), never values.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.export(cmd, root) },
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "write to FILE (default: stdout)")
	o.store.register(cmd)
	return cmd
}

func newImportCmd(root *rootOptions) *cobra.Command {
	o := &dataOptions{}
	cmd := &cobra.Command{
		Use:   "import FILE|- [--prune] [--dry-run] [--db FILE | --postgres URL]",
		Short: "Load runtime data written by warden export into the store",
		Long: `Load an export document: each object is created or updated to what the document says, and
each tenant's hard-block document replaced. Everything is validated first, against the policy
file, as one change: if any object has a problem, every problem is printed and nothing is
written. With --prune, stored objects the document does not hold are deleted. A running
warden serve on the same store applies the result to its live sessions.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.load(cmd, root, args[0]) },
	}
	cmd.Flags().BoolVar(&o.prune, "prune", false, "delete stored objects the document does not hold")
	cmd.Flags().BoolVar(&o.dry, "dry-run", false, "validate only; write nothing")
	o.store.registerCreate(cmd)
	return cmd
}

// service opens the store and its management data over the policy file.
func (o *dataOptions) service(cmd *cobra.Command, root *rootOptions) (appStore, *manage.Service, error) {
	if _, err := root.load(cmd); err != nil {
		return nil, nil, err
	}
	name, data, err := root.policyBytes()
	if err != nil {
		return nil, nil, err
	}
	db, _, err := o.store.open(cmd.Context())
	if err != nil {
		return nil, nil, err
	}
	svc, err := manage.New(cmd.Context(), manage.Options{Store: db, Log: db, Name: name, Data: data,
		Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, svc, nil
}

func (o *dataOptions) export(cmd *cobra.Command, root *rootOptions) error {
	db, svc, err := o.service(cmd, root)
	if err != nil {
		return err
	}
	defer db.Close()
	objs, err := svc.Stored(cmd.Context())
	if err != nil {
		return err
	}
	stored, err := db.ListBoundaries(cmd.Context())
	if err != nil {
		return err
	}
	var bounds []manage.TenantDocument
	for _, b := range stored {
		bounds = append(bounds, manage.TenantDocument{Tenant: b.Tenant, Data: b.Data})
	}
	out := cmd.OutOrStdout()
	if o.output != "" {
		f, err := os.Create(o.output)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	if err := manage.WriteExport(out, objs, bounds); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "warden: exported %d %s and %d hard-block %s\n", len(objs), plural(len(objs), "object", "objects"),
		len(bounds), plural(len(bounds), "document", "documents"))
	return nil
}

func (o *dataOptions) load(cmd *cobra.Command, root *rootOptions, file string) error {
	text, err := readDocument(cmd, file)
	if err != nil {
		return err
	}
	if file == "-" {
		file = "<stdin>"
	}
	objs, bounds, err := manage.ReadExport(file, text)
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), err)
		return &exitError{code: 1}
	}
	db, svc, err := o.service(cmd, root)
	if err != nil {
		return err
	}
	defer db.Close()
	// The hard-block documents are checked before anything is written.
	bo := (&boundariesOptions{}).options()
	var problems []string
	for _, b := range bounds {
		if err := boundary.Check(b.Data, bo); err != nil {
			problems = append(problems, fmt.Sprintf("boundaries of %s: %v", b.Tenant, err))
		}
		if _, ok := svc.Policy().Tenant(b.Tenant); !ok && !holds(objs, b.Tenant) {
			problems = append(problems, fmt.Sprintf("boundaries of %s: no such tenant", b.Tenant))
		}
	}
	if len(problems) > 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), strings.Join(problems, "\n"))
		return &exitError{code: 1}
	}
	if o.dry {
		fmt.Fprintf(cmd.ErrOrStderr(), "warden: %d %s and %d hard-block %s read; --dry-run: nothing written\n",
			len(objs), plural(len(objs), "object", "objects"), len(bounds), plural(len(bounds), "document", "documents"))
		return nil
	}
	by := whoAmI()
	rep, err := svc.Import(cmd.Context(), objs, o.prune, by)
	var inv manage.Invalid
	if errors.As(err, &inv) {
		for _, p := range inv {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", p.Where, p.Message)
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "warden: nothing was written")
		return &exitError{code: 1}
	}
	if rep != nil {
		for _, l := range []struct {
			what  string
			names []string
		}{{"created", rep.Created}, {"updated", rep.Updated}, {"unchanged", rep.Unchanged}, {"deleted", rep.Deleted}} {
			if len(l.names) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", l.what, strings.Join(l.names, ", "))
			}
		}
	}
	if err != nil {
		return err
	}
	for _, b := range bounds {
		if _, _, err := storeBoundaries(cmd.Context(), db, b.Tenant, b.Data, boundary.AnyRevision, by, bo); err != nil {
			return fmt.Errorf("the hard blocks of %s: %w", b.Tenant, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "hard blocks of %s: written\n", b.Tenant)
	}
	return nil
}

// holds reports whether the objects hold a tenant of that id.
func holds(objs []*manage.Object, tenant string) bool {
	for _, o := range objs {
		if o.Kind == manage.KindTenant && o.ID == tenant {
			return true
		}
	}
	return false
}

// loadWith is load with the management data of the store the flags choose overlaid, so that a
// command naming a tenant or profile written through the API or the console finds it.
func (o *rootOptions) loadWith(cmd *cobra.Command, so *storeOptions) (*policy.Policy, error) {
	if _, err := o.load(cmd); err != nil {
		return nil, err
	}
	db, _, err := so.open(cmd.Context())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	d := &dataOptions{}
	return d.overlay(cmd, o, db)
}

// loadIfStore is loadWith when the flags name a store, and load when they do not.
func (o *rootOptions) loadIfStore(cmd *cobra.Command, so *storeOptions) (*policy.Policy, error) {
	if so.db == "" && so.postgres == "" {
		return o.load(cmd)
	}
	return o.loadWith(cmd, so)
}

// overlay compiles the store's management data over the policy file.
func (o *dataOptions) overlay(cmd *cobra.Command, root *rootOptions, db appStore) (*policy.Policy, error) {
	name, data, err := root.policyBytes()
	if err != nil {
		return nil, err
	}
	svc, err := manage.New(cmd.Context(), manage.Options{Store: db, Name: name, Data: data,
		Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return nil, err
	}
	return svc.Policy(), nil
}
