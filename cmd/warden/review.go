package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/surface"
)

type reviewOptions struct {
	env        envOptions
	spec       surface.Spec
	tool       string
	input      string
	workspace  string
	home       string
	boundaries string
	store      storeOptions
	json       bool
	unconfined bool
}

func newReviewCmd(root *rootOptions) *cobra.Command {
	o := &reviewOptions{}
	cmd := &cobra.Command{
		Use:   "review --role R --tool NAME --input JSON [--tenant T] [--workspace DIR] [--boundaries FILE | --db FILE | --postgres URL] [--json]",
		Short: "Review one concrete tool call: allow, ask or deny, and why",
		Long: `Review one call as the session described by the flags would make it: the tool must be in
the session's surface; the call is normalised (paths resolved through symbolic links against
the workspace, shell commands parsed into their effects, patches into their files) and checked
against the tenant's hard blocks, the tool's argument constraints and its gate. The exit status
is 0 whenever a decision was reached (the decision is in the output) and non-zero only for
usage or configuration errors.

The hard blocks are those a served call meets: the policy's (its top-level boundaries, then the
tenant's), then the tenant's stored document when a store is given (--db or --postgres), or
the document in --boundaries instead of it (BURROW's stored format,
{"version":1,"hardBlocks":[...]}: to try a document before warden boundaries set). A stored
document or boundaries file that does not validate blocks every call with
boundary_config_invalid, as it would when served.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := root.loadIfStore(cmd, &o.store)
			if err != nil {
				return err
			}
			return o.run(cmd, p)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.spec.Role, "role", "", "role id")
	f.StringVar(&o.spec.Profile, "profile", "", "profile id (default: the role's default profile)")
	f.StringVar(&o.spec.Tenant, "tenant", "", "tenant id (default: the policy's only tenant, or the one named default)")
	f.StringVar(&o.spec.Harness, "harness", "", "harness id (default: default)")
	f.BoolVar(&o.spec.Owner, "owner", false, "treat the tenant as the deployment owner's")
	f.StringVar(&o.tool, "tool", "", "the tool called, as the model names it (Bash, files_write, mcp__x__y)")
	f.StringVar(&o.input, "input", "{}", "the call's arguments, a JSON object")
	f.StringVar(&o.workspace, "workspace", "", "the session's workspace: the base of relative paths (default: the current directory)")
	f.StringVar(&o.home, "home", "", "what ~ stands for (default: the home directory of the user running warden)")
	f.StringVar(&o.boundaries, "boundaries", "", "hard-block rules in BURROW's stored format (a JSON file), in place of the tenant's stored document")
	o.store.register(cmd)
	f.BoolVar(&o.json, "json", false, "print JSON")
	f.BoolVar(&o.unconfined, "unconfined", false, "let Warden's own file tools act outside the workspace (hard blocks still apply)")
	o.env.register(cmd)
	_ = cmd.MarkFlagRequired("role")
	_ = cmd.MarkFlagRequired("tool")
	return cmd
}

func (o *reviewOptions) run(cmd *cobra.Command, p *policy.Policy) error {
	var args map[string]any
	if err := json.Unmarshal([]byte(o.input), &args); err != nil || args == nil {
		return fmt.Errorf("--input must be a JSON object of the call's arguments: %v", err)
	}
	lookup, err := o.env.lookup(os.LookupEnv)
	if err != nil {
		return err
	}
	env := p.Env(lookup)
	for _, r := range env.Reports() {
		fmt.Fprintln(cmd.ErrOrStderr(), "switch:", r)
	}
	if o.spec.Tenant == "" {
		if o.spec.Tenant, err = defaultTenant(p); err != nil {
			return err
		}
	}
	sf, err := surface.Open(env, o.spec)
	if err != nil {
		return err
	}
	if o.workspace == "" {
		if o.workspace, err = os.Getwd(); err != nil {
			return err
		}
	}
	if o.home == "" {
		o.home, _ = os.UserHomeDir()
	}
	paths, err := action.NewResolver(o.workspace, o.home)
	if err != nil {
		return err
	}
	set, err := o.rules(cmd, p)
	if err != nil {
		return err
	}
	rv, err := review.New(review.Options{})
	if err != nil {
		return err
	}
	v := rv.Review(&review.Session{ID: "cli", Surface: sf, Paths: paths, Boundaries: set, Unconfined: o.unconfined}, o.tool, args)
	out := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	printVerdict(out, &v)
	return nil
}

// rules are the tenant's hard blocks as a served call would meet them (see the command's help).
func (o *reviewOptions) rules(cmd *cobra.Command, p *policy.Policy) (*boundary.Set, error) {
	tr, err := tenantRules(cmd, p, o.spec.Tenant, o.store, o.boundaries)
	if err != nil {
		return nil, err
	}
	set := tr.compile(o.home)
	if err := set.Invalid(); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "boundaries: %s does not validate, so it blocks every call:\n%v\n", tr.where, err)
	}
	return set, nil
}

// hardBlocks are a tenant's rules from their two sources.
type hardBlocks struct {
	policy *boundary.Document // the policy's rules for the tenant (nil: none)
	stored []byte             // the stored document, or the file standing in for it (nil: none)
	where  string             // where stored came from, for messages
}

// tenantRules reads a tenant's hard blocks: the policy's, then the document in file if given,
// else the tenant's stored document when a store is given.
func tenantRules(cmd *cobra.Command, p *policy.Policy, tenant string, store storeOptions, file string) (*hardBlocks, error) {
	pr, err := boundary.FromPolicy(p)
	if err != nil {
		return nil, err // root.load checked them already
	}
	hb := &hardBlocks{policy: pr.For(tenant)}
	switch {
	case file != "":
		if hb.stored, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("--boundaries: %w", err)
		}
		hb.where = file
	case store.db != "" || store.postgres != "":
		db, _, err := store.open(cmd.Context())
		if err != nil {
			return nil, err
		}
		defer db.Close()
		st, err := db.Boundaries(cmd.Context(), tenant)
		if err != nil {
			return nil, err
		}
		if st != nil {
			hb.stored = st.Data
			hb.where = fmt.Sprintf("the stored document of %s (revision %d)", tenant, st.Revision)
		}
	}
	return hb, nil
}

func (hb *hardBlocks) compile(home string) *boundary.Set {
	return boundary.Merge(hb.policy, hb.stored, boundary.Options{Home: home})
}

func printVerdict(out io.Writer, v *review.Verdict) {
	fmt.Fprintf(out, "decision: %s\n", v.Decision)
	if len(v.Blockers) > 0 {
		fmt.Fprintln(out, "\nBLOCKERS")
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, b := range v.Blockers {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", b.Code, dashIfEmpty(b.Rule), b.Detail)
		}
		tw.Flush()
	}
	if len(v.Effects) > 0 {
		fmt.Fprintln(out, "\nEFFECTS")
		for _, e := range v.Effects {
			rec := ""
			if e.Recursive {
				rec = " (and everything below)"
			}
			fmt.Fprintf(out, "  %-8s %s%s\n", e.Op, e.Path, rec)
		}
	}
	if len(v.Argv) > 0 {
		fmt.Fprintln(out, "\nCOMMANDS")
		for _, a := range v.Argv {
			fmt.Fprintf(out, "  %s\n", strings.Join(a, " "))
		}
	}
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
