package sandbox_test

import (
	"os"
	"strings"
	"testing"

	"github.com/wardenhq/warden/sandbox"
)

// TestNoCapabilities: where Warden runs as root, a sandboxed command keeps uid 0 (it may still
// write the workspace's files) but holds no capability: what only a capability allows fails,
// though Landlock would let it through.
func TestNoCapabilities(t *testing.T) {
	needSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("as another user the command had no capabilities outside its namespaces to begin with")
	}
	ws := t.TempDir()
	tests := []struct{ name, script string }{
		{"chown to another user (CAP_CHOWN)", "touch f && chown 12345 f"},
		{"a device node (CAP_MKNOD)", "mknod null2 c 1 3"},
		{"another user's file (CAP_DAC_OVERRIDE)", "touch g && chmod 000 g && cat g"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, res := sh(t, sandbox.Spec{Workspace: ws}, tt.script)
			if res.ExitCode == 0 {
				t.Errorf("%q succeeded in the sandbox:\n%s", tt.script, out)
			}
		})
	}
	out, res := sh(t, sandbox.Spec{Workspace: ws}, "id -u && echo made > h && cat h")
	if res.ExitCode != 0 || !strings.HasPrefix(out, "0\nmade\n") {
		t.Errorf("uid 0 without capabilities could not use its workspace: %d %q", res.ExitCode, out)
	}
}
