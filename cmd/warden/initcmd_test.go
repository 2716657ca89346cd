package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// readJSON decodes a file of the project.
func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return m
}

// commands lists the commands of an event's hooks in a settings file.
func commands(settings map[string]any, event string) []string {
	var out []string
	hooks, _ := settings["hooks"].(map[string]any)
	list, _ := hooks[event].([]any)
	for _, m := range list {
		hs, _ := m.(map[string]any)["hooks"].([]any)
		for _, h := range hs {
			c, _ := h.(map[string]any)["command"].(string)
			out = append(out, c)
		}
	}
	return out
}

// In an empty project: both files created, with exactly the hooks and server of the issue.
func TestInitClaudeCodeCreates(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := run(t, "init", "claude-code", "--dir", dir, "--server", "http://127.0.0.1:8640/")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "created .claude/settings.json") || !strings.Contains(out, "created .mcp.json") {
		t.Errorf("output:\n%s", out)
	}
	settings := readJSON(t, filepath.Join(dir, ".claude", "settings.json"))
	hook := map[string]any{"type": "command", "command": "warden hook claude-code --server http://127.0.0.1:8640", "timeout": float64(60)}
	want := map[string]any{"hooks": map[string]any{
		"PreToolUse":  []any{map[string]any{"matcher": "*", "hooks": []any{hook}}},
		"PostToolUse": []any{map[string]any{"matcher": "*", "hooks": []any{hook}}},
	}}
	if !reflect.DeepEqual(settings, want) {
		t.Errorf("settings.json: %v\nwant %v", settings, want)
	}
	mcp := readJSON(t, filepath.Join(dir, ".mcp.json"))
	wantMCP := map[string]any{"mcpServers": map[string]any{"warden": map[string]any{"type": "http", "url": "http://127.0.0.1:8640/mcp",
		"headers": map[string]any{"Authorization": "Bearer ${WARDEN_TOKEN}"}}}}
	if !reflect.DeepEqual(mcp, wantMCP) {
		t.Errorf(".mcp.json: %v\nwant %v", mcp, wantMCP)
	}

	// Without --server: the hooks alone, standalone, and no .mcp.json.
	bare := t.TempDir()
	if _, errOut, code := run(t, "init", "claude-code", "--dir", bare); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := commands(readJSON(t, filepath.Join(bare, ".claude", "settings.json")), "PreToolUse"); !reflect.DeepEqual(got, []string{"warden hook claude-code"}) {
		t.Errorf("PreToolUse without --server: %v", got)
	}
	if _, err := os.Stat(filepath.Join(bare, ".mcp.json")); !os.IsNotExist(err) {
		t.Errorf(".mcp.json without --server: %v; want none", err)
	}
}

// Existing settings and servers stay, in their order, and a rerun changes nothing.
func TestInitClaudeCodeMergesAndIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	settingsPath, mcpPath := filepath.Join(dir, ".claude", "settings.json"), filepath.Join(dir, ".mcp.json")
	writeFile(t, settingsPath, `{"permissions": {"allow": ["Bash(npm test)"]}, "model": "opus",
  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint-guard.sh"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
  "big": 12345678901234567890}`)
	writeFile(t, mcpPath, `{"mcpServers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}}}`)

	out, errOut, code := run(t, "init", "claude-code", "--dir", dir, "--server", "https://warden.example.com")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "updated .claude/settings.json") || !strings.Contains(out, "updated .mcp.json") {
		t.Errorf("output:\n%s", out)
	}
	settings := readJSON(t, settingsPath)
	if settings["model"] != "opus" || settings["permissions"] == nil {
		t.Errorf("other keys lost: %v", settings)
	}
	ours := "warden hook claude-code --server https://warden.example.com"
	if got := commands(settings, "PreToolUse"); !reflect.DeepEqual(got, []string{"./lint-guard.sh", ours}) {
		t.Errorf("PreToolUse: %v; want the existing hook, then Warden's", got)
	}
	if got := commands(settings, "PostToolUse"); !reflect.DeepEqual(got, []string{ours}) {
		t.Errorf("PostToolUse: %v", got)
	}
	if got := commands(settings, "Stop"); !reflect.DeepEqual(got, []string{"say done"}) {
		t.Errorf("Stop: %v", got)
	}
	raw, _ := os.ReadFile(settingsPath)
	text := string(raw)
	if !strings.Contains(text, "12345678901234567890") {
		t.Errorf("a number was rewritten:\n%s", text)
	}
	if i, j := strings.Index(text, `"permissions"`), strings.Index(text, `"model"`); i < 0 || j < i {
		t.Errorf("the keys were reordered:\n%s", text)
	}
	servers := readJSON(t, mcpPath)["mcpServers"].(map[string]any)
	if servers["github"] == nil || servers["warden"].(map[string]any)["url"] != "https://warden.example.com/mcp" {
		t.Errorf("mcpServers: %v", servers)
	}

	// A rerun: nothing to add, nothing written.
	beforeS, _ := os.ReadFile(settingsPath)
	beforeM, _ := os.ReadFile(mcpPath)
	out, errOut, code = run(t, "init", "claude-code", "--dir", dir, "--server", "https://warden.example.com")
	if code != 0 {
		t.Fatalf("rerun: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "unchanged .claude/settings.json") || !strings.Contains(out, "unchanged .mcp.json") {
		t.Errorf("rerun output:\n%s", out)
	}
	afterS, _ := os.ReadFile(settingsPath)
	afterM, _ := os.ReadFile(mcpPath)
	if string(beforeS) != string(afterS) || string(beforeM) != string(afterM) {
		t.Error("a rerun changed the files")
	}

	// Another server named: Warden's hook and server already there are left as they are, and
	// the output says so.
	out, _, code = run(t, "init", "claude-code", "--dir", dir, "--server", "http://127.0.0.1:9999")
	if code != 0 || !strings.Contains(out, "left as is") {
		t.Errorf("another server: exit %d:\n%s", code, out)
	}
	if got := commands(readJSON(t, settingsPath), "PreToolUse"); len(got) != 2 {
		t.Errorf("PreToolUse after another server: %v; want no second hook of Warden's", got)
	}
}

// A file that is not JSON (or not the shape Claude Code reads) is refused and left as it was,
// and so is the other file.
func TestInitClaudeCodeRefusesInvalidJSON(t *testing.T) {
	tests := []struct {
		name, file, content, wantErr string
	}{
		{"settings not JSON", ".claude/settings.json", `{"hooks": {`, "settings.json is not valid JSON"},
		{"settings a list", ".claude/settings.json", `[1, 2]`, "settings.json is not valid JSON"},
		{"hooks not an object", ".claude/settings.json", `{"hooks": []}`, "hooks must be an object"},
		{"an event not a list", ".claude/settings.json", `{"hooks": {"PreToolUse": {"matcher": "*"}}}`, "hooks.PreToolUse must be a list"},
		{"mcp not JSON", ".mcp.json", `{"mcpServers": }`, ".mcp.json is not valid JSON"},
		{"trailing text", ".mcp.json", `{} {}`, ".mcp.json is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tt.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, tt.content)
			_, errOut, code := run(t, "init", "claude-code", "--dir", dir, "--server", "http://127.0.0.1:8640")
			if code == 0 || !strings.Contains(errOut, tt.wantErr) || !strings.Contains(errOut, "does not overwrite") {
				t.Errorf("exit %d, %q; want a refusal saying %q", code, errOut, tt.wantErr)
			}
			if b, _ := os.ReadFile(path); string(b) != tt.content {
				t.Errorf("%s was changed to %q", tt.file, b)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Name() != filepath.Dir(tt.file) && e.Name() != tt.file {
					t.Errorf("%s was written", e.Name())
				}
			}
			if tt.file == ".mcp.json" {
				if _, err := os.Stat(filepath.Join(dir, ".claude")); !os.IsNotExist(err) {
					t.Error(".claude was written though .mcp.json was refused")
				}
			}
		})
	}
	if _, errOut, code := run(t, "init", "claude-code", "--dir", t.TempDir(), "--server", "ftp://x"); code == 0 || !strings.Contains(errOut, "--server") {
		t.Errorf("a bad --server: exit %d, %q", code, errOut)
	}
}
