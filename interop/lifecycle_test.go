package interop

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/store/sqlite"
)

// gatedPolicy asks a person before every write.
const gatedPolicy = `
version: 1
builtins:
  - name: files_read
  - name: files_write
    gate: {approval: true}
tenants:
  - id: default
`

// answerStatus answers a card through the REST API and returns the HTTP status and body.
func answerStatus(t *testing.T, s *server, id, ans string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.base+"/api/v1/approvals/"+id, strings.NewReader(`{"answer":"`+ans+`"}`))
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
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// storedCards reads the cards of the SQLite store of a server run in dir, whether or not the
// server is running.
func storedCards(t *testing.T, dir string) []*approval.Card {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cards, err := db.Cards(context.Background(), approval.CardFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return cards
}

// The official TypeScript client gives up on a call at its request timeout (it sends
// notifications/cancelled): the card is cancelled and recorded, an answer given later is
// refused with 409, and the call never runs.
func TestACallWhoseClientTimesOutNeverRuns(t *testing.T) {
	peers(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "warden.yaml"), []byte(gatedPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serve(t, dir, nil)
	got := tsClient(t, s.url, s.clientToken, step{Op: "call", Name: "files_write", TimeoutMs: 4000,
		Arguments: map[string]any{"path": "late.txt", "content": "x"}})
	if got[0].OK || !strings.Contains(strings.ToLower(got[0].Error), "timed out") {
		t.Fatalf("the client's call: %+v; want its request timeout", got[0])
	}
	// The card left pending when the client gave up: the client has closed, so the server
	// has had the cancellation; the card is read until it is no longer pending.
	var c *approval.Card
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		cards := storedCards(t, dir)
		if len(cards) == 1 && cards[0].State != approval.Pending {
			c = cards[0]
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if c == nil {
		t.Fatalf("the card of a call whose client gave up is still pending: %+v", storedCards(t, dir))
	}
	if c.State != approval.Expired || c.Channel != approval.ChannelCanceled {
		t.Errorf("the card: %s through %q, want expired through canceled", c.State, c.Channel)
	}
	if code, body := answerStatus(t, s, c.ID, "allow_once"); code != http.StatusConflict || !strings.Contains(body, "approval_canceled") {
		t.Errorf("an answer to it: %d %s; want 409 approval_canceled", code, body)
	}
	if _, err := os.Stat(filepath.Join(dir, "workspaces", "default", "late.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the call whose client gave up ran: %v", err)
	}
}

// SIGTERM with a call waiting for a person: the card is cancelled before the process exits
// (none is left pending in the store for an answer that could run nothing), the client is
// told, and after a restart an answer to the card is refused.
func TestSigtermLeavesNoCardPending(t *testing.T) {
	peers(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "warden.yaml"), []byte(gatedPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serve(t, dir, nil)
	calls := make(chan []result, 1)
	go func() {
		res, err := tsRun(s.url, s.clientToken, step{Op: "call", Name: "files_write",
			Arguments: map[string]any{"path": "parked.txt", "content": "x"}})
		if err != nil {
			res = []result{{Error: err.Error()}}
		}
		calls <- res
	}()
	c := pendingCard(t, s)
	if err := s.proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("warden serve did not exit after SIGTERM:\n%s", s.output())
	}
	res := <-calls
	if res[0].OK && !res[0].IsError {
		t.Errorf("the parked call succeeded across a shutdown: %+v", res[0])
	}
	if !strings.Contains(res[0].Text+res[0].Error, "approval_canceled") {
		t.Logf("the client was told: %+v", res[0])
	}
	for _, sc := range storedCards(t, dir) {
		if sc.State == approval.Pending {
			t.Errorf("card %s is pending after SIGTERM", sc.ID)
		}
		if sc.ID == c.ID && sc.Channel != approval.ChannelCanceled {
			t.Errorf("the parked card: %s through %q, want expired through canceled", sc.State, sc.Channel)
		}
	}
	if !strings.Contains(s.output(), "shutting down") {
		t.Errorf("no shutdown message:\n%s", s.output())
	}

	again := serve(t, dir, nil)
	again.adminToken = s.adminToken
	if code, body := answerStatus(t, again, c.ID, "allow_once"); code != http.StatusConflict || !strings.Contains(body, "approval_canceled") {
		t.Errorf("an answer after the restart: %d %s; want 409 approval_canceled", code, body)
	}
	if _, err := os.Stat(filepath.Join(dir, "workspaces", "default", "parked.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the parked call ran: %v", err)
	}
}
