package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// examplesDir is examples/review-api, from this package's directory.
const examplesDir = "../../examples/review-api"

// buildCanUseTool compiles examples/review-api/canUseTool.ts with its pinned TypeScript
// (installed by npm ci when missing, as the interop tests install theirs) and returns the
// path of the JavaScript to run.
func buildCanUseTool(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	out := t.TempDir()
	// ES modules, as the example's package.json says (its top-level await needs them).
	if err := os.WriteFile(filepath.Join(out, "package.json"), []byte(`{"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(dir, "node_modules", "typescript", "bin", "tsc"), "-p", dir, "--outDir", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, b)
	}
	return filepath.Join(out, "canUseTool.js")
}

// runExample runs an example program with the server's address, the token and the workspace
// in its environment, and decodes the JSON line it prints.
func runExample(t *testing.T, s *served, token, workspace string, env []string, name string, args ...string) map[string]any {
	t.Helper()
	got, err := example(t, s, token, workspace, env, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// example is runExample for any goroutine: it returns what went wrong.
func example(t *testing.T, s *served, token, workspace string, env []string, name string, args ...string) (map[string]any, error) {
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Env = append(os.Environ(), append([]string{"WARDEN_URL=" + s.url, "WARDEN_TOKEN=" + token,
		"WARDEN_WORKSPACE=" + workspace, "WARDEN_SESSION=example-1"}, env...)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if x, ok := err.(*exec.ExitError); ok {
			stderr = x.Stderr
		}
		return nil, fmt.Errorf("%s %v: %v\n%s%s", name, args, err, out, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		return nil, fmt.Errorf("%s %v printed %q: %v", name, args, out, err)
	}
	return got, nil
}

// The examples of docs/api.md, run against a served stack: the TypeScript canUseTool and the
// Python client each get an allow, a hard block's deny, and an ask; the Python one waits for
// its card, which is answered over REST.
func TestReviewAPIExamples(t *testing.T) {
	for _, bin := range []string{"node", "npm", "python3"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not on PATH: the review API's examples cannot be run here", bin)
		}
	}
	s := serveForTest(t)
	project := t.TempDir()
	for name, body := range map[string]string{"notes.txt": "hello", ".env": "KEY=x"} {
		if err := os.WriteFile(filepath.Join(project, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("TypeScript canUseTool", func(t *testing.T) {
		js := buildCanUseTool(t)
		if got := runExample(t, s, s.agent, project, nil, "node", js, "Read", `{"file_path":"notes.txt"}`); got["behavior"] != "allow" {
			t.Errorf("Read notes.txt: %v; want allow", got)
		}
		got := runExample(t, s, s.agent, project, nil, "node", js, "Read", `{"file_path":".env"}`)
		if msg, _ := got["message"].(string); got["behavior"] != "deny" || !strings.Contains(msg, "dotenv") {
			t.Errorf("Read .env: %v; want denied by dotenv", got)
		}
		got = runExample(t, s, s.agent, project, nil, "node", js, "Bash", `{"command":"rm -r build"}`)
		if msg, _ := got["message"].(string); got["behavior"] != "deny" || !strings.Contains(msg, "ask") || !strings.Contains(msg, "expired") {
			t.Errorf("Bash rm -r without a wait: %v; want denied, its card expired", got)
		}
		if got := runExample(t, s, "wdn_not-a-token", project, nil, "node", js, "Read", `{"file_path":"notes.txt"}`); got["behavior"] != "deny" {
			t.Errorf("with a bad token: %v; want deny", got)
		}
	})

	t.Run("Python", func(t *testing.T) {
		py := filepath.Join(examplesDir, "review.py")
		if got := runExample(t, s, s.agent, project, nil, "python3", py, "files_read", `{"path":"notes.txt"}`); got["allowed"] != true {
			t.Errorf("files_read notes.txt: %v; want allowed", got)
		}
		got := runExample(t, s, s.agent, project, nil, "python3", py, "files_read", `{"path":".env"}`)
		if why, _ := got["reason"].(string); got["allowed"] != false || !strings.Contains(why, "dotenv") {
			t.Errorf("files_read .env: %v; want refused by dotenv", got)
		}
		stream := s.cards(t)
		done := make(chan map[string]any, 1)
		go func() {
			got, err := example(t, s, s.agent, project, []string{"WARDEN_WAIT=120"}, "python3", py, "shell_exec", `{"command":"rm -r build"}`)
			if err != nil {
				t.Error(err)
			}
			done <- got
		}()
		c := stream.next(t)
		if code, out := apiDo(t, "POST", s.url+"/api/v1/approvals/"+c.ID, s.admin, `{"answer":"allow_once"}`); code != http.StatusOK {
			t.Fatalf("answer: %d %s", code, out)
		}
		if got := <-done; got["allowed"] != true {
			t.Errorf("rm -r build, answered allow_once while the example waited: %v; want allowed", got)
		}
	})
}
