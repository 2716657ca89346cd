package action

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode"

	"github.com/wardenhq/warden/action/patch"
	"github.com/wardenhq/warden/action/shell"
	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/policy"
)

// KindConnectorCall is the kind of a call to an upstream MCP tool.
const KindConnectorCall = "connector_call"

// Action is a tool call, normalised: what it would touch and run, whichever tool name it came
// through.
type Action struct {
	// Tool is the name called; Kind the native kind, or KindConnectorCall.
	Tool string
	Kind string
	// Server is the tool's server id (for a connector call, the connector).
	Server string
	// Args are the call's arguments as given.
	Args map[string]any
	// Digest identifies the call (tool and arguments) exactly; approvals and review tokens are
	// bound to it.
	Digest string

	// Effects are the paths touched, with their operations.
	Effects []Effect
	// Command is the shell command text of a shell_exec; Commands its simple commands.
	Command  string
	Commands []Command
	// URL is the address a net_fetch reads.
	URL string

	// Inputs are the call's string inputs by role (path, content, command, ...), as given.
	Inputs map[string]string
	// Paths are the resolved paths of the roles that name one (path, cwd, root): what the
	// review judged is what an executor must act on.
	Paths map[string]string

	// Unknowns are what could not be known statically: never allowed silently.
	Unknowns []Unknown
	// Problems are reasons the call cannot be judged at all (bad input, a command or patch
	// that does not parse): each denies it.
	Problems []Problem
}

// Command is one simple command a shell_exec would run.
type Command struct {
	// Argv is the program's base name, then its arguments (quotes removed).
	Argv []string
	// Dir is the directory it runs in ("" when it cannot be known).
	Dir string
	// Via says how it is reached ("", "bash -c", "$(...)", "find -exec", ...).
	Via string
	Pos string
}

// Normalized is the form command rules match: the argv joined by single spaces.
func (c Command) Normalized() string { return strings.Join(c.Argv, " ") }

// Unknown is something about an action that cannot be known statically.
type Unknown struct {
	What, Text, Pos string
}

// Problem codes: why an action cannot be judged.
const (
	ProblemInput     = "invalid_input"
	ProblemCommand   = "unparseable_command"
	ProblemPatch     = "unparseable_patch"
	ProblemPath      = "unresolvable_path"
	ProblemUnknownOp = "unsupported_tool"
)

// Problem is a reason an action cannot be judged.
type Problem struct {
	Code, Detail string
}

// Context is where a session's actions happen.
type Context struct {
	// Resolver resolves paths: its Root is the session's workspace.
	Resolver *Resolver
	// Name is the name the tool was called by, where it is not t.Name: a tool of a connector
	// that discovers its catalog is decided by the connector's stand-in (mcp__<id>__*), but
	// the action, and its digest, name the tool that was called.
	Name string
	// View, when set, is the review's look at the file system, shared with what the reviewer
	// looks at afterwards (the trees below recursive effects). Nil looks afresh each time.
	View *View
}

// Normalize turns a call of tool t with args into an action. It never fails: what it cannot
// make sense of becomes a Problem, which the reviewer turns into a deny.
func Normalize(t *policy.Tool, args map[string]any, ctx Context) *Action {
	name := t.Name
	if ctx.Name != "" {
		name = ctx.Name
	}
	a := &Action{Tool: name, Server: t.Server.ID, Args: args}
	a.Digest = Digest(name, args)
	if t.Server.Kind != policy.KindBuiltin {
		a.Kind = KindConnectorCall
		return a
	}
	a.Kind = t.Kind
	n := normalizer{a: a, t: t, r: ctx.Resolver, view: ctx.View}
	if n.r != nil && ctx.View != nil {
		n.r = n.r.In(ctx.View)
	}
	if n.r == nil {
		n.problem(ProblemPath, "the session has no workspace to resolve paths against")
		return a
	}
	switch t.Kind {
	case "files_read", "files_inspect":
		n.pathEffect(OpRead, n.required("path"), false)
	case "files_list":
		n.pathEffect(OpRead, n.required("path"), false)
	case "files_find":
		base := n.optional("path")
		if real, ok := n.resolve("", orDot(base)); ok {
			n.setPath("path", real)
		}
		if pat := n.required("pattern"); pat != "" {
			n.rolePath("scope", OpRead, joinBase(base, literalDir(pat)), true)
		}
	case "files_search":
		n.optional("query")
		n.pathEffect(OpRead, orDot(n.optional("path")), true)
	case "files_write":
		n.optional("content")
		n.pathEffect(OpWrite, n.required("path"), false)
	case "files_edit":
		p := n.required("path")
		n.optional("old")
		n.optional("new")
		// An edit reads the file to find the text it replaces, then writes it.
		n.pathEffect(OpRead, p, false)
		n.pathEffect(OpWrite, p, false)
	case "files_delete":
		n.pathEffect(OpDelete, n.required("path"), false)
	case "files_patch":
		n.patch()
	case "shell_exec":
		n.shell()
	case "spawn_subagent":
		n.optional("profile")
		n.optional("task")
		n.rolePath("root", OpDelegate, n.required("root"), false)
	case "git_status", "git_diff":
		n.rolePath("cwd", OpRead, orDot(n.optional("cwd")), true)
	case "net_fetch":
		a.URL = n.required("url")
	case "net_search":
		n.optional("query")
	case "sandbox_allow_host":
		n.optional("reason")
		n.allowHost(n.required("host"))
	default:
		n.problem(ProblemUnknownOp, fmt.Sprintf("%s maps to the kind %q, which Warden cannot review", t.Name, t.Kind))
	}
	return a
}

type normalizer struct {
	a *Action
	t *policy.Tool
	r *Resolver
	// view is the review's look at the file system (nil: none, look afresh)
	view *View
}

func (n *normalizer) problem(code, detail string) {
	n.a.Problems = append(n.a.Problems, Problem{Code: code, Detail: detail})
}

// arg returns the string argument for an input role. A missing required argument, or one that
// is not a string, is a problem.
func (n *normalizer) arg(role string, required bool) string {
	name := n.fieldName(role)
	v, present := n.a.Args[name]
	if !present || v == nil {
		if required {
			n.problem(ProblemInput, fmt.Sprintf("%s needs %s", n.t.Name, name))
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		n.problem(ProblemInput, fmt.Sprintf("%s: %s must be a string, not %s", n.t.Name, name, jsonType(v)))
		return ""
	}
	if required && s == "" {
		n.problem(ProblemInput, fmt.Sprintf("%s: %s is empty", n.t.Name, name))
	}
	if n.a.Inputs == nil {
		n.a.Inputs = map[string]string{}
	}
	n.a.Inputs[role] = s
	return s
}

func (n *normalizer) required(role string) string { return n.arg(role, true) }
func (n *normalizer) optional(role string) string { return n.arg(role, false) }

// fieldName is the name of the field that carries an input role for this tool.
func (n *normalizer) fieldName(role string) string {
	if name := n.t.Input[role]; name != "" {
		return name
	}
	return role
}

func jsonType(v any) string {
	switch v.(type) {
	case bool:
		return "a boolean"
	case float64, json.Number, int, int64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func (n *normalizer) resolve(base, p string) (string, bool) {
	real, err := n.r.Resolve(base, p)
	if err != nil {
		n.problem(ProblemPath, err.Error())
		return "", false
	}
	return real, true
}

func (n *normalizer) pathEffect(op Op, p string, recursive bool) {
	n.rolePath("path", op, p, recursive)
}

// rolePath adds the effect of a path input and records its resolved path for the role.
func (n *normalizer) rolePath(role string, op Op, p string, recursive bool) {
	if p == "" {
		return
	}
	if real, ok := n.resolve("", p); ok {
		n.a.Effects = append(n.a.Effects, Effect{Op: op, Path: real, Recursive: recursive})
		n.setPath(role, real)
	}
}

func (n *normalizer) setPath(role, real string) {
	if n.a.Paths == nil {
		n.a.Paths = map[string]string{}
	}
	n.a.Paths[role] = real
}

// cwd returns the resolved working directory of a call: its cwd argument, else the workspace.
func (n *normalizer) cwd() (string, bool) {
	c := n.optional("cwd")
	if c == "" {
		n.setPath("cwd", n.r.Root)
		return n.r.Root, true
	}
	real, ok := n.resolve("", c)
	if ok {
		n.setPath("cwd", real)
	}
	return real, ok
}

func (n *normalizer) shell() {
	cmd := n.required("command")
	n.a.Command = cmd
	dir, ok := n.cwd()
	if !ok || cmd == "" {
		return
	}
	if v, given := n.a.Args[n.fieldName("protectedBindings")]; given && v != nil {
		if _, isMap := v.(map[string]any); !isMap {
			n.problem(ProblemInput, fmt.Sprintf("%s: protectedBindings must be an object of name to handle", n.t.Name))
		}
	}
	// Running a command in a directory is an execution there, as BURROW checks it.
	n.a.Effects = append(n.a.Effects, Effect{Op: OpExecute, Path: dir})
	an, err := shell.Analyze(cmd, shell.Options{
		Dir:     dir,
		Home:    n.r.Home,
		Resolve: func(p string) (string, error) { return n.r.Resolve("", p) },
	})
	if err != nil {
		var pe *shell.ParseError
		if errors.As(err, &pe) {
			n.problem(ProblemCommand, fmt.Sprintf("the command does not parse: %d:%d: %s", pe.Line, pe.Col, pe.Msg))
		} else {
			n.problem(ProblemCommand, err.Error())
		}
		return
	}
	words := 0
	for _, c := range an.Commands {
		words += 1 + len(c.Args)
	}
	all := make([]string, 0, words) // every command's argv, in one allocation
	n.a.Commands = slices.Grow(n.a.Commands, len(an.Commands))
	for _, c := range an.Commands {
		start := len(all)
		all = append(all, c.Name)
		all = append(all, c.Args...)
		argv := all[start:len(all):len(all)] // capped: appending to one copies, never overwrites the next
		n.a.Commands = append(n.a.Commands, Command{Argv: argv, Dir: c.Dir, Via: c.Via, Pos: c.Pos})
	}
	n.a.Effects = slices.Grow(n.a.Effects, len(an.Effects)) // a glob may add more
	for _, e := range an.Effects {
		n.globEffect(Effect{Op: Op(e.Op), Path: e.Path, Recursive: e.Recursive, Listing: e.Listing, From: e.From})
	}
	for _, u := range an.Unknowns {
		n.a.Unknowns = append(n.a.Unknowns, Unknown{What: u.What, Text: u.Text, Pos: u.Pos})
	}
}

// narrowRecursive makes a recursive effect plain where the file system shows there is no tree
// below its path: an existing file that is not a directory has no children, and deleting a
// path that does not exist removes nothing below it. (mv and rm -r are reported recursive by
// the shell analysis because an operand might be a directory.) Execute reviews again just
// before running, so a directory made in between is seen there.
func (n *normalizer) narrowRecursive(e Effect) Effect {
	if !e.Recursive {
		return e
	}
	switch mode, err := n.view.stat(e.Path); {
	case err == nil && mode != syscall.S_IFDIR:
		e.Recursive = false
	case err != nil && e.Op == OpDelete && errors.Is(err, syscall.ENOENT):
		e.Recursive = false
	}
	return e
}

// maxGlobMatches bounds how many files a shell glob is expanded to; past it, the glob counts as
// touching the whole directory it lists.
const maxGlobMatches = 1000

// globEffect adds an effect whose path may be a shell glob (rm *.log): the shell expands it when
// the command runs, so it is expanded here against the file system, each match resolved; a
// glob that matches nothing reaches the program as written, as bash passes it. Execute reviews
// again just before running, so files created in between are seen there.
func (n *normalizer) globEffect(e Effect) {
	if !strings.ContainsAny(e.Path, "*?[") {
		n.a.Effects = append(n.a.Effects, n.narrowRecursive(e))
		return
	}
	matches, err := n.view.Glob(e.Path)
	switch {
	case err != nil || len(matches) == 0:
		n.a.Effects = append(n.a.Effects, e)
	case len(matches) > maxGlobMatches:
		dir := literalDir(e.Path)
		n.a.Effects = append(n.a.Effects, Effect{Op: e.Op, Path: dir, Recursive: true})
	default:
		for _, m := range matches {
			if real, ok := n.resolve("", m); ok {
				n.a.Effects = append(n.a.Effects, n.narrowRecursive(Effect{Op: e.Op, Path: real, Recursive: e.Recursive, Listing: e.Listing}))
			}
		}
	}
}

// allowHost checks the host a sandbox_allow_host call asks for: it must be one entry of an
// egress allowlist (a host name, *.domain, an IP address or a CIDR) that the allowlist would
// take, so that a host no answer could ever open (a private or metadata address, a list, a
// whole public suffix) is denied before a person is asked. Inputs["host"] becomes the entry's
// canonical spelling, which is what a yes adds.
func (n *normalizer) allowHost(host string) {
	if host == "" {
		return // (required has said so)
	}
	name := n.fieldName("host")
	if strings.ContainsFunc(host, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		n.problem(ProblemInput, fmt.Sprintf("%s: %s %q must be one host, not a list (it holds commas or spaces)", n.t.Name, name, host))
		return
	}
	list, err := egress.ParseAllowlist(host)
	if err != nil {
		why := err.Error()
		if ee, ok := errors.AsType[*egress.EntryError](err); ok {
			why = ee.Err.Error()
		}
		n.problem(ProblemInput, fmt.Sprintf("%s: %s %q cannot be allowed: %s", n.t.Name, name, host, why))
		return
	}
	entries := list.Entries()
	if len(entries) != 1 {
		n.problem(ProblemInput, fmt.Sprintf("%s: %s %q must be exactly one host", n.t.Name, name, host))
		return
	}
	n.a.Inputs["host"] = entries[0]
}

func (n *normalizer) patch() {
	text := n.required("patch")
	dir, ok := n.cwd()
	if !ok || text == "" {
		return
	}
	changes, err := patch.Changes(text)
	if err != nil {
		n.problem(ProblemPatch, "the patch does not parse: "+err.Error())
		return
	}
	add := func(op Op, p string) {
		if real, ok := n.resolve(dir, p); ok {
			n.a.Effects = append(n.a.Effects, Effect{Op: op, Path: real})
		}
	}
	for _, c := range changes {
		if c.Mode == "120000" || c.Mode == "160000" {
			// A link's target, or a submodule's commit, is data the patch sets: what it will point
			// at later cannot be judged from here.
			what := "a symbolic link"
			if c.Mode == "160000" {
				what = "a submodule"
			}
			n.a.Unknowns = append(n.a.Unknowns, Unknown{What: "the patch makes " + c.New + " " + what, Text: c.New, Pos: fmt.Sprintf("line %d", c.Line)})
		}
		switch c.Op {
		case patch.Modify:
			add(OpWrite, c.New)
			if c.Old != "" && c.Old != c.New {
				// --- x.orig / +++ x: patch programs differ on which one they change.
				add(OpWrite, c.Old)
			}
		case patch.Create:
			add(OpWrite, c.New)
		case patch.Delete:
			add(OpDelete, c.Old)
		case patch.Rename:
			add(OpDelete, c.Old)
			add(OpWrite, c.New)
		case patch.Copy:
			add(OpRead, c.Old)
			add(OpWrite, c.New)
		default:
			n.problem(ProblemPatch, fmt.Sprintf("the patch changes %s in a way Warden does not know (%s)", c.New, c.Op))
		}
	}
}

// literalDir is the directory part of a glob pattern before its first wildcard: what a find
// with that pattern reads at the least.
func literalDir(pattern string) string {
	i := strings.IndexAny(pattern, "*?[{")
	if i < 0 {
		return path.Dir(pattern)
	}
	dir := pattern[:i]
	if j := strings.LastIndexByte(dir, '/'); j >= 0 {
		if j == 0 {
			return "/"
		}
		return dir[:j]
	}
	return "."
}

func joinBase(base, p string) string {
	if base == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") {
		return p
	}
	return base + "/" + p
}

func orDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}
