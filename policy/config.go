package policy

// This file holds the policy document as written: the YAML shape, field by field. Load decodes a
// document into these types (with the position of every node), validates it and compiles it into
// a Policy. Nothing outside the package builds these by hand except tests and generators; the
// compiled Policy is what the rest of Warden reads.

// Config is one policy document.
type Config struct {
	Node `yaml:"-"`

	// Version is the document format; it must be 1.
	Version int `yaml:"version"`
	// Name names the deployment, for banners and the permissions page.
	Name string `yaml:"name"`
	// Description is free text shown at the top of the permissions page.
	Description string `yaml:"description"`

	// Builtins are the deployment's built-in tools (the host tools the model calls by bare name,
	// such as Bash or files_read). The list is an exclusive allowlist: a built-in not listed here
	// is offered to no role.
	Builtins []ToolConfig `yaml:"builtins"`
	// Harnesses are the runtimes a session can run on. A harness named "default" always exists;
	// declare it only to describe it.
	Harnesses []HarnessConfig `yaml:"harnesses"`
	// Models are the models sessions run on, each certified for the standard tool set or held
	// back (certified: false). With models listed, a session on a model that is held back, not
	// listed or not stated runs the read-only route unless its tenant is the owner's; with none
	// listed, a session's model changes nothing.
	Models []ModelConfig `yaml:"models"`
	// Switches are the operator switches read from the host environment, each with its truth
	// rule. REQUIRE_WRITE_APPROVAL, APPROVAL_TIMEOUT_MS and SANDBOX_EGRESS are built in; a
	// document may describe them but not change their rules.
	Switches []SwitchConfig `yaml:"switches"`
	// Skills are the bundled skills a grant may name.
	Skills []SkillConfig `yaml:"skills"`
	// Servers are the platform servers: tool sets the deployment serves itself (memory,
	// project, goals, transcripts, skills, team, sandbox, browser, ...).
	Servers []ServerConfig `yaml:"servers"`
	// Connectors are upstream MCP servers, with per-tool effect classes, grantability and gates.
	Connectors []ServerConfig `yaml:"connectors"`
	// Roles configures the standard roles (within their fixed invariants) and adds new ones.
	Roles []RoleConfig `yaml:"roles"`
	// Limits are the default run limits of every profile; a profile overrides them field by field.
	Limits *LimitsConfig `yaml:"limits"`
	// Profiles are saved coworkers: requested tools, a grant, limits.
	Profiles []ProfileConfig `yaml:"profiles"`
	// Tenants are the brands or accounts: connections, skills, coworkers.
	Tenants []TenantConfig `yaml:"tenants"`
	// Boundaries are the deployment's hard blocks, for every tenant (see BoundariesConfig).
	Boundaries *BoundariesConfig `yaml:"boundaries"`
	// Search says who answers web searches (built-ins of kind net_search).
	Search *SearchConfig `yaml:"search"`
	// Sessions bound the MCP sessions the gateway holds (see SessionsConfig).
	Sessions *SessionsConfig `yaml:"sessions"`
}

// SearchConfig says who answers web searches. Provider is one of SearchProviders: "none" (the
// default) leaves every net_search built-in out of every surface, since Warden has no search
// of its own and a search that always fails is worse than none (S2); "harness" lists them for
// harnesses that search themselves (Claude Code's WebSearch), and the gateway does not serve
// them.
type SearchConfig struct {
	Node     `yaml:"-"`
	Provider string `yaml:"provider"`
}

// SessionsConfig bounds the MCP sessions of `warden serve`: how long one may sit idle, and how
// many one token and one tenant may hold at once. The server's flags, when given, win.
type SessionsConfig struct {
	Node `yaml:"-"`

	// IdleTimeout ends a session that sends no request for this long, as a Go duration
	// ("30m", "2h"); "0" never. A call in progress keeps its session alive.
	IdleTimeout string `yaml:"idleTimeout"`
	// MaxPerToken caps the live sessions of one agent token; 0 is no cap.
	MaxPerToken *int `yaml:"maxPerToken"`
	// MaxPerTenant caps the live sessions of one tenant; 0 is no cap.
	MaxPerTenant *int `yaml:"maxPerTenant"`
}

// HarnessConfig declares a runtime that sessions run on.
type HarnessConfig struct {
	Node `yaml:"-"`

	ID          string `yaml:"id"`
	Description string `yaml:"description"`
	// When is the condition under which the harness exists; a session on a harness that does
	// not exist is refused.
	When Expr `yaml:"when"`
	// Builtins says whether the harness offers the built-in tools (default true).
	Builtins *bool `yaml:"builtins"`
	// Roles, when set, are the only roles that may run on the harness.
	Roles []Name `yaml:"roles"`
	// Limits cap each session on the harness, whatever its role or profile.
	Limits *HarnessLimitsConfig `yaml:"limits"`
	// Certified says whether the harness is certified for the standard tool set (default
	// true). A session on an uncertified harness runs the read-only route, whoever's it is.
	Certified *bool `yaml:"certified"`
}

// ModelConfig declares a model sessions run on.
type ModelConfig struct {
	Node `yaml:"-"`

	// ID is the model's id as the harness names it ("claude-haiku-5-5",
	// "google/gemini-3.8-flash"); conditions test it as model == ID.
	ID          string `yaml:"id"`
	Description string `yaml:"description"`
	// Certified says whether the model is certified for the standard tool set (default true).
	// A session on a model held back (false) runs the read-only route unless its tenant is the
	// owner's.
	Certified *bool `yaml:"certified"`
}

// HarnessLimitsConfig caps each session on a harness. Unset is no cap.
type HarnessLimitsConfig struct {
	Node `yaml:"-"`

	// SessionBudgetUsd caps the model dollars one session reports.
	SessionBudgetUsd *float64 `yaml:"sessionBudgetUsd"`
	// MaxModelCalls caps the model calls (turns) one session reports.
	MaxModelCalls *int `yaml:"maxModelCalls"`
}

// SwitchConfig declares an operator switch: an environment variable and its truth rule.
// Exactly one of Rule, On, Off and Modes is set.
type SwitchConfig struct {
	Node `yaml:"-"`

	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Rule is a named truth rule: "exactly-true" (on only for the value true), "true-1-yes",
	// "on-unless-false-0-no" (on when unset), "non-empty" (any non-empty value) or "integer"
	// (a whole number, with Default when unset).
	Rule string `yaml:"rule"`
	// On lists the exact values that turn the switch on; anything else is off.
	On []string `yaml:"on"`
	// Off lists the exact values that turn the switch off; anything else, unset included, is on.
	Off []string `yaml:"off"`
	// Modes makes a named-mode switch: its value is one of these, compared in any case. An
	// unset or unknown value selects Default; an unknown value is reported.
	Modes []string `yaml:"modes"`
	// Default is the mode of a mode switch, or the number of an integer switch, when unset.
	Default string `yaml:"default"`
}

// SkillConfig declares a bundled skill that a grant may name.
type SkillConfig struct {
	Node `yaml:"-"`

	ID          string `yaml:"id"`
	Description string `yaml:"description"`
}

// ServerConfig declares a platform server (under servers) or a connector (under connectors).
type ServerConfig struct {
	Node `yaml:"-"`

	// ID is the server's id; its tools are named mcp__<id>__<tool>.
	ID          string `yaml:"id"`
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// When is the condition under which the server registers at all.
	When Expr `yaml:"when"`
	// Needs lists connectors that must all be live in the session for the server to register.
	Needs []Name `yaml:"needs"`
	// Effect is the default effect class of the server's tools.
	Effect Effect `yaml:"effect"`
	// Grantable is the default grantability of the server's tools (default false: a tool is in
	// the read table only when it says so).
	Grantable *bool `yaml:"grantable"`
	// HostEnv (connectors only) names the host environment variables that, all set, are the
	// deployment owner's own credentials for this connector.
	HostEnv []string `yaml:"hostEnv"`
	// Billing (connectors only) marks a connector whose calls cost money or credits.
	Billing *BillingConfig `yaml:"billing"`
	// Discover (connectors only) offers every tool the upstream server lists, as
	// mcp__<id>__*, with the server's default effect.
	Discover bool `yaml:"discover"`
	// Upstream (connectors only) is how Warden's gateway reaches the connector's MCP server.
	Upstream *UpstreamConfig `yaml:"upstream"`
	// Pins (connectors with an upstream only) pin tool definitions by digest: each key is one of
	// the connector's tools (mcp__<id>__<tool>), each value the digest of the definition a
	// person approved ("sha256:" and 64 lower-case hex digits; see gateway.PinDigest). A tool
	// whose upstream definition no longer has that digest is withheld until the pin changes.
	Pins Pins `yaml:"pins"`
	// Managed (connectors with an upstream only): the connector issues managed references
	// ($wardenManaged) to secrets it holds, and resolves them.
	Managed *ManagedConfig `yaml:"managed"`
	// Sandbox (connectors with a command upstream only) runs the connector's stdio process in
	// the sandbox (Landlock, its own network namespace whose only way out is the egress proxy).
	Sandbox bool `yaml:"sandbox"`
	// Secrets says where the protected values the server's results declare may go when a
	// sandboxed command is bound to them (see SecretsConfig).
	Secrets *SecretsConfig `yaml:"secrets"`
	// Tools is the server's tool catalog.
	Tools []ToolConfig `yaml:"tools"`
	// Withheld lists what the server deliberately does not build, and why.
	Withheld []WithheldConfig `yaml:"withheld"`
}

// UpstreamConfig says how to reach a connector's MCP server: a command run over stdio, or a
// streamable HTTP URL, and where its credential goes.
type UpstreamConfig struct {
	Node `yaml:"-"`

	// Command is the program and its arguments, run without a shell.
	Command []string `yaml:"command"`
	// Env are plain environment variables for the command (never credentials: see Credential).
	Env map[string]string `yaml:"env"`
	// URL is a streamable HTTP endpoint.
	URL string `yaml:"url"`
	// Credential says where the session's resolved credential is injected.
	Credential *CredentialInjection `yaml:"credential"`
	// TimeoutMs bounds one call (default 30000).
	TimeoutMs int `yaml:"timeoutMs"`
}

// CredentialInjection is where a connector's credential is handed to its upstream: an
// environment variable of the command, or an HTTP header of the URL (with an optional prefix,
// such as "Bearer ").
type CredentialInjection struct {
	Node `yaml:"-"`

	Env    string `yaml:"env"`
	Header string `yaml:"header"`
	Prefix string `yaml:"prefix"`
}

// ToolConfig declares one tool: a built-in, or a tool of a server.
type ToolConfig struct {
	Node `yaml:"-"`

	// Name is the name the model calls: a bare name for a built-in, mcp__<server>__<tool> for a
	// server's tool.
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Kind (built-ins only) is the native action kind the tool maps to, such as files_read or
	// shell_exec. It may be left out when the name is itself a kind.
	Kind string `yaml:"kind"`
	// Effect is the tool's effect class; it defaults to the server's. Built-ins take it from
	// their kind.
	Effect Effect `yaml:"effect"`
	// When is the condition under which the tool registers, beyond its server's.
	When Expr `yaml:"when"`
	// Grantable says whether a grant can give the tool (the read table).
	Grantable *bool `yaml:"grantable"`
	// OptIn tools are given only to a profile that asks for them by name.
	OptIn bool `yaml:"optIn"`
	// Needs lists other connectors the tool reads: it registers only when all are live (a
	// joint tool).
	Needs []Name `yaml:"needs"`
	// Skill is the bundled skill the tool rides on: it is given only when a grant names that
	// skill. The value "*" marks a skill tool, given by a grant that names any skill.
	Skill string `yaml:"skill"`
	// Handoff marks a tool that delegates to another agent: it needs maxDelegationDepth above 0.
	Handoff bool `yaml:"handoff"`
	// Gate is the per-call gate of the tool.
	Gate *GateConfig `yaml:"gate"`
	// Input (built-ins only) names the input fields that carry the path, command, working
	// directory and the like, where they differ from the kind's own names: {path: file_path}.
	Input map[string]string `yaml:"input"`
	// Args declares the tool's arguments and their types (string, number, integer, boolean,
	// list, object, any), so that constraints naming an argument the tool does not take are
	// refused at load. Built-ins take theirs from their kind.
	Args map[string]string `yaml:"args"`
	// Constraints are argument constraints, checked on every call (A8).
	Constraints []ConstraintConfig `yaml:"constraints"`
	// Cost overrides the connector's billing cost for this tool.
	Cost *CostConfig `yaml:"cost"`
}

// ConstraintConfig is one argument constraint: a CEL expression over the call that must hold.
type ConstraintConfig struct {
	Node `yaml:"-"`

	// Require is a CEL expression that must be true for the call to go ahead. It sees args (the
	// call's arguments), session (role, tenant, profile, owner) and switches (each switch's
	// value: true/false, a mode, or a number).
	Require Expr `yaml:"require"`
	// Otherwise is what a call that breaks the constraint gets: "deny" (the default) or "ask".
	Otherwise string `yaml:"otherwise"`
	// Message says why, for the blocker's detail.
	Message string `yaml:"message"`
}

// GateConfig is what a tool's calls must pass beyond being in the surface.
type GateConfig struct {
	Node `yaml:"-"`

	// Approval asks a person before each call while approvals are on.
	Approval bool `yaml:"approval"`
	// WithoutChannel is what an approval-gated tool does in a session with nobody to ask:
	// "refuse" (stay registered and refuse each call; the default) or "absent".
	WithoutChannel string `yaml:"withoutChannel"`
	// WithoutApprovals is what an approval-gated tool does while approvals are off: "allow"
	// (run unasked; the default) or "absent".
	WithoutApprovals string `yaml:"withoutApprovals"`
	// Requires names a switch that must be on for calls to run; while it is off the tool stays
	// registered and refuses.
	Requires Name `yaml:"requires"`
	// Note says which calls the gate covers when that is narrower than every call.
	Note string `yaml:"note"`
	// Effects (built-ins only) narrows the approval to calls whose review finds an effect of
	// one of these operations (a delete, say): other calls are not asked.
	Effects []Effect `yaml:"effects"`
}

// WithheldConfig records something a server deliberately does not build.
type WithheldConfig struct {
	Node `yaml:"-"`

	// What is withheld, in words.
	What string `yaml:"what"`
	// Reason is why.
	Reason string `yaml:"reason"`
	// Tools optionally names the withheld tools (exact names or * patterns); an upstream tool
	// matching one is never built.
	Tools []Name `yaml:"tools"`
}

// BillingConfig describes how a connector's calls are paid for.
type BillingConfig struct {
	Node `yaml:"-"`

	// Unit is "usd" or "credits".
	Unit string `yaml:"unit"`
	// AskAbove is the cost of one call above which a person is asked (0: never).
	AskAbove float64 `yaml:"askAbove"`
	// Cost is what one call of the connector's tools costs, unless a tool says otherwise.
	Cost *CostConfig `yaml:"cost"`
}

// CostConfig is what one call costs, in the connector's billing unit: a number (every call
// costs that), or exactly one of fixed, arg and result.
type CostConfig struct {
	Node `yaml:"-"`

	// Fixed is the cost of every call.
	Fixed *float64 `yaml:"fixed"`
	// Arg is a numeric argument whose value, times Times, is the cost (a crawl's page limit).
	Arg   string   `yaml:"arg"`
	Times *float64 `yaml:"times"`
	// Result is a numeric field of the call's result that says what it cost; the call is
	// settled at that figure.
	Result string `yaml:"result"`
	// Reserve is what is held before a call whose cost comes from its result, or from an
	// argument the call does not give.
	Reserve *float64 `yaml:"reserve"`
}

// RoleConfig configures a standard role or declares a new one. For a standard role only
// description, when, approvalByElicitation, credentials, ceiling, defaultProfile and limits may
// be set, and invariants may only be added to.
type RoleConfig struct {
	Node `yaml:"-"`

	ID          string `yaml:"id"`
	Description string `yaml:"description"`
	// When is the condition under which the role exists; a session of a role that does not
	// exist is refused.
	When Expr `yaml:"when"`
	// ApprovalChannel says whether a person can answer this role's approval cards.
	ApprovalChannel *bool `yaml:"approvalChannel"`
	// ApprovalByElicitation says whether a session of the role may answer its own cards in its
	// own MCP client, by elicitation. Unset, it is on for the standard role person and off for
	// every other role. It may be on only for a role with an approval channel.
	ApprovalByElicitation *bool `yaml:"approvalByElicitation"`
	// Credentials is the set of connector credentials the session is handed: "all", "none",
	// "grant" (the connectors its profile's grant names) or a list of connector ids.
	Credentials Credentials `yaml:"credentials"`
	// Ceiling is the list of selectors naming the tools the role may hold.
	Ceiling []Name `yaml:"ceiling"`
	// Profile says whether a session of the role runs a profile: "none", "optional" or
	// "required".
	Profile string `yaml:"profile"`
	// DefaultProfile is the profile used when a session names none.
	DefaultProfile Name `yaml:"defaultProfile"`
	// Grants says whether a profile's grant adds to the role's ceiling.
	Grants *bool `yaml:"grants"`
	// Invariants are checked when a session starts; a session that would break one is refused.
	Invariants *InvariantsConfig `yaml:"invariants"`
	// Limits apply to sessions of the role that run no profile.
	Limits *LimitsConfig `yaml:"limits"`
	// Sessions caps the role's sessions in each tenant: how many may be live at once, and how
	// many may open in a minute (an inbound role a stranger starts, say).
	Sessions *RoleSessionsConfig `yaml:"sessions"`
}

// InvariantsConfig is what a role's sessions must never hold.
type InvariantsConfig struct {
	Node `yaml:"-"`

	// NoTools refuses a session that would hold any tool.
	NoTools bool `yaml:"noTools"`
	// NoGrant refuses a session whose profile has a grant.
	NoGrant bool `yaml:"noGrant"`
	// NoDelegation refuses a session whose profile may delegate.
	NoDelegation bool `yaml:"noDelegation"`
	// Forbid lists selectors of tools the session must never hold.
	Forbid []Name `yaml:"forbid"`
}

// RoleSessionsConfig caps a role's sessions per tenant. Unset is no cap.
type RoleSessionsConfig struct {
	Node `yaml:"-"`

	// MaxLive caps the role's live sessions in one tenant.
	MaxLive *int `yaml:"maxLive"`
	// PerMinute caps how many of the role's sessions one tenant may open in any minute.
	PerMinute *int `yaml:"perMinute"`
}

// LimitsConfig are a run's limits. Unset fields take the policy's default limits.
type LimitsConfig struct {
	Node `yaml:"-"`

	RunBudgetUsd *float64 `yaml:"runBudgetUsd"`
	// DailyBudgetUsd caps what the profile's runs in one tenant spend on models in a UTC day.
	DailyBudgetUsd     *float64 `yaml:"dailyBudgetUsd"`
	MaxTurns           *int     `yaml:"maxTurns"`
	MaxConcurrentRuns  *int     `yaml:"maxConcurrentRuns"`
	MaxDelegationDepth *int     `yaml:"maxDelegationDepth"`
	MaxAttempts        *int     `yaml:"maxAttempts"`
}

// ProfileConfig is a saved coworker.
type ProfileConfig struct {
	Node `yaml:"-"`

	ID          string `yaml:"id"`
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Role is the role the profile runs as; it defaults to specialist when the profile has a
	// grant and to coworker otherwise.
	Role Name `yaml:"role"`
	// Tools are the tools the profile asks for.
	Tools []Name `yaml:"tools"`
	// Grant adds connectors, skills and allowances.
	Grant *GrantConfig `yaml:"grant"`
	// Limits override the policy's default limits.
	Limits *LimitsConfig `yaml:"limits"`
}

// GrantConfig is what a person granted a profile beyond its requested tools.
type GrantConfig struct {
	Node `yaml:"-"`

	// Connectors whose read-table tools the profile is given.
	Connectors []Name `yaml:"connectors"`
	// Allowance per billing connector id.
	Allowance map[string]AllowanceConfig `yaml:"allowance"`
	// Skills are bundled skill ids.
	Skills []Name `yaml:"skills"`
}

// AllowanceConfig is a spending allowance in the connector's billing unit.
type AllowanceConfig struct {
	Node `yaml:"-"`

	PerRun *float64 `yaml:"perRun"`
	PerDay *float64 `yaml:"perDay"`
}

// TenantConfig is a brand or account.
type TenantConfig struct {
	Node `yaml:"-"`

	ID   string `yaml:"id"`
	Name string `yaml:"name"`
	// Account groups tenants under one account owner, who may share connections among them.
	Account string `yaml:"account"`
	// Owner marks the deployment owner's own tenant: the only one that may use the host
	// environment's credentials.
	Owner bool `yaml:"owner"`
	// Goals says whether the goals engine is on for the tenant.
	Goals bool `yaml:"goals"`
	// MonthlyModelCapUsd caps the tenant's model spend in a calendar month (UTC), shared by
	// person chat and every run; 0 means no cap.
	MonthlyModelCapUsd float64 `yaml:"monthlyModelCapUsd"`
	// Skills are the tenant's own skills.
	Skills []Name `yaml:"skills"`
	// Coworkers are the profiles saved as the tenant's coworkers.
	Coworkers []Name `yaml:"coworkers"`
	// Connections are the tenant's stored connector connections.
	Connections []ConnectionConfig `yaml:"connections"`
	// Boundaries are the tenant's own hard blocks, added to the deployment's.
	Boundaries *BoundariesConfig `yaml:"boundaries"`
	// Egress are the hosts the tenant's sandboxed commands may reach beyond the deployment's
	// egress allowlist (SANDBOX_EGRESS_ALLOWLIST) while egress is in allowlist mode.
	Egress *TenantEgressConfig `yaml:"egress"`
}

// TenantEgressConfig is what a tenant adds to the sandbox's egress allowlist.
type TenantEgressConfig struct {
	Node `yaml:"-"`

	// Allow are allowlist entries: a host (api.github.com), a domain and its subdomains
	// (*.github.com, never a public suffix), an IP address or CIDR, each with an optional
	// :port (80 and 443 when none is given).
	Allow []Name `yaml:"allow"`
}

// ConnectionConfig is a tenant's stored connection to a connector.
type ConnectionConfig struct {
	Node `yaml:"-"`

	// ID is unique across the policy.
	ID        string `yaml:"id"`
	Connector Name   `yaml:"connector"`
	// Name is the display name.
	Name string `yaml:"name"`
	// Enabled defaults to true.
	Enabled *bool `yaml:"enabled"`
	// SharedWith lists tenants of the same account that may use this connection.
	SharedWith []Name `yaml:"sharedWith"`
	// Secret is where the connection's credential is kept, by reference: "env:NAME" (a variable
	// of Warden's own environment) or "file:/path". The value itself is never in the policy.
	Secret string `yaml:"secret"`
}

// Pins is a connector's pins as written, in document order, each with its place.
type Pins []Pin

// Pin is one pinned tool definition: the tool's name and the digest of its definition.
type Pin struct {
	Tool   Name
	Digest Name
}

// SecretsConfig says what a sandboxed command bound to one of a server's protected values
// (protectedBindings) is given. By default it gets a placeholder, and its egress proxy puts the
// value in place of the placeholder only in requests to Hosts.
type SecretsConfig struct {
	Node `yaml:"-"`

	// Hosts are where the values may be sent: egress allowlist entries (host, *.domain, IP or
	// CIDR, with an optional :port). Left out, a connector with a url upstream gives its URL's
	// host, and any other server none; an empty list is none.
	Hosts []Name `yaml:"hosts"`
	// ExposeToProcess gives a bound process the value itself instead of a placeholder: output
	// redaction is then the only defence against a command that prints it.
	ExposeToProcess bool `yaml:"exposeToProcess"`
}

// ManagedConfig says that a connector issues managed references and how Warden resolves them.
type ManagedConfig struct {
	Node `yaml:"-"`

	// Issuer is the issuer the connector's references name; no two connectors share one.
	Issuer string `yaml:"issuer"`
	// Versions are the reference versions accepted (default ["1"]).
	Versions []string `yaml:"versions"`
	// Resolve is the upstream tool (its own name, as the upstream lists it) that Warden calls
	// with {"ref": REF} to fetch a reference's value; it answers with one $wardenSensitive
	// envelope.
	Resolve string `yaml:"resolve"`
}
