package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// blocks returns the fenced code blocks of a Markdown file with the given language.
func blocks(t *testing.T, path, lang string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		out = append(out, m[1])
	}
	return out
}

// Every client form of docs/gateway.md works against a running Warden: the Claude Code
// configuration the banner prints (the TypeScript SDK connects with its URL and header), the
// Codex CLI's stdio form (`warden mcp` with $WARDEN_TOKEN), the Go SDK program, and the
// connector example passes warden check.
func TestTheHowToWorks(t *testing.T) {
	peers(t)
	const doc = "../docs/gateway.md"
	dir := t.TempDir()
	s := serve(t, dir, nil)
	ws := filepath.Join(dir, "workspaces", "default")
	if err := os.MkdirAll(ws, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("# notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var surface struct{ Tools []string }
	if err := json.Unmarshal([]byte(wardenCmd(t, dir, "surface", "--role", "person", "--tenant", "default", "--json")), &surface); err != nil {
		t.Fatal(err)
	}
	slices.Sort(surface.Tools)

	// Claude Code: the page's .mcp.json has the shape of the one the banner prints, and the
	// banner's works.
	type mcpJSON struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	var documented, printed mcpJSON
	jsons := blocks(t, doc, "json")
	if len(jsons) == 0 {
		t.Fatal("the page has no .mcp.json")
	}
	if err := json.Unmarshal([]byte(jsons[0]), &documented); err != nil {
		t.Fatalf("the page's .mcp.json: %v", err)
	}
	banner := s.output()
	start := strings.Index(banner, "Claude Code (.mcp.json):")
	if start < 0 {
		t.Fatalf("the banner prints no .mcp.json:\n%s", banner)
	}
	dec := json.NewDecoder(strings.NewReader(banner[start+len("Claude Code (.mcp.json):"):]))
	if err := dec.Decode(&printed); err != nil {
		t.Fatalf("the banner's .mcp.json: %v", err)
	}
	d, p := documented.MCPServers["warden"], printed.MCPServers["warden"]
	if d.Type != "http" || p.Type != d.Type || p.URL != s.url || !strings.HasPrefix(p.Headers["Authorization"], "Bearer ") ||
		!strings.HasPrefix(d.Headers["Authorization"], "Bearer ") {
		t.Errorf("the page's .mcp.json %+v, the banner's %+v", documented, printed)
	}
	got := tsClient(t, p.URL, strings.TrimPrefix(p.Headers["Authorization"], "Bearer "), step{Op: "tools"})
	if !slices.Equal(got[0].Names, surface.Tools) {
		t.Errorf("with the banner's .mcp.json the client lists %v, want %v", got[0].Names, surface.Tools)
	}

	// Codex: the HTTP form names WARDEN_TOKEN; the stdio form runs `warden mcp` with it.
	tomls := strings.Join(blocks(t, doc, "toml"), "\n")
	for _, want := range []string{`bearer_token_env_var = "WARDEN_TOKEN"`, `args = ["mcp"]`, `env = { WARDEN_TOKEN = `} {
		if !strings.Contains(tomls, want) {
			t.Errorf("the page's Codex configuration lacks %s", want)
		}
	}
	res, err := tsRunIn(dir, "stdio:"+warden, s.clientToken,
		step{Op: "tools"}, step{Op: "call", Name: "Read", Arguments: map[string]any{"file_path": "notes.md"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res[0].Names, surface.Tools) {
		t.Errorf("over stdio the client lists %v, want %v", res[0].Names, surface.Tools)
	}
	if res[1].IsError || !strings.Contains(res[1].Text, "# notes") {
		t.Errorf("Read over stdio: %+v", res[1])
	}

	// The Go SDK program, as the page runs it.
	cmd := exec.Command(goclient, "-url", s.url, "-call", "Read", "-args", `{"file_path": "notes.md"}`)
	cmd.Env = append(os.Environ(), "WARDEN_TOKEN="+s.clientToken)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("goclient: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < len(surface.Tools) {
		t.Fatalf("goclient printed %q", out)
	}
	listed := slices.Clone(lines[:len(surface.Tools)])
	slices.Sort(listed)
	if !slices.Equal(listed, surface.Tools) || !strings.Contains(string(out), "# notes") {
		t.Errorf("goclient printed:\n%s", out)
	}

	// Every policy example on the page is a valid policy.
	yamls := blocks(t, doc, "yaml")
	if len(yamls) == 0 {
		t.Fatal("the page has no policy example")
	}
	for i, y := range yamls {
		file := filepath.Join(dir, fmt.Sprintf("example%d.yaml", i))
		if err := os.WriteFile(file, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		wardenCmd(t, dir, "check", "-c", file)
	}
}
