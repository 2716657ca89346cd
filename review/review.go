// Package review judges concrete tool calls: allow, ask or deny, with every reason.
//
// A tool in a session's surface says nothing about what one call would touch. Review
// normalises the call into an action (package action: paths through symbolic links, shell
// commands parsed into their effects, patches into their files), then checks it in order:
//
//  1. the surface: a tool outside it is permission_denied (S2);
//  2. the action: input it cannot make sense of, a command or patch that does not parse, or a
//     path that cannot be resolved denies it;
//  3. the hard blocks (package boundary), for every operation, reads and deletes included; a
//     stored rule document that does not validate blocks every action;
//  4. what could not be known statically (a program from a variable, inline interpreter code)
//     asks a person, or denies where nobody can answer;
//  5. the tool's argument constraints (CEL, compiled with the policy);
//  6. the static gate (approvals, required switches).
//
// The verdict carries the decision, every blocker, the ids of the rules that decided it, the
// effects and the argv of every command, and a review token. The executor (Execute) requires
// an allowing token bound to the session, the exact call and the policy, and reviews the call
// again at the execution boundary, so a stale, fabricated or replayed verdict never runs.
package review

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// Session is what a review needs to know about the session a call belongs to.
type Session struct {
	// ID identifies the session; review tokens are bound to it.
	ID string
	// Surface is the session's tool surface.
	Surface *surface.Surface
	// Paths resolves the paths the session's calls name; its Root is the workspace.
	Paths *action.Resolver
	// Boundaries are the hard blocks in force (nil: none).
	Boundaries *boundary.Set
	// Unconfined lets Warden's own file tools act outside the workspace (the hard blocks still
	// apply). By default they are confined to it (outside_workspace).
	Unconfined bool
	// Enforced says the session's shell commands run in the sandbox with Boundaries enforced
	// at every system call (sandbox.Spec.Boundaries), where a command that cannot be enforced
	// does not run. Then a recursive read (grep -r, cp -r's source, tar c) is judged on the
	// path it names, not on what lies below it: the blocked files below are refused at their
	// open, and the rest of the tree is read.
	Enforced bool
}

// Blocker is one reason a call is not simply allowed.
type Blocker struct {
	Code verdict.Code `json:"code"`
	// Rule is the id of the rule that produced it, if one did.
	Rule   string `json:"rule,omitempty"`
	Detail string `json:"detail"`
	// Decision is what this blocker alone asks for: Deny or Ask.
	Decision verdict.Decision `json:"-"`
}

// Verdict is the outcome of a review. Its zero value denies.
type Verdict struct {
	Decision verdict.Decision `json:"decision"`
	Blockers []Blocker        `json:"blockers"`
	// Rules are the ids of the rules that decided it.
	Rules   []string        `json:"rules,omitempty"`
	Effects []action.Effect `json:"effects"`
	Argv    [][]string      `json:"argv"`
	// Token is set on an allow or ask verdict; Execute requires it.
	Token string `json:"token,omitempty"`
	// Action is the normalised call (nil when the tool is outside the surface).
	Action *action.Action `json:"-"`
}

// MarshalJSON writes the verdict with empty lists as [], never null.
func (v Verdict) MarshalJSON() ([]byte, error) {
	type plain Verdict
	p := plain(v)
	if p.Blockers == nil {
		p.Blockers = []Blocker{}
	}
	if p.Effects == nil {
		p.Effects = []action.Effect{}
	}
	if p.Argv == nil {
		p.Argv = [][]string{}
	}
	return json.Marshal(p)
}

func (v *Verdict) block(b Blocker) {
	v.Blockers = append(v.Blockers, b)
	if b.Rule != "" {
		for _, r := range v.Rules {
			if r == b.Rule {
				return
			}
		}
		v.Rules = append(v.Rules, b.Rule)
	}
}

// The review's blocker codes (defined, with their meanings, in package verdict).
const (
	CodeHardBlock        = verdict.HardBlock
	CodeBoundaryInvalid  = verdict.BoundaryInvalid
	CodeInvalidInput     = verdict.InvalidInput
	CodeUnparseableCmd   = verdict.UnparseableCommand
	CodeUnparseablePat   = verdict.UnparseablePatch
	CodeUnresolvable     = verdict.UnresolvablePath
	CodeUnsupported      = verdict.UnsupportedTool
	CodeUnknownEffect    = verdict.UnknownEffect
	CodeConstraint       = verdict.ArgumentConstraint
	CodeTokenInvalid     = verdict.ReviewTokenInvalid
	CodeOutsideWorkspace = verdict.OutsideWorkspace
)

var problemCodes = map[string]verdict.Code{
	action.ProblemInput:     CodeInvalidInput,
	action.ProblemCommand:   CodeUnparseableCmd,
	action.ProblemPatch:     CodeUnparseablePat,
	action.ProblemPath:      CodeUnresolvable,
	action.ProblemUnknownOp: CodeUnsupported,
}

// judge reviews a call without signing it, using what m kept of an earlier review of the same
// call where it still holds (m may be nil), and what earlier reviews found in the directories
// it looks in, where each is unchanged (dirs, which may be nil: action.Dirs).
func judge(s *Session, tool string, args map[string]any, m *memo, dirs *action.Dirs) Verdict {
	var v Verdict
	sf := s.Surface
	if !sf.Has(tool) {
		v.block(Blocker{Code: verdict.PermissionDenied, Detail: sf.Explain(tool).Reason, Decision: verdict.Deny})
		return v
	}
	t, _ := sf.Policy().Tool(tool)
	if args == nil {
		args = map[string]any{}
	}
	var key memoKey
	kept := false
	if m != nil {
		key, kept = keyFor(s, tool, t, args)
	}
	if kept {
		if e := m.get(key); e != nil {
			if holds, renewed, renew := e.seen.Check(); holds {
				m.hits.Add(1)
				if renew {
					r := *e
					r.seen = renewed
					m.put(&r)
				}
				return finish(e.verdict(args), sf, t, tool, args)
			}
			m.drop(key, e)
		}
	}
	view := action.NewView()
	defer view.Release()
	view.Share(dirs)
	if kept {
		view.Record()
	}
	ctx := action.Context{Resolver: s.Paths, View: view}
	if t.Name != tool {
		ctx.Name = tool // a discovered connector tool, decided by its stand-in
	}
	a := action.Normalize(t, args, ctx)
	v.Action = a
	v.Effects = a.Effects
	if len(a.Commands) > 0 {
		v.Argv = make([][]string, len(a.Commands))
		for i, c := range a.Commands {
			v.Argv[i] = c.Argv
		}
	}
	for _, p := range a.Problems {
		code, ok := problemCodes[p.Code]
		if !ok {
			code = CodeInvalidInput
		}
		v.block(Blocker{Code: code, Detail: p.Detail, Decision: verdict.Deny})
	}
	if !s.Unconfined {
		checkWorkspace(&v, s.Paths, a)
	}
	checkBoundaries(&v, s.Boundaries, view, a, s.Enforced && a.Kind == "shell_exec")
	for _, u := range a.Unknowns {
		detail := u.What
		if u.Text != "" {
			detail += ": " + u.Text
		}
		if u.Pos != "" {
			detail += " (at " + u.Pos + ")"
		}
		v.block(Blocker{Code: CodeUnknownEffect, Detail: detail, Decision: verdict.Ask})
	}
	if kept {
		if seen, ok := view.Seen(); ok {
			m.put(keep(key, &v, seen))
		}
	}
	return finish(v, sf, t, tool, args)
}

// finish judges what depends on the session's state now, not on the call's action alone: the
// argument constraints and the gate; then decides.
func finish(v Verdict, sf *surface.Surface, t *policy.Tool, tool string, args map[string]any) Verdict {
	checkConstraints(&v, sf, t, args)
	checkGate(&v, sf, tool, v.Effects)
	v.Decision = decide(v.Blockers, sf)
	if v.Decision == verdict.Deny && hasAskOnly(v.Blockers) {
		v.block(Blocker{Code: verdict.NoApprovalChannel, Decision: verdict.Deny,
			Detail: "this call needs a person's answer and the session has nobody to ask"})
	}
	return v
}

// Add puts one more blocker on a verdict (the gate's spending checks) and decides again by the
// same rules: any deny denies; an ask asks where someone can answer, else denies.
func (v *Verdict) Add(b Blocker, sf *surface.Surface) {
	v.block(b)
	before := v.Decision
	v.Decision = decide(v.Blockers, sf)
	if v.Decision == verdict.Deny && before != verdict.Deny && hasAskOnly(v.Blockers) {
		v.block(Blocker{Code: verdict.NoApprovalChannel, Decision: verdict.Deny,
			Detail: "this call needs a person's answer and the session has nobody to ask"})
	}
}

// decide combines blockers: any deny denies; otherwise any ask asks where a person can answer
// and denies where nobody can; no blocker allows.
func decide(bs []Blocker, sf *surface.Surface) verdict.Decision {
	d := verdict.Allow
	for _, b := range bs {
		switch b.Decision {
		case verdict.Deny:
			return verdict.Deny
		case verdict.Ask:
			d = verdict.Ask
		}
	}
	if d == verdict.Ask && !canAsk(sf) {
		return verdict.Deny
	}
	return d
}

func hasAskOnly(bs []Blocker) bool {
	ask := false
	for _, b := range bs {
		switch b.Decision {
		case verdict.Deny:
			return false
		case verdict.Ask:
			ask = true
		}
	}
	return ask
}

// canAsk reports whether a person can answer the session's cards.
func canAsk(sf *surface.Surface) bool { return sf.ApprovalChannel() }

// confinedKinds are the native kinds Warden executes itself on paths: they act only inside the
// workspace. A shell command's own effects are the sandbox's to confine; its working directory
// is checked here.
var confinedKinds = map[string]bool{
	"files_read": true, "files_list": true, "files_find": true, "files_search": true, "files_inspect": true,
	"files_write": true, "files_edit": true, "files_patch": true, "files_delete": true,
	"git_status": true, "git_diff": true, "spawn_subagent": true, "shell_exec": true,
}

// checkWorkspace denies a native file tool that would act outside the session's workspace.
func checkWorkspace(v *Verdict, paths *action.Resolver, a *action.Action) {
	if paths == nil || !confinedKinds[a.Kind] {
		return
	}
	inside := func(p string) bool { return p == paths.Root || strings.HasPrefix(p, paths.Root+"/") }
	check := func(p string) {
		if !inside(p) {
			v.block(Blocker{Code: CodeOutsideWorkspace, Decision: verdict.Deny,
				Detail: fmt.Sprintf("%s is outside the workspace %s", p, paths.Root)})
		}
	}
	if a.Kind == "shell_exec" {
		if cwd, ok := a.Paths["cwd"]; ok {
			check(cwd)
		}
		return
	}
	for _, e := range a.Effects {
		check(e.Path)
	}
}

// checkBoundaries judges the action's effects and commands against the hard blocks. enforced
// says the kernel will refuse every blocked open of the command's (Session.Enforced).
func checkBoundaries(v *Verdict, set *boundary.Set, view *action.View, a *action.Action, enforced bool) {
	if set == nil {
		return
	}
	if err := set.Invalid(); err != nil {
		v.block(Blocker{Code: CodeBoundaryInvalid, Decision: verdict.Deny,
			Detail: "the stored hard-block rules do not validate, so every action is blocked: " + err.Error()})
		return
	}
	var hits []boundary.Hit
	for _, e := range a.Effects {
		if e.Recursive && enforced && e.Op == action.OpRead {
			// What is below is refused at its open, if a rule blocks it: the read of the tree
			// runs, and is judged on the path it names (a rule on that path itself blocks).
			hits = set.CheckPath(e.Op, e.Path, false, hits[:0])
			for _, h := range hits {
				v.block(hardBlock(h, fmt.Sprintf("%s %s", e.Op, e.Path)))
			}
			continue
		}
		if e.Recursive {
			// A recursive effect that some rule could block below (most meet a glob such as
			// "**/x.env") is judged on what is really below it; the rules' answer on the path
			// alone, sorted, is needed only where the tree cannot be seen.
			var may bool
			if may, hits = set.MayBlock(e.Op, e.Path, true, hits); !may {
				continue
			}
			if below, ok := narrowTree(set, view, e); ok {
				for _, h := range below {
					what := fmt.Sprintf("%s %s", e.Op, h.path)
					if h.path != e.Path {
						what += " (under " + e.Path + ")"
					}
					v.block(hardBlock(h.hit, what))
				}
				continue
			}
		}
		hits = set.CheckPath(e.Op, e.Path, e.Recursive, hits[:0])
		for _, h := range hits {
			v.block(hardBlock(h, fmt.Sprintf("%s %s", e.Op, e.Path)))
		}
	}
	if a.Command != "" {
		// Each command's Normalized form, all of them slices of one string.
		size := 0
		for _, c := range a.Commands {
			for _, w := range c.Argv {
				size += len(w) + 1
			}
		}
		var b strings.Builder
		b.Grow(size)
		bounds := make([]int, 0, 2*len(a.Commands))
		for _, c := range a.Commands {
			bounds = append(bounds, b.Len())
			for k, w := range c.Argv {
				if k > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(w)
			}
			bounds = append(bounds, b.Len())
		}
		all := b.String()
		norm := make([]string, len(a.Commands))
		for i := range norm {
			norm[i] = all[bounds[2*i]:bounds[2*i+1]]
		}
		hits = set.CheckCommand(a.Command, norm, hits[:0])
		for _, h := range hits {
			v.block(hardBlock(h, "execute "+h.Target))
		}
	}
}

func hardBlock(h boundary.Hit, what string) Blocker {
	detail := what
	if h.Rule.Reason != "" {
		detail += ": " + h.Rule.Reason
	}
	return Blocker{Code: CodeHardBlock, Rule: h.Rule.ID, Detail: detail, Decision: verdict.Deny}
}

func checkConstraints(v *Verdict, sf *surface.Surface, t *policy.Tool, args map[string]any) {
	if len(t.Constraints) == 0 {
		return
	}
	act := activation(sf, args)
	for i, c := range t.Constraints {
		rule := fmt.Sprintf("%s#constraint%d", t.Name, i+1)
		ok, err := c.Eval(act)
		switch {
		case err != nil:
			v.block(Blocker{Code: CodeConstraint, Rule: rule, Decision: verdict.Deny,
				Detail: fmt.Sprintf("the constraint %s could not be evaluated: %v", c.Source, err)})
		case !ok:
			msg := c.Message
			if msg == "" {
				msg = "the call breaks the constraint " + c.Source
			}
			v.block(Blocker{Code: CodeConstraint, Rule: rule, Decision: c.Otherwise, Detail: msg})
		}
	}
}

// activation is what a constraint sees of a call.
func activation(sf *surface.Surface, args map[string]any) policy.Activation {
	session := map[string]any{"role": sf.Role().ID, "tenant": sf.Tenant().ID, "owner": sf.Owner(), "profile": ""}
	if pr := sf.Profile(); pr != nil {
		session["profile"] = pr.ID
	}
	switches := map[string]any{}
	for _, st := range sf.Env().Switches() {
		switch st.Switch.Kind {
		case policy.RuleModes:
			switches[st.Switch.Name] = st.Mode
		case policy.RuleInteger:
			switches[st.Switch.Name] = int64(st.Int)
		default:
			switches[st.Switch.Name] = st.On
		}
	}
	return policy.Activation{Args: args, Session: session, Switches: switches}
}

func checkGate(v *Verdict, sf *surface.Surface, tool string, effects []action.Effect) {
	g := sf.Gate(tool)
	if len(g.Effects) > 0 && (g.Code == verdict.ApprovalRequired || g.Code == verdict.NoApprovalChannel) {
		found := func(e policy.Effect) bool {
			return slices.ContainsFunc(effects, func(f action.Effect) bool { return string(f.Op) == string(e) })
		}
		if !slices.ContainsFunc(g.Effects, found) {
			return // the approval covers only calls with those effects, and review found none
		}
		if g.Code == verdict.ApprovalRequired {
			g.Reason = fmt.Sprintf("it asks a person before each call that would %s while approvals are on", joinOps(g.Effects))
		} else {
			g.Reason += fmt.Sprintf(" for a call that would %s", joinOps(g.Effects))
		}
	}
	switch g.Code {
	case "":
	case verdict.ApprovalRequired:
		v.block(Blocker{Code: g.Code, Detail: g.Reason, Decision: verdict.Ask})
	default:
		v.block(Blocker{Code: g.Code, Detail: g.Reason, Decision: verdict.Deny})
	}
}

// Summary is a one-line account of a verdict, for logs and the CLI.
func (v *Verdict) Summary() string {
	if len(v.Blockers) == 0 {
		return v.Decision.String()
	}
	codes := make([]string, len(v.Blockers))
	for i, b := range v.Blockers {
		codes[i] = string(b.Code)
	}
	return v.Decision.String() + ": " + strings.Join(codes, ", ")
}

// joinOps is "delete" or "write or delete".
func joinOps(es []policy.Effect) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = string(e)
	}
	return strings.Join(s, " or ")
}
