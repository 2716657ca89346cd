package native_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/sandbox"
)

// eachMode runs a benchmark of calls in a fresh workspace sandboxed (the default) and with
// the sandbox off, the difference being what the sandbox costs a call. setup prepares the
// workspace and returns the actions to run, one per iteration, in turn.
func eachMode(b *testing.B, setup func(b *testing.B, ws string) []*action.Action) {
	for _, mode := range []struct {
		name string
		sb   native.Sandbox
	}{{"sandboxed", native.Sandbox{}}, {"off", off}} {
		b.Run(mode.name, func(b *testing.B) {
			ws, err := filepath.EvalSymlinks(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			if !mode.sb.Off {
				if _, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: ws, Command: []string{"true"}}); errors.Is(err, sandbox.ErrUnavailable) {
					b.Skip("the sandbox cannot run here")
				}
			}
			e, err := native.New(native.Options{Workspace: ws, Sandbox: mode.sb})
			if err != nil {
				b.Fatal(err)
			}
			calls := setup(b, ws)
			b.ResetTimer()
			i := 0
			for b.Loop() {
				a := calls[i%len(calls)]
				i++
				r, err := e.Run(context.Background(), a, nil)
				if err != nil || r.IsError {
					b.Fatalf("%s: %v %s", a.Kind, err, r.Text)
				}
			}
		})
	}
}

// BenchmarkShellExec is one shell_exec of `echo hi`, as the gateway runs it.
func BenchmarkShellExec(b *testing.B) {
	eachMode(b, func(b *testing.B, ws string) []*action.Action {
		return []*action.Action{normalize(b, ws, "shell_exec", map[string]any{"command": "echo hi"})}
	})
}

// BenchmarkGitStatus is one git_status in a small repository with a change.
func BenchmarkGitStatus(b *testing.B) {
	needGit(b)
	eachMode(b, func(b *testing.B, ws string) []*action.Action {
		repo(b, ws)
		writeFile(b, ws+"/a.txt", "one\nmore\n")
		return []*action.Action{normalize(b, ws, "git_status", nil)}
	})
}

// BenchmarkGitDiff is one git_diff in a small repository with a change.
func BenchmarkGitDiff(b *testing.B) {
	needGit(b)
	eachMode(b, func(b *testing.B, ws string) []*action.Action {
		repo(b, ws)
		writeFile(b, ws+"/a.txt", "one\nmore\n")
		return []*action.Action{normalize(b, ws, "git_diff", nil)}
	})
}

// BenchmarkFilesPatch is one files_patch of a one-line change, made and undone in turn.
func BenchmarkFilesPatch(b *testing.B) {
	needGit(b)
	eachMode(b, func(b *testing.B, ws string) []*action.Action {
		writeFile(b, ws+"/a.txt", "one\n")
		return []*action.Action{
			normalize(b, ws, "files_patch", map[string]any{"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"}),
			normalize(b, ws, "files_patch", map[string]any{"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+one\n"}),
		}
	})
}
