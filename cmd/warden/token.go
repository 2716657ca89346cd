package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/policy"
)

type tokenOptions struct {
	store   storeOptions
	tenant  string
	role    string
	profile string
	access  string
	name    string
}

func newTokenCmd(root *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Manage bearer tokens"}
	o := &tokenOptions{}
	create := &cobra.Command{
		Use:   "create --tenant T --role R [--profile P] [--db FILE | --postgres URL]",
		Short: "Create a token and print it (on the last line); only its hash is kept",
		Long: `Create a bearer token. By default it is an agent's session token: it binds a tenant, the role
the MCP session runs as and, for roles that run one, a profile, all checked against the policy.
With --access admin|operator|approver|viewer it is a token for the REST API instead (tenant
scoped, except admin). The secret is printed once, on the last line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := root.load(cmd)
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
	f.StringVar(&o.access, "access", auth.RoleAgent, "what the token may do: agent (an MCP session), admin, operator, approver or viewer")
	f.StringVar(&o.name, "name", "", "a name for people (who approved a card is recorded by it)")
	o.store.register(create)
	cmd.AddCommand(create)
	return cmd
}

func (o *tokenOptions) create(cmd *cobra.Command, p *policy.Policy) error {
	if !slices.Contains(auth.Roles, o.access) {
		return fmt.Errorf("--access %q: want one of %s", o.access, strings.Join(auth.Roles, ", "))
	}
	t := &auth.Token{ID: newTokenID(), Role: o.access, Name: o.name, Created: time.Now().UTC()}
	switch o.access {
	case auth.RoleAdmin:
		if o.tenant != "" || o.role != "" || o.profile != "" {
			return fmt.Errorf("an admin token is for every tenant: leave out --tenant, --role and --profile")
		}
	case auth.RoleAgent:
		if err := o.checkSession(p); err != nil {
			return err
		}
		t.Tenant, t.SessionRole, t.Profile = o.tenant, o.role, o.profile
	default:
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
	fmt.Fprintln(w, "; it is shown only now:")
	fmt.Fprintln(w, secret)
	return nil
}

// checkSession checks that the tenant, role and profile an agent token binds exist and fit.
func (o *tokenOptions) checkSession(p *policy.Policy) error {
	if _, ok := p.Tenant(o.tenant); !ok {
		return fmt.Errorf("--tenant %q: the policy has no such tenant", o.tenant)
	}
	r, ok := p.Role(o.role)
	if !ok {
		return fmt.Errorf("--role %q: the policy has no such role", o.role)
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

func newTokenID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "tok_" + hex.EncodeToString(b[:])
}
