package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// referencePolicy connects the three reference servers as stdio upstreams, each discovering
// its catalog, for tenant default.
func referencePolicy(modules, data string) string {
	bin := func(name string) string { return filepath.Join(modules, ".bin", name) }
	return fmt.Sprintf(`
version: 1
builtins:
  - name: files_read
connectors:
  - id: everything
    effect: read
    discover: true
    upstream: {command: [%q, stdio]}
  - id: filesystem
    effect: write
    discover: true
    upstream: {command: [%q, %q]}
  - id: memory
    effect: write
    discover: true
    upstream: {command: [%q], env: {MEMORY_FILE_PATH: %q}}
tenants:
  - id: default
    connections:
      - {id: everything, connector: everything}
      - {id: filesystem, connector: filesystem}
      - {id: memory, connector: memory}
`, bin("mcp-server-everything"), bin("mcp-server-filesystem"), data,
		bin("mcp-server-memory"), filepath.Join(data, "memory.jsonl"))
}

// The reference servers run as stdio upstreams: the TypeScript client sees their tools under
// Warden's names, calls them through the pipeline, and reads their resources and prompts.
func TestReferenceServersBehindWarden(t *testing.T) {
	modules := peers(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o750); err != nil {
		t.Fatal(err)
	}
	data, _ = filepath.EvalSymlinks(data)
	if err := os.WriteFile(filepath.Join(dir, "warden.yaml"), []byte(referencePolicy(modules, data)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serve(t, dir, nil)
	got := tsClient(t, s.url, s.clientToken,
		step{Op: "tools"},
		step{Op: "call", Name: "mcp__everything__echo", Arguments: map[string]any{"message": "through warden"}},
		step{Op: "call", Name: "mcp__filesystem__write_file", Arguments: map[string]any{
			"path": filepath.Join(data, "note.md"), "content": "# written through warden"}},
		step{Op: "call", Name: "mcp__filesystem__read_text_file", Arguments: map[string]any{"path": filepath.Join(data, "note.md")}},
		step{Op: "call", Name: "mcp__memory__create_entities", Arguments: map[string]any{"entities": []any{
			map[string]any{"name": "warden", "entityType": "project", "observations": []any{"guards tool calls"}}}}},
		step{Op: "call", Name: "mcp__memory__read_graph"},
		step{Op: "call", Name: "mcp__everything__echo", Arguments: map[string]any{"message": 42}},
		step{Op: "resources"},
		step{Op: "prompts"},
	)
	tools := got[0].Names
	for _, want := range []string{"files_read", "mcp__everything__echo", "mcp__filesystem__read_text_file",
		"mcp__filesystem__write_file", "mcp__memory__create_entities", "mcp__memory__read_graph"} {
		if !slices.Contains(tools, want) {
			t.Errorf("the client does not list %s: %v", want, tools)
		}
	}
	for _, name := range tools {
		if name != "files_read" && !strings.HasPrefix(name, "mcp__") {
			t.Errorf("%s is listed: not in the surface", name)
		}
	}
	if r := got[1]; r.IsError || !strings.Contains(r.Text, "through warden") {
		t.Errorf("echo: %+v", r)
	}
	if r := got[2]; r.IsError {
		t.Errorf("write_file: %+v", r)
	}
	if r := got[3]; r.IsError || !strings.Contains(r.Text, "# written through warden") {
		t.Errorf("read_text_file: %+v", r)
	}
	if r := got[4]; r.IsError {
		t.Errorf("create_entities: %+v", r)
	}
	if r := got[5]; r.IsError || !strings.Contains(r.Text, "guards tool calls") {
		t.Errorf("read_graph: %+v", r)
	}
	// Arguments that do not match the upstream's schema are refused before the upstream sees
	// them.
	if r := got[6]; !r.IsError || !strings.Contains(r.Text, "invalid_input") {
		t.Errorf("echo with a number: %+v", r)
	}
	if r := got[7]; !r.OK || len(r.Names) == 0 {
		t.Errorf("resources of server-everything: %+v", r)
	}
	if r := got[8]; !r.OK || len(r.Names) == 0 {
		t.Errorf("prompts of server-everything: %+v", r)
	}
	if data, err := os.ReadFile(filepath.Join(data, "note.md")); err != nil || string(data) != "# written through warden" {
		t.Errorf("the file server-filesystem wrote: %q, %v", data, err)
	}
}

// Two reference servers run as sandboxed connectors (sandbox: true): node and their modules
// are readable (the modules through --sandbox-read-only), and so is the data directory, which
// server-filesystem serves; nothing else is, and nothing outside the process's own directory
// is writable. The client calls them through Warden as it would unsandboxed ones.
func TestReferenceServersInTheSandbox(t *testing.T) {
	modules := peers(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o750); err != nil {
		t.Fatal(err)
	}
	data, _ = filepath.EvalSymlinks(data)
	if err := os.WriteFile(filepath.Join(data, "note.md"), []byte("# readable in the sandbox"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := func(name string) string { return filepath.Join(modules, ".bin", name) }
	policy := fmt.Sprintf(`
version: 1
connectors:
  - id: everything
    effect: read
    discover: true
    sandbox: true
    upstream: {command: [%q, stdio]}
  - id: filesystem
    effect: write
    discover: true
    sandbox: true
    upstream: {command: [%q, %q]}
tenants:
  - id: default
    connections:
      - {id: everything, connector: everything}
      - {id: filesystem, connector: filesystem}
`, bin("mcp-server-everything"), bin("mcp-server-filesystem"), data)
	if err := os.WriteFile(filepath.Join(dir, "warden.yaml"), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	realModules, err := filepath.EvalSymlinks(modules)
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, dir, nil, "--sandbox-read-only", realModules, "--sandbox-read-only", data)
	if !strings.Contains(s.output(), "warden: sandbox on:") {
		t.Skipf("the sandbox is not on here:\n%s", s.output())
	}
	got := tsClient(t, s.url, s.clientToken,
		step{Op: "tools"},
		step{Op: "call", Name: "mcp__everything__echo", Arguments: map[string]any{"message": "from the sandbox"}},
		step{Op: "call", Name: "mcp__filesystem__read_text_file", Arguments: map[string]any{"path": filepath.Join(data, "note.md")}},
		step{Op: "call", Name: "mcp__filesystem__write_file", Arguments: map[string]any{
			"path": filepath.Join(data, "new.md"), "content": "must not land"}},
	)
	for _, want := range []string{"mcp__everything__echo", "mcp__filesystem__read_text_file", "mcp__filesystem__write_file"} {
		if !slices.Contains(got[0].Names, want) {
			t.Fatalf("the client does not list %s: %v\n%s", want, got[0].Names, s.output())
		}
	}
	if r := got[1]; r.IsError || !strings.Contains(r.Text, "from the sandbox") {
		t.Errorf("echo: %+v", r)
	}
	if r := got[2]; r.IsError || !strings.Contains(r.Text, "readable in the sandbox") {
		t.Errorf("read_text_file: %+v", r)
	}
	// The data directory is mounted read-only in the sandbox's own file system.
	if r := got[3]; !r.IsError || !strings.Contains(r.Text, "EROFS") {
		t.Errorf("write_file outside the connector's own directory: %+v; want EROFS from the sandbox", r)
	}
	if _, err := os.Stat(filepath.Join(data, "new.md")); err == nil {
		t.Error("a sandboxed connector wrote into the data directory")
	}
	// warden discover starts them in the same sandbox, given the same flags.
	out := wardenCmd(t, dir, "discover", "--connector", "filesystem", "--sandbox-read-only", realModules, "--sandbox-read-only", data)
	if !strings.Contains(out, "mcp__filesystem__read_text_file") {
		t.Errorf("warden discover of the sandboxed server-filesystem:\n%s", out)
	}
}
