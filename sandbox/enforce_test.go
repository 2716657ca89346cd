package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/sandbox"
)

const secret = "TOPSECRET-4242"

// enforcedRules are the hard blocks of these tests: .env is never read, written or removed,
// nothing under .git/hooks is written or run, and rm does not run.
func enforcedRules(t testing.TB) *boundary.Set {
	t.Helper()
	d, err := boundary.Parse([]byte(`{"version":1,"hardBlocks":[
	  {"id":"no-env","enabled":true,"type":"path","pattern":"**/.env","match":"glob","operations":["read","write","delete"],"reason":"secrets stay put"},
	  {"id":"no-hooks","enabled":true,"type":"path","pattern":"**/.git/hooks/**","match":"glob","operations":["read","write","delete","execute"]},
	  {"id":"no-rm","enabled":true,"type":"command","pattern":"rm *","match":"glob","operations":["execute"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := boundary.Compile(d, boundary.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// enforcedWorkspace makes a workspace holding a .env, a hook and ordinary files.
func enforcedWorkspace(t testing.TB) string {
	t.Helper()
	ws := t.TempDir()
	files := map[string]string{
		".env":         secret + "\n",
		"sub/.env":     secret + "\n",
		".git/hooks/x": "#!/bin/sh\necho hook ran\n",
		"a.txt":        "foo in a\n",
		"sub/b.txt":    "foo in b\n",
		"f":            "delete me\n",
	}
	for name, data := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func runEnforced(t *testing.T, ws, script string) (sandbox.Result, string) {
	t.Helper()
	var out bytes.Buffer
	res, err := sandbox.Run(context.Background(), sandbox.Spec{
		Workspace: ws, Command: []string{"/bin/bash", "-c", script},
		Stdout: &out, Stderr: &out, Boundaries: enforcedRules(t),
	})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return res, out.String()
}

func TestEnforceSmoke(t *testing.T) {
	sandboxtest.Need(t)
	ws := enforcedWorkspace(t)
	res, out := runEnforced(t, ws, "cat a.txt; cat .env; echo done")
	t.Logf("%+v\n%s", res, out)
	if strings.Contains(out, secret) {
		t.Fatal("secret read")
	}
}
