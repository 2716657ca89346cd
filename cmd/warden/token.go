package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/server"
)

type tokenOptions struct {
	store   storeOptions
	tenant  string
	role    string
	profile string
	model   string
	harness string
	access  string
	name    string
}

func newTokenCmd(root *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Manage bearer tokens"}
	o := &tokenOptions{}
	create := &cobra.Command{
		Use:   "create --tenant T --role R [--profile P] [--model M] [--harness H] [--db FILE | --postgres URL]",
		Short: "Create a token and print it (on the last line); only its hash is kept",
		Long: `Create a bearer token. By default it is an agent's session token: it binds a tenant, the role
the MCP session runs as and, for roles that run one, a profile, all checked against the policy;
--model and --harness bind the model and the harness its sessions run on, which a client
cannot then state otherwise at initialize.
With --access admin|operator|approver|viewer it is a token for the REST API instead (tenant
scoped, except admin). The secret is printed once, on the last line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := root.loadWith(cmd, &o.store)
			if err != nil {
				return err
			}
			return o.create(cmd, p)
		},
	}
	f := create.Flags()
	f.StringVar(&o.tenant, "tenant", "", "the tenant the token is for")
	f.StringVar(&o.role, "role", "", "the role an agent session runs as")
	f.StringVar(&o.profile, "profile", "", "the profile an agent session runs (default: the role's default profile)")
	f.StringVar(&o.model, "model", "", "bind the model the agent's sessions run on: a client that states another at initialize is refused (where the policy lists models, one it holds back puts the session outside the owner's tenant on the read-only route)")
	f.StringVar(&o.harness, "harness", "", "bind the harness the agent's sessions run on (its caps and certification apply): a client that states another at initialize is refused")
	f.StringVar(&o.access, "access", auth.RoleAgent, "what the token may do: agent (an MCP session), admin, operator, approver or viewer")
	f.StringVar(&o.name, "name", "", "a name for people (who approved a card is recorded by it)")
	o.store.registerCreate(create)

	// list and revoke have options of their own: only create offers --create.
	lr := &tokenOptions{}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list [--json] [--db FILE | --postgres URL]",
		Short: "List the tokens: id, name, access, tenant, role, profile, created, expires, revoked (never a secret)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lr.list(cmd, asJSON)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print them as JSON")
	lr.store.register(list)

	revoke := &cobra.Command{
		Use:   "revoke ID [--db FILE | --postgres URL]",
		Short: "Revoke a token: every server on the store refuses it at once and ends the sessions it opened",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, kind, err := lr.store.open(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			if err := db.RevokeToken(cmd.Context(), args[0], time.Now()); err != nil {
				if errors.Is(err, auth.ErrNotFound) {
					return fmt.Errorf("revoke %s in %s: no such token, or it is revoked already", args[0], kind)
				}
				return fmt.Errorf("revoke %s in %s: %w", args[0], kind, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked token %s in %s\n", args[0], kind)
			return nil
		},
	}
	lr.store.register(revoke)
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// list prints every token, revoked ones included.
func (o *tokenOptions) list(cmd *cobra.Command, asJSON bool) error {
	db, kind, err := o.store.open(cmd.Context())
	if err != nil {
		return err
	}
	defer db.Close()
	tokens, err := db.Tokens(cmd.Context())
	if err != nil {
		return fmt.Errorf("list the tokens in %s: %w", kind, err)
	}
	w := cmd.OutOrStdout()
	if asJSON {
		out := make([]server.TokenJSON, len(tokens))
		for i, t := range tokens {
			out[i] = server.ToTokenJSON(t)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"tokens": out})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tACCESS\tTENANT\tROLE\tPROFILE\tCREATED\tEXPIRES\tREVOKED")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, t := range tokens {
		revoked := "-"
		if !t.Revoked.IsZero() {
			revoked = t.Revoked.UTC().Format(time.RFC3339)
		}
		expires := "-"
		if !t.Expires.IsZero() {
			expires = t.Expires.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, dash(t.Name), t.Role, dash(t.Tenant), dash(t.SessionRole),
			dash(t.Profile), t.Created.UTC().Format(time.RFC3339), expires, revoked)
	}
	return tw.Flush()
}

// tokenValidator checks a new token's tenant, role and profile against the policy current
// returns (POST /api/v1/tokens).
func tokenValidator(current func() *policy.Policy) auth.Validator {
	return func(t *auth.Token) error {
		p := current()
		switch t.Role {
		case auth.RoleAdmin:
			return nil
		case auth.RoleAgent:
			return (&tokenOptions{tenant: t.Tenant, role: t.SessionRole, profile: t.Profile, model: t.Model, harness: t.Harness}).checkSession(p)
		}
		if _, ok := p.Tenant(t.Tenant); !ok {
			return fmt.Errorf("tenant %q: the policy has no such tenant", t.Tenant)
		}
		return nil
	}
}

func (o *tokenOptions) create(cmd *cobra.Command, p *policy.Policy) error {
	if !slices.Contains(auth.Roles, o.access) {
		return fmt.Errorf("--access %q: want one of %s", o.access, strings.Join(auth.Roles, ", "))
	}
	t := &auth.Token{ID: newTokenID(), Role: o.access, Name: o.name, Created: time.Now().UTC()}
	switch o.access {
	case auth.RoleAdmin:
		if o.tenant != "" || o.role != "" || o.profile != "" || o.model != "" || o.harness != "" {
			return fmt.Errorf("an admin token is for every tenant: leave out --tenant, --role, --profile, --model and --harness")
		}
	case auth.RoleAgent:
		if err := o.checkSession(p); err != nil {
			return err
		}
		t.Tenant, t.SessionRole, t.Profile, t.Model, t.Harness = o.tenant, o.role, o.profile, o.model, o.harness
	default:
		if o.role != "" || o.profile != "" || o.model != "" || o.harness != "" {
			return fmt.Errorf("--role, --profile, --model and --harness are for agent tokens only")
		}
		if _, ok := p.Tenant(o.tenant); !ok {
			return fmt.Errorf("--tenant %q: the policy has no such tenant", o.tenant)
		}
		t.Tenant = o.tenant
	}
	secret, hash, err := auth.NewSecret()
	if err != nil {
		return err
	}
	t.Hash = hash
	db, kind, err := o.store.open(cmd.Context())
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.CreateToken(cmd.Context(), t); err != nil {
		return fmt.Errorf("store the token: %w", err)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "created %s token %s in %s", t.Role, t.ID, kind)
	if t.Tenant != "" {
		fmt.Fprintf(w, " for tenant %s", t.Tenant)
	}
	if t.SessionRole != "" {
		fmt.Fprintf(w, ", role %s", t.SessionRole)
	}
	if t.Profile != "" {
		fmt.Fprintf(w, ", profile %s", t.Profile)
	}
	if t.Model != "" {
		fmt.Fprintf(w, ", model %s", t.Model)
	}
	if t.Harness != "" {
		fmt.Fprintf(w, ", harness %s", t.Harness)
	}
	fmt.Fprintln(w, "; it is shown only now:")
	fmt.Fprintln(w, secret)
	return nil
}

// checkSession checks that the tenant, role, profile, model and harness an agent token binds
// exist and fit.
func (o *tokenOptions) checkSession(p *policy.Policy) error {
	if _, ok := p.Tenant(o.tenant); !ok {
		return fmt.Errorf("--tenant %q: the policy has no such tenant", o.tenant)
	}
	r, ok := p.Role(o.role)
	if !ok {
		return fmt.Errorf("--role %q: the policy has no such role", o.role)
	}
	if err := checkModel(p, o.model); err != nil {
		return err
	}
	if o.harness != "" {
		h, ok := p.Harness(o.harness)
		switch {
		case !ok:
			return fmt.Errorf("--harness %q: the policy has no such harness (it has %s)", o.harness, strings.Join(harnessIDs(p), ", "))
		case !h.Allows(r.ID):
			return fmt.Errorf("--harness %s: role %s may not run on it (it runs %s)", h.ID, r.ID, strings.Join(h.Roles, ", "))
		}
	}
	if o.profile == "" {
		if r.Profile == policy.ProfileRequired && r.DefaultProfile == nil {
			return fmt.Errorf("role %s runs a saved profile: give --profile", r.ID)
		}
		return nil
	}
	pr, ok := p.Profile(o.profile)
	switch {
	case !ok:
		return fmt.Errorf("--profile %q: the policy has no such profile", o.profile)
	case pr.Role != r:
		return fmt.Errorf("profile %s runs as role %s, not %s", pr.ID, pr.Role.ID, r.ID)
	}
	return nil
}

// checkModel checks the model a token binds: well formed and, where the policy lists models,
// one of them (a model the policy does not list is a typo more often than not).
func checkModel(p *policy.Policy, model string) error {
	if model == "" {
		return nil
	}
	if err := policy.CheckModelID(model); err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	if _, ok := p.Model(model); p.DeclaresModels() && !ok {
		return fmt.Errorf("--model %q: the policy does not list it (its models are %s)", model, strings.Join(p.ModelIDs(), ", "))
	}
	return nil
}

func harnessIDs(p *policy.Policy) []string {
	var out []string
	for h := range p.Harnesses() {
		out = append(out, h.ID)
	}
	return out
}

func newTokenID() string { return auth.NewID() }
