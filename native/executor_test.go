package native_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/policy"
)

// workspace makes a fresh workspace (its real path) and an executor for it.
func workspace(t *testing.T, o native.Options) (string, *native.Executor) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.Workspace = ws
	e, err := native.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return ws, e
}

// normalize makes the action a call of the native tool kind would be, in workspace ws.
func normalize(t testing.TB, ws, kind string, args map[string]any) *action.Action {
	t.Helper()
	tool := &policy.Tool{Name: kind, Kind: kind, Server: &policy.Server{ID: policy.BuiltinServer, Kind: policy.KindBuiltin}}
	a := action.Normalize(tool, args, action.Context{Resolver: &action.Resolver{Root: ws, Home: ws}})
	if len(a.Problems) > 0 {
		t.Fatalf("%s %v: %v", kind, args, a.Problems)
	}
	return a
}

// call normalises and runs a native call; an error return fails the test.
func call(t *testing.T, e *native.Executor, ws, kind string, args map[string]any) native.Result {
	t.Helper()
	r, err := e.Run(context.Background(), normalize(t, ws, kind, args), nil)
	if err != nil {
		t.Fatalf("%s %v: %v", kind, args, err)
	}
	return r
}

// want checks a result's error flag and that its text holds every part.
func want(t *testing.T, r native.Result, isError bool, parts ...string) {
	t.Helper()
	if r.IsError != isError {
		t.Errorf("IsError = %v, want %v; text:\n%s", r.IsError, isError, r.Text)
	}
	for _, p := range parts {
		if !strings.Contains(r.Text, p) {
			t.Errorf("the text does not hold %q:\n%s", p, r.Text)
		}
	}
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/file", "x")
	tests := []struct {
		name string
		give native.Options
	}{
		{"no workspace", native.Options{}},
		{"a relative workspace", native.Options{Workspace: "ws"}},
		{"a missing workspace", native.Options{Workspace: dir + "/missing"}},
		{"a file as workspace", native.Options{Workspace: dir + "/file"}},
		{"a negative limit", native.Options{Workspace: dir, MaxRead: -1}},
		{"a negative timeout", native.Options{Workspace: dir, Timeout: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := native.New(tt.give); err == nil {
				t.Error("New succeeded")
			}
		})
	}
}

func TestWorkspaceThroughALink(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir+"/real", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir+"/real", dir+"/link"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir+"/real/a.txt", "hello")
	e, err := native.New(native.Options{Workspace: dir + "/link"})
	if err != nil {
		t.Fatal(err)
	}
	// The resolver resolves against the real path, as NewResolver does.
	want(t, call(t, e, dir+"/real", "files_read", map[string]any{"path": "a.txt"}), false, "hello")
}

func TestKindsNotRunHere(t *testing.T) {
	ws, e := workspace(t, native.Options{})
	ctx := context.Background()
	r, err := e.Run(ctx, normalize(t, ws, "spawn_subagent", map[string]any{"root": ".", "task": "x"}), nil)
	if !errors.Is(err, native.ErrNotNative) {
		t.Errorf("spawn_subagent: %v, %+v; want ErrNotNative", err, r)
	}
	if _, err := e.Run(ctx, &action.Action{Kind: action.KindConnectorCall}, nil); !errors.Is(err, native.ErrUnknownKind) {
		t.Errorf("connector_call: %v; want ErrUnknownKind", err)
	}
	if _, err := e.Run(ctx, &action.Action{Kind: "files_frobnicate"}, nil); !errors.Is(err, native.ErrUnknownKind) {
		t.Errorf("an unknown kind: %v; want ErrUnknownKind", err)
	}
	if _, err := e.Run(ctx, nil, nil); !errors.Is(err, native.ErrUnreviewed) {
		t.Errorf("no action: %v; want ErrUnreviewed", err)
	}
	bad := &action.Action{Kind: "files_read", Problems: []action.Problem{{Code: action.ProblemPath, Detail: "x"}}}
	if _, err := e.Run(ctx, bad, nil); !errors.Is(err, native.ErrUnreviewed) {
		t.Errorf("an action with problems: %v; want ErrUnreviewed", err)
	}
	if _, err := e.Run(ctx, &action.Action{Kind: "files_read"}, nil); !errors.Is(err, native.ErrUnreviewed) {
		t.Errorf("an action without its resolved path: %v; want ErrUnreviewed", err)
	}
	want(t, call(t, e, ws, "net_search", map[string]any{"query": "go"}), true, "no search provider is configured")
}

// TestOutsideTheWorkspace: whatever the review let through, no tool acts outside the workspace,
// whether the path leaves it by .. or by a symbolic link.
func TestOutsideTheWorkspace(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, out := base+"/ws", base+"/out"
	writeFile(t, out+"/secret.txt", "secret")
	writeFile(t, ws+"/in.txt", "in")
	if err := os.Symlink(out, ws+"/link"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out+"/secret.txt", ws+"/filelink"); err != nil {
		t.Fatal(err)
	}
	e, err := native.New(native.Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind string
		args map[string]any
	}{
		{"files_read", map[string]any{"path": "../out/secret.txt"}},
		{"files_read", map[string]any{"path": "link/secret.txt"}},
		{"files_read", map[string]any{"path": "filelink"}},
		{"files_read", map[string]any{"path": out + "/secret.txt"}},
		{"files_list", map[string]any{"path": "link"}},
		{"files_list", map[string]any{"path": ".."}},
		{"files_inspect", map[string]any{"path": "../out"}},
		{"files_find", map[string]any{"pattern": "../out/*"}},
		{"files_find", map[string]any{"pattern": "link/**"}},
		{"files_search", map[string]any{"path": "link", "query": "secret"}},
		{"files_write", map[string]any{"path": "link/new.txt", "content": "x"}},
		{"files_write", map[string]any{"path": "../out/secret.txt", "content": "x"}},
		{"files_write", map[string]any{"path": "filelink", "content": "x"}},
		{"files_edit", map[string]any{"path": "filelink", "old": "secret", "new": "x"}},
		{"files_delete", map[string]any{"path": "link/secret.txt"}},
		{"files_delete", map[string]any{"path": "../out/secret.txt"}},
		{"files_patch", map[string]any{"patch": "--- a/link/secret.txt\n+++ b/link/secret.txt\n@@ -1 +1 @@\n-secret\n+x\n"}},
		{"files_patch", map[string]any{"patch": "--- a/filelink\n+++ b/filelink\n@@ -1 +1 @@\n-secret\n+x\n"}},
		{"files_patch", map[string]any{"patch": "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n", "cwd": "link"}},
		{"shell_exec", map[string]any{"command": "pwd", "cwd": "link"}},
		{"shell_exec", map[string]any{"command": "pwd", "cwd": ".."}},
		{"git_status", map[string]any{"cwd": "link"}},
		{"git_diff", map[string]any{"cwd": ".."}},
	}
	for _, tt := range tests {
		r := call(t, e, ws, tt.kind, tt.args)
		if !r.IsError || !strings.Contains(r.Text, "outside the workspace") {
			t.Errorf("%s %v: %+v; want a refusal saying it is outside the workspace", tt.kind, tt.args, r)
		}
	}
	if got := readFile(t, out+"/secret.txt"); got != "secret" {
		t.Errorf("the file outside was changed to %q", got)
	}
	if _, err := os.Stat(out + "/new.txt"); err == nil {
		t.Error("a file was written outside the workspace")
	}
}

// TestChangedAfterReview: a link made after the review (the action's resolved path names a
// directory that is now a link) is never followed out of the workspace, nor to another place
// inside it.
func TestChangedAfterReview(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, out := base+"/ws", base+"/out"
	writeFile(t, out+"/secret.txt", "secret")
	writeFile(t, ws+"/private/secret.txt", "private")
	e, err := native.New(native.Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	// Reviewed while ws/dir was a directory; now it is a link.
	if err := os.Symlink(out, ws+"/dir"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("private", ws+"/inner"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tests := []struct {
		name string
		a    *action.Action
	}{
		{"a write through a link out", &action.Action{Kind: "files_write",
			Inputs: map[string]string{"path": "dir/secret.txt", "content": "x"},
			Paths:  map[string]string{"path": ws + "/dir/secret.txt"}}},
		{"a read through a link out", &action.Action{Kind: "files_read",
			Paths: map[string]string{"path": ws + "/dir/secret.txt"}}},
		{"a delete through a link out", &action.Action{Kind: "files_delete",
			Paths: map[string]string{"path": ws + "/dir/secret.txt"}}},
		{"a read through a link inside", &action.Action{Kind: "files_read",
			Paths: map[string]string{"path": ws + "/inner/secret.txt"}}},
		{"a write through a link inside", &action.Action{Kind: "files_write",
			Inputs: map[string]string{"content": "x"},
			Paths:  map[string]string{"path": ws + "/inner/secret.txt"}}},
		{"a listing through a link inside", &action.Action{Kind: "files_list",
			Paths: map[string]string{"path": ws + "/inner"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := e.Run(ctx, tt.a, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !r.IsError {
				t.Errorf("ran: %s", r.Text)
			}
			if strings.Contains(r.Text, "secret\n") || r.Text == "secret" || r.Text == "private" {
				t.Errorf("the content leaked: %s", r.Text)
			}
		})
	}
	if got := readFile(t, out+"/secret.txt"); got != "secret" {
		t.Errorf("the file outside was changed to %q", got)
	}
	if got := readFile(t, ws+"/private/secret.txt"); got != "private" {
		t.Errorf("the file behind the inner link was changed to %q", got)
	}
}

// TestConcurrentRuns: one executor serves many calls at once.
func TestConcurrentRuns(t *testing.T) {
	ws, e := workspace(t, native.Options{Sandbox: off})
	var wg sync.WaitGroup
	for i := range 8 {
		name := fmt.Sprintf("f%d.txt", i)
		calls := []*action.Action{
			normalize(t, ws, "files_write", map[string]any{"path": name, "content": name}),
			normalize(t, ws, "files_edit", map[string]any{"path": name, "old": ".txt", "new": ".md"}),
			normalize(t, ws, "shell_exec", map[string]any{"command": "cat " + name}),
			normalize(t, ws, "files_search", map[string]any{"query": "md"}),
		}
		wg.Go(func() {
			for _, a := range calls {
				if r, err := e.Run(context.Background(), a, map[string]string{"N": name}); err != nil || r.IsError {
					t.Errorf("%s: %v %s", a.Kind, err, r.Text)
				}
			}
		})
	}
	wg.Wait()
}
