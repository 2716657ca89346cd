package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
)

// pendingCard waits for the one pending card of the tool, polling the store with a deadline.
func (s *served) pendingCard(t *testing.T, tool string) *approval.Card {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		cards, err := s.db.Cards(t.Context(), approval.CardFilter{State: approval.Pending})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cards {
			if c.Tool == tool {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pending card for %s within a minute", tool)
		}
		time.Sleep(20 * time.Millisecond) // polling the store, not waiting for it
	}
}

// deny answers a card deny through the API, as an approver would.
func (s *served) deny(t *testing.T, id string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/api/v1/approvals/"+id, strings.NewReader(`{"answer":"deny"}`))
	req.Header.Set("Authorization", "Bearer "+s.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("deny %s: HTTP %d", id, resp.StatusCode)
	}
}

// The quickstart's REQUIRE_WRITE_APPROVAL means what the banner says: while it is on,
// files_delete and a shell command that deletes ask a person (a card) before they run; with it
// off they run unasked. Before, both ran without asking while the banner said approvals were on.
func TestQuickstartAsksBeforeADelete(t *testing.T) {
	call := func(cs *mcp.ClientSession, tool string, args map[string]any) <-chan *mcp.CallToolResult {
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
			}
			done <- res
		}()
		return done
	}
	wait := func(done <-chan *mcp.CallToolResult) *mcp.CallToolResult {
		t.Helper()
		select {
		case res := <-done:
			return res
		case <-time.After(time.Minute):
			t.Fatal("the call did not end within a minute")
		}
		return nil
	}

	t.Run("on", func(t *testing.T) {
		t.Setenv("REQUIRE_WRITE_APPROVAL", "true")
		s := serveForTest(t)
		victim := filepath.Join(s.ws, "default", "victim.txt")
		if err := os.MkdirAll(filepath.Dir(victim), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, victim, "keep me")
		cs := s.connect(t, s.agent)
		defer cs.Close()

		done := call(cs, "files_delete", map[string]any{"path": "victim.txt"})
		s.deny(t, s.pendingCard(t, "files_delete").ID)
		if res := wait(done); !res.IsError {
			t.Errorf("files_delete ran after a denial: %+v", res)
		}
		if _, err := os.Stat(victim); err != nil {
			t.Errorf("the denied delete removed the file: %v", err)
		}

		done = call(cs, "shell_exec", map[string]any{"command": "rm -rf ./*"})
		c := s.pendingCard(t, "shell_exec")
		if !strings.Contains(c.Reason, "delete") {
			t.Errorf("the card's reason does not say it is a delete: %q", c.Reason)
		}
		s.deny(t, c.ID)
		if res := wait(done); !res.IsError {
			t.Errorf("rm -rf ./* ran after a denial: %+v", res)
		}
		if _, err := os.Stat(victim); err != nil {
			t.Errorf("the denied rm -rf removed the file: %v", err)
		}
	})

	t.Run("off", func(t *testing.T) {
		t.Setenv("REQUIRE_WRITE_APPROVAL", "false")
		s := serveForTest(t)
		victim := filepath.Join(s.ws, "default", "victim.txt")
		if err := os.MkdirAll(filepath.Dir(victim), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, victim, "delete me")
		cs := s.connect(t, s.agent)
		defer cs.Close()
		if res := wait(call(cs, "files_delete", map[string]any{"path": "victim.txt"})); res.IsError {
			t.Fatalf("files_delete with approvals off: %+v", res.Content)
		}
		if _, err := os.Stat(victim); !os.IsNotExist(err) {
			t.Errorf("files_delete with approvals off left the file: %v", err)
		}
		cards, err := s.db.Cards(t.Context(), approval.CardFilter{})
		if err != nil || len(cards) != 0 {
			t.Errorf("cards with approvals off: %d, %v; want none", len(cards), err)
		}
	})
}

// A shell command that deletes nothing is not asked, with approvals on, and the banner names
// what asks.
func TestQuickstartGatesOnlyDeletes(t *testing.T) {
	for _, tt := range []struct {
		command, want string
	}{
		{"ls", "decision: allow"},
		{"rm -rf ./*", "decision: ask"},
	} {
		ws := t.TempDir()
		writeFile(t, filepath.Join(ws, "a.txt"), "x") // an empty directory's ./* could be a .env: a hard block
		out, stderr, code := run(t, "review", "--role", "person", "--tool", "shell_exec", "--input", `{"command":"`+tt.command+`"}`, "--workspace", ws)
		if code != 0 || !strings.Contains(out, tt.want) {
			t.Errorf("review of %s: status %d, %s %s; want %q", tt.command, code, out, stderr, tt.want)
		}
	}
}
