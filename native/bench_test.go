package native_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/sandbox"
)

// BenchmarkShellExec is one shell_exec of `echo hi`, as the gateway runs it: sandboxed (the
// default) and with the sandbox off, the difference being what the sandbox costs a call.
func BenchmarkShellExec(b *testing.B) {
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
			a := normalize(b, ws, "shell_exec", map[string]any{"command": "echo hi"})
			b.ResetTimer()
			for b.Loop() {
				r, err := e.Run(context.Background(), a, nil)
				if err != nil || r.IsError {
					b.Fatalf("%v %s", err, r.Text)
				}
			}
		})
	}
}
