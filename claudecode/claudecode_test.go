package claudecode

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// quickstart declares the Claude Code names the quickstart policy does.
func quickstart(name string) (string, bool) {
	kind, ok := map[string]string{"Bash": "shell_exec", "Read": "files_read", "Write": "files_write", "Edit": "files_edit",
		"Glob": "files_find", "Grep": "files_search", "WebFetch": "net_fetch", "WebSearch": "net_search",
		"mcp__github__get_issue": ""}[name]
	return kind, ok
}

func none(string) (string, bool) { return "", false }

func TestMap(t *testing.T) {
	tests := []struct {
		tool     string
		give     map[string]any
		declared Declared
		want     []Call
	}{
		{"Read", map[string]any{"file_path": "/p/a.go", "limit": 3.0}, quickstart,
			[]Call{{"Read", map[string]any{"file_path": "/p/a.go", "limit": 3.0}}}},
		{"Read", map[string]any{"file_path": "/p/a.go", "limit": 3.0}, none,
			[]Call{{"files_read", map[string]any{"path": "/p/a.go"}}}},
		{"Bash", map[string]any{"command": "ls", "timeout": 5.0}, none,
			[]Call{{"shell_exec", map[string]any{"command": "ls", "cwd": "/p"}}}},
		{"Edit", map[string]any{"file_path": "/p/a", "old_string": "x", "new_string": "y", "replace_all": true}, none,
			[]Call{{"files_edit", map[string]any{"path": "/p/a", "old": "x", "new": "y"}}}},
		{"MultiEdit", map[string]any{"file_path": "/p/a", "edits": []any{map[string]any{"old_string": "1", "new_string": "2"}, map[string]any{"old_string": "3", "new_string": "4"}}}, quickstart,
			[]Call{{"Edit", map[string]any{"file_path": "/p/a", "old_string": "1", "new_string": "2"}}, {"Edit", map[string]any{"file_path": "/p/a", "old_string": "3", "new_string": "4"}}}},
		{"MultiEdit", map[string]any{"file_path": "/p/a", "edits": []any{map[string]any{"old_string": "1", "new_string": "2"}}}, none,
			[]Call{{"files_edit", map[string]any{"path": "/p/a", "old": "1", "new": "2"}}}},
		{"Glob", map[string]any{"pattern": "**/*.go"}, quickstart, []Call{{"Glob", map[string]any{"pattern": "**/*.go", "path": "/p"}}}},
		{"Glob", map[string]any{"pattern": "*.go", "path": "sub"}, none, []Call{{"files_find", map[string]any{"pattern": "*.go", "path": "/p/sub"}}}},
		// Relative paths are taken from the directory the call is made in, not the project's.
		{"Read", map[string]any{"file_path": "../x/a.go"}, quickstart, []Call{{"Read", map[string]any{"file_path": "/x/a.go"}}}},
		{"Write", map[string]any{"file_path": "b.txt", "content": "c"}, none, []Call{{"files_write", map[string]any{"path": "/p/b.txt", "content": "c"}}}},
		{"Grep", map[string]any{"pattern": "x", "glob": "*.go"}, none, []Call{{"files_search", map[string]any{"query": "x", "path": "/p"}}}},
		{"WebFetch", map[string]any{"url": "https://e.com", "prompt": "p"}, none, []Call{{"net_fetch", map[string]any{"url": "https://e.com"}}}},
		{"NotebookEdit", map[string]any{"notebook_path": "/p/n.ipynb", "new_source": "1", "cell_id": "c"}, quickstart,
			[]Call{{"Write", map[string]any{"file_path": "/p/n.ipynb", "content": "1"}}}},
		{"NotebookEdit", map[string]any{"notebook_path": "/p/n.ipynb", "new_source": "1"}, none,
			[]Call{{"files_write", map[string]any{"path": "/p/n.ipynb", "content": "1"}}}},
		{"Task", map[string]any{"description": "d", "prompt": "p", "subagent_type": "general-purpose"}, quickstart,
			[]Call{{"spawn_subagent", map[string]any{"root": "/p", "task": "p"}}}},
		{"mcp__github__get_issue", map[string]any{"n": 1.0}, quickstart, []Call{{"mcp__github__get_issue", map[string]any{"n": 1.0}}}},
	}
	for _, tt := range tests {
		got, err := Map(tt.tool, tt.give, "/p", tt.declared)
		if err != nil {
			t.Errorf("%s: %v", tt.tool, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %v (-want +got):\n%s", tt.tool, tt.give, diff)
		}
	}
}

// TestMapRefuses: an unknown tool and a malformed input are errors, never calls.
func TestMapRefuses(t *testing.T) {
	var unknown *UnknownToolError
	for _, tool := range []string{"TodoWrite", "mcp__other__tool"} {
		if _, err := Map(tool, map[string]any{}, "/p", quickstart); !errors.As(err, &unknown) {
			t.Errorf("%s: %v; want an UnknownToolError", tool, err)
		}
	}
	for _, give := range []map[string]any{{"file_path": "a"}, {"file_path": "a", "edits": []any{}}, {"file_path": "a", "edits": []any{"x"}}} {
		if _, err := Map("MultiEdit", give, "/p", none); err == nil || !strings.Contains(err.Error(), "edits") {
			t.Errorf("MultiEdit %v: %v; want an error naming edits", give, err)
		}
	}
}

func TestParseEvent(t *testing.T) {
	e, err := ParseEvent([]byte(`{"session_id":"s","transcript_path":"/t","cwd":"/p","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"a"},"tool_use_id":"toolu_1"}`))
	if err != nil || e.ToolName != "Read" || e.ToolInput["file_path"] != "a" || e.ToolUseID != "toolu_1" || e.SessionID != "s" {
		t.Fatalf("%+v, %v", e, err)
	}
	for give, want := range map[string]string{
		`[]`: "not a JSON object",
		`{"cwd":"/","tool_name":"Read","tool_input":{}}`:                                 "hook_event_name is missing",
		`{"cwd":"/","hook_event_name":"PreToolUse","tool_input":{}}`:                     "tool_name is missing",
		`{"cwd":"/","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":"x"}`: "not a JSON object",
		`{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{}}`:            "cwd is missing",
	} {
		if _, err := ParseEvent([]byte(give)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", give, err, want)
		}
	}
}

// TestSandboxInput: the original command reaches bash -c as one word, whatever it holds, and
// the other fields are kept.
func TestSandboxInput(t *testing.T) {
	sb := Sandbox{Warden: "/opt/warden dir/warden", Workspace: "/p", Boundaries: "/p/.claude/rules.json"}
	orig := `echo 'a' "$HOME" $(id) \` + "\n" + `; it's`
	in, err := sb.SandboxInput(map[string]any{"command": orig, "description": "d", "timeout": 5000.0}, "/p/sub")
	if err != nil {
		t.Fatal(err)
	}
	if in["description"] != "d" || in["timeout"] != 5000.0 {
		t.Errorf("fields not kept: %v", in)
	}
	// Let a real shell split the line, printing each word on its own line.
	out, err := exec.Command("bash", "-c", `printf '%s\0' `+strings.TrimPrefix(in["command"].(string), "'/opt/warden dir/warden'")).Output()
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	want := []string{"exec", "--workspace", "/p", "--boundaries", "/p/.claude/rules.json", "--timeout", "5000ms", "--", "bash", "-c", "cd '/p/sub' || exit 1\n" + orig}
	if diff := cmp.Diff(want, words); diff != "" {
		t.Errorf("words (-want +got):\n%s", diff)
	}
	if _, err := sb.SandboxInput(map[string]any{"command": 3.0}, "/p"); err == nil {
		t.Error("a command that is not a string was rewritten")
	}
}
