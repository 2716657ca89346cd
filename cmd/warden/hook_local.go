package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/claudecode"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// hookStore is what the standalone hook keeps: the audit trail and the tenant's stored hard
// blocks.
type hookStore interface {
	audit.Log
	boundary.Store
	Close() error
}

// localHook answers hook events from a local policy and store.
type localHook struct {
	o       *hookOptions
	pol     *policy.Policy
	sf      *surface.Surface
	db      hookStore
	set     *boundary.Set
	storeAt string // the SQLite file ("" for PostgreSQL), whose directory holds the sandbox's rules
}

// openLocal loads the policy, opens the session's surface and the store, and compiles the
// tenant's hard blocks.
func (o *hookOptions) openLocal(ctx context.Context, cmd *cobra.Command, root *rootOptions, ev *claudecode.Event) (*localHook, error) {
	name, data, err := o.policyBytes(root)
	if err != nil {
		return nil, err
	}
	p, err := parsePolicy(name, data)
	if err != nil {
		return nil, fmt.Errorf("policy %s does not compile: %w", name, err)
	}
	if o.spec.Tenant == "" {
		if o.spec.Tenant, err = defaultTenant(p); err != nil {
			return nil, err
		}
	}
	if o.spec.Harness == "" {
		if _, ok := p.Harness(harnessClaudeCode); ok {
			o.spec.Harness = harnessClaudeCode
		}
	}
	sf, err := surface.Open(p.Env(os.LookupEnv), o.spec)
	if err != nil {
		return nil, fmt.Errorf("the session's surface: %w", err)
	}
	l := &localHook{o: o, pol: p, sf: sf}
	if err := l.openStore(ctx, name, ev); err != nil {
		return nil, err
	}
	pr, err := boundary.FromPolicy(p)
	if err != nil {
		l.close()
		return nil, err
	}
	var stored []byte
	if o.boundaries != "" {
		if stored, err = os.ReadFile(o.boundaries); err != nil {
			l.close()
			return nil, fmt.Errorf("--boundaries: %w", err)
		}
	} else if ev.HookEventName == claudecode.PreToolUse {
		st, err := l.db.Boundaries(ctx, o.spec.Tenant)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("the tenant's stored hard blocks: %w", err)
		}
		if st != nil {
			stored = st.Data
		}
	}
	l.set = boundary.Merge(pr.For(o.spec.Tenant), stored, boundary.Options{Home: o.home})
	return l, nil
}

// policyBytes is the policy text: --policy, else the root's choice (-c, ./warden.yaml, the
// quickstart).
func (o *hookOptions) policyBytes(root *rootOptions) (string, []byte, error) {
	if o.policy != "" {
		data, err := os.ReadFile(o.policy)
		if err != nil {
			return "", nil, fmt.Errorf("read policy: %w", err)
		}
		return o.policy, data, nil
	}
	return root.policyBytes()
}

// openStore opens the store for the audit trail, making the SQLite file if it is missing: the
// default is warden.db next to the policy file, or .claude/warden.db in the project.
func (l *localHook) openStore(ctx context.Context, policyName string, ev *claudecode.Event) error {
	so := l.o.store
	so.creates = true
	if so.db == "" && so.postgres == "" {
		so.db = l.o.defaultDB(policyName)
		if err := os.MkdirAll(filepath.Dir(so.db), 0o700); err != nil {
			return fmt.Errorf("the audit store's directory: %w", err)
		}
	}
	db, _, err := so.open(ctx)
	if err != nil {
		return fmt.Errorf("the audit store: %w", err)
	}
	l.db = db
	if so.postgres == "" {
		l.storeAt, _ = filepath.Abs(so.db)
	}
	return nil
}

// defaultDB is the store's file when --db is not given.
func (o *hookOptions) defaultDB(policyName string) string {
	if policyName != examples.QuickstartName {
		return filepath.Join(filepath.Dir(policyName), defaultDB)
	}
	return filepath.Join(o.workspace, ".claude", defaultDB)
}

// walKept is the size up to which the hook leaves SQLite's WAL for the next process: closing
// the last connection checkpoints the WAL into the database file and syncs it, which costs
// more than the whole review, on every tool call.
const walKept = 4 << 20

// close closes the store, except an SQLite store whose WAL is small: the process is about to
// exit and its events are committed (in the WAL, as SQLite recovers them after any exit), so
// the checkpoint is left to the next opener, or to whichever hook finds the WAL grown.
func (l *localHook) close() {
	if l.db == nil {
		return
	}
	if l.storeAt != "" {
		if fi, err := os.Stat(l.storeAt + "-wal"); err == nil && fi.Size() < walKept {
			return
		}
	}
	l.db.Close()
}

// declared is the policy's tool of that name: its kind for a built-in, "" for another.
func (l *localHook) declared(name string) (string, bool) {
	t, ok := l.pol.Tool(name)
	if !ok {
		return "", false
	}
	if t.Server != nil && t.Server.Kind == policy.KindBuiltin {
		return t.Kind, true
	}
	return "", true
}

// decide reviews a PreToolUse call and records the decision before answering it.
func (l *localHook) decide(ctx context.Context, ev *claudecode.Event) (*claudecode.Answer, error) {
	e := l.event(ev, audit.KindDecision)
	calls, err := claudecode.Map(ev.ToolName, ev.ToolInput, ev.Cwd, l.declared)
	var unknown *claudecode.UnknownToolError
	switch {
	case errors.As(err, &unknown):
		decision, reason := l.o.unknownTool(err)
		e.Decision = decision
		e.Blockers = []audit.Blocker{{Code: string(verdict.UnsupportedTool), Detail: err.Error()}}
		if err := l.record(ctx, e); err != nil {
			return nil, err
		}
		return claudecode.Decide(decision, reason), nil
	case err != nil:
		// A call whose input is not the shape Claude Code documents is refused, and recorded.
		e.Decision = claudecode.Deny
		e.Blockers = []audit.Blocker{{Code: string(verdict.InvalidInput), Detail: err.Error()}}
		if err := l.record(ctx, e); err != nil {
			return nil, err
		}
		return claudecode.Decide(claudecode.Deny, "Warden: "+err.Error()), nil
	}

	if ev.ToolName == "Bash" && ev.Cwd != l.o.workspace {
		for _, c := range calls {
			if cmd, ok := c.Input["command"].(string); ok && c.Tool == "Bash" {
				// Claude Code's shell keeps its directory between calls, and the policy's Bash
				// takes no directory: review the command from where it runs, as the sandbox
				// rewrite runs it.
				c.Input["command"] = "cd " + claudecode.Quote(ev.Cwd) + " && " + cmd
			}
		}
	}
	sandboxed := l.o.sandbox && ev.ToolName == "Bash"
	var sb claudecode.Sandbox
	if sandboxed {
		if sb, err = l.sandbox(); err != nil {
			return nil, err
		}
	}
	paths, err := action.NewResolver(l.o.workspace, l.o.home)
	if err != nil {
		return nil, fmt.Errorf("the project directory: %w", err)
	}
	rv, err := review.New(review.Options{})
	if err != nil {
		return nil, err
	}
	s := &review.Session{ID: ev.SessionID, Surface: l.sf, Paths: paths, Boundaries: l.set,
		Unconfined: l.o.unconfined, Enforced: sandboxed}
	worst := verdict.Allow
	if len(calls) == 0 {
		worst = verdict.Deny
	}
	var lines []string
	for _, c := range calls {
		v := rv.Review(s, c.Tool, c.Input)
		worst = min(worst, v.Decision) // Deny < Ask < Allow
		for _, b := range v.Blockers {
			e.Blockers = append(e.Blockers, audit.Blocker{Code: string(b.Code), Rule: b.Rule, Detail: b.Detail})
			lines = append(lines, blockerLine(b.Code, b.Rule, b.Detail))
		}
		for _, r := range v.Rules {
			if !slices.Contains(e.Rules, r) {
				e.Rules = append(e.Rules, r)
			}
		}
	}
	e.Decision = worst.String()
	if err := l.record(ctx, e); err != nil {
		return nil, err
	}
	ans := claudecode.Decide(e.Decision, reasonOf(l.reasonWord(worst), lines))
	// An ask is rewritten too: the review judged the command as the sandbox runs it, and
	// Claude Code shows its user the command that will run.
	if worst != verdict.Deny && sandboxed {
		in, err := sb.SandboxInput(ev.ToolInput, ev.Cwd)
		if err != nil {
			return nil, err
		}
		ans.HookSpecificOutput.UpdatedInput = in
		ans.HookSpecificOutput.PermissionDecisionReason += " (runs in Warden's sandbox)"
	}
	return ans, nil
}

// reasonWord is how a decision reads in the reason Claude Code shows.
func (l *localHook) reasonWord(d verdict.Decision) string {
	switch d {
	case verdict.Allow:
		return "allowed by policy " + l.pol.Revision
	case verdict.Ask:
		return "asks you first"
	}
	return "denied"
}

func blockerLine(code verdict.Code, rule, detail string) string {
	if rule != "" {
		return fmt.Sprintf("%s (%s, rule %s)", detail, code, rule)
	}
	return fmt.Sprintf("%s (%s)", detail, code)
}

// event is the audit event of the hook call, with what every event of it says.
func (l *localHook) event(ev *claudecode.Event, kind string) *audit.Event {
	e := &audit.Event{Kind: kind, CallID: ev.ToolUseID, Tenant: l.sf.Tenant().ID, Session: ev.SessionID,
		Harness: harnessClaudeCode, Principal: whoAmI(), Role: l.sf.Role().ID, Tool: ev.ToolName,
		Digest: action.Digest(ev.ToolName, ev.ToolInput), PolicyRevision: l.pol.Revision}
	if pr := l.sf.Profile(); pr != nil {
		e.Profile = pr.ID
	}
	return e
}

// record appends the event; a decision that cannot be recorded is not given (fail closed).
func (l *localHook) record(ctx context.Context, e *audit.Event) error {
	if err := l.db.Append(ctx, e); err != nil {
		return fmt.Errorf("the decision could not be recorded in the audit trail, so it is not given: %w", err)
	}
	return nil
}

// sandbox is how an allowed Bash call runs confined: this warden binary's exec, in the project
// directory, with the session's hard blocks enforced at every system call.
func (l *localHook) sandbox() (claudecode.Sandbox, error) {
	self, err := os.Executable()
	if err != nil {
		return claudecode.Sandbox{}, fmt.Errorf("--sandbox: the path of this warden binary: %w", err)
	}
	if err := l.set.Invalid(); err != nil {
		// The review denies every call then; the sandbox needs no rules.
		return claudecode.Sandbox{Warden: self, Workspace: l.o.workspace}, nil
	}
	file, err := l.rulesFile()
	if err != nil {
		return claudecode.Sandbox{}, fmt.Errorf("--sandbox: the hard blocks for the sandbox: %w", err)
	}
	return claudecode.Sandbox{Warden: self, Workspace: l.o.workspace, Boundaries: file}, nil
}

// rulesFile writes the session's hard blocks as one document the sandbox reads, named by its
// content so that a file once written is never changed under a running command.
func (l *localHook) rulesFile() (string, error) {
	rules := l.set.Rules()
	seen := map[string]int{}
	for i := range rules {
		// The policy's and the stored document may share an id (both block): one document
		// needs distinct ones.
		if n := seen[rules[i].ID]; n > 0 {
			rules[i].ID += "-" + strconv.Itoa(n+1)
		}
		seen[rules[i].ID]++
	}
	data, err := json.Marshal(boundary.Document{Version: 1, HardBlocks: append([]boundary.Rule{}, rules...)})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	dir := filepath.Join(l.o.workspace, ".claude")
	if l.storeAt != "" {
		dir = filepath.Dir(l.storeAt)
	}
	file := filepath.Join(dir, "warden-rules-"+hex.EncodeToString(sum[:8])+".json")
	if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, data) {
		return file, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".warden-rules-*")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return file, os.Rename(tmp.Name(), file)
}

// outcome records a PostToolUse result as the call's outcome, and reports the protected
// values the session knows that the result holds.
func (l *localHook) outcome(ctx context.Context, ev *claudecode.Event) (*claudecode.Answer, error) {
	e := l.event(ev, audit.KindOutcome)
	e.Outcome = "ok"
	if failed(ev.ToolResponse) {
		e.Outcome = "error"
	}
	found := l.protectedIn(ev.ToolResponse)
	if len(found) > 0 {
		e.Error = "the result holds the protected value of " + strings.Join(found, ", ") + " (a hook cannot redact a built-in's result)"
	}
	if err := l.db.Append(ctx, e); err != nil {
		return nil, fmt.Errorf("the outcome could not be recorded in the audit trail: %w", err)
	}
	if len(found) == 0 {
		return nil, nil
	}
	msg := fmt.Sprintf("Warden: the result of %s holds the value of %s, a credential this session's policy protects; it is now in the conversation. Rotate it if it must stay secret.",
		ev.ToolName, strings.Join(found, ", "))
	return &claudecode.Answer{SystemMessage: msg, HookSpecificOutput: &claudecode.Specific{HookEventName: claudecode.PostToolUse,
		AdditionalContext: "Do not repeat, store or send the value of " + strings.Join(found, ", ") + " that this result holds."}}, nil
}

// minProtected is the shortest value looked for: shorter ones match by chance.
const minProtected = 8

// protectedIn names the protected values the session knows that the result holds: the host
// credentials of the policy's connectors (hostEnv), as this process's environment has them.
func (l *localHook) protectedIn(resp json.RawMessage) []string {
	if len(resp) == 0 {
		return nil
	}
	text := string(resp)
	var decoded any
	if json.Unmarshal(resp, &decoded) == nil {
		// Look in the strings as they are, not as JSON escapes them.
		var b strings.Builder
		collectStrings(decoded, &b)
		text += "\n" + b.String()
	}
	var found []string
	for srv := range l.pol.Servers() {
		for _, name := range srv.HostEnv {
			v, ok := os.LookupEnv(name)
			if ok && len(v) >= minProtected && strings.Contains(text, v) && !slices.Contains(found, name) {
				found = append(found, name)
			}
		}
	}
	return found
}

func collectStrings(v any, b *strings.Builder) {
	switch v := v.(type) {
	case string:
		b.WriteString(v)
		b.WriteByte('\n')
	case []any:
		for _, x := range v {
			collectStrings(x, b)
		}
	case map[string]any:
		for _, x := range v {
			collectStrings(x, b)
		}
	}
}

// failed says whether a tool_response reports a failure (Bash's interrupted, an error field).
func failed(resp json.RawMessage) bool {
	var r struct {
		Error       any  `json:"error"`
		IsError     bool `json:"is_error"`
		Interrupted bool `json:"interrupted"`
	}
	if json.Unmarshal(resp, &r) != nil {
		return false
	}
	return r.IsError || r.Interrupted || (r.Error != nil && r.Error != "" && r.Error != false)
}
