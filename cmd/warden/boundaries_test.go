package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/store/sqlite"
)

const boundariesPolicy = `version: 1
builtins:
  - name: files_read
  - name: files_write
boundaries:
  version: 1
  hardBlocks:
    - {id: no-env, enabled: true, type: path, pattern: "**/.env", match: glob, operations: [read, write]}
tenants:
  - id: acme
  - id: beta
`

func TestBoundariesCommands(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "warden.yaml")
	writeFile(t, cfg, boundariesPolicy)
	db := newStoreFile(t)
	good := filepath.Join(dir, "good.json")
	writeFile(t, good, `{"version":1,"hardBlocks":[{"id":"no-plans","enabled":true,"type":"path","pattern":"**/plans.txt","match":"glob","operations":["read","write"]}]}`)
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, `{"version":2,"hardBlocks":[{"id":"x","type":"path","pattern":"/a","match":"fuzzy","operations":["read"]}]}`)

	// warden check judges the policy's rules too, at their file:line:col.
	badPolicy := filepath.Join(dir, "bad.yaml")
	writeFile(t, badPolicy, strings.Replace(boundariesPolicy, "match: glob", "match: globby", 1))
	if out, _, code := run(t, "check", "-c", badPolicy); code != 1 || !strings.Contains(out, badPolicy+`:8:74: boundaries: `) || !strings.Contains(out, `hardBlocks[0].match: unknown match method "globby"`) {
		t.Errorf("check of a policy with a bad rule: %d %q", code, out)
	}

	// boundaries check: every field error, status 1; a good document, status 0.
	out, _, code := run(t, "boundaries", "check", bad)
	if code != 1 {
		t.Errorf("check of a bad document: status %d", code)
	}
	for _, want := range []string{bad + ": version: unsupported version 2", bad + ": hardBlocks[0].enabled: missing", bad + `: hardBlocks[0].match: unknown match method "fuzzy"`} {
		if !strings.Contains(out, want) {
			t.Errorf("check's output lacks %q:\n%s", want, out)
		}
	}
	if out, _, code := run(t, "boundaries", "check", good); code != 0 || !strings.Contains(out, "valid: 1 rules") {
		t.Errorf("check of a good document: %d %s", code, out)
	}

	store := []string{"-c", cfg, "--db", db, "--tenant", "acme"}
	if out, stderr, code := run(t, append([]string{"boundaries", "get"}, store...)...); code != 0 || strings.TrimSpace(out) != `{"version":1,"hardBlocks":[]}` || !strings.Contains(stderr, "revision 0") {
		t.Errorf("get with nothing stored: %d %q %q", code, out, stderr)
	}
	if out, stderr, code := run(t, append([]string{"boundaries", "set", good, "--if-match", "0"}, store...)...); code != 0 || !strings.Contains(out, "revision 1 stored") {
		t.Fatalf("set: %d %q %q", code, out, stderr)
	}
	if _, stderr, code := run(t, append([]string{"boundaries", "set", good, "--if-match", "0"}, store...)...); code == 0 || !strings.Contains(stderr, "no longer revision 0") {
		t.Errorf("a stale set: %d %q", code, stderr)
	}
	if out, _, code := run(t, append([]string{"boundaries", "set", bad}, store...)...); code != 1 || !strings.Contains(out, "hardBlocks[0].match") {
		t.Errorf("set of a bad document: %d %q", code, out)
	}
	// set reads stdin for "-".
	stdin := newRootCmd()
	var inOut, inErr strings.Builder
	stdin.SetIn(strings.NewReader(`{"version":1,"hardBlocks":[]}`))
	stdin.SetOut(&inOut)
	stdin.SetErr(&inErr)
	stdin.SetArgs([]string{"boundaries", "set", "-", "-c", cfg, "--db", db, "--tenant", "beta", "--if-match", "0"})
	if err := stdin.Execute(); err != nil || !strings.Contains(inOut.String(), "tenant beta: revision 1 stored (0 rules)") {
		t.Errorf("set from stdin: %v %q %q", err, inOut.String(), inErr.String())
	}
	if _, _, code := run(t, "boundaries", "set", good, "-c", cfg, "--db", db, "--tenant", "nobody"); code == 0 {
		t.Error("set for a tenant the policy does not name succeeded")
	}
	out, stderr, code := run(t, append([]string{"boundaries", "get"}, store...)...)
	if code != 0 || !strings.Contains(out, "no-plans") || !strings.Contains(stderr, "revision 1") {
		t.Errorf("get after set: %d %q %q", code, out, stderr)
	}

	// review meets the policy's rules always, and the stored ones with the store.
	decision := func(args ...string) (string, string) {
		t.Helper()
		out, stderr, code := run(t, append([]string{"review", "--json", "-c", cfg, "--role", "person", "--workspace", dir}, args...)...)
		if code != 0 {
			t.Fatalf("review %v: %d %s", args, code, stderr)
		}
		var v struct {
			Decision string
			Blockers []struct{ Code, Rule string }
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		rule := ""
		if len(v.Blockers) > 0 {
			rule = v.Blockers[0].Rule
		}
		return v.Decision, rule
	}
	plans := []string{"--tool", "files_read", "--input", `{"path":"plans.txt"}`}
	if d, r := decision(append(plans, "--tenant", "acme", "--db", db)...); d != "deny" || r != "no-plans" {
		t.Errorf("review with acme's stored rules: %s %s; want deny by no-plans", d, r)
	}
	if d, _ := decision(append(plans, "--tenant", "beta", "--db", db)...); d != "allow" {
		t.Errorf("review of another tenant: %s; want allow", d)
	}
	if d, _ := decision(append(plans, "--tenant", "acme")...); d != "allow" {
		t.Errorf("review without a store: %s; want allow (the policy's rules only)", d)
	}
	if d, r := decision("--tool", "files_read", "--input", `{"path":".env"}`, "--tenant", "beta"); d != "deny" || r != "no-env" {
		t.Errorf("review of .env: %s %s; want deny by the policy's no-env", d, r)
	}

	// surface --explain shows the rules a given tool's calls meet.
	if out, stderr, code := run(t, "surface", "-c", cfg, "--role", "person", "--tenant", "acme", "--db", db, "--explain", "files_read"); code != 0 ||
		!strings.Contains(out, "hard blocks of acme") || !strings.Contains(out, "no-env, no-plans") {
		t.Errorf("surface --explain with the store: %d %q %s", code, out, stderr)
	}
	if out, _, _ := run(t, "surface", "-c", cfg, "--role", "person", "--tenant", "acme", "--explain", "files_read"); !strings.Contains(out, "): no-env\n") {
		t.Errorf("surface --explain without a store shows the policy's rules only: %q", out)
	}

	// The write is in the audit trail, by the user who ran it.
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Query(context.Background(), audit.Filter{Kind: audit.KindBoundaries})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Tenant != "acme" || !strings.HasPrefix(evs[0].Principal, "cli") || len(evs[0].Rules) != 1 {
		t.Errorf("audit events: %+v; want one write of acme's rules by the CLI", evs)
	}
}
