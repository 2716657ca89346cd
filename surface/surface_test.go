package surface_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// parse compiles an inline test policy, failing the test on any error.
func parse(t testing.TB, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("parse the test policy:\n%v", err)
	}
	return p
}

// openOK opens a session that must open, and checks what must hold of every surface.
func openOK(t *testing.T, p *policy.Policy, env map[string]string, spec surface.Spec) *surface.Surface {
	t.Helper()
	s, err := surface.Open(p.Env(policy.MapLookup(env)), spec)
	if err != nil {
		t.Fatalf("open %+v: %v", spec, err)
	}
	checkSurface(t, s)
	return s
}

// childOK opens a child session that must open, and checks it like any other surface.
func childOK(t *testing.T, parent *surface.Surface, role, profile string) *surface.Surface {
	t.Helper()
	c, err := parent.Child(role, profile)
	if err != nil {
		t.Fatalf("child (%q, %q) of a %s session: %v", role, profile, parent.Role().ID, err)
	}
	checkSurface(t, c)
	if !c.Set().SubsetOf(parent.Set()) {
		t.Errorf("child %v is not a subset of its parent %v", c.Tools(), parent.Tools())
	}
	return c
}

// checkSurface checks what must hold of every open surface, for every tool of the policy:
// Explain agrees with Has (a filter exactly when the tool is absent, and always a reason); the
// gate denies an absent tool with permission_denied and the explanation's reason; Tools lists
// the held tools in policy order; and Set, Len, Has and Absent agree.
func checkSurface(t *testing.T, s *surface.Surface) {
	t.Helper()
	p := s.Policy()
	var held []string
	for tool := range p.Tools() {
		has := s.Has(tool.Name)
		if has != s.Set().Has(tool.Index) {
			t.Errorf("Has(%s) = %v but Set().Has(%d) = %v", tool.Name, has, tool.Index, !has)
		}
		if has {
			held = append(held, tool.Name)
		}
		e := s.Explain(tool.Name)
		switch {
		case e.Tool != tool.Name:
			t.Errorf("Explain(%s).Tool = %q", tool.Name, e.Tool)
		case e.Given != has:
			t.Errorf("Explain(%s) = %+v, but Has = %v", tool.Name, e, has)
		case has && e.Filter != "":
			t.Errorf("Explain(%s) = %+v: given, yet it names a filter", tool.Name, e)
		case !has && e.Filter == "":
			t.Errorf("Explain(%s) = %+v: absent, with no filter", tool.Name, e)
		case e.Reason == "" || strings.Contains(e.Reason, "inconsistent"):
			t.Errorf("Explain(%s) = %+v: no reason, or an inconsistent one", tool.Name, e)
		}
		g := s.Gate(tool.Name)
		switch {
		case !has && (g.Decision != verdict.Deny || g.Code != verdict.PermissionDenied):
			t.Errorf("Gate(%s) = %s %s for a tool outside the surface; want deny permission_denied", tool.Name, g.Decision, g.Code)
		case !has && g.Reason != e.Reason:
			t.Errorf("Gate(%s).Reason = %q; want the explanation %q", tool.Name, g.Reason, e.Reason)
		case has && g.Code == verdict.PermissionDenied:
			t.Errorf("Gate(%s) = permission_denied for a tool in the surface", tool.Name)
		}
	}
	if diff := cmp.Diff(held, s.Tools(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Tools() is not the held tools in policy order (-want +got):\n%s", diff)
	}
	if s.Len() != len(held) || s.Set().Len() != len(held) {
		t.Errorf("Len() = %d, Set().Len() = %d; want %d", s.Len(), s.Set().Len(), len(held))
	}
	absent := s.Absent()
	if len(absent) != p.NumTools()-len(held) {
		t.Errorf("Absent() has %d entries; want %d", len(absent), p.NumTools()-len(held))
	}
	for _, e := range absent {
		if e.Given || e.Filter == "" || s.Has(e.Tool) {
			t.Errorf("Absent() holds %+v", e)
		}
	}
}

type explainWant struct {
	filter surface.Filter
	reason string // a part of the reason
}

func checkExplains(t *testing.T, s *surface.Surface, want map[string]explainWant) {
	t.Helper()
	for tool, w := range want {
		e := s.Explain(tool)
		if e.Given || e.Filter != w.filter || !strings.Contains(e.Reason, w.reason) {
			t.Errorf("Explain(%s) = %+v; want removed by %s with a reason mentioning %q", tool, e, w.filter, w.reason)
		}
	}
}

// ---- credentials (S5)

// credPolicy has three connectors and tenants that resolve them each way: their own
// connection, one shared by their account, the host environment, or not at all.
const credPolicy = `
version: 1
limits: {runBudgetUsd: 1, maxTurns: 5, maxConcurrentRuns: 1}
builtins:
  - name: files_read
connectors:
  - id: alpha
    effect: read
    grantable: true
    hostEnv: [ALPHA_TOKEN, ALPHA_SECRET]
    tools:
      - name: mcp__alpha__get
  - id: beta
    effect: read
    grantable: true
    hostEnv: [BETA_TOKEN]
    tools:
      - name: mcp__beta__get
  - id: gamma
    effect: read
    tools:
      - name: mcp__gamma__get
roles:
  - id: mailer
    description: Like inbound, handed alpha's credentials only.
    credentials: [alpha]
    ceiling: ["connector:*#read"]
  - id: inbound
    credentials: [alpha]
profiles:
  - id: alpha_reader
    role: specialist
    tools: [files_read, mcp__alpha__get]
    grant: {connectors: [alpha]}
  - id: alpha_lead
    role: specialist
    tools: [files_read, mcp__alpha__get]
    grant: {connectors: [alpha]}
    limits: {maxDelegationDepth: 1}
tenants:
  - id: house
    account: house
    owner: true
    connections:
      - {id: house-beta, connector: beta}
  - id: main
    account: acme
    connections:
      - {id: main-alpha, connector: alpha, sharedWith: [sister]}
      - {id: main-beta, connector: beta}
      - {id: main-gamma-off, connector: gamma, enabled: false, sharedWith: [sister]}
  - id: sister
    account: acme
    connections:
      - {id: sister-alpha-off, connector: alpha, enabled: false}
  - id: cousin
    account: acme
  - id: stranger
    account: other
`

// hostAll sets every host variable of credPolicy's connectors.
var hostAll = map[string]string{"ALPHA_TOKEN": "a", "ALPHA_SECRET": "b", "BETA_TOKEN": "c"}

type cred struct {
	Connector  string
	Source     policy.CredentialSource
	Connection string
}

func credsOf(s *surface.Surface) []cred {
	var out []cred
	for _, c := range s.Credentials() {
		w := cred{Connector: c.Connector.ID, Source: c.Source}
		if c.Connection != nil {
			w.Connection = c.Connection.ID
		}
		out = append(out, w)
	}
	return out
}

// checkLive checks that exactly the connectors with credentials are live.
func checkLive(t *testing.T, s *surface.Surface, creds []cred) {
	t.Helper()
	for srv := range s.Policy().Servers() {
		if srv.Kind != policy.KindConnector {
			continue
		}
		want := slices.ContainsFunc(creds, func(c cred) bool { return c.Connector == srv.ID })
		if got := s.Live(srv); got != want {
			t.Errorf("Live(%s) = %v; want %v", srv.ID, got, want)
		}
	}
}

func TestCredentialResolution(t *testing.T) {
	p := parse(t, credPolicy)
	tests := []struct {
		name    string
		env     map[string]string
		spec    surface.Spec
		owner   bool
		want    []cred
		tools   []string
		explain map[string]explainWant
	}{
		{
			name:  "own enabled connections",
			spec:  surface.Spec{Role: "person", Tenant: "main"},
			want:  []cred{{"alpha", policy.SourceOwn, "main-alpha"}, {"beta", policy.SourceOwn, "main-beta"}},
			tools: []string{"files_read", "mcp__alpha__get", "mcp__beta__get"},
			explain: map[string]explainWant{
				"mcp__gamma__get": {surface.FilterRegistration, "tenant main has no enabled connection for gamma"},
			},
		},
		{
			name:  "own connections come before the host, even for the owner",
			env:   hostAll,
			spec:  surface.Spec{Role: "person", Tenant: "main", Owner: true},
			owner: true,
			want:  []cred{{"alpha", policy.SourceOwn, "main-alpha"}, {"beta", policy.SourceOwn, "main-beta"}},
			tools: []string{"files_read", "mcp__alpha__get", "mcp__beta__get"},
			explain: map[string]explainWant{
				"mcp__gamma__get": {surface.FilterRegistration, "gamma takes no credentials from the host environment"},
			},
		},
		{
			name:  "a disabled own connection falls through to a shared one",
			spec:  surface.Spec{Role: "person", Tenant: "sister"},
			want:  []cred{{"alpha", policy.SourceShared, "main-alpha"}},
			tools: []string{"files_read", "mcp__alpha__get"},
			explain: map[string]explainWant{
				"mcp__beta__get":  {surface.FilterRegistration, "none is shared with it"},
				"mcp__gamma__get": {surface.FilterRegistration, "tenant sister has no enabled connection for gamma"},
			},
		},
		{
			name:  "a tenant of the same account is not served unless shared with",
			spec:  surface.Spec{Role: "person", Tenant: "cousin"},
			tools: []string{"files_read"},
			explain: map[string]explainWant{
				"mcp__alpha__get": {surface.FilterRegistration, "tenant cousin has no enabled connection for alpha"},
			},
		},
		{
			name:  "another tenant never inherits the host environment",
			env:   hostAll,
			spec:  surface.Spec{Role: "person", Tenant: "stranger"},
			tools: []string{"files_read"},
			explain: map[string]explainWant{
				"mcp__alpha__get": {surface.FilterRegistration, "the host environment serves only the owner's tenant"},
				"mcp__beta__get":  {surface.FilterRegistration, "the host environment serves only the owner's tenant"},
			},
		},
		{
			name:  "a tenant treated as the owner's by the spec takes the host",
			env:   hostAll,
			spec:  surface.Spec{Role: "person", Tenant: "stranger", Owner: true},
			owner: true,
			want:  []cred{{"alpha", policy.SourceHost, ""}, {"beta", policy.SourceHost, ""}},
			tools: []string{"files_read", "mcp__alpha__get", "mcp__beta__get"},
		},
		{
			name:  "the owner's tenant takes the host when every variable is set",
			env:   hostAll,
			spec:  surface.Spec{Role: "person", Tenant: "house"},
			owner: true,
			want:  []cred{{"alpha", policy.SourceHost, ""}, {"beta", policy.SourceOwn, "house-beta"}},
			tools: []string{"files_read", "mcp__alpha__get", "mcp__beta__get"},
		},
		{
			name:  "the owner's tenant with a host variable missing",
			env:   map[string]string{"ALPHA_TOKEN": "a", "BETA_TOKEN": "c"},
			spec:  surface.Spec{Role: "person", Tenant: "house"},
			owner: true,
			want:  []cred{{"beta", policy.SourceOwn, "house-beta"}},
			tools: []string{"files_read", "mcp__beta__get"},
			explain: map[string]explainWant{
				"mcp__alpha__get": {surface.FilterRegistration, "the host environment does not set all of ALPHA_TOKEN, ALPHA_SECRET"},
			},
		},
		{
			name:  "an empty host variable counts as unset",
			env:   map[string]string{"ALPHA_TOKEN": "", "ALPHA_SECRET": "b"},
			spec:  surface.Spec{Role: "person", Tenant: "house"},
			owner: true,
			want:  []cred{{"beta", policy.SourceOwn, "house-beta"}},
			tools: []string{"files_read", "mcp__beta__get"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openOK(t, p, tt.env, tt.spec)
			if s.Owner() != tt.owner {
				t.Errorf("Owner() = %v; want %v", s.Owner(), tt.owner)
			}
			if diff := cmp.Diff(tt.want, credsOf(s), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("credentials (-want +got):\n%s", diff)
			}
			checkLive(t, s, tt.want)
			if diff := cmp.Diff(tt.tools, s.Tools()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			checkExplains(t, s, tt.explain)
		})
	}
}

// TestCredentialSet checks that a session is handed only its role's credential set: a
// connector outside it is not built even when the tenant's credentials would resolve.
func TestCredentialSet(t *testing.T) {
	p := parse(t, credPolicy)
	tests := []struct {
		name    string
		env     map[string]string
		spec    surface.Spec
		want    []cred
		tools   []string
		explain map[string]explainWant
	}{
		{
			name:  "a file-declared role handed one connector",
			spec:  surface.Spec{Role: "mailer", Tenant: "main"},
			want:  []cred{{"alpha", policy.SourceOwn, "main-alpha"}},
			tools: []string{"mcp__alpha__get"},
			explain: map[string]explainWant{
				"mcp__beta__get": {surface.FilterRegistration, "role mailer is handed credentials only for alpha, so beta is never built"},
				"files_read":     {surface.FilterCeiling, "not in the ceiling of role mailer"},
			},
		},
		{
			name:  "the inbound role with its credentials narrowed to one connector",
			spec:  surface.Spec{Role: "inbound", Tenant: "main"},
			want:  []cred{{"alpha", policy.SourceOwn, "main-alpha"}},
			tools: []string{"mcp__alpha__get"},
			explain: map[string]explainWant{
				"mcp__beta__get": {surface.FilterRegistration, "role inbound is handed credentials only for alpha"},
			},
		},
		{
			name:  "the owner's own connection outside the set is not built",
			env:   hostAll,
			spec:  surface.Spec{Role: "mailer", Tenant: "house"},
			want:  []cred{{"alpha", policy.SourceHost, ""}},
			tools: []string{"mcp__alpha__get"},
			explain: map[string]explainWant{
				"mcp__beta__get": {surface.FilterRegistration, "handed credentials only for alpha"},
			},
		},
		{
			name:  "a specialist is handed only its grant's connectors",
			spec:  surface.Spec{Role: "specialist", Tenant: "main", Profile: "alpha_reader"},
			want:  []cred{{"alpha", policy.SourceOwn, "main-alpha"}},
			tools: []string{"files_read", "mcp__alpha__get"},
			explain: map[string]explainWant{
				"mcp__beta__get": {surface.FilterRegistration, "the grant of profile alpha_reader does not name beta"},
			},
		},
		{
			name:  "a role handed no credentials builds no connector",
			env:   hostAll,
			spec:  surface.Spec{Role: "read_only", Tenant: "house"},
			tools: []string{"files_read"},
			explain: map[string]explainWant{
				"mcp__alpha__get": {surface.FilterRegistration, "role read_only is handed no connector credentials"},
				"mcp__beta__get":  {surface.FilterRegistration, "role read_only is handed no connector credentials"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openOK(t, p, tt.env, tt.spec)
			if diff := cmp.Diff(tt.want, credsOf(s), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("credentials (-want +got):\n%s", diff)
			}
			checkLive(t, s, tt.want)
			if diff := cmp.Diff(tt.tools, s.Tools()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			checkExplains(t, s, tt.explain)
		})
	}
}

// TestChildCredentials checks that a child session is handed no connector its parent was not:
// a child of a specialist granted alpha, opened as a person (credentials: all), must not build
// beta even though the tenant's beta connection resolves, since no beta tool can be in its
// surface (S5, S9).
func TestChildCredentials(t *testing.T) {
	p := parse(t, credPolicy)
	tests := []struct {
		name          string
		role, profile string
		tools         []string
		want          []cred
	}{
		{
			name:  "the same role and profile",
			tools: []string{"files_read", "mcp__alpha__get"},
			want:  []cred{{"alpha", policy.SourceOwn, "main-alpha"}},
		},
		{
			name:  "a role handed every credential",
			role:  "person",
			tools: []string{"files_read", "mcp__alpha__get"},
			want:  []cred{{"alpha", policy.SourceOwn, "main-alpha"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := openOK(t, p, nil, surface.Spec{Role: "specialist", Tenant: "main", Profile: "alpha_lead"})
			c := childOK(t, parent, tt.role, tt.profile)
			if diff := cmp.Diff(tt.tools, c.Tools()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, credsOf(c), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("credentials (-want +got):\n%s", diff)
			}
			checkLive(t, c, tt.want)
			checkExplains(t, c, map[string]explainWant{
				"mcp__beta__get": {surface.FilterRegistration, "beta"},
			})
		})
	}
}

// ---- invariants (S3)

func TestPolicyRefused(t *testing.T) {
	const head = `
version: 1
builtins:
  - name: files_read
  - name: files_delete
`
	tests := []struct {
		name string
		give string
		want string
	}{
		{
			name: "a file-declared role whose ceiling its invariants forbid",
			give: head + `
roles:
  - id: tidy
    ceiling: ["builtin:*"]
    invariants: {forbid: ["*#delete"]}
`,
			want: "the ceiling of role tidy selects files_delete, which its invariants forbid",
		},
		{
			name: "a standard role given a ceiling its fixed invariants forbid",
			give: head + `
roles:
  - id: read_only
    ceiling: [files_read, files_delete]
`,
			want: "the ceiling of role read_only selects files_delete, which its invariants forbid",
		},
		{
			name: "an added invariant against the default ceiling",
			give: head + `
roles:
  - id: person
    invariants: {forbid: [files_delete]}
`,
			want: "the ceiling of role person selects files_delete, which its invariants forbid",
		},
		{
			name: "the inbound role given a built-in",
			give: head + `
roles:
  - id: inbound
    ceiling: [files_read]
`,
			want: "the ceiling of role inbound selects files_read, which its invariants forbid",
		},
		{
			name: "a goal reviewer given a tool",
			give: head + `
roles:
  - id: goal_reviewer
    ceiling: [files_read]
`,
			want: "role goal_reviewer may hold no tools, but its ceiling selects files_read",
		},
		{
			name: "a connection shared outside its account",
			give: head + `
connectors:
  - id: alpha
    effect: read
    tools: [{name: mcp__alpha__get}]
tenants:
  - id: main
    account: acme
    connections:
      - {id: main-alpha, connector: alpha, sharedWith: [stranger]}
  - id: stranger
    account: other
`,
			want: "connection main-alpha can be shared only within its account",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Parse("t.yaml", []byte(tt.give))
			if err == nil {
				t.Fatalf("the policy loaded; want an error mentioning %q", tt.want)
			}
			if !errors.Is(err, policy.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q; want a policy error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestRoleLimitsAgainstNoDelegation(t *testing.T) {
	// A role's own limits (used by sessions without a profile) that break its noDelegation
	// invariant are refused when the policy loads, as ceilings and profiles are.
	_, err := policy.Parse("t.yaml", []byte(`
version: 1
builtins:
  - name: files_read
roles:
  - id: solo
    ceiling: [files_read]
    invariants: {noDelegation: true}
    limits: {maxDelegationDepth: 1}
  - id: goal_reviewer
    limits: {maxDelegationDepth: 2}
tenants:
  - id: acme
`))
	for _, want := range []string{
		"t.yaml:9:34: role solo may not delegate, but its limits allow maxDelegationDepth 1",
		"t.yaml:11:34: role goal_reviewer may not delegate, but its limits allow maxDelegationDepth 2",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want it to contain %q", err, want)
		}
	}
}

func TestGoalReviewerHoldsNothing(t *testing.T) {
	p := parse(t, `
version: 1
limits: {runBudgetUsd: 1, maxTurns: 5, maxConcurrentRuns: 1}
builtins:
  - name: files_read
  - name: shell_exec
servers:
  - id: goals
    tools: [{name: mcp__goals__status, effect: read}]
connectors:
  - id: alpha
    effect: read
    tools: [{name: mcp__alpha__get}]
profiles:
  - id: quiet
    role: goal_reviewer
    tools: []
tenants:
  - id: acme
    goals: true
    connections: [{id: acme-alpha, connector: alpha}]
`)
	tests := []struct {
		name string
		spec surface.Spec
	}{
		{name: "without a profile", spec: surface.Spec{Role: "goal_reviewer", Tenant: "acme"}},
		{name: "with a profile", spec: surface.Spec{Role: "goal_reviewer", Tenant: "acme", Profile: "quiet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openOK(t, p, nil, tt.spec)
			if s.Len() != 0 || len(s.Tools()) != 0 || !s.Set().Empty() {
				t.Fatalf("a goal reviewer holds %v; want nothing", s.Tools())
			}
			checkExplains(t, s, map[string]explainWant{
				"files_read":         {surface.FilterCeiling, "not in the ceiling of role goal_reviewer (it is empty)"},
				"mcp__goals__status": {surface.FilterCeiling, "role goal_reviewer"},
				"mcp__alpha__get":    {surface.FilterRegistration, "handed no connector credentials"},
			})
		})
	}
}

// ---- roles and harnesses that do not exist, and names the policy lacks

func TestOpenRefused(t *testing.T) {
	p := parse(t, `
version: 1
limits: {runBudgetUsd: 1, maxTurns: 5, maxConcurrentRuns: 1}
switches:
  - {name: INBOUND_ON, rule: non-empty}
  - {name: LAB_ON, rule: true-1-yes}
harnesses:
  - id: lab
    when: "LAB_ON && owner"
    builtins: false
    roles: [read_only]
builtins:
  - name: files_read
servers:
  - id: team
    tools: [{name: mcp__team__roster, effect: read}]
roles:
  - id: inbound
    when: INBOUND_ON
  - id: night
    when: "!LAB_ON"
    ceiling: [files_read]
profiles:
  - id: reviewer
    tools: [files_read]
tenants:
  - id: house
    owner: true
  - id: guest
`)
	lab := map[string]string{"LAB_ON": "1"}
	tests := []struct {
		name    string
		env     map[string]string
		spec    surface.Spec
		wantIs  error  // nil: the session opens
		wantMsg string // a part of the error
		tools   []string
	}{
		{
			name:    "a role whose condition is false",
			spec:    surface.Spec{Role: "inbound", Tenant: "house"},
			wantIs:  surface.ErrRefused,
			wantMsg: "role inbound exists only when INBOUND_ON: INBOUND_ON is off",
		},
		{
			name:  "the same role once its condition holds",
			env:   map[string]string{"INBOUND_ON": "x"},
			spec:  surface.Spec{Role: "inbound", Tenant: "house"},
			tools: []string{},
		},
		{
			name:    "a file-declared role whose condition is false",
			env:     lab,
			spec:    surface.Spec{Role: "night", Tenant: "house"},
			wantIs:  surface.ErrRefused,
			wantMsg: "role night exists only when !LAB_ON",
		},
		{
			name:  "a file-declared role whose condition holds",
			spec:  surface.Spec{Role: "night", Tenant: "house"},
			tools: []string{"files_read"},
		},
		{
			name:    "a harness whose switch is off",
			spec:    surface.Spec{Role: "read_only", Tenant: "house", Harness: "lab"},
			wantIs:  surface.ErrRefused,
			wantMsg: "harness lab exists only when LAB_ON && owner",
		},
		{
			name:    "a harness that exists for the owner's tenant only",
			env:     lab,
			spec:    surface.Spec{Role: "read_only", Tenant: "guest", Harness: "lab"},
			wantIs:  surface.ErrRefused,
			wantMsg: "the tenant is not the deployment owner's",
		},
		{
			name:  "a harness that exists, for a role it runs",
			env:   lab,
			spec:  surface.Spec{Role: "read_only", Tenant: "house", Harness: "lab"},
			tools: []string{"mcp__team__roster"},
		},
		{
			name:  "the owner flag of the spec makes the harness exist",
			env:   lab,
			spec:  surface.Spec{Role: "read_only", Tenant: "guest", Harness: "lab", Owner: true},
			tools: []string{"mcp__team__roster"},
		},
		{
			name:    "a harness that does not run the role",
			env:     lab,
			spec:    surface.Spec{Role: "person", Tenant: "house", Harness: "lab"},
			wantIs:  surface.ErrRefused,
			wantMsg: "role person may not run on harness lab (it runs read_only)",
		},
		{
			name:    "a role that runs a profile, without one",
			spec:    surface.Spec{Role: "coworker", Tenant: "house"},
			wantIs:  surface.ErrRefused,
			wantMsg: "role coworker runs a saved profile: name one",
		},
		{
			name:    "a role that runs no profile, with one",
			spec:    surface.Spec{Role: "person", Tenant: "house", Profile: "reviewer"},
			wantIs:  surface.ErrRefused,
			wantMsg: "role person runs no profile",
		},
		{
			name:    "a profile of another role",
			spec:    surface.Spec{Role: "goal_agent", Tenant: "house", Profile: "reviewer"},
			wantIs:  surface.ErrRefused,
			wantMsg: "profile reviewer runs as role coworker, not goal_agent",
		},
		{
			name:    "an unknown role",
			spec:    surface.Spec{Role: "nobody", Tenant: "house"},
			wantIs:  surface.ErrNotFound,
			wantMsg: `role "nobody"`,
		},
		{
			name:    "an unknown tenant",
			spec:    surface.Spec{Role: "person", Tenant: "ghost"},
			wantIs:  surface.ErrNotFound,
			wantMsg: `tenant "ghost" (the policy has house, guest)`,
		},
		{
			name:    "no tenant",
			spec:    surface.Spec{Role: "person"},
			wantIs:  surface.ErrNotFound,
			wantMsg: `tenant ""`,
		},
		{
			name:    "an unknown profile",
			spec:    surface.Spec{Role: "coworker", Tenant: "house", Profile: "ghost"},
			wantIs:  surface.ErrNotFound,
			wantMsg: `profile "ghost"`,
		},
		{
			name:    "an unknown harness",
			spec:    surface.Spec{Role: "person", Tenant: "house", Harness: "ghost"},
			wantIs:  surface.ErrNotFound,
			wantMsg: `harness "ghost" (the policy has default, lab)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := surface.Open(p.Env(policy.MapLookup(tt.env)), tt.spec)
			if tt.wantIs == nil {
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				checkSurface(t, s)
				if diff := cmp.Diff(tt.tools, s.Tools(), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("tools (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("opened with %v; want an error mentioning %q", s.Tools(), tt.wantMsg)
			}
			if !errors.Is(err, tt.wantIs) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("error %q; want %q mentioning %q", err, tt.wantIs, tt.wantMsg)
			}
			// A session is either refused or names something missing, never both.
			if errors.Is(err, surface.ErrRefused) && errors.Is(err, surface.ErrNotFound) {
				t.Errorf("error %q matches both ErrRefused and ErrNotFound", err)
			}
		})
	}
}

// ---- delegation (S9)

const delegationPolicy = `
version: 1
limits: {runBudgetUsd: 1, maxTurns: 5, maxConcurrentRuns: 1}
harnesses:
  - id: alt
builtins:
  - name: files_read
  - name: files_list
  - name: files_write
  - name: files_delete
  - name: shell_exec
  - name: spawn_subagent
servers:
  - id: memory
    tools:
      - {name: mcp__memory__read, effect: read}
      - {name: mcp__memory__write, effect: write}
roles:
  - id: lead
    profile: required
    ceiling: ["builtin:*", "server:memory", "!*#delete"]
  - id: helper
    profile: required
    ceiling: ["*"]
profiles:
  - id: lead2
    role: lead
    tools: [files_read, files_list, spawn_subagent, mcp__memory__read]
    limits: {maxDelegationDepth: 2}
  - id: lead0
    role: lead
    tools: [files_read, spawn_subagent]
  - id: wide
    role: helper
    tools: [files_read, files_write, files_delete, shell_exec, mcp__memory__read, mcp__memory__write]
    limits: {maxDelegationDepth: 5}
  - id: shallow
    role: helper
    tools: [files_read, files_list]
tenants:
  - id: acme
  - id: other
`

func TestChildIsSubsetOfParent(t *testing.T) {
	p := parse(t, delegationPolicy)
	tests := []struct {
		name          string
		role, profile string
		wantRole      string
		wantProfile   string
		tools         []string
		explain       map[string]explainWant
	}{
		{
			name:        "an empty role keeps the parent's role and profile",
			wantRole:    "lead",
			wantProfile: "lead2",
			tools:       []string{"files_read", "files_list", "spawn_subagent", "mcp__memory__read"},
		},
		{
			name:        "a profile that asks for more than the parent holds",
			role:        "helper",
			profile:     "wide",
			wantRole:    "helper",
			wantProfile: "wide",
			tools:       []string{"files_read", "mcp__memory__read"},
			explain: map[string]explainWant{
				"files_write":        {surface.FilterCeiling, "the parent session does not hold it"},
				"files_delete":       {surface.FilterCeiling, "the parent session does not hold it"},
				"shell_exec":         {surface.FilterCeiling, "the parent session does not hold it"},
				"mcp__memory__write": {surface.FilterCeiling, "the parent session does not hold it"},
				"files_list":         {surface.FilterProfile, "profile wide does not ask for it"},
			},
		},
		{
			name:     "a role with the widest ceiling",
			role:     "person",
			wantRole: "person",
			tools:    []string{"files_read", "files_list", "mcp__memory__read"},
			explain: map[string]explainWant{
				"files_delete": {surface.FilterCeiling, "the parent session does not hold it"},
				// The parent holds it, but the child is at the last level it may open.
				"spawn_subagent": {surface.FilterProfile, "delegation depth is used up"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := openOK(t, p, nil, surface.Spec{Role: "lead", Tenant: "acme", Profile: "lead2"})
			c := childOK(t, parent, tt.role, tt.profile)
			if c.Role().ID != tt.wantRole {
				t.Errorf("role %s; want %s", c.Role().ID, tt.wantRole)
			}
			gotProfile := ""
			if c.Profile() != nil {
				gotProfile = c.Profile().ID
			}
			if gotProfile != tt.wantProfile {
				t.Errorf("profile %q; want %q", gotProfile, tt.wantProfile)
			}
			if c.Depth() != 1 || parent.Depth() != 0 {
				t.Errorf("depths parent %d, child %d; want 0 and 1", parent.Depth(), c.Depth())
			}
			if diff := cmp.Diff(tt.tools, c.Tools()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			checkExplains(t, c, tt.explain)
		})
	}
}

func TestDelegationDepth(t *testing.T) {
	p := parse(t, delegationPolicy)
	type step struct{ role, profile string }
	tests := []struct {
		name string
		root surface.Spec
		// chain is opened child after child; refusedAt is the index of the first child that
		// must be refused (len(chain): none).
		chain     []step
		refusedAt int
	}{
		{
			name:      "a profile with depth 2 allows a grandchild and no more",
			root:      surface.Spec{Role: "lead", Tenant: "acme", Profile: "lead2"},
			chain:     []step{{}, {}, {}},
			refusedAt: 2,
		},
		{
			name:      "a child's wider limit is capped by its parent's remaining depth",
			root:      surface.Spec{Role: "lead", Tenant: "acme", Profile: "lead2"},
			chain:     []step{{"helper", "wide"}, {"helper", "wide"}, {"helper", "wide"}},
			refusedAt: 2,
		},
		{
			name:      "a child's own narrower limit applies",
			root:      surface.Spec{Role: "lead", Tenant: "acme", Profile: "lead2"},
			chain:     []step{{"helper", "shallow"}, {"helper", "shallow"}},
			refusedAt: 1,
		},
		{
			name:      "a parent at depth 0 cannot have children",
			root:      surface.Spec{Role: "lead", Tenant: "acme", Profile: "lead0"},
			chain:     []step{{"helper", "shallow"}},
			refusedAt: 0,
		},
		{
			name:      "nor can a session without limits (a person's chat)",
			root:      surface.Spec{Role: "person", Tenant: "acme"},
			chain:     []step{{}},
			refusedAt: 0,
		},
		{
			name:      "a deep root gives the full depth",
			root:      surface.Spec{Role: "helper", Tenant: "acme", Profile: "wide"},
			chain:     []step{{}, {}, {}, {}, {}, {}},
			refusedAt: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openOK(t, p, nil, tt.root)
			for i, st := range tt.chain {
				c, err := s.Child(st.role, st.profile)
				if i == tt.refusedAt {
					if err == nil {
						t.Fatalf("child %d opened at depth %d; want it refused", i+1, c.Depth())
					}
					if !errors.Is(err, surface.ErrRefused) || !strings.Contains(err.Error(), "delegation depth is used up") {
						t.Fatalf("child %d: error %q; want a refusal: depth used up", i+1, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("child %d: %v", i+1, err)
				}
				checkSurface(t, c)
				if c.Depth() != i+1 {
					t.Errorf("child %d at depth %d", i+1, c.Depth())
				}
				if !c.Set().SubsetOf(s.Set()) {
					t.Errorf("child %d %v is not a subset of its parent %v", i+1, c.Tools(), s.Tools())
				}
				s = c
			}
			if tt.refusedAt < len(tt.chain) {
				t.Fatalf("the chain ended before child %d", tt.refusedAt+1)
			}
		})
	}
}

func TestChildKeepsTenantAndHarness(t *testing.T) {
	p := parse(t, delegationPolicy)
	env := p.Env(policy.MapLookup(nil))
	tests := []struct {
		name    string
		harness string // the parent's
		spec    surface.Spec
		wantErr string // empty: the child opens
	}{
		{name: "the parent's tenant named again", spec: surface.Spec{Tenant: "acme"}},
		{name: "another tenant", spec: surface.Spec{Tenant: "other"}, wantErr: "a child session belongs to its parent's tenant acme, not other"},
		{name: "the parent's harness named again", spec: surface.Spec{Harness: "default"}},
		{name: "another harness", spec: surface.Spec{Harness: "alt"}, wantErr: "a child session runs on its parent's harness default, not alt"},
		{name: "a parent on another harness", harness: "alt", spec: surface.Spec{}},
		{name: "the default harness under a parent on another", harness: "alt", spec: surface.Spec{Harness: "default"}, wantErr: "runs on its parent's harness alt, not default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, err := surface.Open(env, surface.Spec{Role: "lead", Tenant: "acme", Profile: "lead2", Harness: tt.harness})
			if err != nil {
				t.Fatal(err)
			}
			spec := tt.spec
			spec.Role, spec.Profile, spec.Parent = "helper", "wide", parent
			c, err := surface.Open(env, spec)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, surface.ErrRefused) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v; want a refusal mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkSurface(t, c)
			if c.Tenant() != parent.Tenant() || c.Harness() != parent.Harness() {
				t.Errorf("child on %s/%s; want its parent's %s/%s", c.Tenant().ID, c.Harness().ID, parent.Tenant().ID, parent.Harness().ID)
			}
		})
	}

	t.Run("another environment", func(t *testing.T) {
		parent, err := surface.Open(env, surface.Spec{Role: "lead", Tenant: "acme", Profile: "lead2"})
		if err != nil {
			t.Fatal(err)
		}
		other := p.Env(policy.MapLookup(nil))
		if c, err := surface.Open(other, surface.Spec{Parent: parent}); err == nil {
			t.Fatalf("a child opened under another environment with %v", c.Tools())
		}
	})
}

// ---- retries (S7)

func TestRetry(t *testing.T) {
	p := parse(t, `
version: 1
limits: {runBudgetUsd: 1, maxTurns: 5, maxConcurrentRuns: 1}
builtins:
  - name: files_read
  - name: files_list
  - name: files_write
  - name: files_delete
profiles:
  - id: thrice
    tools: [files_read, files_list, files_write]
    limits: {maxAttempts: 3}
  - id: once
    tools: [files_read, files_list]
tenants:
  - id: acme
`)
	errPlain := errors.New("an error that is neither a refusal nor not-found")
	thrice := surface.Spec{Role: "coworker", Tenant: "acme", Profile: "thrice"}
	retry := func(spec surface.Spec, attempt int, used ...string) surface.Spec {
		spec.Retry = &surface.Retry{Attempt: attempt, Used: used}
		return spec
	}
	tests := []struct {
		name        string
		spec        surface.Spec
		wantErr     error
		tools       []string
		wantAttempt int
		explain     map[string]explainWant
	}{
		{
			name:        "the first attempt",
			spec:        thrice,
			tools:       []string{"files_read", "files_list", "files_write"},
			wantAttempt: 1,
		},
		{
			name:        "a retry keeps only the tools used",
			spec:        retry(thrice, 2, "files_read"),
			tools:       []string{"files_read"},
			wantAttempt: 2,
			explain: map[string]explainWant{
				"files_list":  {surface.FilterProfile, "attempt 2 is narrowed to the tools the previous attempt ran with"},
				"files_write": {surface.FilterProfile, "that attempt did not use it"},
			},
		},
		{
			name:        "a used tool outside the surface stays out",
			spec:        retry(thrice, 3, "files_write", "files_delete", "files_read"),
			tools:       []string{"files_read", "files_write"},
			wantAttempt: 3,
			explain: map[string]explainWant{
				"files_delete": {surface.FilterCeiling, "!*#delete"},
				"files_list":   {surface.FilterProfile, "attempt 3"},
			},
		},
		{
			name:        "a previous attempt that used nothing",
			spec:        retry(thrice, 2),
			tools:       []string{},
			wantAttempt: 2,
		},
		{name: "an attempt above maxAttempts", spec: retry(thrice, 4, "files_read"), wantErr: surface.ErrRefused},
		{name: "a retry of a profile with the default maxAttempts", spec: retry(surface.Spec{Role: "coworker", Tenant: "acme", Profile: "once"}, 2, "files_read"), wantErr: surface.ErrRefused},
		{name: "a retry of a session without limits", spec: retry(surface.Spec{Role: "person", Tenant: "acme"}, 2, "files_read"), wantErr: surface.ErrRefused},
		{name: "attempt 1 is not a retry", spec: retry(thrice, 1, "files_read"), wantErr: errPlain},
		{name: "a used tool the policy lacks", spec: retry(thrice, 2, "files_read", "Bash"), wantErr: surface.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := surface.Open(p.Env(policy.MapLookup(nil)), tt.spec)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("open: %v", err)
			case tt.wantErr != nil && err == nil:
				t.Fatalf("opened with %v; want an error", s.Tools())
			case tt.wantErr == errPlain:
				if errors.Is(err, surface.ErrRefused) || errors.Is(err, surface.ErrNotFound) {
					t.Fatalf("error %q; want neither a refusal nor not-found", err)
				}
				return
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %q; want %q", err, tt.wantErr)
				}
				return
			}
			checkSurface(t, s)
			if diff := cmp.Diff(tt.tools, s.Tools(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if s.Attempt() != tt.wantAttempt {
				t.Errorf("Attempt() = %d; want %d", s.Attempt(), tt.wantAttempt)
			}
			checkExplains(t, s, tt.explain)
		})
	}
}

// ---- the per-call gate (S2, G1)

const gatePolicy = `
version: 1
switches:
  - {name: WRITES_ON, rule: exactly-true}
builtins:
  - name: files_read
connectors:
  - id: shop
    effect: read
    hostEnv: [SHOP_TOKEN]
    billing: {unit: usd, askAbove: 1}
    tools:
      - name: mcp__shop__info
      - name: mcp__shop__update
        effect: write
        gate: {approval: true}
      - name: mcp__shop__publish
        effect: write
        gate: {approval: true, requires: WRITES_ON, note: publishing only}
      - name: mcp__shop__sync
        effect: write
        gate: {requires: WRITES_ON}
      - name: mcp__shop__send
        effect: send
        gate: {approval: true, withoutChannel: absent}
      - name: mcp__shop__refund
        effect: spend
        gate: {approval: true, withoutApprovals: absent}
roles:
  - id: robot
    description: Unattended, with every credential and the widest ceiling.
    credentials: all
    ceiling: ["*"]
tenants:
  - id: house
    owner: true
`

type gateWant struct {
	decision verdict.Decision
	code     verdict.Code
}

func TestGate(t *testing.T) {
	p := parse(t, gatePolicy)
	var (
		allow  = gateWant{verdict.Allow, ""}
		ask    = gateWant{verdict.Ask, verdict.ApprovalRequired}
		absent = gateWant{verdict.Deny, verdict.PermissionDenied}
		off    = gateWant{verdict.Deny, verdict.SwitchOff}
		nobody = gateWant{verdict.Deny, verdict.NoApprovalChannel}
	)
	with := func(kv ...string) map[string]string {
		m := map[string]string{"SHOP_TOKEN": "t"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name  string
		role  string
		env   map[string]string
		want  map[string]gateWant
		gated []string // absent by the gate filter
	}{
		{
			name: "a person, approvals on",
			role: "person",
			env:  with(),
			want: map[string]gateWant{
				"files_read": allow, "mcp__shop__info": allow, "mcp__shop__update": ask,
				"mcp__shop__publish": off, "mcp__shop__sync": off, "mcp__shop__send": ask,
				"mcp__shop__refund": ask, "mcp__shop__nope": absent, "Bash": absent,
			},
		},
		{
			name: "a person, the required switch on",
			role: "person",
			env:  with("WRITES_ON", "true"),
			want: map[string]gateWant{"mcp__shop__publish": ask, "mcp__shop__sync": allow},
		},
		{
			name: "a required switch with a value its rule does not recognise",
			role: "person",
			env:  with("WRITES_ON", "True"),
			want: map[string]gateWant{"mcp__shop__publish": off, "mcp__shop__sync": off},
		},
		{
			name:  "a person, approvals off",
			role:  "person",
			env:   with("REQUIRE_WRITE_APPROVAL", "false", "WRITES_ON", "true"),
			want:  map[string]gateWant{"mcp__shop__update": allow, "mcp__shop__publish": allow, "mcp__shop__send": allow, "mcp__shop__refund": absent},
			gated: []string{"mcp__shop__refund"},
		},
		{
			name:  "approvals off by 0",
			role:  "person",
			env:   with("REQUIRE_WRITE_APPROVAL", "0"),
			want:  map[string]gateWant{"mcp__shop__update": allow, "mcp__shop__refund": absent},
			gated: []string{"mcp__shop__refund"},
		},
		{
			name: "an unrecognised value leaves approvals on",
			role: "person",
			env:  with("REQUIRE_WRITE_APPROVAL", "False"),
			want: map[string]gateWant{"mcp__shop__update": ask, "mcp__shop__refund": ask},
		},
		{
			name: "no approval channel",
			role: "robot",
			env:  with(),
			want: map[string]gateWant{
				"mcp__shop__info": allow, "mcp__shop__update": nobody, "mcp__shop__publish": off,
				"mcp__shop__sync": off, "mcp__shop__send": absent, "mcp__shop__refund": nobody,
			},
			gated: []string{"mcp__shop__send"},
		},
		{
			name:  "no approval channel, the required switch on",
			role:  "robot",
			env:   with("WRITES_ON", "true"),
			want:  map[string]gateWant{"mcp__shop__publish": nobody, "mcp__shop__sync": allow},
			gated: []string{"mcp__shop__send"},
		},
		{
			// docs/policy.md does not say which wins when nobody can answer and approvals are
			// off; the engine refuses (withoutChannel), the closed choice.
			name:  "no approval channel, approvals off",
			role:  "robot",
			env:   with("REQUIRE_WRITE_APPROVAL", "no"),
			want:  map[string]gateWant{"mcp__shop__update": nobody, "mcp__shop__send": absent, "mcp__shop__refund": absent},
			gated: []string{"mcp__shop__send", "mcp__shop__refund"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openOK(t, p, tt.env, surface.Spec{Role: tt.role, Tenant: "house"})
			for tool, w := range tt.want {
				g := s.Gate(tool)
				if g.Tool != tool || g.Decision != w.decision || g.Code != w.code || g.Reason == "" {
					t.Errorf("Gate(%s) = %s %q (%s); want %s %q", tool, g.Decision, g.Code, g.Reason, w.decision, w.code)
				}
			}
			for _, tool := range tt.gated {
				if e := s.Explain(tool); e.Given || e.Filter != surface.FilterGate {
					t.Errorf("Explain(%s) = %+v; want removed by the gate filter", tool, e)
				}
			}
		})
	}
}

func TestGateDetails(t *testing.T) {
	p := parse(t, gatePolicy)
	s := openOK(t, p, map[string]string{"SHOP_TOKEN": "t"}, surface.Spec{Role: "person", Tenant: "house"})
	if g := s.Gate("mcp__shop__publish"); g.Note != "publishing only" || !strings.Contains(g.Reason, "WRITES_ON is off") {
		t.Errorf("Gate(publish) = %+v; want the note and the switch in the reason", g)
	}
	if g := s.Gate("mcp__shop__info"); g.Billing == nil || g.Billing.Unit != "usd" {
		t.Errorf("Gate(info).Billing = %+v; want the connector's billing", g.Billing)
	}
	if g := s.Gate("files_read"); g.Billing != nil || g.Note != "" {
		t.Errorf("Gate(files_read) = %+v; want no billing and no note", g)
	}
}

// ---- explanations (S10)

const explainPolicy = `
version: 1
limits: {runBudgetUsd: 1, maxTurns: 5, maxConcurrentRuns: 1}
search: {provider: harness}
switches:
  - {name: BETA_ON, rule: exactly-true}
harnesses:
  - id: bare
    builtins: false
skills:
  - id: seo
builtins:
  - name: files_read
  - name: files_write
  - name: files_delete
  - name: net_search
    when: BETA_ON
servers:
  - id: memory
    tools:
      - {name: mcp__memory__read, effect: read}
      - {name: mcp__memory__write, effect: write}
  - id: lab
    when: BETA_ON
    tools:
      - {name: mcp__lab__probe, effect: read}
  - id: briefs
    tools:
      - {name: mcp__briefs__save, effect: write, skill: seo, grantable: true}
      - {name: mcp__briefs__load, effect: read, skill: "*"}
  - id: joint
    tools:
      - {name: mcp__joint__compare, effect: read, needs: [alpha, beta], grantable: true}
connectors:
  - id: alpha
    effect: read
    grantable: true
    tools:
      - name: mcp__alpha__get
      - name: mcp__alpha__notes
        optIn: true
      - name: mcp__alpha__put
        effect: write
        grantable: false
        gate: {approval: true, withoutChannel: absent}
      - name: mcp__alpha__purge
        effect: delete
        grantable: false
        gate: {approval: true, withoutApprovals: absent}
    withheld:
      - {what: Deletes of single records, reason: Purge is the one delete and it is gated., tools: ["mcp__alpha__delete_*"]}
  - id: beta
    effect: read
    grantable: true
    tools:
      - name: mcp__beta__get
roles:
  - id: scout
    ceiling: ["builtin:*#read", "server:memory"]
  - id: robot
    credentials: all
    ceiling: ["*"]
profiles:
  - id: notes_taker
    role: coworker
    tools: [files_read, mcp__memory__read]
  - id: alpha_reader
    role: specialist
    tools: [files_read]
    grant: {connectors: [alpha]}
  - id: seo_reader
    role: specialist
    tools: [files_read, mcp__alpha__notes]
    grant: {connectors: [alpha, beta], skills: [seo]}
tenants:
  - id: acme
    connections:
      - {id: acme-alpha, connector: alpha}
      - {id: acme-beta, connector: beta}
  - id: lone
    connections:
      - {id: lone-alpha, connector: alpha}
`

func TestExplain(t *testing.T) {
	p := parse(t, explainPolicy)
	person := surface.Spec{Role: "person", Tenant: "acme"}
	notes := surface.Spec{Role: "coworker", Tenant: "acme", Profile: "notes_taker"}
	alpha := surface.Spec{Role: "specialist", Tenant: "acme", Profile: "alpha_reader"}
	seo := surface.Spec{Role: "specialist", Tenant: "acme", Profile: "seo_reader"}
	tests := []struct {
		name   string
		spec   surface.Spec
		env    map[string]string
		tool   string
		filter surface.Filter // empty: given
		reason string
	}{
		// Given, and why.
		{name: "in a ceiling", spec: person, tool: "files_read", reason: "in the ceiling of role person"},
		{name: "asked for by a profile", spec: notes, tool: "mcp__memory__read", reason: "profile notes_taker asks for it, within the ceiling of role coworker"},
		{name: "given by a grant", spec: alpha, tool: "mcp__alpha__get", reason: "given by the grant of profile alpha_reader"},
		{name: "a joint tool with both connectors granted", spec: seo, tool: "mcp__joint__compare", reason: "given by the grant of profile seo_reader"},
		{name: "an opt-in tool asked for by name", spec: seo, tool: "mcp__alpha__notes", reason: "given by the grant of profile seo_reader"},
		{name: "a tool riding on a granted skill", spec: seo, tool: "mcp__briefs__save", reason: "given by the grant of profile seo_reader"},
		{name: "a skill tool with a skill granted", spec: seo, tool: "mcp__briefs__load", reason: "given by the grant of profile seo_reader"},

		// Registration.
		{name: "a tool whose condition is false", spec: person, tool: "net_search", filter: surface.FilterRegistration, reason: "it registers only when BETA_ON: BETA_ON is off (unset"},
		{name: "a server whose condition is false", spec: person, tool: "mcp__lab__probe", filter: surface.FilterRegistration, reason: "server lab registers only when BETA_ON"},
		{name: "a connector without credentials", spec: surface.Spec{Role: "person", Tenant: "lone"}, tool: "mcp__beta__get", filter: surface.FilterRegistration, reason: "tenant lone has no enabled connection for beta"},
		{name: "a joint tool with a connector missing", spec: surface.Spec{Role: "person", Tenant: "lone"}, tool: "mcp__joint__compare", filter: surface.FilterRegistration, reason: "a joint tool: it also reads alpha, beta, and beta is not live"},
		{name: "a harness without built-ins", spec: surface.Spec{Role: "person", Tenant: "acme", Harness: "bare"}, tool: "files_read", filter: surface.FilterRegistration, reason: "the harness bare offers no built-in tools"},
		{name: "a connector outside the grant", spec: alpha, tool: "mcp__beta__get", filter: surface.FilterRegistration, reason: "the grant of profile alpha_reader does not name beta"},
		{name: "a withheld tool", spec: person, tool: "mcp__alpha__delete_record", filter: surface.FilterRegistration, reason: "withheld: alpha never builds it: Deletes of single records (Purge is the one delete"},
		{name: "an unknown tool", spec: person, tool: "NotebookEdit", filter: surface.FilterRegistration, reason: "not a tool of this policy"},
		{name: "an unknown tool of a known server", spec: person, tool: "mcp__alpha__nope", filter: surface.FilterRegistration, reason: "not a tool of this policy"},

		// Ceiling.
		{name: "removed by a negated selector", spec: notes, tool: "files_delete", filter: surface.FilterCeiling, reason: "removed from the ceiling of role coworker by !*#delete"},
		{name: "outside a file-declared ceiling", spec: surface.Spec{Role: "scout", Tenant: "acme"}, tool: "files_write", filter: surface.FilterCeiling, reason: "not in the ceiling of role scout (builtin:*#read, server:memory)"},

		// Profile.
		{name: "not asked for by the profile", spec: notes, tool: "mcp__memory__write", filter: surface.FilterProfile, reason: "profile notes_taker does not ask for it"},
		{name: "an opt-in tool the profile does not name", spec: alpha, tool: "mcp__alpha__notes", filter: surface.FilterProfile, reason: "opt-in: profile alpha_reader does not ask for it by name"},
		{name: "an opt-in tool in a session without a profile", spec: person, tool: "mcp__alpha__notes", filter: surface.FilterProfile, reason: "opt-in: given only to a profile that asks for it by name"},

		// Grant.
		{name: "a tool riding on a skill, without a grant", spec: person, tool: "mcp__briefs__save", filter: surface.FilterGrant, reason: "rides on the skill seo: given only when a grant names it"},
		{name: "a tool riding on a skill the grant does not name", spec: alpha, tool: "mcp__briefs__save", filter: surface.FilterGrant, reason: "rides on the skill seo, which the grant of profile alpha_reader does not name"},
		{name: "a skill tool, with no skill granted", spec: alpha, tool: "mcp__briefs__load", filter: surface.FilterGrant, reason: "a skill tool: the grant of profile alpha_reader names no skill"},
		{name: "a tool outside the read table", spec: alpha, tool: "mcp__alpha__put", filter: surface.FilterGrant, reason: "not in the read table"},
		{name: "a grant-only tool for a role without grants", spec: notes, tool: "mcp__briefs__save", filter: surface.FilterGrant, reason: "given only through a grant, and role coworker takes none"},

		// Gate.
		{name: "absent without a channel", spec: surface.Spec{Role: "robot", Tenant: "acme"}, tool: "mcp__alpha__put", filter: surface.FilterGate, reason: "role robot has no approval channel; it is declared absent rather than refusing"},
		{name: "absent while approvals are off", spec: person, env: map[string]string{"REQUIRE_WRITE_APPROVAL": "no"}, tool: "mcp__alpha__purge", filter: surface.FilterGate, reason: "approvals are off (REQUIRE_WRITE_APPROVAL is off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openOK(t, p, tt.env, tt.spec)
			e := s.Explain(tt.tool)
			if e.Tool != tt.tool || e.Given != (tt.filter == "") || e.Filter != tt.filter || !strings.Contains(e.Reason, tt.reason) {
				t.Errorf("Explain(%s) = %+v; want filter %q with a reason mentioning %q", tt.tool, e, tt.filter, tt.reason)
			}
			if e.Given != s.Has(tt.tool) {
				t.Errorf("Explain(%s).Given = %v, Has = %v", tt.tool, e.Given, s.Has(tt.tool))
			}
		})
	}
}

// ---- the tool list

func TestToolsInPolicyOrder(t *testing.T) {
	// Connectors are written before servers and names out of alphabetical order: the policy's
	// order is built-ins, platform servers, connectors, each in the order written.
	p := parse(t, `
version: 1
connectors:
  - id: alpha
    effect: read
    tools:
      - name: mcp__alpha__zulu
      - name: mcp__alpha__mike
      - name: mcp__alpha__hidden
        when: HIDDEN
servers:
  - id: zeta
    effect: read
    tools:
      - name: mcp__zeta__bravo
      - name: mcp__zeta__alpha
switches:
  - {name: HIDDEN, rule: non-empty}
builtins:
  - {name: Write, kind: files_write}
  - {name: Bash, kind: shell_exec}
  - {name: Read, kind: files_read}
tenants:
  - id: acme
    connections: [{id: acme-alpha, connector: alpha}]
`)
	tests := []struct {
		name string
		spec surface.Spec
		want []string
	}{
		{
			name: "person",
			spec: surface.Spec{Role: "person", Tenant: "acme"},
			want: []string{"Write", "Bash", "Read", "mcp__zeta__bravo", "mcp__zeta__alpha", "mcp__alpha__zulu", "mcp__alpha__mike"},
		},
		{
			name: "read_only",
			spec: surface.Spec{Role: "read_only", Tenant: "acme"},
			want: []string{"Read"},
		},
		{
			name: "inbound",
			spec: surface.Spec{Role: "inbound", Tenant: "acme"},
			want: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openOK(t, p, nil, tt.spec)
			got := s.Tools()
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Tools() (-want +got):\n%s", diff)
			}
			if s.Len() != len(tt.want) || s.Set().Len() != len(tt.want) {
				t.Errorf("Len() = %d, Set().Len() = %d; want %d", s.Len(), s.Set().Len(), len(tt.want))
			}
			for _, name := range tt.want {
				if !s.Has(name) {
					t.Errorf("Has(%s) = false", name)
				}
			}
			if s.Has("mcp__alpha__hidden") || s.Has("nope") {
				t.Errorf("Has reports a tool that is not held")
			}
		})
	}
}
