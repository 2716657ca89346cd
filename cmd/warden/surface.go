package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

type surfaceOptions struct {
	env     envOptions
	spec    surface.Spec
	json    bool
	explain []string
	store   storeOptions
}

func newSurfaceCmd(root *rootOptions) *cobra.Command {
	o := &surfaceOptions{}
	cmd := &cobra.Command{
		Use:   "surface --role R [--profile P] [--tenant T] [--owner] [--env K=V ...] [--explain TOOL ...] [--db FILE | --postgres URL] [--json]",
		Short: "Print the tools a session holds, and why every other tool is absent",
		Long: `Compute the tool surface of a session: the role, tenant, profile and harness, under
the operator switches of the host environment (or of --env values standing in for it). Prints
the tools given and, for every tool not given, the filter that removed it (registration,
ceiling, profile, grant or gate) and why. A session its role's invariants would refuse is
reported as refused, with exit status 1.

With --explain, a tool the session holds is also shown with the hard blocks its calls meet:
the policy's rules for the tenant, and the tenant's stored document when a store is given
(--db or --postgres).`,
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
	f.StringVar(&o.spec.Role, "role", "", "role id (person, inbound, coworker, specialist, goal_agent, goal_reviewer, read_only, or one the policy adds)")
	f.StringVar(&o.spec.Profile, "profile", "", "profile id (default: the role's default profile)")
	f.StringVar(&o.spec.Tenant, "tenant", "", "tenant id (default: the policy's only tenant, or the one named default)")
	f.StringVar(&o.spec.Harness, "harness", "", "harness id (default: default)")
	f.StringVar(&o.spec.Model, "model", "", "the model the session runs on (where the policy lists models, one it does not certify puts a session outside the owner's tenant on the read-only route)")
	f.BoolVar(&o.spec.Owner, "owner", false, "treat the tenant as the deployment owner's (it may use the host environment's credentials)")
	f.BoolVar(&o.json, "json", false, "print JSON")
	f.StringArrayVar(&o.explain, "explain", nil, "explain one tool (repeatable); prints only the explanations")
	o.env.register(cmd)
	o.store.register(cmd)
	_ = cmd.MarkFlagRequired("role")
	return cmd
}

func (o *surfaceOptions) run(cmd *cobra.Command, p *policy.Policy) error {
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
	s, err := surface.Open(env, o.spec)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if len(o.explain) > 0 {
		hb, err := tenantRules(cmd, p, o.spec.Tenant, o.store, "")
		if err != nil {
			return err
		}
		home, _ := os.UserHomeDir()
		return o.printExplain(out, s, hb.compile(home))
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(surface.NewReport(s, env))
	}
	printSurface(out, s, env)
	return nil
}

// defaultTenant picks the tenant when --tenant is not given.
func defaultTenant(p *policy.Policy) (string, error) {
	var ids []string
	for t := range p.Tenants() {
		ids = append(ids, t.ID)
	}
	if len(ids) == 1 {
		return ids[0], nil
	}
	if _, ok := p.Tenant("default"); ok {
		return "default", nil
	}
	if len(ids) == 0 {
		return "", fmt.Errorf("the policy declares no tenant: add one under tenants")
	}
	return "", fmt.Errorf("--tenant is required: the policy has %s", strings.Join(ids, ", "))
}

func (o *surfaceOptions) printExplain(out io.Writer, s *surface.Surface, rules *boundary.Set) error {
	if o.json {
		var list []explanationJSON
		for _, name := range o.explain {
			e := toExplanationJSON(s.Explain(name))
			if *e.Given {
				e.HardBlocks = hardBlocksJSON(rules)
			}
			list = append(list, e)
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	for _, name := range o.explain {
		e := s.Explain(name)
		if e.Given {
			fmt.Fprintf(out, "%s: given: %s\n", name, e.Reason)
			printHardBlocks(out, s.Tenant().ID, rules)
		} else {
			fmt.Fprintf(out, "%s: absent (%s): %s\n", name, e.Filter, e.Reason)
		}
	}
	return nil
}

type explanationJSON struct {
	Tool   string `json:"tool"`
	Filter string `json:"filter,omitempty"`
	Reason string `json:"reason"`
	Given  *bool  `json:"given,omitempty"`
	// HardBlocks are the rules a given tool's calls meet (--explain only).
	HardBlocks *hardBlocksOut `json:"hardBlocks,omitempty"`
}

// hardBlocksOut is a tenant's hard blocks as --explain shows them.
type hardBlocksOut struct {
	Revision string   `json:"revision"`
	Rules    []string `json:"rules"`
	// Invalid says why every call is blocked (boundary_config_invalid), when it is.
	Invalid string `json:"invalid,omitempty"`
}

func hardBlocksJSON(set *boundary.Set) *hardBlocksOut {
	out := &hardBlocksOut{Revision: set.Revision(), Rules: []string{}}
	for _, r := range set.Rules() {
		if r.Enabled {
			out.Rules = append(out.Rules, r.ID)
		}
	}
	if err := set.Invalid(); err != nil {
		out.Invalid = err.Error()
	}
	return out
}

// printHardBlocks says which hard blocks a given tool's calls meet.
func printHardBlocks(out io.Writer, tenant string, set *boundary.Set) {
	hb := hardBlocksJSON(set)
	switch {
	case hb.Invalid != "":
		fmt.Fprintf(out, "  hard blocks of %s: every call is blocked (boundary_config_invalid): %s\n", tenant, firstLineOf(hb.Invalid))
	case len(hb.Rules) == 0:
		fmt.Fprintf(out, "  hard blocks of %s: none\n", tenant)
	default:
		fmt.Fprintf(out, "  hard blocks of %s (revision %s): %s\n", tenant, hb.Revision, strings.Join(hb.Rules, ", "))
	}
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func toExplanationJSON(e surface.Explanation) explanationJSON {
	given := e.Given
	return explanationJSON{Tool: e.Tool, Filter: string(e.Filter), Reason: e.Reason, Given: &given}
}

func printSurface(out io.Writer, s *surface.Surface, env *policy.Env) {
	p := s.Policy()
	head := fmt.Sprintf("role %s · tenant %s · harness %s", s.Role().ID, s.Tenant().ID, s.Harness().ID)
	if pr := s.Profile(); pr != nil {
		head += " · profile " + pr.ID
	}
	if m := s.Model(); m != "" {
		head += " · model " + m
	}
	if s.Owner() {
		head += " · owner"
	}
	fmt.Fprintf(out, "%s\npolicy %s · revision %s\n", head, p.File, p.Revision)
	if ro, why := s.ReadOnly(); ro {
		fmt.Fprintf(out, "read-only route: %s\n", why)
	}
	fmt.Fprintln(out)

	tools := s.Tools()
	fmt.Fprintf(out, "TOOLS GIVEN (%d)\n", len(tools))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TOOL\tSERVER\tEFFECT\tGATE")
	for _, name := range tools {
		t, _ := p.Tool(name)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", name, t.Server.ID, t.Effect, gateText(s.Gate(name)))
	}
	tw.Flush()

	absent := s.Absent()
	fmt.Fprintf(out, "\nNOT GIVEN (%d)\n", len(absent))
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TOOL\tFILTER\tREASON")
	for _, e := range absent {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.Tool, e.Filter, e.Reason)
	}
	tw.Flush()

	if creds := s.Credentials(); len(creds) > 0 {
		fmt.Fprintln(out, "\nCREDENTIALS")
		tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, c := range creds {
			conn := "host environment"
			if c.Connection != nil {
				conn = c.Connection.ID
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Connector.ID, c.Source, conn)
		}
		tw.Flush()
	}
	if l, ok := s.Limits(); ok {
		fmt.Fprintf(out, "\nLIMITS  runBudgetUsd %g · maxTurns %d · maxConcurrentRuns %d · maxDelegationDepth %d · maxAttempts %d",
			l.RunBudgetUsd, l.MaxTurns, l.MaxConcurrentRuns, l.MaxDelegationDepth, l.MaxAttempts)
		if l.DailyBudgetUsd > 0 {
			fmt.Fprintf(out, " · dailyBudgetUsd %g", l.DailyBudgetUsd)
		}
		fmt.Fprintln(out)
	}
}

func gateText(g surface.GateResult) string {
	var parts []string
	switch {
	case g.Code == verdict.ApprovalRequired && len(g.Effects) > 0:
		ops := make([]string, len(g.Effects))
		for i, e := range g.Effects {
			ops[i] = string(e)
		}
		parts = append(parts, "asks a person for calls that "+strings.Join(ops, " or "))
	case g.Code == verdict.ApprovalRequired:
		parts = append(parts, "asks a person")
	case g.Code != "":
		parts = append(parts, "refuses: "+string(g.Code))
	}
	if g.Billing != nil {
		parts = append(parts, "bills in "+g.Billing.Unit)
	}
	if g.Note != "" {
		parts = append(parts, "("+g.Note+")")
	}
	return strings.Join(parts, "; ")
}
