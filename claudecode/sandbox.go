package claudecode

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
)

// Sandbox says how SandboxInput runs a Bash call through `warden exec`.
type Sandbox struct {
	// Warden is the warden program to run (an absolute path, so Claude Code's shell finds
	// the same binary whatever its PATH).
	Warden string
	// Workspace is the project directory: the command's only writable place.
	Workspace string
	// Boundaries is a BURROW document of the hard blocks the sandbox enforces at every system
	// call ("" for none).
	Boundaries string
}

// SandboxInput returns Bash's input with its command replaced by one that runs the original
// in Warden's sandbox, in cwd when cwd lies in the workspace; every other field is kept. The
// original is passed to bash -c as one single-quoted word, so no character of it is read by
// the outer shell.
func (s Sandbox) SandboxInput(in map[string]any, cwd string) (map[string]any, error) {
	command, ok := in["command"].(string)
	if !ok || command == "" {
		return nil, fmt.Errorf("the command of Bash must be a non-empty string, not %s", describe(in["command"]))
	}
	inner := command
	if rel, err := filepath.Rel(s.Workspace, cwd); err == nil && rel != "." && filepath.IsLocal(rel) {
		// Claude Code's shell keeps its directory between calls; the sandbox starts in the
		// workspace, so go back where the command was written for.
		inner = "cd " + Quote(cwd) + " || exit 1\n" + command
	}
	args := []string{Quote(s.Warden), "exec", "--workspace", Quote(s.Workspace)}
	if s.Boundaries != "" {
		args = append(args, "--boundaries", Quote(s.Boundaries))
	}
	if ms, ok := in["timeout"].(float64); ok && ms > 0 {
		args = append(args, "--timeout", fmt.Sprintf("%dms", int64(ms)))
	}
	args = append(args, "--", "bash", "-c", Quote(inner))
	out := maps.Clone(in)
	out["command"] = strings.Join(args, " ")
	return out, nil
}

// Quote is s as one word of a POSIX shell, in single quotes.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
