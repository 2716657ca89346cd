package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/store/postgres"
)

// settledCard waits until the card leaves pending (the store's watch, not a sleep), and
// returns it as stored.
func (r *rig) settledCard(c *approval.Card) *approval.Card {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	changed, err := r.db.Watch(ctx, c.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		r.t.Fatalf("card %s is still pending", c.ID)
	}
	got, err := r.db.Card(context.Background(), "", c.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	return got
}

// wantCanceled checks that a card ended because its call did, that an answer given to it now
// is refused, and that the call is recorded as cancelled and never ran (its file is absent).
func (r *rig) wantCanceled(c *approval.Card, file string) {
	r.t.Helper()
	got := r.settledCard(c)
	if got.State != approval.Expired || got.Channel != approval.ChannelCanceled {
		r.t.Errorf("the card of a call that ended: %s through %q, want expired through canceled", got.State, got.Channel)
	}
	if _, err := r.broker.Answer(context.Background(), c.Tenant, c.ID, approval.AllowOnce, "alice", approval.ChannelAPI, c.Digest); !errors.Is(err, approval.ErrNotPending) {
		r.t.Errorf("an answer to the card of a call that ended: %v, want ErrNotPending", err)
	}
	// The gate records the call's end just after the broker expires the card: looked for
	// until it is there.
	recorded := func() bool {
		for _, e := range r.audited(audit.Filter{Kind: audit.KindApproval}) {
			if e.Decision == "deny" && len(e.Blockers) == 1 && e.Blockers[0].Code == "approval_canceled" &&
				e.Channel == "canceled" && e.Tool == c.Tool && e.Digest == c.Digest {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(30 * time.Second); !recorded(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Error("the cancelled call is not recorded as approval_canceled")
			break
		}
	}
	if _, err := os.Stat(filepath.Join(r.gw.o.Workspaces, c.Tenant, file)); !errors.Is(err, os.ErrNotExist) {
		r.t.Errorf("the call whose client went away ran: %s: %v", file, err)
	}
}

// rawCall posts a tools/call on an MCP session as a client would, with ctx as the request's:
// ending ctx is the client going away without a word (a timeout, a dropped connection).
func (r *rig) rawCall(ctx context.Context, secret, session, tool, args string) error {
	req := r.request(http.MethodPost, secret, session,
		strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, args)))
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return err
}

func TestACallWhoseClientGoesAwayNeverRuns(t *testing.T) {
	r := newRig(t, []byte(askPolicy), nil)
	secret := r.token("default", "person", "")
	cs := r.connect(secret, nil)

	// The client cancels (notifications/cancelled, as the SDKs send at their timeout).
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files_write", Arguments: map[string]any{"path": "a.txt", "content": "x"}})
		done <- err
	}()
	c := r.parked()
	cancel()
	<-done
	r.wantCanceled(c, "a.txt")

	// The client's connection goes away without a word.
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- r.rawCall(ctx, secret, cs.ID(), "files_write", `{"path":"b.txt","content":"x"}`) }()
	c = r.parked()
	cancel()
	<-done
	r.wantCanceled(c, "b.txt")

	// The session goes on: a call whose client stays is answered and runs.
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "files_write", Arguments: map[string]any{"path": "c.txt", "content": "x"}})
		done <- err
	}()
	c = r.parked()
	if _, err := r.broker.Answer(context.Background(), "default", c.ID, approval.AllowOnce, "alice", approval.ChannelAPI, c.Digest); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.gw.o.Workspaces, "default", "c.txt")); err != nil {
		t.Errorf("an approved call whose client waited did not run: %v", err)
	}
}

func TestDeleteNeverWaitsOnACard(t *testing.T) {
	r := newRig(t, []byte(askPolicy), nil)
	secret := r.token("default", "person", "")
	cs := r.connect(secret, nil)
	done := make(chan error, 1)
	go func() {
		done <- r.rawCall(context.Background(), secret, cs.ID(), "files_write", `{"path":"a.txt","content":"x"}`)
	}()
	c := r.parked()

	// The DELETE is answered while the card is pending (the broker would wait a minute): the
	// card is cancelled by the session's end, not expired by its deadline.
	resp, err := http.DefaultClient.Do(r.request(http.MethodDelete, secret, cs.ID(), nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Errorf("DELETE of a session with a waiting call: HTTP %d", resp.StatusCode)
	}
	<-done
	r.wantCanceled(c, "a.txt")
	if r.gw.sessionByMCP(cs.ID()) != nil {
		t.Error("the deleted session is still live")
	}
}

func TestShutdownLeavesNoCardPending(t *testing.T) {
	r := newRig(t, []byte(askPolicy), nil)
	cs := r.connect(r.token("default", "person", ""), nil)
	results := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "files_write", Arguments: map[string]any{"path": "a.txt", "content": "x"}})
		results <- res
	}()
	c := r.parked()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.gw.Shutdown(ctx)
	r.wantCanceled(c, "a.txt")
	if res := <-results; res == nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "approval_canceled") {
		t.Errorf("the waiting call's answer at shutdown: %+v", res)
	}
	if len(r.gw.live()) != 0 {
		t.Errorf("%d sessions live after Shutdown", len(r.gw.live()))
	}
	// A session cannot be opened any more.
	if cs, err := r.dial(r.token("default", "person", ""), nil); err == nil {
		cs.Close()
		t.Error("a session opened while the gateway shut down")
	}
}

func TestSessionCaps(t *testing.T) {
	r := newRig(t, []byte(askPolicy), nil).with(func(o *Options) {
		o.MaxSessionsPerToken, o.MaxSessionsPerTenant = 2, 3
	})
	a, b := r.token("default", "person", ""), r.token("default", "person", "")
	first := r.connect(a, nil)
	r.connect(a, nil)
	got := r.post(a, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	wantError(t, "a third session of one token", got, 403, -32001, 1, "session_refused", "2 live sessions")
	r.connect(b, nil)
	got = r.post(b, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	wantError(t, "a fourth session of the tenant", got, 403, -32001, 1, "session_refused", "tenant default already holds 3")

	// Ending one makes room again.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	r.connect(a, nil)
}

func TestIdleSessionsAreReaped(t *testing.T) {
	// The timeout is long enough for a loaded machine to go from connecting to calling.
	r := newRig(t, []byte(askPolicy), nil).with(func(o *Options) { o.IdleTimeout = 3 * time.Second })
	secret := r.token("default", "person", "")
	busy := r.connect(secret, nil)
	// A call waiting for a person keeps its session alive past the idle timeout.
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := busy.CallTool(context.Background(), &mcp.CallToolParams{Name: "files_write", Arguments: map[string]any{"path": "a.txt", "content": "x"}})
		done <- res
	}()
	c := r.parked()
	const n = 50
	for range n {
		got := r.post(secret, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if got.Error != nil {
			t.Fatalf("initialize: %s", got.body)
		}
	}
	// Every abandoned session ends (polled: reaping happens on the SDK's timer).
	deadline := time.Now().Add(60 * time.Second)
	for len(r.gw.live()) > 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if live := len(r.gw.live()); live != 1 {
		t.Fatalf("%d sessions live, want only the busy one", live)
	}
	if r.gw.sessionByMCP(busy.ID()) == nil {
		t.Fatal("the session with a call waiting for a person was reaped")
	}
	if _, err := r.broker.Answer(context.Background(), "default", c.ID, approval.AllowOnce, "alice", approval.ChannelAPI, c.Digest); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res == nil || res.IsError {
		t.Errorf("the busy session's call: %+v", res)
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// A thousand sessions opened and abandoned (no DELETE) end at the idle timeout, and the memory
// they held is given back.
func TestAbandonedSessionsGiveTheirMemoryBack(t *testing.T) {
	if testing.Short() {
		t.Skip("opens a thousand sessions")
	}
	r := newRig(t, []byte(askPolicy), nil).with(func(o *Options) {
		o.IdleTimeout, o.MaxSessionsPerToken, o.MaxSessionsPerTenant = 2*time.Second, -1, -1
	})
	secret := r.token("default", "person", "")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	const n = 1000
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	// One session first, so that what every session shares (the tenant's workspace and
	// secrets, the policy's compiled parts) is in the baseline.
	if got := send(t, client, r.request(http.MethodPost, secret, "", strings.NewReader(init))); got.Error != nil {
		t.Fatalf("initialize: %s", got.body)
	}
	for len(r.gw.live()) > 0 {
		time.Sleep(50 * time.Millisecond)
	}
	idle := heapInUse()
	for range n {
		if got := send(t, client, r.request(http.MethodPost, secret, "", strings.NewReader(init))); got.Error != nil {
			t.Fatalf("initialize: %s", got.body)
		}
	}
	held := heapInUse()
	deadline := time.Now().Add(2 * time.Minute)
	for len(r.gw.live()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if live := len(r.gw.live()); live > 0 {
		t.Fatalf("%d of %d abandoned sessions are still live", live, n)
	}
	after := heapInUse()
	t.Logf("heap in use: %d KiB idle, %d KiB with %d sessions (%d B a session), %d KiB after they were reaped",
		idle>>10, held>>10, n, (int64(held)-int64(idle))/n, after>>10)
	// What the sessions held is given back, but for a little a session (the maps that held
	// them do not shrink; the HTTP server's and the SDK's pools). A session holds ~19 KB while
	// it lives; some end before the last one is opened, so the figure above is a floor.
	if grown := int64(after) - int64(idle); grown > 3<<10*n {
		t.Errorf("after the sessions were reaped the heap is %d KiB above idle (%d B a session), of the %d KiB they held",
			grown>>10, grown/n, (int64(held)-int64(idle))>>10)
	}
}

// A session abandoned without DELETE ends at the idle timeout, and so does its run: a profile
// at maxConcurrentRuns: 1 (the quickstart's reviewer) opens again.
func TestAnAbandonedSessionFreesItsRun(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testAbandonedSessionFreesItsRun(t, newRig(t, examples.Quickstart, nil))
	})
	t.Run("postgres", func(t *testing.T) {
		db, err := postgres.Open(context.Background(), postgresSchema(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		testAbandonedSessionFreesItsRun(t, newRigOn(t, db, examples.Quickstart, nil, nil))
	})
}

func testAbandonedSessionFreesItsRun(t *testing.T, r *rig) {
	r = r.with(func(o *Options) { o.IdleTimeout = 2 * time.Second })
	secret := r.token("default", "coworker", "reviewer")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	if got := r.post(secret, "", init); got.Error != nil {
		t.Fatalf("the first session: %s", got.body)
	}
	got := r.post(secret, "", init)
	wantError(t, "a second run of a profile at maxConcurrentRuns 1", got, 403, -32001, 1, "session_refused", "live runs")
	// The first session is abandoned: no DELETE, no request. It ends at the idle timeout, and
	// its run with it (just after the session leaves the gateway's list): the profile opens
	// again.
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := r.post(secret, "", init)
		if got.Error == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a session of the profile after the abandoned one idled out: %s", got.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
