package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/claudecode"
	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/store/sqlite"
)

// hookProject is a project directory as Claude Code would run in: a Go file and a git
// repository.
func hookProject(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() { println(\"hi\") }\n")
	if err := os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// hookFixture is a fixture of testdata/claude-code with the project's directory, the home and
// the secret in place of $PROJECT, $HOME and $SECRET.
func hookFixture(t *testing.T, name, project string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "claude-code", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	return []byte(strings.NewReplacer("$PROJECT", project, "$HOME", home, "$SECRET", hookSecret).Replace(string(data)))
}

// hookSecret is the value of a connector's credential in the tests' environment.
const hookSecret = "ghp_hook17TestCredentialValue"

// hookRun runs the real warden binary as Claude Code runs a command hook: the event on stdin,
// in the project directory, with CLAUDE_PROJECT_DIR set.
func hookRun(t *testing.T, project string, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	bin, err := buildWarden()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"hook", "claude-code"}, args...)...)
	cmd.Dir = project
	cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+project, "GITHUB_TOKEN="+hookSecret)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errOut.String(), code
}

// hookAnswer decodes a PreToolUse answer.
func hookAnswer(t *testing.T, out string) *claudecode.Specific {
	t.Helper()
	var a claudecode.Answer
	if err := json.Unmarshal([]byte(out), &a); err != nil || a.HookSpecificOutput == nil {
		t.Fatalf("answer %q is not Claude Code's hook output: %v", out, err)
	}
	if a.HookSpecificOutput.HookEventName != claudecode.PreToolUse {
		t.Errorf("hookEventName %q", a.HookSpecificOutput.HookEventName)
	}
	return a.HookSpecificOutput
}

// callEvents are the audit events of a call, from the store.
func callEvents(t *testing.T, db, callID string) []*audit.Event {
	t.Helper()
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Query(context.Background(), audit.Filter{CallID: callID})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// hookPolicy is the quickstart policy with a connector whose credential is GITHUB_TOKEN.
func hookPolicy(t *testing.T) string {
	t.Helper()
	qs, err := os.ReadFile("../../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "warden.yaml")
	writeFile(t, p, string(qs)+`
connectors:
  - id: github
    name: GitHub
    effect: read
    grantable: true
    hostEnv: [GITHUB_TOKEN]
    tools:
      - name: mcp__github__get_issue
`)
	return p
}

// TestHookClaudeCodeTools feeds the hook the event Claude Code sends for each of its tools (the
// fixtures follow its hook documentation) and checks the answer, the exit status and the
// decision recorded in the audit trail, harness and Claude Code's session named.
func TestHookClaudeCodeTools(t *testing.T) {
	project := hookProject(t)
	pol := hookPolicy(t)
	tests := []struct {
		fixture  string
		args     []string
		decision string
		reason   string // in the reason
		audited  bool
	}{
		{fixture: "bash", decision: "allow", audited: true},
		{fixture: "bash_delete", decision: "ask", reason: "approval_required", audited: true},
		{fixture: "read", decision: "allow", audited: true},
		{fixture: "read_dotenv", decision: "deny", reason: "rule dotenv", audited: true},
		{fixture: "write", decision: "allow", audited: true},
		{fixture: "edit", decision: "allow", audited: true},
		{fixture: "multiedit", decision: "allow", audited: true},
		{fixture: "multiedit_hook", decision: "deny", reason: "rule git-hooks", audited: true},
		{fixture: "glob", decision: "allow", audited: true},
		{fixture: "grep", decision: "allow", audited: true},
		{fixture: "webfetch", decision: "allow", audited: true},
		// The quickstart has no search provider: the policy refuses WebSearch.
		{fixture: "websearch", decision: "deny", reason: "permission_denied", audited: true},
		{fixture: "notebookedit", decision: "allow", audited: true},
		{fixture: "task", decision: "allow", audited: true},
		// A connector's tool, by the name Claude Code and the policy share.
		{fixture: "mcp", decision: "allow", audited: true},
		{fixture: "todowrite", decision: "ask", reason: "cannot review Claude Code's tool TodoWrite", audited: true},
		{fixture: "todowrite", args: []string{"--unknown", "deny"}, decision: "deny", reason: "cannot review", audited: true},
		// Warden's own gateway reviews its tools itself.
		{fixture: "gateway", decision: "allow", reason: "Warden's gateway"},
	}
	db := filepath.Join(filepath.Dir(pol), defaultDB)
	for _, tt := range tests {
		t.Run(tt.fixture+strings.Join(tt.args, ""), func(t *testing.T) {
			ev := hookFixture(t, tt.fixture, project)
			out, errOut, code := hookRun(t, project, ev, append([]string{"--policy", pol}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit status %d, stderr %q", code, errOut)
			}
			a := hookAnswer(t, out)
			if a.PermissionDecision != tt.decision || !strings.Contains(a.PermissionDecisionReason, tt.reason) {
				t.Errorf("answer %s %q; want %s with %q", a.PermissionDecision, a.PermissionDecisionReason, tt.decision, tt.reason)
			}
			if a.UpdatedInput != nil {
				t.Errorf("updatedInput %v without --sandbox", a.UpdatedInput)
			}
			var in claudecode.Event
			_ = json.Unmarshal(ev, &in)
			evs := callEvents(t, db, in.ToolUseID)
			if !tt.audited {
				if len(evs) != 0 {
					t.Errorf("recorded %d events; the gateway records its own", len(evs))
				}
				return
			}
			if len(evs) == 0 {
				t.Fatalf("no audit event for %s", in.ToolUseID)
			}
			e := evs[len(evs)-1]
			if e.Kind != audit.KindDecision || e.Decision != tt.decision || e.Tool != in.ToolName ||
				e.Session != in.SessionID || e.Harness != harnessClaudeCode || e.Role != "person" || e.Tenant != "default" {
				t.Errorf("audit event %+v", e)
			}
		})
	}
}

// TestHookClaudeCodeDefaultStore: without --db and a policy file, the audit trail is
// .claude/warden.db in the project, made on first use.
func TestHookClaudeCodeDefaultStore(t *testing.T) {
	project := hookProject(t)
	out, errOut, code := hookRun(t, project, hookFixture(t, "read", project))
	if code != 0 {
		t.Fatalf("exit status %d, stderr %q", code, errOut)
	}
	if a := hookAnswer(t, out); a.PermissionDecision != "allow" {
		t.Errorf("answer %+v", a)
	}
	if evs := callEvents(t, filepath.Join(project, ".claude", defaultDB), "toolu_01read"); len(evs) != 1 || evs[0].Decision != "allow" {
		t.Errorf("events %+v", evs)
	}
}

// TestHookClaudeCodeFailsClosed: what the hook cannot judge blocks the call with exit status 2
// and the reason on stderr, never allows it.
func TestHookClaudeCodeFailsClosed(t *testing.T) {
	project := hookProject(t)
	read := hookFixture(t, "read", project)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, bad, "version: 1\nbuiltins: [{name: files_read, kind: nope}]\n")
	notDir := filepath.Join(t.TempDir(), "file")
	writeFile(t, notDir, "")
	tests := []struct {
		name  string
		stdin []byte
		args  []string
		want  string
	}{
		{"not json", []byte("{not json"), nil, "not a JSON object"},
		{"no tool input", []byte(`{"session_id":"s","cwd":"/","hook_event_name":"PreToolUse","tool_name":"Read"}`), nil, "tool_input of Read is missing"},
		{"other event", []byte(`{"session_id":"s","cwd":"/","hook_event_name":"Stop"}`), nil, `hook_event_name "Stop"`},
		{"relative cwd", []byte(`{"session_id":"s","cwd":"proj","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{}}`), nil, "not an absolute path"},
		{"missing policy", read, []string{"--policy", filepath.Join(t.TempDir(), "none.yaml")}, "read policy"},
		{"bad policy", read, []string{"--policy", bad}, "does not compile"},
		{"store fails", read, []string{"--db", filepath.Join(notDir, "w.db")}, "audit store"},
		{"bad --unknown", read, []string{"--unknown", "allow"}, "--unknown"},
		{"server down", read, []string{"--server", "http://127.0.0.1:1", "--token", "x"}, "server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := hookRun(t, project, tt.stdin, tt.args...)
			if code != 2 || out != "" || !strings.Contains(errOut, "Warden blocked this call") || !strings.Contains(errOut, tt.want) {
				t.Errorf("status %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, tt.want)
			}
		})
	}
}

// TestHookClaudeCodePostToolUse: a result is recorded as the call's outcome; one holding a
// connector's credential is reported to the user and to Claude, and recorded.
func TestHookClaudeCodePostToolUse(t *testing.T) {
	project := hookProject(t)
	pol := hookPolicy(t)
	db := filepath.Join(filepath.Dir(pol), defaultDB)

	out, errOut, code := hookRun(t, project, hookFixture(t, "post_bash", project), "--policy", pol)
	if code != 0 || out != "" {
		t.Fatalf("status %d, stdout %q, stderr %q", code, out, errOut)
	}
	if evs := callEvents(t, db, "toolu_01bash"); len(evs) != 1 || evs[0].Kind != audit.KindOutcome || evs[0].Outcome != "ok" || evs[0].Error != "" {
		t.Errorf("events %+v", evs)
	}

	out, errOut, code = hookRun(t, project, hookFixture(t, "post_leak", project), "--policy", pol)
	if code != 0 {
		t.Fatalf("status %d, stderr %q", code, errOut)
	}
	var a claudecode.Answer
	if err := json.Unmarshal([]byte(out), &a); err != nil || !strings.Contains(a.SystemMessage, "GITHUB_TOKEN") ||
		a.HookSpecificOutput == nil || a.HookSpecificOutput.HookEventName != claudecode.PostToolUse {
		t.Fatalf("answer %q: %v", out, err)
	}
	if strings.Contains(out, hookSecret) {
		t.Errorf("the report repeats the value: %s", out)
	}
	evs := callEvents(t, db, "toolu_01leak")
	if len(evs) != 1 || !strings.Contains(evs[0].Error, "GITHUB_TOKEN") || strings.Contains(evs[0].Error, hookSecret) {
		t.Errorf("events %+v", evs)
	}
}

// TestHookClaudeCodeSandbox: with --sandbox an allowed Bash call is answered with updatedInput
// whose command, run by a real bash as Claude Code's shell would, runs in Warden's sandbox: a
// write in the project succeeds, one outside it fails, and the hard blocks hold at the system
// call.
func TestHookClaudeCodeSandbox(t *testing.T) {
	sandboxtest.Need(t)
	project := hookProject(t)
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "w.db")
	rewrite := func(command string) map[string]any {
		t.Helper()
		ev := map[string]any{"session_id": "s", "cwd": project, "hook_event_name": "PreToolUse", "tool_name": "Bash",
			"tool_input": map[string]any{"command": command, "description": "d", "timeout": 60000.0}, "tool_use_id": "toolu_sb"}
		data, _ := json.Marshal(ev)
		out, errOut, code := hookRun(t, project, data, "--sandbox", "--db", db)
		if code != 0 {
			t.Fatalf("status %d, stderr %q", code, errOut)
		}
		a := hookAnswer(t, out)
		if a.PermissionDecision != "allow" || a.UpdatedInput == nil {
			t.Fatalf("answer %+v; want allow with updatedInput", a)
		}
		if a.UpdatedInput["description"] != "d" || a.UpdatedInput["timeout"] != 60000.0 {
			t.Errorf("the other fields are not kept: %v", a.UpdatedInput)
		}
		return a.UpdatedInput
	}
	bash := func(command string) (string, int) {
		t.Helper()
		cmd := exec.Command("bash", "-c", command)
		cmd.Dir = project
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}

	// Quotes, $ and newlines of the original reach bash -c unchanged.
	in := rewrite("echo 'it'\"'\"'s' \"$((1+2))\" > inside.txt")
	if out, code := bash(in["command"].(string)); code != 0 {
		t.Fatalf("inside: status %d, output %q", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(project, "inside.txt")); string(b) != "it's 3\n" {
		t.Errorf("inside.txt holds %q", b)
	}

	target := filepath.Join(outside, "escaped.txt")
	in = rewrite("echo x > " + target)
	if out, code := bash(in["command"].(string)); code == 0 {
		t.Errorf("a write outside the project succeeded: %q", out)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists: %v", target, err)
	}

	// An attacker's command that tries to end the wrapper's quoting (a quote, a newline, a
	// backslash before the quote) so that a part of it runs in Claude Code's own shell, outside
	// the sandbox: every part still runs inside, and the host write fails.
	for i, attack := range []string{
		"true'; echo x > " + target + "; echo '",
		"true\\'; echo x > " + target + " #",
		"true\necho x > " + target,
		`true"; echo x > ` + target + `; echo "`,
	} {
		in = rewrite(attack)
		bash(in["command"].(string))
		if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("attack %d (%q) wrote %s outside the sandbox: %v", i, attack, target, err)
		}
	}

	// An ask runs in the sandbox too, whatever the user answers.
	ev, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": project, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "rm -rf build"}, "tool_use_id": "toolu_sb2"})
	out, errOut, code := hookRun(t, project, ev, "--sandbox", "--db", db)
	if a := hookAnswer(t, out); code != 0 || a.PermissionDecision != "ask" || a.UpdatedInput == nil ||
		!strings.Contains(a.UpdatedInput["command"].(string), " exec --workspace ") {
		t.Errorf("an asked Bash call: status %d, %+v, stderr %q; want ask with the sandboxed command", code, a, errOut)
	}

	// With the hard blocks enforced at the system call, a recursive read of a project that
	// holds a .env is allowed (review.Session.Enforced), and the .env is refused at its open.
	writeFile(t, filepath.Join(project, ".env"), "SECRET=1\n")
	writeFile(t, filepath.Join(project, "notes.txt"), "SECRET is a word\n")
	in = rewrite(`grep -r SECRET .`)
	out, _ = bash(in["command"].(string))
	if !strings.Contains(out, "notes.txt") || strings.Contains(out, "SECRET=1") {
		t.Errorf("grep -r in the sandbox: %q; want notes.txt and not the .env", out)
	}
}

// TestHookClaudeCodeServer: with --server the hook reviews through warden serve's review API
// with an agent token. An allowed Read is allowed and a .env denied, each recorded by the
// server with the harness and Claude Code's session; a delete asks, its card is answered allow
// over REST while the hook waits (the test follows the approval stream, it does not sleep), and
// the hook allows; a card nobody answers within --wait is a deny naming the card.
func TestHookClaudeCodeServer(t *testing.T) {
	s := serveForTest(t)
	project := hookProject(t)
	args := []string{"--server", s.url, "--token", s.agent}

	for _, tt := range []struct{ fixture, want string }{{"read", "allow"}, {"read_dotenv", "deny"}} {
		fixture, want := tt.fixture, tt.want
		out, errOut, code := hookRun(t, project, hookFixture(t, fixture, project), args...)
		if code != 0 {
			t.Fatalf("%s: status %d, stderr %q", fixture, code, errOut)
		}
		if a := hookAnswer(t, out); a.PermissionDecision != want {
			t.Errorf("%s: %+v; want %s", fixture, a, want)
		}
	}
	var recorded []string
	for _, e := range s.events(t, "") {
		if e.Harness == harnessClaudeCode && e.Session == "9f3c2a4e-1b7d-4c55-8e0a-6d2f1c9b7a31" {
			recorded = append(recorded, e.Tool+":"+e.Decision)
		}
	}
	if strings.Join(recorded, ",") != "files_read:allow,files_read:deny" {
		t.Errorf("the server recorded %v", recorded)
	}

	// PostToolUse reports the outcome under the tool use's id, which the review recorded the
	// call under; a PostToolUse the server cannot place is said, and blocks nothing.
	readEvent := map[string]any{}
	if err := json.Unmarshal(hookFixture(t, "read", project), &readEvent); err != nil {
		t.Fatal(err)
	}
	readEvent["hook_event_name"] = "PostToolUse"
	readEvent["tool_response"] = map[string]any{"type": "text", "file": map[string]any{"filePath": "main.go", "content": "package main"}}
	post, _ := json.Marshal(readEvent)
	if out, errOut, code := hookRun(t, project, post, args...); code != 0 || strings.TrimSpace(out) != "" {
		t.Errorf("PostToolUse: status %d, out %q, stderr %q", code, out, errOut)
	}
	var outcomes []string
	for _, e := range s.events(t, fmt.Sprint(readEvent["tool_use_id"])) {
		outcomes = append(outcomes, e.Kind+":"+e.Decision+e.Outcome)
	}
	if strings.Join(outcomes, ",") != "decision:allow,outcome:ok" {
		t.Errorf("the read's events: %v; want its decision and its outcome", outcomes)
	}
	readEvent["tool_use_id"] = "toolu_01NeverJudged"
	post, _ = json.Marshal(readEvent)
	if out, _, code := hookRun(t, project, post, args...); code != 0 || !strings.Contains(out, "was not recorded") {
		t.Errorf("PostToolUse of a call never judged: status %d, out %q", code, out)
	}

	stream := s.cards(t)
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, code := hookRun(t, project, hookFixture(t, "bash_delete", project), append(args, "--wait", "2m")...)
		done <- result{out, errOut, code}
	}()
	c := stream.next(t)
	if c.State != "pending" || c.Tool != "shell_exec" {
		t.Fatalf("card %+v; want the hook's shell_exec, pending", c)
	}
	if code, out := apiDo(t, "POST", s.url+"/api/v1/approvals/"+c.ID, s.admin, `{"answer":"allow_once"}`); code != 200 {
		t.Fatalf("answer: %d %s", code, out)
	}
	r := <-done
	if r.code != 0 {
		t.Fatalf("status %d, stderr %q", r.code, r.errOut)
	}
	if a := hookAnswer(t, r.out); a.PermissionDecision != "allow" {
		t.Errorf("after the card was allowed: %+v; want allow", a)
	}

	out, errOut, code := hookRun(t, project, hookFixture(t, "bash_delete", project), append(args, "--wait", "0s")...)
	if code != 0 {
		t.Fatalf("status %d, stderr %q", code, errOut)
	}
	if a := hookAnswer(t, out); a.PermissionDecision != "deny" || !strings.Contains(a.PermissionDecisionReason, "no answer from an approver within 0s; card ") {
		t.Errorf("nobody answered: %+v; want deny naming the card", a)
	}

	// With --sandbox and the rules the sandbox enforces, the server is told the command runs
	// sandboxed: a recursive read of a project holding a .env is allowed (the kernel refuses
	// the .env), rewritten to run in the sandbox; without the rules it is denied.
	writeFile(t, filepath.Join(project, ".env"), "KEY=x\n")
	grep, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": project, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "grep -r hello ."}, "tool_use_id": "toolu_grep"})
	rules := filepath.Join(t.TempDir(), "rules.json")
	writeFile(t, rules, `{"version":1,"hardBlocks":[{"id":"dotenv","enabled":true,"type":"path","pattern":"**/.env","match":"glob","operations":["read"],"reason":"secrets"}]}`)
	out, errOut, code = hookRun(t, project, grep, append(args, "--sandbox", "--boundaries", rules)...)
	if a := hookAnswer(t, out); code != 0 || a.PermissionDecision != "allow" || !strings.Contains(fmt.Sprint(a.UpdatedInput["command"]), "--boundaries") {
		t.Errorf("grep -r sandboxed: status %d, %+v, stderr %q; want allow, rewritten with the rules", code, a, errOut)
	}
	out, errOut, code = hookRun(t, project, grep, append(args, "--sandbox")...)
	if a := hookAnswer(t, out); code != 0 || a.PermissionDecision != "deny" {
		t.Errorf("grep -r sandboxed without rules: status %d, %+v, stderr %q; want deny", code, a, errOut)
	}

	// A token the server does not know blocks the call.
	if _, errOut, code := hookRun(t, project, hookFixture(t, "read", project), "--server", s.url, "--token", "nope"); code != 2 || !strings.Contains(errOut, "refused the review (401") {
		t.Errorf("a bad token: status %d, stderr %q", code, errOut)
	}
}

// TestHookClaudeCodeBashCwd: a Bash call is reviewed from the directory Claude Code's shell is
// in, not the project's root.
func TestHookClaudeCodeBashCwd(t *testing.T) {
	project := hookProject(t)
	sub := filepath.Join(project, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(t.TempDir(), "rules.json")
	writeFile(t, rules, `{"version":1,"hardBlocks":[{"id":"sub-secret","enabled":true,"type":"path","pattern":"`+sub+`/secret.txt","match":"exact","operations":["read"],"reason":"the sub's secret"}]}`)
	ev, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": sub, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "cat secret.txt"}, "tool_use_id": "toolu_cwd"})
	out, errOut, code := hookRun(t, project, ev, "--boundaries", rules, "--db", filepath.Join(t.TempDir(), "w.db"))
	if a := hookAnswer(t, out); code != 0 || a.PermissionDecision != "deny" || !strings.Contains(a.PermissionDecisionReason, "sub-secret") {
		t.Errorf("status %d, %+v, stderr %q; want denied by sub-secret", code, a, errOut)
	}
}

// TestHookClaudeCodeAfterInit: the hook command warden init claude-code writes into
// .claude/settings.json, run by a shell as Claude Code runs it, answers.
func TestHookClaudeCodeAfterInit(t *testing.T) {
	bin, err := buildWarden()
	if err != nil {
		t.Fatal(err)
	}
	project := hookProject(t)
	if _, errOut, code := run(t, "init", "claude-code", "--dir", project); code != 0 {
		t.Fatalf("init: status %d, stderr %q", code, errOut)
	}
	data, err := os.ReadFile(filepath.Join(project, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		Hooks map[string][]struct {
			Matcher string
			Hooks   []struct{ Type, Command string }
		}
	}
	if err := json.Unmarshal(data, &settings); err != nil || len(settings.Hooks["PreToolUse"]) != 1 || len(settings.Hooks["PreToolUse"][0].Hooks) != 1 {
		t.Fatalf("settings %s: %v", data, err)
	}
	for _, tt := range []struct{ fixture, want string }{{"read", "allow"}, {"read_dotenv", "deny"}} {
		cmd := exec.Command("bash", "-c", settings.Hooks["PreToolUse"][0].Hooks[0].Command)
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "CLAUDE_PROJECT_DIR="+project)
		cmd.Stdin = bytes.NewReader(hookFixture(t, tt.fixture, project))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", tt.fixture, err)
		}
		if a := hookAnswer(t, string(out)); a.PermissionDecision != tt.want {
			t.Errorf("%s: %+v; want %s", tt.fixture, a, tt.want)
		}
	}
}

// TestHookClaudeCodeConcurrent: Claude Code runs the hooks of parallel tool calls at once; the
// first ones make the store together, and every decision is recorded.
func TestHookClaudeCodeConcurrent(t *testing.T) {
	project := hookProject(t)
	db := filepath.Join(t.TempDir(), "w.db")
	const n = 6
	errs := make(chan string, n)
	for i := range n {
		go func() {
			ev, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": project, "hook_event_name": "PreToolUse", "tool_name": "Read",
				"tool_input": map[string]any{"file_path": "main.go"}, "tool_use_id": fmt.Sprintf("toolu_par%d", i)})
			out, errOut, code := hookRun(t, project, ev, "--db", db)
			if code != 0 || !strings.Contains(out, `"permissionDecision":"allow"`) {
				errs <- fmt.Sprintf("hook %d: status %d, stdout %q, stderr %q", i, code, out, errOut)
				return
			}
			errs <- ""
		}()
	}
	for range n {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	for i := range n {
		if evs := callEvents(t, db, fmt.Sprintf("toolu_par%d", i)); len(evs) != 1 || evs[0].Decision != "allow" {
			t.Errorf("hook %d recorded %+v", i, evs)
		}
	}
}

// TestHookClaudeCodeModel: where the policy routes by model, the hook's --model decides the
// route as a session's model does: a held-back model (or none) outside the owner's tenant
// gets the read-only route, so a Write is refused; a certified model keeps it, and so does the
// owner's tenant (--owner).
func TestHookClaudeCodeModel(t *testing.T) {
	project := hookProject(t)
	pol := hookPolicy(t)
	data, err := os.ReadFile(pol)
	if err != nil {
		t.Fatal(err)
	}
	// A guest tenant beside the quickstart's own (the owner's, where every model runs).
	withGuest := strings.Replace(string(data), "    owner: true\n", "    owner: true\n  - id: guest\n    name: Guest\n", 1)
	if withGuest == string(data) {
		t.Fatal("the quickstart's tenant is not where the test expects it")
	}
	writeFile(t, pol, withGuest+`
models:
  - id: model-certified
  - id: model-held-back
    certified: false
`)
	db := filepath.Join(t.TempDir(), "w.db")
	write := hookFixture(t, "write", project)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "model-certified"}, "allow"},
		{[]string{"--model", "model-held-back"}, "deny"},
		{nil, "deny"}, // no model stated: not certified
		{[]string{"--model", "model-held-back", "--owner"}, "allow"},
	} {
		out, errOut, code := hookRun(t, project, write, append([]string{"--policy", pol, "--db", db, "--tenant", "guest"}, tt.args...)...)
		if code != 0 {
			t.Fatalf("%v: status %d, stderr %q", tt.args, code, errOut)
		}
		if a := hookAnswer(t, out); a.PermissionDecision != tt.want {
			t.Errorf("%v: a Write answered %s (%s); want %s", tt.args, a.PermissionDecision, a.PermissionDecisionReason, tt.want)
		}
	}
}
