package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/store/postgres"
	"github.com/wardenhq/warden/store/sqlite"
)

// binDir holds the binary the end-to-end tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildWarden builds the real binary once per test run.
var buildWarden = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "warden-bin-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "warden")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// serveProc is a `warden serve` process.
type serveProc struct {
	cmd  *exec.Cmd
	base string
	out  *syncBuffer
}

// startServe starts the real binary with args and waits until it listens.
func startServe(t *testing.T, args ...string) *serveProc {
	t.Helper()
	bin, err := buildWarden()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--client-token=false"}, args...)...)
	out := &syncBuffer{}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	listening := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`listening on (http://\S+)`)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			out.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case listening <- m[1]:
				default:
				}
			}
		}
		close(listening)
	}()
	select {
	case base, ok := <-listening:
		if !ok {
			t.Fatalf("warden serve exited before it listened:\n%s", out.String())
		}
		return &serveProc{cmd: cmd, base: base, out: out}
	case <-time.After(time.Minute):
		t.Fatalf("warden serve did not listen within a minute:\n%s", out.String())
	}
	return nil
}

// initialize opens an MCP session with the token and returns the HTTP status and body.
func (s *serveProc) initialize(t *testing.T, token string) (int, string) {
	t.Helper()
	code, body, _ := s.post(t, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	return code, body
}

// post sends one MCP POST (on session id, unless ""), and returns the HTTP status, the body
// and the session id the answer names.
func (s *serveProc) post(t *testing.T, token, id, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && b.Len() < 4096 {
		b.WriteString(sc.Text())
	}
	return resp.StatusCode, b.String(), resp.Header.Get("Mcp-Session-Id")
}

// recoveryAfterKill: a profile at maxConcurrentRuns: 1 holds its run through a session, the
// process is killed with SIGKILL, and a process started again on the same store serves that
// session on (the session and its run are the store's, not the process's); a new session of
// the profile waits until that one ends, here by idling out, which the new process notices and
// records, freeing the run. Before sessions were kept in the store, the kill ended the session
// and recovery freed its run; before instances, the run stayed live for good.
func recoveryAfterKill(t *testing.T, storeArgs []string, runEvents func() []*audit.Event) {
	stdout, stderr, code := run(t, append([]string{"token", "create", "-c", scout, "--tenant", "acme",
		"--role", "goal_reviewer", "--profile", "goal_reviewer", "--create"}, storeArgs...)...)
	if code != 0 {
		t.Fatalf("token create: %s", stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	token := lines[len(lines)-1]

	args := append([]string{"-c", scout, "--workspaces", filepath.Join(t.TempDir(), "ws"), "--heartbeat", "100ms", "--idle-timeout", "2s"}, storeArgs...)
	first := startServe(t, args...)
	code, body, id := first.post(t, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if code != http.StatusOK || id == "" {
		t.Fatalf("the first session: HTTP %d %s\n%s", code, body, first.out.String())
	}
	runID := regexp.MustCompile(`run-[0-9a-f]+`).FindString(body)
	if code, body := first.initialize(t, token); code == http.StatusOK || !strings.Contains(body, "live runs") {
		t.Fatalf("a second session beside the first: HTTP %d %s; want it refused for the profile's one live run", code, body)
	}
	if code, body, _ := first.post(t, token, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d %s", code, body)
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()

	second := startServe(t, args...)
	// The client carries on: its session, opened by the killed process, is served by the new one.
	if code, body, _ := second.post(t, token, id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusOK || !strings.Contains(body, `"tools"`) {
		t.Fatalf("the session after the restart: HTTP %d %s\n%s", code, body, second.out.String())
	}
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := second.initialize(t, token)
		if code == http.StatusOK {
			break
		}
		if !strings.Contains(body, "live runs") {
			t.Fatalf("after the restart: HTTP %d %s; want the live-run refusal until the first session idles out, then a session", code, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle session's run was not freed within a minute: HTTP %d %s\n%s", code, body, second.out.String())
		}
		time.Sleep(20 * time.Millisecond) // polling the server's answer, not waiting for it
	}
	if code, body, _ := second.post(t, token, id, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); code != http.StatusNotFound {
		t.Fatalf("the expired session: HTTP %d %s, want 404", code, body)
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("serve did not shut down cleanly: %v\n%s", err, second.out.String())
	}

	// On record: the first session's run started once and ended once, when it expired.
	var started, ended int
	for _, e := range runEvents() {
		if e.Run != runID {
			continue
		}
		switch e.Outcome {
		case "started":
			started++
		case "ended":
			ended++
		}
	}
	if runID == "" || started != 1 || ended != 1 {
		t.Errorf("run %q: %d started and %d ended events, want 1 and 1", runID, started, ended)
	}
}

func TestRecoveryAfterKillSQLite(t *testing.T) {
	db := filepath.Join(t.TempDir(), "w.db")
	recoveryAfterKill(t, []string{"--db", db}, func() []*audit.Event {
		s, err := sqlite.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		events, err := s.Query(context.Background(), audit.Filter{Kind: audit.KindRun})
		if err != nil {
			t.Fatal(err)
		}
		return events
	})
}

func TestRecoveryAfterKillPostgres(t *testing.T) {
	su := pgSchemaURL(t, "warden_test_recovery")
	ctx := context.Background()
	recoveryAfterKill(t, []string{"--postgres", su}, func() []*audit.Event {
		s, err := postgres.Open(ctx, su)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		events, err := s.Query(ctx, audit.Filter{Kind: audit.KindRun})
		if err != nil {
			t.Fatal(err)
		}
		return events
	})
}

// TestSIGTERMLeavesNoCardPending: a call parked on a card when warden serve is told to stop
// leaves no pending card behind (before instances, the card stayed pending, and an answer
// after a restart said "allowed" and ran nothing); its expiry is on record.
func TestSIGTERMLeavesNoCardPending(t *testing.T) {
	db := filepath.Join(t.TempDir(), "w.db")
	s := startServe(t, "--db", db, "--workspaces", filepath.Join(t.TempDir(), "ws"), "--heartbeat", "100ms", "--client-token=true")
	bearer := regexp.MustCompile(`Bearer (wdn_\S+)`)
	var m []string
	for deadline := time.Now().Add(time.Minute); m == nil; m = bearer.FindStringSubmatch(s.out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no client token printed:\n%s", s.out.String())
		}
		time.Sleep(10 * time.Millisecond) // polling the output, which follows the listening line
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{m[1]}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	go func() {
		// Ends with an error when the server stops: it is the card that matters here.
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sandbox_allow_host",
			Arguments: map[string]any{"host": "example.org", "reason": "the test parks a card"}})
	}()

	store, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	pending := func() int {
		cards, err := store.Cards(context.Background(), approval.CardFilter{State: approval.Pending})
		if err != nil {
			t.Fatal(err)
		}
		return len(cards)
	}
	deadline := time.Now().Add(time.Minute)
	for pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no card was parked within a minute:\n%s", s.out.String())
		}
		time.Sleep(20 * time.Millisecond) // polling the store, not waiting for it
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = s.cmd.Wait() // a call still in flight may make the shutdown report its timeout
	if n := pending(); n != 0 {
		t.Errorf("%d cards pending after SIGTERM, want none:\n%s", n, s.out.String())
	}
	events, err := store.Query(context.Background(), audit.Filter{Kind: audit.KindApproval})
	if err != nil {
		t.Fatal(err)
	}
	var canceled int
	for _, e := range events {
		if e.Decision == "deny" && e.Channel == string(approval.ChannelCanceled) && len(e.Blockers) > 0 && e.Blockers[0].Code == "approval_canceled" {
			canceled++
		}
	}
	if canceled != 1 {
		t.Errorf("%d approval_canceled events, want 1: %+v", canceled, events)
	}
	// At shutdown the instance signed a checkpoint of each chain it appended to, with the key
	// it recorded at start; the trail verifies against them.
	keys, err := store.Keys(context.Background())
	if err != nil || len(keys) != 1 {
		t.Fatalf("signing keys after one serve: %+v, %v; want one", keys, err)
	}
	cps, err := store.Checkpoints(context.Background())
	if err != nil || len(cps) == 0 {
		t.Fatalf("checkpoints after SIGTERM: %+v, %v; want at least one", cps, err)
	}
	sum, err := audit.VerifyLog(context.Background(), store)
	if err != nil || sum.Checkpoints != len(cps) || sum.Unchained != 0 {
		t.Errorf("verify after SIGTERM: %+v, %v; want every event chained and %d checkpoints checked", sum, err, len(cps))
	}
}
