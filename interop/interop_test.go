package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// warden is the binary under test, and goclient the Go SDK program of the how-to (in
// examples/goclient), built once by TestMain.
var warden, goclient string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "warden-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	warden = filepath.Join(dir, "warden")
	goclient = filepath.Join(dir, "goclient")
	gobin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "the interop tests build warden with go:", err)
		return 1
	}
	for out, pkg := range map[string]string{warden: "../cmd/warden", goclient: "../examples/goclient"} {
		build := exec.Command(gobin, "build", "-o", out, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build", pkg+":", err)
			return 1
		}
	}
	return m.Run()
}

var npmOnce struct {
	sync.Once
	err error
}

// peers makes sure node and the pinned npm packages are there, and returns the absolute path
// of node_modules.
func peers(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("WARDEN_INTEROP") == "require" {
			t.Fatal("node is required (WARDEN_INTEROP=require) but not on PATH")
		}
		t.Skip("node is not on PATH: the interop tests need it (set WARDEN_INTEROP=require to fail instead)")
	}
	abs, err := filepath.Abs("node_modules")
	if err != nil {
		t.Fatal(err)
	}
	npmOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(abs, ".package-lock.json")); err == nil {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		out, err := cmd.CombinedOutput()
		if err != nil {
			npmOnce.err = fmt.Errorf("npm ci: %v\n%s", err, out)
		}
	})
	if npmOnce.err != nil {
		t.Fatal(npmOnce.err)
	}
	return abs
}

// server is a running `warden serve`.
type server struct {
	url         string // the MCP endpoint
	base        string // http://host:port
	clientToken string // the person token the banner printed
	adminToken  string // the admin token made on first start
	proc        *os.Process
	exited      chan struct{} // closed when the process has exited
	mu          sync.Mutex
	log         bytes.Buffer
}

func (s *server) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// serve starts `warden serve` in dir, with extra environment and arguments, and waits until it
// listens and has printed its client configuration.
func serve(t *testing.T, dir string, env []string, args ...string) *server {
	t.Helper()
	return serveUnder(t, dir, env, nil, args...)
}

// serveUnder is serve with warden started by a wrapper command (wrap, then warden's own
// argv), as a supervisor would start it.
func serveUnder(t *testing.T, dir string, env, wrap []string, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	argv := append(append(slices.Clone(wrap), warden, "serve", "--addr", "127.0.0.1:0"), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{proc: cmd.Process, exited: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		closed, adminNext := false, false
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			trimmed := strings.TrimSpace(line)
			switch {
			case adminNext:
				s.adminToken, adminNext = trimmed, false
			case strings.Contains(line, "created an admin token"):
				adminNext = true
			case strings.Contains(line, "listening on http://"):
				addr := strings.Fields(line[strings.Index(line, "http://"):])[0]
				s.base = addr
				s.url = addr + "/mcp"
			case strings.HasPrefix(trimmed, "Header: Authorization: Bearer "):
				s.clientToken = strings.TrimPrefix(trimmed, "Header: Authorization: Bearer ")
				if !closed {
					closed = true
					close(ready)
				}
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); close(s.exited); pw.Close() }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("warden serve said:\n%s", s.output())
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("warden serve stopped: %v\n%s", err, s.output())
	case <-time.After(60 * time.Second):
		t.Fatalf("warden serve did not get ready in 60 s:\n%s", s.output())
	}
	return s
}

// wardenCmd runs a warden subcommand in dir and returns its standard output.
func wardenCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(warden, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("warden %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out)
}

// step is one step of the TypeScript client (client.mjs).
type step struct {
	Op        string         `json:"op"`
	Name      string         `json:"name,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
	TimeoutMs int            `json:"timeoutMs,omitempty"`
	URI       string         `json:"uri,omitempty"`
}

// result is what one step gave.
type result struct {
	OK         bool     `json:"ok"`
	Error      string   `json:"error"`
	Names      []string `json:"names"`
	IsError    bool     `json:"isError"`
	Text       string   `json:"text"`
	Structured any      `json:"structured"`
}

// tsClient runs the official TypeScript SDK client against url with token.
func tsClient(t *testing.T, url, token string, steps ...step) []result {
	t.Helper()
	res, err := tsRun(url, token, steps...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// tsRun is tsClient for goroutines other than the test's.
func tsRun(url, token string, steps ...step) ([]result, error) {
	return tsRunIn("", url, token, steps...)
}

// tsRunIn runs the client with WARDEN_DIR=dir: the directory `warden mcp` runs in when url is
// stdio:WARDEN_BINARY.
func tsRunIn(dir, url, token string, steps ...step) ([]result, error) {
	plan, err := json.Marshal(steps)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", url, token, string(plan))
	if dir != "" {
		cmd.Env = append(os.Environ(), "WARDEN_DIR="+dir)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("the TypeScript client: %v\n%s%s", err, out, stderr.Bytes())
	}
	var got struct {
		Server struct{ Name, Version string }
		Steps  []result
	}
	if err := json.Unmarshal(out, &got); err != nil {
		return nil, fmt.Errorf("the TypeScript client's output: %v\n%s", err, out)
	}
	if got.Server.Name != "warden" {
		return nil, fmt.Errorf("the client connected to %q, want warden", got.Server.Name)
	}
	if len(got.Steps) != len(steps) {
		return nil, fmt.Errorf("%d results for %d steps", len(got.Steps), len(steps))
	}
	return got.Steps, nil
}

// The first-run path: `warden serve` with no arguments, a token from `warden token create
// --create` (made before serve, so it makes the store), and
// the TypeScript SDK client lists exactly the person surface, calls a tool, and a call that
// needs a person waits until one answers it through the REST API.
func TestTypeScriptClientOnTheFirstRun(t *testing.T) {
	peers(t)
	dir := t.TempDir()
	out := wardenCmd(t, dir, "token", "create", "--create", "--tenant", "default", "--role", "person")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	token := lines[len(lines)-1]
	s := serve(t, dir, nil)

	var surface struct{ Tools []string }
	if err := json.Unmarshal([]byte(wardenCmd(t, dir, "surface", "--role", "person", "--tenant", "default", "--json")), &surface); err != nil {
		t.Fatal(err)
	}
	slices.Sort(surface.Tools)

	ws := filepath.Join(dir, "workspaces", "default")
	if err := os.MkdirAll(ws, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello from the workspace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{token, s.clientToken} {
		got := tsClient(t, s.url, tok,
			step{Op: "tools"},
			step{Op: "call", Name: "Read", Arguments: map[string]any{"file_path": "hello.txt"}},
			step{Op: "call", Name: "files_read", Arguments: map[string]any{"path": "/etc/passwd"}},
		)
		if !slices.Equal(got[0].Names, surface.Tools) {
			t.Errorf("the client lists %v\nwarden surface prints %v", got[0].Names, surface.Tools)
		}
		if !got[1].OK || got[1].IsError || !strings.Contains(got[1].Text, "hello from the workspace") {
			t.Errorf("Read: %+v", got[1])
		}
		if !got[2].IsError || !strings.Contains(got[2].Text, "outside_workspace") {
			t.Errorf("a read outside the workspace: %+v", got[2])
		}
	}

	// Writes are allowed to a person by the quickstart: a write runs at once.
	got := tsClient(t, s.url, token, step{Op: "call", Name: "files_write",
		Arguments: map[string]any{"path": "notes/a.txt", "content": "written"}})
	if got[0].IsError {
		t.Fatalf("files_write: %+v", got[0])
	}
	if data, err := os.ReadFile(filepath.Join(ws, "notes", "a.txt")); err != nil || string(data) != "written" {
		t.Fatalf("the write left %q, %v", data, err)
	}

	// A command runs in the sandbox: it writes its workspace and reaches out only through its
	// session's egress proxy.
	if !strings.Contains(s.output(), "warden: sandbox on:") {
		t.Logf("the sandbox is not on here, so Bash is not tried:\n%s", s.output())
		return
	}
	got = tsClient(t, s.url, token, step{Op: "call", Name: "Bash",
		Arguments: map[string]any{"command": "cat notes/a.txt && echo \" proxy=$HTTP_PROXY\""}})
	if got[0].IsError || !strings.Contains(got[0].Text, "written proxy=http://127.0.0.1:") {
		t.Errorf("Bash in the sandbox: %+v", got[0])
	}
}

// A call the policy gates waits until a person answers its card through the REST API; a denied
// card fails the call with the reason.
func TestTypeScriptClientWaitsForAPerson(t *testing.T) {
	peers(t)
	dir := t.TempDir()
	policy := `
version: 1
builtins:
  - name: files_read
  - name: files_write
    gate: {approval: true}
tenants:
  - id: default
`
	if err := os.WriteFile(filepath.Join(dir, "warden.yaml"), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serve(t, dir, nil)
	ws := filepath.Join(dir, "workspaces", "default")
	for _, c := range []struct {
		answer, path string
		ran          bool
	}{{"allow_once", "approved.txt", true}, {"deny", "denied.txt", false}} {
		calls := make(chan []result, 1)
		go func() {
			res, err := tsRun(s.url, s.clientToken, step{Op: "call", Name: "files_write",
				Arguments: map[string]any{"path": c.path, "content": c.answer}})
			if err != nil {
				t.Error(err)
				res = []result{{IsError: !c.ran}}
			}
			calls <- res
		}()
		card := pendingCard(t, s)
		if card.Tool != "files_write" {
			t.Fatalf("the pending card is for %s", card.Tool)
		}
		answer(t, s, card.ID, c.answer)
		var res []result
		select {
		case res = <-calls:
		case <-time.After(90 * time.Second):
			t.Fatalf("the call answered %s did not finish", c.answer)
		}
		_, err := os.Stat(filepath.Join(ws, c.path))
		if res[0].IsError == c.ran || (err == nil) != c.ran {
			t.Errorf("answered %s: %+v (file: %v)", c.answer, res[0], err)
		}
		if !c.ran && !strings.Contains(res[0].Text, "den") {
			t.Errorf("a denied call says %q", res[0].Text)
		}
	}
}

type card struct {
	ID, Tool, State string
}

// pendingCard polls the REST API for the first pending card.
func pendingCard(t *testing.T, s *server) card {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var list struct{ Approvals []card }
		api(t, s, http.MethodGet, "/api/v1/approvals?state=pending", nil, &list)
		if len(list.Approvals) > 0 {
			return list.Approvals[0]
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no card was parked")
	return card{}
}

func answer(t *testing.T, s *server, id, ans string) {
	t.Helper()
	api(t, s, http.MethodPost, "/api/v1/approvals/"+id, map[string]any{"answer": ans}, nil)
}

func api(t *testing.T, s *server, method, path string, body, into any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s %s", method, path, resp.Status, data)
	}
	if into != nil {
		if err := json.Unmarshal(data, into); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, data)
		}
	}
}
