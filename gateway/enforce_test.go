package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/internal/sandboxtest"
)

const enforcePolicy = `
version: 1
builtins:
  - name: shell_exec
boundaries:
  version: 1
  hardBlocks:
    - {id: no-env, enabled: true, type: path, pattern: "**/.env", match: glob, operations: [read, write], reason: secrets stay put}
tenants:
  - id: default
    owner: true
`

// TestShellExecEnforcesHardBlocks: a shell_exec command that reaches a blocked file in a way
// the review cannot see is refused at the open; the result says so, and the refusal is an
// enforcement event with the rule, the path and the process.
func TestShellExecEnforcesHardBlocks(t *testing.T) {
	sandboxtest.Need(t)
	r := newRigWith(t, []byte(enforcePolicy), nil, nil)
	ws := filepath.Join(r.gw.Workspaces(), "default")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN=hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := r.connect(r.token("default", "person", ""), nil)
	done := make(chan string, 1)
	go func() {
		out, _ := call(t, cs, "shell_exec", map[string]any{"command": `f=$(printf '%s' .e nv); cat "$f"; echo after`})
		done <- out
	}()
	var out string
	for out == "" {
		select {
		case out = <-done:
		case c := <-r.cards: // the review may ask about a command it cannot read: allow it once
			if _, err := r.broker.Answer(context.Background(), c.Tenant, c.ID, approval.AllowOnce, "alice", approval.ChannelAPI, c.Digest); err != nil {
				t.Fatal(err)
			}
		}
	}
	if strings.Contains(out, "hunter2") || !strings.Contains(out, "after") {
		t.Fatalf("output %q", out)
	}
	if !strings.Contains(out, "refused at the system call: read "+ws+"/.env refused by hard block no-env") {
		t.Errorf("the result does not say what was refused: %q", out)
	}
	evs := r.audited(audit.Filter{Tenant: "default", Kind: audit.KindEnforcement})
	if len(evs) != 1 || evs[0].Tool != "shell_exec" || len(evs[0].Blockers) != 1 {
		t.Fatalf("enforcement events: %+v", evs)
	}
	b := evs[0].Blockers[0]
	if b.Rule != "no-env" || b.Code != "hard_policy_block:user_configured_hard_block" || !strings.Contains(b.Detail, "read "+ws+"/.env (openat, pid ") {
		t.Errorf("blocker %+v", b)
	}
}

// TestRecursiveReadRunsAroundABlockedFile: with the hard blocks enforced at the system call,
// the review lets grep -r over a tree that holds a blocked file run; the match elsewhere is
// found, the blocked file is refused at its open (and recorded), and its content never shows.
func TestRecursiveReadRunsAroundABlockedFile(t *testing.T) {
	sandboxtest.Need(t)
	r := newRigWith(t, []byte(enforcePolicy), nil, nil)
	ws := filepath.Join(r.gw.Workspaces(), "default")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{".env": "TOKEN=hunter2\n", "sub/a.txt": "TOKEN=public\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs := r.connect(r.token("default", "person", ""), nil)
	// Had the review refused or asked, the call would not run: no card is answered here.
	out, _ := call(t, cs, "shell_exec", map[string]any{"command": "grep -r TOKEN ."})
	if strings.Contains(out, "hunter2") || !strings.Contains(out, "sub/a.txt:TOKEN=public") {
		t.Fatalf("output %q", out)
	}
	if !strings.Contains(out, "refused at the system call: read "+ws+"/.env refused by hard block no-env") {
		t.Errorf("the result does not say what was refused: %q", out)
	}
	if evs := r.audited(audit.Filter{Tenant: "default", Kind: audit.KindEnforcement}); len(evs) != 1 {
		t.Errorf("enforcement events: %+v", evs)
	}
	// A read that names the blocked file is still refused by the review, before anything runs.
	if out, isErr := call(t, cs, "shell_exec", map[string]any{"command": "cat .env"}); !isErr || !strings.Contains(out, "Warden did not run this call") {
		t.Errorf("cat .env: %q", out)
	}
}
