package policy

// The standard roles (S3). Their ids are a fixed interface. A policy may set a standard role's
// description, when, approvalByElicitation, credentials, ceiling, defaultProfile and limits,
// and add invariants; its approval channel, profile mode, grants and the invariants below are
// fixed, so no policy file can, say, give the inbound role an approval channel or a goal
// reviewer a tool.

// The standard role ids.
const (
	RolePerson       = "person"
	RoleInbound      = "inbound"
	RoleCoworker     = "coworker"
	RoleSpecialist   = "specialist"
	RoleGoalAgent    = "goal_agent"
	RoleGoalReviewer = "goal_reviewer"
	RoleReadOnly     = "read_only"
)

type standardRole struct {
	id, description string
	approvalChannel bool
	credentials     CredentialMode
	ceiling         []string
	profile         ProfileMode
	grants          bool
	noTools         bool
	noGrant         bool
	noDelegation    bool
	forbid          []string

	// approvalByElicitation is the default of the role's approvalByElicitation: only person's
	// own chat shows a question to the person in it (Scout's chat does).
	approvalByElicitation bool
}

// Effects other than read, for invariants that allow only reading.
const notRead = "#write,delete,send,spend,execute,delegate"

var coworkerCeiling = []string{"builtin:*", "server:memory", "server:project", "!*#delete"}

var standardRoles = []standardRole{
	{
		id:              RolePerson,
		description:     "A person's own chat: the widest surface, and the only role with someone present to approve gated calls.",
		approvalChannel: true,
		credentials:     CredentialsAll,
		ceiling:         []string{"*"},

		approvalByElicitation: true,
	},
	{
		id:          RoleInbound,
		description: "A turn started by untrusted input, such as an email a stranger wrote: narrow, with nobody to ask.",
		ceiling:     []string{"connector:*#read"},
		forbid:      []string{"builtin:*", "platform:*", "*#send,spend,delete,execute,delegate"},
	},
	{
		id:          RoleCoworker,
		description: "An unattended run of a saved profile: the profile's requested tools within the coworker ceiling.",
		ceiling:     coworkerCeiling,
		profile:     ProfileRequired,
		forbid:      []string{"connector:*", "server:transcripts", "server:goals"},
	},
	{
		id:          RoleSpecialist,
		description: "A coworker with a grant: the grant adds read-table tools of granted connectors, skills and allowances.",
		credentials: CredentialsGrant,
		ceiling:     coworkerCeiling,
		profile:     ProfileRequired,
		grants:      true,
		forbid:      []string{"server:transcripts", "server:goals"},
	},
	{
		id:          RoleGoalAgent,
		description: "One step of a goal plan, run unattended: read-only built-ins and the project folder, plus any grant.",
		credentials: CredentialsGrant,
		ceiling:     []string{"builtin:*#read", "server:project", "!*#delete"},
		profile:     ProfileRequired,
		grants:      true,
		forbid:      []string{"builtin:*" + notRead, "server:memory", "server:transcripts", "server:skills", "server:team", "server:goals"},
	},
	{
		id:           RoleGoalReviewer,
		description:  "Reads goal progress and writes a short review: no tools at all.",
		profile:      ProfileOptional,
		noTools:      true,
		noGrant:      true,
		noDelegation: true,
	},
	{
		id:          RoleReadOnly,
		description: "A route whose model or harness is not certified for the standard tool set: assembled narrow, not fenced wide.",
		ceiling:     []string{"builtin:*#read", "server:transcripts", "server:skills", "server:team"},
		forbid: []string{"builtin:*" + notRead, "server:memory", "server:project", "server:goals",
			"server:sandbox", "server:browser", "server:sandbox_egress", "connector:*"},
	},
}

// DefaultHarness is the id of the harness that always exists.
const DefaultHarness = "default"

// NativeKinds are the native action kinds a built-in tool maps to, with the effect each has.
var NativeKinds = map[string]Effect{
	"files_read":     EffectRead,
	"files_list":     EffectRead,
	"files_find":     EffectRead,
	"files_search":   EffectRead,
	"files_inspect":  EffectRead,
	"files_write":    EffectWrite,
	"files_edit":     EffectWrite,
	"files_patch":    EffectWrite,
	"files_delete":   EffectDelete,
	"shell_exec":     EffectExecute,
	"spawn_subagent": EffectDelegate,
	"git_status":     EffectRead,
	"git_diff":       EffectRead,
	"net_fetch":      EffectRead,
	"net_search":     EffectRead,
	// sandbox_allow_host asks a person to let the session's sandbox reach one more host; a yes
	// widens the running sandbox's egress allowlist. Its gate is fixed (see egressCardGate).
	"sandbox_allow_host": EffectWrite,
}

// KindInputs are the input roles of each native kind: what its fields mean. A native tool
// takes them under these very names (files_write {path, content}); a built-in with another
// name maps them to its own fields with input (Write: {path: file_path}).
var KindInputs = map[string][]string{
	"files_read":         {"path"},
	"files_list":         {"path"},
	"files_find":         {"path", "pattern"},
	"files_search":       {"path", "query"},
	"files_inspect":      {"path"},
	"files_write":        {"path", "content"},
	"files_edit":         {"path", "old", "new"},
	"files_patch":        {"patch", "cwd"},
	"files_delete":       {"path"},
	"shell_exec":         {"command", "cwd", "protectedBindings"},
	"spawn_subagent":     {"root", "profile", "task"},
	"git_status":         {"cwd"},
	"git_diff":           {"cwd"},
	"net_fetch":          {"url"},
	"net_search":         {"query"},
	"sandbox_allow_host": {"host", "reason"},
}

// knownInputs are the field names of well-known built-ins (Claude Code's), used when a
// built-in of that name and kind does not say otherwise.
var knownInputs = map[string]struct {
	kind   string
	fields map[string]string
}{
	"Bash":      {"shell_exec", map[string]string{"command": "command"}},
	"Read":      {"files_read", map[string]string{"path": "file_path"}},
	"Write":     {"files_write", map[string]string{"path": "file_path", "content": "content"}},
	"Edit":      {"files_edit", map[string]string{"path": "file_path", "old": "old_string", "new": "new_string"}},
	"Glob":      {"files_find", map[string]string{"path": "path", "pattern": "pattern"}},
	"Grep":      {"files_search", map[string]string{"path": "path", "query": "pattern"}},
	"WebFetch":  {"net_fetch", map[string]string{"url": "url"}},
	"WebSearch": {"net_search", map[string]string{"query": "query"}},
}

// inputArgTypes are the types of the input roles, for checking constraints.
var inputArgTypes = map[string]string{
	"path": "string", "pattern": "string", "query": "string", "content": "string",
	"old": "string", "new": "string", "patch": "string", "cwd": "string", "command": "string",
	"protectedBindings": "object", "root": "string", "profile": "string", "task": "string", "url": "string",
	"host": "string", "reason": "string",
}
