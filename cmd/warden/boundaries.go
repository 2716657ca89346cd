package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/policy"
)

type boundariesOptions struct {
	store   storeOptions
	tenant  string
	ifMatch string
	home    string
}

func newBoundariesCmd(root *rootOptions) *cobra.Command {
	o := &boundariesOptions{}
	cmd := &cobra.Command{
		Use:   "boundaries",
		Short: "Read, write and check a tenant's stored hard blocks",
		Long: `A tenant's stored hard-block document is BURROW's {"version":1,"hardBlocks":[...]}, kept in the
store (--db or --postgres) with a revision. It adds to the policy's rules for the tenant (its
top-level boundaries, then the tenant's): hard blocks only accumulate, so a stored document can
block more but never lift a rule the policy file writes. A running warden serve or warden mcp
on the same store applies a change to its live sessions' next calls.`,
	}
	get := &cobra.Command{
		Use:   "get [--tenant T] [--db FILE | --postgres URL]",
		Short: "Print the tenant's stored document (the empty one when it has none)",
		Long: `Print the tenant's stored document as it is stored, on stdout; its revision, who wrote it and
when go to stderr. A tenant with no document has {"version":1,"hardBlocks":[]}, revision 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := root.loadWith(cmd, &o.store)
			if err != nil {
				return err
			}
			return o.get(cmd, p)
		},
	}
	set := &cobra.Command{
		Use:   "set FILE|- [--tenant T] [--if-match REVISION] [--db FILE | --postgres URL]",
		Short: "Validate a document and store it as the tenant's",
		Long: `Read a document from FILE (or stdin for -), validate it (every field error is printed, and
nothing is written if there is one), and store it as the tenant's document. With --if-match,
the write happens only if the stored revision is still REVISION (0: there is none yet), so a
change made meanwhile by someone else is not overwritten; without it the document replaces
whatever is stored. The change is recorded in the audit trail, by the user running warden.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := root.loadWith(cmd, &o.store)
			if err != nil {
				return err
			}
			return o.set(cmd, p, args[0])
		},
	}
	check := &cobra.Command{
		Use:   "check FILE|-",
		Short: "Validate a document and print every field error",
		Long: `Validate a hard-block document as warden boundaries set and the REST API would, and print
every problem as "FILE: field: message". The exit status is 0 for a valid document and 1 for
an invalid one. Nothing is read from or written to a store.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.check(cmd, args[0]) },
	}
	for _, c := range []*cobra.Command{get, set} {
		c.Flags().StringVar(&o.tenant, "tenant", "", "tenant id (default: the policy's only tenant, or the one named default)")
		o.store.register(c)
	}
	set.Flags().StringVar(&o.ifMatch, "if-match", "", "write only if the stored revision is this one (0: none is stored yet)")
	for _, c := range []*cobra.Command{set, check} {
		c.Flags().StringVar(&o.home, "home", "", `what "~/" in a pattern stands for while checking (default: this user's home directory)`)
	}
	cmd.AddCommand(get, set, check)
	return cmd
}

// chooseTenant is --tenant, checked against the policy, or the policy's default tenant.
func (o *boundariesOptions) chooseTenant(p *policy.Policy) (string, error) {
	if o.tenant == "" {
		return defaultTenant(p)
	}
	if _, ok := p.Tenant(o.tenant); !ok {
		return "", fmt.Errorf("--tenant %q: the policy has no such tenant", o.tenant)
	}
	return o.tenant, nil
}

func (o *boundariesOptions) get(cmd *cobra.Command, p *policy.Policy) error {
	tenant, err := o.chooseTenant(p)
	if err != nil {
		return err
	}
	db, _, err := o.store.open(cmd.Context())
	if err != nil {
		return err
	}
	defer db.Close()
	st, err := db.Boundaries(cmd.Context(), tenant)
	if err != nil {
		return err
	}
	if st == nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "tenant %s: no stored document (revision 0)\n", tenant)
		fmt.Fprintln(cmd.OutOrStdout(), `{"version":1,"hardBlocks":[]}`)
		return nil
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "tenant %s: revision %d, written by %s at %s\n", tenant, st.Revision,
		dashIfEmpty(st.By), st.Updated.Format(time.RFC3339))
	out := cmd.OutOrStdout()
	_, err = out.Write(st.Data)
	if err == nil && (len(st.Data) == 0 || st.Data[len(st.Data)-1] != '\n') {
		_, err = fmt.Fprintln(out)
	}
	return err
}

// readDocument reads FILE, or stdin for "-".
func readDocument(cmd *cobra.Command, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(io.LimitReader(cmd.InOrStdin(), 16<<20))
	}
	return os.ReadFile(name)
}

func (o *boundariesOptions) options() boundary.Options {
	home := o.home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return boundary.Options{Home: home}
}

// validate prints every problem of a document and reports whether there was any.
func (o *boundariesOptions) validate(cmd *cobra.Command, name string, data []byte) bool {
	err := boundary.Check(data, o.options())
	var ve boundary.ValidationError
	if !errors.As(err, &ve) {
		return true
	}
	for _, fe := range ve {
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", name, fe.Error())
	}
	return false
}

func (o *boundariesOptions) check(cmd *cobra.Command, name string) error {
	data, err := readDocument(cmd, name)
	if err != nil {
		return err
	}
	if !o.validate(cmd, name, data) {
		return &exitError{code: 1}
	}
	d, _ := boundary.Parse(data)
	fmt.Fprintf(cmd.OutOrStdout(), "%s: valid: %d rules\n", name, len(d.HardBlocks))
	return nil
}

func (o *boundariesOptions) set(cmd *cobra.Command, p *policy.Policy, name string) error {
	tenant, err := o.chooseTenant(p)
	if err != nil {
		return err
	}
	ifRevision := int64(boundary.AnyRevision)
	if o.ifMatch != "" {
		if ifRevision, err = strconv.ParseInt(o.ifMatch, 10, 64); err != nil || ifRevision < 0 {
			return fmt.Errorf("--if-match %q: want a revision, a whole number (0: none is stored yet)", o.ifMatch)
		}
	}
	data, err := readDocument(cmd, name)
	if err != nil {
		return err
	}
	if !o.validate(cmd, name, data) {
		fmt.Fprintln(cmd.ErrOrStderr(), "nothing was written")
		return &exitError{code: 1}
	}
	db, _, err := o.store.open(cmd.Context())
	if err != nil {
		return err
	}
	defer db.Close()
	st, rules, err := storeBoundaries(cmd.Context(), db, tenant, data, ifRevision, whoAmI(), o.options())
	if errors.Is(err, boundary.ErrStale) {
		return fmt.Errorf("tenant %s: the stored document is no longer revision %d (warden boundaries get shows it); nothing was written", tenant, ifRevision)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "tenant %s: revision %d stored (%d rules)\n", tenant, st.Revision, rules)
	return nil
}

// storeBoundaries writes a tenant's hard-block document (validated by the caller) if its
// revision is still ifRevision, and records the change in the audit trail; it returns what
// was stored and how many rules it has.
func storeBoundaries(ctx context.Context, db appStore, tenant string, data []byte, ifRevision int64, who string, opt boundary.Options) (*boundary.Stored, int, error) {
	now := time.Now().UTC()
	st, err := db.PutBoundaries(ctx, &boundary.Stored{Tenant: tenant, Data: data, By: who, Updated: now}, ifRevision)
	if err != nil {
		return nil, 0, err
	}
	set := boundary.Merge(nil, st.Data, opt)
	e := &audit.Event{Time: now, Kind: audit.KindBoundaries, Tenant: tenant, Principal: who, Digest: set.Revision(), Outcome: "ok"}
	for _, r := range set.Rules() {
		e.Rules = append(e.Rules, r.ID)
	}
	if err := db.Append(ctx, e); err != nil {
		return st, len(e.Rules), fmt.Errorf("tenant %s: revision %d is stored and in force, but the change could not be recorded in the audit trail: %w", tenant, st.Revision, err)
	}
	return st, len(e.Rules), nil
}
