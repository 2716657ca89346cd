// Package policy reads, validates and compiles Warden's policy: the deployment's built-in
// tools, platform servers, connectors and their tools, operator switches, roles, profiles and
// tenants.
//
// A policy is one YAML document (see docs/policy.md). Load decodes it with the position of
// every value, reports every problem at once as "file:line:col: message", and compiles a valid
// document into an immutable *Policy with a revision id. Everything a session's surface needs is
// resolved at compile time (names to indexes, ceilings and grants to bitsets), so the request
// path only evaluates.
//
// A *Policy, and everything reachable from it, is read-only after Load returns and safe for
// concurrent use. Callers must not modify the values its accessors return.
package policy

import (
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/egress"
)

// Policy is a compiled policy snapshot.
type Policy struct {
	// Name and Description are the deployment's, for banners and the permissions page.
	Name, Description string
	// File is the name the policy was loaded from.
	File string
	// Revision identifies this exact policy text; it changes whenever the text does.
	Revision string

	// boundaries and tenantBounds are the hard blocks written in the policy (package boundary
	// judges them).
	boundaries   *BoundariesConfig
	tenantBounds map[string]*BoundariesConfig

	tools       []*Tool
	toolIndex   map[string]int
	servers     []*Server
	serverIndex map[string]int
	switches    []*Switch
	switchIndex map[string]int
	harnesses   []*Harness
	harnessIdx  map[string]int
	models      []*Model
	modelIdx    map[string]int
	// modelsDeclared: the document has a models list, even an empty one.
	modelsDeclared bool
	skills         []*Skill
	skillIndex     map[string]int
	roles          []*Role
	roleIndex      map[string]int
	profiles       []*Profile
	profileIdx     map[string]int
	tenants        []*Tenant
	tenantIdx      map[string]int

	defaultLimits Limits
	sessions      Sessions
	warnings      ErrorList

	// grantOnly are the tools only a profile or a grant gives: opt-in tools and tools that ride
	// on one skill. No ceiling selects them.
	grantOnly Bitset
	// absentWithoutChannel and absentWithoutApprovals are the tools the gate removes from a
	// session with no approval channel, and while approvals are off.
	absentWithoutChannel   Bitset
	absentWithoutApprovals Bitset
	// delegating are the tools that hand work to another agent: hand-off tools and built-ins
	// of kind spawn_subagent. A session that may not delegate does not hold them.
	delegating Bitset
	// conditional are the tools with a condition of their own (when or needs).
	conditional []*Tool
	connectors  int

	// egressCards are the built-ins of kind sandbox_allow_host.
	egressCards Bitset
	// unavailable are the tools that never register under this policy (Tool.Unavailable).
	unavailable Bitset
	// search is who answers web searches: one of SearchProviders.
	search string

	approvalSwitch, timeoutSwitch, egressSwitch int
}

// Warnings are the problems that did not stop the policy from loading (a pattern that matches
// nothing, for example).
func (p *Policy) Warnings() ErrorList { return p.warnings }

// NumTools is the number of tools; tool indexes run from 0 to NumTools()-1.
func (p *Policy) NumTools() int { return len(p.tools) }

// Tool returns the tool with the given name.
//
// A name of a connector that discovers its catalog (mcp__<id>__<tool>, not declared) is that
// connector's stand-in tool mcp__<id>__*, unless the connector withholds the name: what the
// upstream lists is offered, and decided, as the stand-in is.
func (p *Policy) Tool(name string) (*Tool, bool) {
	if i, ok := p.toolIndex[name]; ok {
		return p.tools[i], true
	}
	return p.discovered(name)
}

// discovered resolves a name of a discovered catalog to its stand-in.
func (p *Policy) discovered(name string) (*Tool, bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return nil, false
	}
	id, tool, ok := strings.Cut(rest, "__")
	if !ok || !isToolPart(tool) {
		return nil, false
	}
	i, ok := p.toolIndex["mcp__"+id+"__*"]
	if !ok {
		return nil, false
	}
	t := p.tools[i]
	if t.Server.Withholds(name) {
		return nil, false
	}
	return t, true
}

// Managed says how a connector's managed references ($wardenManaged) are checked and
// resolved: references must name Issuer and one of Versions, and name the connector as their
// provider; the gateway fetches a value by calling the upstream tool Resolve with {"ref": REF}.
type Managed struct {
	Issuer   string
	Versions []string
	Resolve  string
}

// isToolPart is toolPartPattern without the regexp: Tool runs it on every lookup of a
// discovered name, which is several times per call.
func isToolPart(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return s != ""
}

// Withholds reports whether the server deliberately does not build the tool: a withheld
// entry names it, exactly or with a * pattern.
func (s *Server) Withholds(name string) bool {
	for _, w := range s.Withheld {
		for _, pat := range w.Tools {
			if globMatch(pat, name) {
				return true
			}
		}
	}
	return false
}

// ToolAt returns the tool with the given index.
func (p *Policy) ToolAt(i int) *Tool { return p.tools[i] }

// Tools yields every tool in declaration order: built-ins, platform servers, connectors.
func (p *Policy) Tools() iter.Seq[*Tool] { return slices.Values(p.tools) }

// Server returns the platform server or connector with the given id ("builtin" for the
// built-in tools).
func (p *Policy) Server(id string) (*Server, bool) {
	i, ok := p.serverIndex[id]
	if !ok {
		return nil, false
	}
	return p.servers[i], true
}

// ServerAt returns the server with the given index.
func (p *Policy) ServerAt(i int) *Server { return p.servers[i] }

// Servers yields every server in declaration order.
func (p *Policy) Servers() iter.Seq[*Server] { return slices.Values(p.servers) }

// NumServers is the number of servers; server indexes run from 0 to NumServers()-1.
func (p *Policy) NumServers() int { return len(p.servers) }

// Switch returns the switch with the given name.
func (p *Policy) Switch(name string) (*Switch, bool) {
	i, ok := p.switchIndex[name]
	if !ok {
		return nil, false
	}
	return p.switches[i], true
}

// Switches yields every switch, the built-in ones first.
func (p *Policy) Switches() iter.Seq[*Switch] { return slices.Values(p.switches) }

// Harness returns the harness with the given id.
func (p *Policy) Harness(id string) (*Harness, bool) {
	i, ok := p.harnessIdx[id]
	if !ok {
		return nil, false
	}
	return p.harnesses[i], true
}

// Harnesses yields every harness, "default" first.
func (p *Policy) Harnesses() iter.Seq[*Harness] { return slices.Values(p.harnesses) }

// Skill returns the bundled skill with the given id.
func (p *Policy) Skill(id string) (*Skill, bool) {
	i, ok := p.skillIndex[id]
	if !ok {
		return nil, false
	}
	return p.skills[i], true
}

// Skills yields every bundled skill.
func (p *Policy) Skills() iter.Seq[*Skill] { return slices.Values(p.skills) }

// Role returns the role with the given id.
func (p *Policy) Role(id string) (*Role, bool) {
	i, ok := p.roleIndex[id]
	if !ok {
		return nil, false
	}
	return p.roles[i], true
}

// Roles yields every role, the standard ones first.
func (p *Policy) Roles() iter.Seq[*Role] { return slices.Values(p.roles) }

// Profile returns the profile with the given id.
func (p *Policy) Profile(id string) (*Profile, bool) {
	i, ok := p.profileIdx[id]
	if !ok {
		return nil, false
	}
	return p.profiles[i], true
}

// Profiles yields every profile.
func (p *Policy) Profiles() iter.Seq[*Profile] { return slices.Values(p.profiles) }

// Tenant returns the tenant with the given id.
func (p *Policy) Tenant(id string) (*Tenant, bool) {
	i, ok := p.tenantIdx[id]
	if !ok {
		return nil, false
	}
	return p.tenants[i], true
}

// Tenants yields every tenant.
func (p *Policy) Tenants() iter.Seq[*Tenant] { return slices.Values(p.tenants) }

// GrantOnly is the set of tools that no ceiling selects: opt-in tools and tools riding on one
// skill, which only a profile or a grant gives.
func (p *Policy) GrantOnly() Bitset { return p.grantOnly }

// AbsentWithoutChannel is the set of tools the gate removes from a session nobody can approve.
func (p *Policy) AbsentWithoutChannel() Bitset { return p.absentWithoutChannel }

// AbsentWithoutApprovals is the set of tools the gate removes while approvals are off.
func (p *Policy) AbsentWithoutApprovals() Bitset { return p.absentWithoutApprovals }

// Delegating is the set of tools that hand work to another agent (hand-off tools and
// spawn_subagent built-ins): a session whose delegation depth is used up does not hold them.
func (p *Policy) Delegating() Bitset { return p.delegating }

// EgressCards is the set of built-ins of kind sandbox_allow_host: the tools that park a card
// asking a person to let the sandbox reach a host not on its allowlist. They are absent while
// SANDBOX_EGRESS is open (Env.EgressOpen), when every public host is reachable and there is
// nothing to ask for; their gate makes them absent where nobody can answer as well.
func (p *Policy) EgressCards() Bitset { return p.egressCards }

// Unavailable is the set of tools that never register under this policy (Tool.Unavailable
// says why).
func (p *Policy) Unavailable() Bitset { return p.unavailable }

// The search providers a policy may name (search.provider).
const (
	// SearchNone: no search; net_search built-ins are in no surface.
	SearchNone = "none"
	// SearchHarness: the harness searches itself; its net_search built-ins are listed in its
	// surface, and the gateway does not serve them.
	SearchHarness = "harness"
)

// SearchProviders lists the values of search.provider.
var SearchProviders = []string{SearchNone, SearchHarness}

// SearchProvider is who answers web searches: SearchNone or SearchHarness.
func (p *Policy) SearchProvider() string { return p.search }

// NumConnectors is the number of connectors.
func (p *Policy) NumConnectors() int { return p.connectors }

// Conditional lists the tools with a registration condition of their own (when or needs).
func (p *Policy) Conditional() []*Tool { return p.conditional }

// DefaultLimits are the limits a profile takes for the fields it does not set.
func (p *Policy) DefaultLimits() Limits { return p.defaultLimits }

// Sessions is what the policy's sessions block sets: the gateway's defaults, and the server's
// flags, apply to what it leaves unset.
func (p *Policy) Sessions() Sessions { return p.sessions }

// Sessions bounds the MCP sessions of `warden serve` (the policy's sessions block).
type Sessions struct {
	// IdleTimeout ends a session idle this long; 0 with IdleSet never; unset if !IdleSet.
	IdleTimeout time.Duration
	IdleSet     bool
	// MaxPerToken and MaxPerTenant cap the live sessions of one token and one tenant: 0 no
	// cap, -1 unset.
	MaxPerToken, MaxPerTenant int
}

// NewToolSet returns an empty set sized for the policy's tools.
func (p *Policy) NewToolSet() Bitset { return NewBitset(len(p.tools)) }

// ServerKind says what a server is.
type ServerKind uint8

const (
	// KindBuiltin is the set of built-in host tools.
	KindBuiltin ServerKind = iota + 1
	// KindPlatform is a server the deployment serves itself.
	KindPlatform
	// KindConnector is an upstream MCP server.
	KindConnector
)

func (k ServerKind) String() string {
	switch k {
	case KindBuiltin:
		return "builtin"
	case KindPlatform:
		return "platform"
	case KindConnector:
		return "connector"
	}
	return "unknown"
}

// BuiltinServer is the id of the server that holds the built-in tools.
const BuiltinServer = "builtin"

// Server is a set of tools built for a session together: the built-in host tools, a platform
// server, or a connector.
type Server struct {
	ID, Name, Description string
	Kind                  ServerKind
	Index                 int
	// When is the server's registration condition (nil: always).
	When *Cond
	// Needs are connectors that must all be live in the session.
	Needs []*Server
	// Tools is the catalog, in declaration order.
	Tools []*Tool
	// Set holds the indexes of Tools.
	Set Bitset
	// Withheld is what the server deliberately does not build.
	Withheld []Withheld
	// HostEnv names the host variables that are the owner's credentials (connectors).
	HostEnv []string
	// Billing is set for a connector whose calls cost money or credits.
	Billing *Billing
	// Discover: the catalog is what the upstream lists, offered as one pattern tool.
	Discover bool
	// Upstream is how the gateway reaches a connector (nil: it cannot be called).
	Upstream *Upstream
	// Pins maps tool names (mcp__<id>__<tool>) of a connector to the digests of their pinned
	// definitions ("sha256:" and 64 lower-case hex digits, as gateway.PinDigest computes them).
	// The gateway withholds a pinned tool whose upstream definition has another digest, until a
	// person accepts the change (warden pin --accept). Nil when nothing is pinned.
	Pins map[string]string
	// Managed is set for a connector that issues managed references and resolves them.
	Managed *Managed
	// Sandbox (connectors with a command upstream) runs the connector's stdio process in the
	// sandbox (Landlock, its own network namespace whose only way out is the egress proxy).
	Sandbox bool
	// SecretHosts are the hosts a sandboxed command's egress proxy may send the server's
	// protected values to, in place of their placeholders (nil: none; see SecretsConfig).
	SecretHosts *egress.Allowlist
	// ExposeSecrets gives a process bound to one of the server's protected values the value
	// itself (secrets: exposeToProcess).
	ExposeSecrets bool
	Pos           Pos
}

// Upstream is how a connector's MCP server is reached.
type Upstream struct {
	Command []string
	Env     map[string]string
	URL     string
	// CredentialEnv or CredentialHeader (with CredentialPrefix) is where the credential goes.
	CredentialEnv, CredentialHeader, CredentialPrefix string
	Timeout                                           time.Duration
}

// Withheld is something a server deliberately does not build.
type Withheld struct {
	What, Reason string
	// Tools are exact names or * patterns of withheld tools.
	Tools []string
}

// Billing says how a connector's calls are paid for.
type Billing struct {
	Unit     string  `json:"unit"`
	AskAbove float64 `json:"askAbove,omitempty"`
	// Cost is the default cost of a call (nil: the connector's tools each say, or a call costs
	// nothing known in advance).
	Cost *Cost `json:"-"`
}

// Cost is what one call costs, in its connector's billing unit.
type Cost struct {
	// Fixed is set for a cost that is the same for every call.
	Fixed *float64
	// Arg and Times: the cost is a numeric argument times Times.
	Arg   string
	Times float64
	// Result: the call is settled at this numeric field of its result.
	Result string
	// Reserve is held before a call whose cost is not known in advance.
	Reserve float64
}

// Tool is one tool a model can call.
type Tool struct {
	Name        string
	Description string
	Index       int
	Server      *Server
	Effect      Effect
	// Kind is the native action kind of a built-in ("" for server tools).
	Kind string
	// When is the tool's own registration condition (nil: always).
	When *Cond
	// Needs are connectors besides its own that must be live: a joint tool.
	Needs []*Server
	// Grantable: in the read table.
	Grantable bool
	// OptIn: given only to a profile that asks for it by name.
	OptIn bool
	// Skill: "" none; "*" a skill tool (a grant naming any skill adds it); otherwise the bundled
	// skill it rides on.
	Skill string
	// Handoff: delegates to another agent; needs delegation depth above 0.
	Handoff bool
	// Gate is the tool's per-call gate (nil: none).
	Gate *Gate
	// Pattern marks the stand-in for a discovered catalog: its name ends in "*".
	Pattern bool
	// Input maps a built-in's input roles (path, command, cwd, ...) to the field names its
	// callers use; nil for server tools.
	Input map[string]string
	// Args are the declared arguments and their types (nil: not declared).
	Args map[string]string
	// Constraints are checked on every call.
	Constraints []*Constraint
	// Cost is what a call costs (nil for tools of connectors that do not bill).
	Cost *Cost
	// Unavailable says why the tool never registers under this policy, whatever the session
	// ("" while it may): a net_search built-in while no search provider is configured.
	Unavailable string
	Pos         Pos
}

// GrantOnly reports whether only a profile or a grant can give the tool.
func (t *Tool) GrantOnly() bool { return t.OptIn || (t.Skill != "" && t.Skill != "*") }

// Gate is what a tool's calls must pass beyond being in the surface.
type Gate struct {
	// Approval: ask a person before each call while approvals are on.
	Approval bool
	// AbsentWithoutChannel: remove the tool from sessions with nobody to ask (else it refuses).
	AbsentWithoutChannel bool
	// AbsentWithoutApprovals: remove the tool while approvals are off (else it runs unasked).
	AbsentWithoutApprovals bool
	// Requires is a switch that must be on for calls to run (nil: none).
	Requires *Switch
	// Note says which calls the gate covers when narrower than every call.
	Note string
	// Effects, when set, narrows Approval to the calls whose review finds an effect of one of
	// these operations (read, write, delete, execute, delegate); other calls are not asked.
	Effects []Effect
}

// Harness is a runtime that sessions run on.
type Harness struct {
	ID, Description string
	Index           int
	When            *Cond
	// Builtins: the harness offers the built-in tools.
	Builtins bool
	// Roles, when non-nil, are the only role ids that may run on the harness.
	Roles []string
	// SessionBudgetUsd and MaxModelCalls cap each session on the harness, as its harness
	// reports them through the usage path (0: no cap); counted by the process serving the
	// session, on top of any run's limits.
	SessionBudgetUsd float64
	MaxModelCalls    int
	// Certified: the harness is certified for the standard tool set. A session on an
	// uncertified harness runs the read-only route.
	Certified bool
	Pos       Pos
}

// Allows reports whether a role may run on the harness.
func (h *Harness) Allows(role string) bool { return h.Roles == nil || slices.Contains(h.Roles, role) }

// Skill is a bundled skill.
type Skill struct {
	ID, Description string
	Pos             Pos
}

// CredentialMode says which connector credentials a role's sessions are handed.
type CredentialMode uint8

const (
	// CredentialsNone: no connector is built.
	CredentialsNone CredentialMode = iota
	// CredentialsAll: every connector the tenant's credentials resolve for.
	CredentialsAll
	// CredentialsGrant: the connectors the profile's grant names.
	CredentialsGrant
	// CredentialsList: the connectors in Role.CredentialList.
	CredentialsList
)

func (m CredentialMode) String() string {
	switch m {
	case CredentialsAll:
		return "all"
	case CredentialsGrant:
		return "grant"
	case CredentialsList:
		return "list"
	}
	return "none"
}

// ProfileMode says whether a role's sessions run a profile.
type ProfileMode uint8

const (
	// ProfileNone: sessions of the role never run a profile.
	ProfileNone ProfileMode = iota
	// ProfileOptional: a session may run a profile.
	ProfileOptional
	// ProfileRequired: every session runs a profile.
	ProfileRequired
)

func (m ProfileMode) String() string {
	switch m {
	case ProfileOptional:
		return "optional"
	case ProfileRequired:
		return "required"
	}
	return "none"
}

// Role is a kind of session.
type Role struct {
	ID, Description string
	// Standard marks the seven roles Warden ships.
	Standard bool
	Index    int
	// When is the condition under which the role exists (nil: always).
	When            *Cond
	ApprovalChannel bool
	// ApprovalByElicitation: a session of the role whose client declared the elicitation
	// capability is asked there to answer its own cards. Only a role with an approval channel
	// has it on. Warden cannot tell whether a person or a program answers in the client.
	ApprovalByElicitation bool
	Credentials           CredentialMode
	// CredentialList holds the connectors of a CredentialsList role.
	CredentialList []*Server
	// CeilingSelectors is the ceiling as written; Ceiling is what it selects.
	CeilingSelectors []Selector
	Ceiling          Bitset
	Profile          ProfileMode
	DefaultProfile   *Profile
	// Grants: a profile's grant adds to the ceiling.
	Grants     bool
	Invariants Invariants
	// Limits apply to sessions that run no profile (nil: none declared).
	Limits *Limits
	// Sessions caps the role's sessions in each tenant.
	Sessions RoleSessions
	Pos      Pos

	credSet Bitset // servers the role may be handed credentials for (CredentialsList)
}

// MayHandle reports whether a session of the role may be handed the connector's credentials,
// given the session's grant.
func (r *Role) MayHandle(c *Server, g *Grant) bool {
	switch r.Credentials {
	case CredentialsAll:
		return true
	case CredentialsList:
		return r.credSet.Has(c.Index)
	case CredentialsGrant:
		return g != nil && g.Connectors.Has(c.Index)
	}
	return false
}

// Invariants are what a role's sessions must never hold; a session that would is refused.
type Invariants struct {
	NoTools      bool
	NoGrant      bool
	NoDelegation bool
	// Forbid are the selectors as written; Forbidden is what they select.
	Forbid    []Selector
	Forbidden Bitset
}

// Limits are a run's limits.
type Limits struct {
	RunBudgetUsd float64 `json:"runBudgetUsd,omitempty"`
	// DailyBudgetUsd caps the model dollars of the profile's runs in one tenant in a UTC day
	// (0: none): no run starts at the cap, or when the day's spend cannot be read.
	DailyBudgetUsd     float64 `json:"dailyBudgetUsd,omitempty"`
	MaxTurns           int     `json:"maxTurns,omitempty"`
	MaxConcurrentRuns  int     `json:"maxConcurrentRuns,omitempty"`
	MaxDelegationDepth int     `json:"maxDelegationDepth"`
	MaxAttempts        int     `json:"maxAttempts,omitempty"`
}

// RoleSessions caps a role's sessions in each tenant; 0 is no cap. The gateway counts them per
// process: several instances sharing a store each allow the figures.
type RoleSessions struct {
	// MaxLive: live sessions of the role in one tenant at once.
	MaxLive int
	// PerMinute: sessions of the role one tenant may open in any 60 seconds.
	PerMinute int
}

// Profile is a saved coworker.
type Profile struct {
	ID, Name, Description string
	Index                 int
	Role                  *Role
	// Tools are the tools the profile asks for, in the order written; Requested holds them.
	Tools     []*Tool
	Requested Bitset
	// Grant is nil for a profile without one.
	Grant *Grant
	// Granted are the tools the grant gives (before registration decides which are live).
	Granted Bitset
	Limits  Limits
	Pos     Pos
}

// Grant is what a person granted a profile: connectors, their allowances, bundled skills.
type Grant struct {
	// Connectors is the set of granted connector server indexes; ConnectorList holds them in
	// order.
	Connectors    Bitset
	ConnectorList []*Server
	Allowances    map[string]Allowance
	Skills        []*Skill
}

// NamesSkill reports whether the grant names the bundled skill.
func (g *Grant) NamesSkill(id string) bool {
	return g != nil && slices.ContainsFunc(g.Skills, func(s *Skill) bool { return s.ID == id })
}

// Allowance is a spending allowance in a billing connector's unit.
type Allowance struct {
	PerRun, PerDay float64
	Unit           string
}

// Tenant is a brand or account.
type Tenant struct {
	ID, Name, Account string
	Index             int
	// Owner marks the deployment owner's own tenant.
	Owner bool
	// Goals: the goals engine is on.
	Goals bool
	// MonthlyModelCapUsd caps the tenant's model spend per calendar month (0: none).
	MonthlyModelCapUsd float64
	// Skills are the tenant's own skills.
	Skills []string
	// Coworkers are the tenant's saved coworkers.
	Coworkers   []*Profile
	Connections []*Connection
	// Egress are the allowlist entries the tenant adds to the sandbox's egress allowlist
	// (validated: egress.NewAllowlist takes them).
	Egress []string
	Pos    Pos

	// stored[i] is the stored connection (own or shared) that serves connector i, if any.
	stored []*Resolution
}

// Stored returns the tenant's stored connection for a connector: its own enabled connection
// first, then one shared with it by its account. It returns nil when there is neither.
func (t *Tenant) Stored(c *Server) *Resolution { return t.stored[c.Index] }

// Connection is a tenant's stored connection to a connector.
type Connection struct {
	ID, Name   string
	Connector  *Server
	Tenant     *Tenant
	Enabled    bool
	SharedWith []*Tenant
	// Secret is the reference to the credential ("env:NAME", "file:/path", or "").
	Secret string
	Pos    Pos
}

// CredentialSource says where a session's credentials for a connector came from.
type CredentialSource string

// The credential sources, in the order they are tried.
const (
	SourceOwn    CredentialSource = "own"
	SourceShared CredentialSource = "shared"
	SourceHost   CredentialSource = "host"
)

// Resolution is where a connector's credentials come from for one tenant.
type Resolution struct {
	Source     CredentialSource
	Connection *Connection // nil for SourceHost
}
