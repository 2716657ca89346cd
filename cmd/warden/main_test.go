package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/store/sqlite"
)

const scout = "../../examples/scout/warden.yaml"

// run executes the CLI in-process and returns stdout, stderr and the exit status.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	code := 0
	if err := cmd.Execute(); err != nil {
		code = exitCode(err, &errOut)
	}
	return out.String(), errOut.String(), code
}

func TestCheck(t *testing.T) {
	out, _, code := run(t, "check", "-c", scout)
	if code != 0 || !strings.Contains(out, "valid") {
		t.Fatalf("check scout: status %d, output %q", code, out)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, bad, `version: 1
builtins:
  - name: Bash
    kind: shell_exec
  - name: Bash
    kind: shell_exec
servers:
  - id: memory
    effect: read
    tools:
      - name: mcp__project__project_read
profiles:
  - id: p
    role: nobody
    tools: [Bash]
    limits: {runBudgetUsd: 1, maxTurns: 1, maxConcurrentRuns: 1}
`)
	out, _, code = run(t, "check", "-c", bad)
	if code != 1 {
		t.Fatalf("check bad: status %d; want 1\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 {
		t.Fatalf("want every error at once, got %d lines:\n%s", len(lines), out)
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(bad) + `:\d+:\d+: .+`)
	for _, l := range lines {
		if !re.MatchString(l) {
			t.Errorf("error line %q is not file:line:col: message", l)
		}
	}
	for _, want := range []string{":5:11: the tool Bash is declared twice", ":11:15: the tool mcp__project__project_read is declared in memory", ":14:11: profile p runs as role \"nobody\""} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

type surfaceJSONOut struct {
	Role   string   `json:"role"`
	Tools  []string `json:"tools"`
	Absent []struct {
		Tool, Filter, Reason string
	} `json:"absent"`
	ApprovalChannel       *bool `json:"approvalChannel"`
	ApprovalByElicitation *bool `json:"approvalByElicitation"`
}

// scoutModel is a model Scout certifies: without one, a session in a customer's tenant runs
// the read-only route.
const scoutModel = "google/gemini-3.8-flash"

func surfaceJSONFor(t *testing.T, args ...string) surfaceJSONOut {
	t.Helper()
	out, errOut, code := run(t, append([]string{"surface", "-c", scout, "--json", "--model", scoutModel}, args...)...)
	if code != 0 {
		t.Fatalf("surface %v: status %d: %s", args, code, errOut)
	}
	var s surfaceJSONOut
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("surface %v: not JSON: %v\n%s", args, err, out)
	}
	if s.Tools == nil || s.Absent == nil {
		t.Fatalf("surface %v: tools and absent must be lists, even empty: %s", args, out)
	}
	for _, a := range s.Absent {
		if !slices.Contains([]string{"registration", "ceiling", "profile", "grant", "gate"}, a.Filter) || a.Reason == "" {
			t.Errorf("absent entry %+v: filter must be registration|ceiling|profile|grant|gate, with a reason", a)
		}
	}
	return s
}

// TestSurfaceSaysWhoAnswersCards: the JSON says whether the session has an approval channel
// and whether its own client is asked by elicitation.
func TestSurfaceSaysWhoAnswersCards(t *testing.T) {
	tests := []struct {
		args                   []string
		channel, byElicitation bool
	}{
		{[]string{"--tenant", "acme", "--role", "person"}, true, true},
		{[]string{"--tenant", "acme", "--role", "coworker", "--profile", "generalist"}, false, false},
	}
	for _, tt := range tests {
		s := surfaceJSONFor(t, tt.args...)
		if s.ApprovalChannel == nil || s.ApprovalByElicitation == nil {
			t.Fatalf("surface %v: approvalChannel or approvalByElicitation missing", tt.args)
		}
		if *s.ApprovalChannel != tt.channel || *s.ApprovalByElicitation != tt.byElicitation {
			t.Errorf("surface %v: approvalChannel %v, approvalByElicitation %v; want %v, %v", tt.args,
				*s.ApprovalChannel, *s.ApprovalByElicitation, tt.channel, tt.byElicitation)
		}
	}
}

func TestSurfaceFromTheIssue(t *testing.T) {
	s := surfaceJSONFor(t, "--tenant", "acme", "--role", "goal_reviewer")
	if s.Role != "goal_reviewer" || len(s.Tools) != 0 {
		t.Errorf("goal_reviewer: %v; want no tools", s.Tools)
	}
	s = surfaceJSONFor(t, "--tenant", "acme", "--role", "inbound",
		"--env", "AGENTMAIL_WEBHOOK_URL_SECRET=s", "--env", "AGENTMAIL_ALLOW_SENDS=true")
	want := []string{
		"mcp__agentmail__agentmail_list_threads", "mcp__agentmail__agentmail_search_threads",
		"mcp__agentmail__agentmail_get_thread", "mcp__agentmail__agentmail_list_messages",
		"mcp__agentmail__agentmail_search_messages", "mcp__agentmail__agentmail_get_message",
		"mcp__agentmail__agentmail_get_attachment", "mcp__agentmail__agentmail_whoami",
		"mcp__agentmail__agentmail_create_draft", "mcp__agentmail__agentmail_list_drafts",
		"mcp__agentmail__agentmail_get_draft",
	}
	got := slices.Sorted(slices.Values(s.Tools))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("inbound: got %v\nwant the eleven AgentMail read and draft tools %v", got, want)
	}
}

func TestSurfaceRefusedAndBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"inbound route off", []string{"--tenant", "acme", "--role", "inbound"}, "AGENTMAIL_WEBHOOK_URL_SECRET"},
		{"unknown role", []string{"--tenant", "acme", "--role", "admin"}, `role "admin"`},
		{"ambiguous tenant", []string{"--role", "person"}, "--tenant is required"},
		{"bad env", []string{"--tenant", "acme", "--role", "person", "--env", "NOEQUALS"}, "want NAME=value"},
		{"coworker without profile", []string{"--tenant", "acme", "--role", "coworker"}, "name one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := run(t, append([]string{"surface", "-c", scout}, tt.args...)...)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("status %d, stderr %q; want failure mentioning %q", code, errOut, tt.want)
			}
		})
	}
}

func TestSurfaceTableAndExplain(t *testing.T) {
	out, _, code := run(t, "surface", "-c", scout, "--tenant", "acme", "--role", "coworker", "--profile", "generalist", "--model", scoutModel)
	if code != 0 || !strings.Contains(out, "TOOLS GIVEN (19)") || !strings.Contains(out, "mcp__project__project_delete") {
		t.Errorf("table: status %d\n%s", code, out)
	}
	out, _, code = run(t, "surface", "-c", scout, "--tenant", "acme", "--role", "coworker", "--profile", "generalist", "--model", scoutModel,
		"--explain", "mcp__project__project_delete", "--explain", "Read")
	if code != 0 || !strings.Contains(out, "mcp__project__project_delete: absent (ceiling)") || !strings.Contains(out, "Read: given") {
		t.Errorf("explain: status %d\n%s", code, out)
	}
}

func TestDefaultConfig(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	out, _, code := run(t, "check")
	if code != 0 || !strings.Contains(out, "quickstart.yaml (built in)") {
		t.Fatalf("without warden.yaml: status %d, %q; want the built-in quickstart", code, out)
	}
	s, _, code := run(t, "surface", "--role", "person", "--json")
	if code != 0 || !strings.Contains(s, `"files_read"`) || !strings.Contains(s, `"Bash"`) {
		t.Errorf("quickstart person: status %d\n%s", code, s)
	}
	writeFile(t, filepath.Join(dir, "warden.yaml"), "version: 1\nbuiltins:\n  - name: files_read\ntenants:\n  - id: solo\n")
	out, _, code = run(t, "check")
	if code != 0 || !strings.Contains(out, "warden.yaml: valid") {
		t.Errorf("with ./warden.yaml: status %d, %q", code, out)
	}
}

func TestDocs(t *testing.T) {
	out, _, code := run(t, "docs", "-c", scout)
	if code != 0 || !strings.HasPrefix(out, "# Tool permissions: Scout") {
		t.Errorf("docs: status %d, starts %q", code, out[:min(len(out), 80)])
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReview(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "etc"), filepath.Join(ws, "conf")); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(dir, "rules.json")
	writeFile(t, rules, `{"version":1,"hardBlocks":[{"id":"etc","enabled":true,"type":"path","pattern":"`+dir+`/etc/","match":"prefix","operations":["read","write","delete"],"reason":"system configuration"}]}`)
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, `{"version":1,"hardBlocks":[{"id":"x","enabled":true,"type":"path","pattern":"/x","match":"globs","operations":["read"]}]}`)

	type out struct {
		Decision string `json:"decision"`
		Blockers []struct {
			Code, Rule, Detail string
		} `json:"blockers"`
		Effects []struct {
			Op, Path string
		} `json:"effects"`
		Argv [][]string `json:"argv"`
	}
	review := func(t *testing.T, args ...string) out {
		t.Helper()
		stdout, stderr, code := run(t, append([]string{"review", "--json", "--workspace", ws}, args...)...)
		if code != 0 {
			t.Fatalf("review %v: status %d (a decision must exit 0): %s", args, code, stderr)
		}
		var o out
		if err := json.Unmarshal([]byte(stdout), &o); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, stdout)
		}
		if o.Blockers == nil || o.Effects == nil || o.Argv == nil {
			t.Fatalf("blockers, effects and argv must be lists: %s", stdout)
		}
		return o
	}
	o := review(t, "--role", "person", "--tool", "Bash", "--input", `{"command":"cat conf/passwd && echo rm -rf /"}`, "--boundaries", rules)
	if o.Decision != "deny" || len(o.Blockers) != 1 || o.Blockers[0].Code != "hard_policy_block:user_configured_hard_block" || o.Blockers[0].Rule != "etc" {
		t.Errorf("cat through a link into the blocked directory: %+v", o)
	}
	if len(o.Argv) != 2 || strings.Join(o.Argv[0], " ") != "cat conf/passwd" {
		t.Errorf("argv %q", o.Argv)
	}
	o = review(t, "--role", "person", "--tool", "files_write", "--input", `{"path":"notes.txt","content":"x"}`, "--boundaries", rules)
	if o.Decision != "allow" || len(o.Effects) != 1 || o.Effects[0].Op != "write" || o.Effects[0].Path != ws+"/notes.txt" {
		t.Errorf("a write in the workspace: %+v", o)
	}
	o = review(t, "--role", "person", "--tool", "files_read", "--input", `{"path":"notes.txt"}`, "--boundaries", bad)
	if o.Decision != "deny" || o.Blockers[0].Code != "boundary_config_invalid" {
		t.Errorf("invalid stored rules must block every call: %+v", o)
	}
	o = review(t, "--role", "coworker", "--profile", "reviewer", "--tool", "shell_exec", "--input", `{"command":"ls"}`)
	if o.Decision != "deny" || o.Blockers[0].Code != "permission_denied" {
		t.Errorf("a tool outside the surface: %+v", o)
	}
	if _, stderr, code := run(t, "review", "--role", "person", "--tool", "Bash", "--input", `not json`); code == 0 || !strings.Contains(stderr, "--input") {
		t.Errorf("bad --input: status %d, %q; want a usage error", code, stderr)
	}
}

// syncBuffer is a bytes.Buffer safe to read while the server writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestServeTokenAndAudit(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := newRootCmd()
	out := &syncBuffer{}
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs([]string{"serve", "-c", scout, "--addr", "127.0.0.1:0", "--db", db})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	addr := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.Now().Add(20 * time.Second)
	for !addr.MatchString(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not start:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	base := addr.FindStringSubmatch(out.String())[1]
	admin := regexp.MustCompile(`(?m)^(wdn_\S+)$`).FindStringSubmatch(out.String())
	if admin == nil {
		t.Fatalf("no admin token printed:\n%s", out.String())
	}
	get := func(path, token string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/healthz", ""); code != 200 {
		t.Errorf("healthz %d", code)
	}
	if code := get("/readyz", ""); code != 200 {
		t.Errorf("readyz %d", code)
	}
	// /readyz says what the banner says of the sandbox and the egress mode.
	if resp, err := http.Get(base + "/readyz"); err != nil {
		t.Error(err)
	} else {
		var ready struct{ Sandbox, Egress string }
		err := json.NewDecoder(resp.Body).Decode(&ready)
		resp.Body.Close()
		want := "on"
		if !strings.Contains(out.String(), "warden: sandbox on:") {
			want = "unavailable: shell_exec refuses to run commands"
		}
		if err != nil || !strings.HasPrefix(ready.Sandbox, want) || !strings.HasPrefix(ready.Egress, "allowlist: ") {
			t.Errorf("readyz says sandbox %q, egress %q (%v); want %q and allowlist, as the banner:\n%s", ready.Sandbox, ready.Egress, err, want, out.String())
		}
	}
	if code := get("/api/v1/approvals?state=pending", ""); code != 401 {
		t.Errorf("no token: %d", code)
	}
	if code := get("/api/v1/approvals?state=pending", admin[1]); code != 200 {
		t.Errorf("the admin token: %d", code)
	}
	// The hard-block routes are served, with the store behind them.
	put, _ := http.NewRequest("PUT", base+"/api/v1/tenants/acme/boundaries", strings.NewReader(`{"version":1,"hardBlocks":[]}`))
	put.Header.Set("Authorization", "Bearer "+admin[1])
	put.Header.Set("If-Match", `"0"`)
	if resp, err := http.DefaultClient.Do(put); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("ETag") != `"1"` {
			t.Errorf("PUT acme's hard blocks: %d %q; want 200 with ETag \"1\"", resp.StatusCode, resp.Header.Get("ETag"))
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve did not shut down cleanly: %v", err)
	}
	if !strings.Contains(out.String(), "shutting down") {
		t.Errorf("no shutdown message:\n%s", out.String())
	}

	// A second start on the same store keeps the admin token and prints none.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cmd = newRootCmd()
	out2 := &syncBuffer{}
	cmd.SetOut(out2)
	cmd.SetErr(out2)
	cmd.SetArgs([]string{"serve", "-c", scout, "--addr", "127.0.0.1:0", "--db", db})
	go func() { done <- cmd.ExecuteContext(ctx2) }()
	for !addr.MatchString(out2.String()) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel2()
	<-done
	if strings.Contains(out2.String(), "wdn_") {
		t.Errorf("a second start printed a token:\n%s", out2.String())
	}

	// Session tokens: the secret on the last line; the tenant, role and profile checked.
	stdout, stderr, code := run(t, "token", "create", "-c", scout, "--db", db, "--tenant", "acme", "--role", "specialist", "--profile", "researcher")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || !strings.HasPrefix(lines[len(lines)-1], "wdn_") {
		t.Fatalf("token create: %d %q %s", code, stdout, stderr)
	}
	for _, bad := range [][]string{
		{"--tenant", "nope", "--role", "person"},
		{"--tenant", "acme", "--role", "nobody"},
		{"--tenant", "acme", "--role", "coworker", "--profile", "researcher"},
		{"--tenant", "acme", "--role", "coworker"},
	} {
		if _, stderr, code := run(t, append([]string{"token", "create", "-c", scout, "--db", db}, bad...)...); code == 0 {
			t.Errorf("token create %v: want a refusal (%s)", bad, stderr)
		}
	}

	// The audit export reads the same store.
	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []string{"allow", "deny", "allow"} {
		e := &audit.Event{Time: time.Date(2026, 11, 30, 12, i, 0, 0, time.UTC), Kind: audit.KindDecision, Tenant: "acme", Tool: "Bash", Decision: d}
		if err := store.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()
	stdout, stderr, code = run(t, "audit", "--db", db, "--decision", "allow")
	if code != 0 || strings.Count(stdout, "\n") != 2 || !strings.Contains(stdout, `"decision":"allow"`) {
		t.Fatalf("audit: %d %q %s", code, stdout, stderr)
	}
	stdout, _, _ = run(t, "audit", "--db", db, "--kind", "decision", "--since", "2026-11-30T12:01:00Z", "--limit", "1")
	if strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, `"decision":"deny"`) {
		t.Errorf("audit --since --limit: %q", stdout)
	}
	if _, stderr, code := run(t, "audit", "--db", db, "--since", "yesterday"); code == 0 || !strings.Contains(stderr, "RFC 3339") {
		t.Errorf("a bad time: %d %s", code, stderr)
	}
}

// warden surface says why WebSearch is absent from the quickstart: no search provider.
func TestSurfaceExplainsAbsentSearch(t *testing.T) {
	out, _, code := run(t, "surface", "--role", "person", "--explain", "WebSearch")
	if code != 0 || !strings.Contains(out, "WebSearch: absent (registration)") || !strings.Contains(out, "no search provider is configured") {
		t.Errorf("explain: status %d\n%s", code, out)
	}
	out, _, code = run(t, "docs")
	if code != 0 || !strings.Contains(out, "| never: no search provider is configured") {
		t.Errorf("the permissions page does not say WebSearch never registers: status %d", code)
	}
}
