package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/clock"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// unauthenticatedRows are the recorded refusals of requests without a valid token, and how
// many requests they stand for together.
func (r *rig) unauthenticatedRows() ([]*audit.Event, int) {
	r.t.Helper()
	var rows []*audit.Event
	total := 0
	for _, e := range r.audited(audit.Filter{Decision: "deny"}) {
		if len(e.Blockers) == 1 && e.Blockers[0].Code == "unauthenticated" {
			rows = append(rows, e)
			total += max(1, e.Blockers[0].Count)
		}
	}
	return rows, total
}

// withReleases sets bounds on a rig's gateway and returns a function that waits until the
// requests in progress hold no calls and no bytes.
func withReleases(b Bounds) (func(*Options), func(t *testing.T, g *Gateway)) {
	released := make(chan struct{}, 1)
	b.released = func() {
		select {
		case released <- struct{}{}:
		default:
		}
	}
	wait := func(t *testing.T, g *Gateway) {
		t.Helper()
		for !g.flight.settled() {
			select {
			case <-released:
			case <-time.After(30 * time.Second):
				t.Fatal("the requests that ended still hold calls or bytes")
			}
		}
	}
	return func(o *Options) { o.Bounds = b }, wait
}

// 5,000 requests without a valid token add a handful of audit rows, not 5,000, and the
// rows' counts add up to every request; sources past the cap are counted together.
func TestUnauthenticatedRefusalsAreSampled(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	r := newRigWith(t, []byte(faultPolicy), nil, func(o *Options) {
		o.Bounds = Bounds{Clock: fake, RefusalSources: 3}
	})
	const first, later = 5000, 10
	var wg sync.WaitGroup
	work := make(chan int)
	client := &http.Client{}
	for range 8 {
		wg.Go(func() {
			for i := range work {
				secret := ""
				if i%2 == 1 {
					secret = "wdn_nope"
				}
				if got := send(t, client, r.request("POST", secret, "", strings.NewReader(initializeBody))); got.status != http.StatusUnauthorized {
					t.Errorf("request %d without a valid token: HTTP %d, want 401", i, got.status)
				}
			}
		})
	}
	for i := range first {
		work <- i
	}
	// A minute later, the same source again: its count so far is recorded with them.
	fake.Advance(61 * time.Second)
	for i := range later {
		work <- i
	}
	close(work)
	wg.Wait()
	// Many sources, past the cap of three: the rest are counted as one.
	const sources, each = 40, 5
	h := r.gw.Handler()
	for s := range sources {
		for range each {
			req := httptest.NewRequest("POST", "/mcp", strings.NewReader(initializeBody))
			req.RemoteAddr = fmt.Sprintf("198.51.100.%d:%d", s, 40000+s)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("from source %d: HTTP %d, want 401", s, rec.Code)
			}
		}
	}
	r.gw.Close() // records what is still counted
	rows, total := r.unauthenticatedRows()
	if want := first + later + sources*each; total != want {
		t.Errorf("the recorded refusals count %d requests, want %d", total, want)
	}
	if len(rows) >= 100 {
		t.Fatalf("%d requests without a valid token added %d audit rows, want fewer than 100", first+later+sources*each, len(rows))
	}
	bySource := map[string]int{}
	for _, e := range rows {
		bySource[e.Principal]++
		if e.Tool != "mcp:POST" || e.Decision != "deny" || !strings.Contains(e.Blockers[0].Detail, "without a valid token") {
			t.Errorf("a sampled refusal: %+v %+v", e, e.Blockers)
		}
	}
	// The loopback source: at once, then the minute's count with the first request after it,
	// then what was left at Close (the sweep may have recorded the minute before the request).
	if n := bySource["remote 127.0.0.1"]; n < 2 || n > 3 {
		t.Errorf("the loopback source has %d rows, want 2 or 3: %v", n, bySource)
	}
	if len(bySource) != 4 || bySource["remote other"] == 0 {
		t.Errorf("sources recorded apart: %v; want loopback, two others and \"other\"", bySource)
	}
}

// A session past its cap of calls in flight is refused with 429 and Retry-After, recorded,
// and served again once a call has finished; so is a token over all its sessions.
func TestCallCapsRefuseAndAcceptAgain(t *testing.T) {
	opt, settle := withReleases(Bounds{CallsPerSession: 1, CallsPerToken: 2})
	r := newRigWith(t, []byte(askPolicy), nil, opt)
	secret := r.token("default", "person", "")
	a, b := r.connect(secret, nil), r.connect(secret, nil)
	other := r.connect(r.token("default", "person", ""), nil)

	// wait parks a call that asks for approval, and returns its card and its result.
	wait := func(cs *mcp.ClientSession) (*approval.Card, chan *mcp.CallToolResult) {
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "files_write",
				Arguments: map[string]any{"path": "a.txt", "content": "x"}})
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		select {
		case c := <-r.cards:
			return c, done
		case <-time.After(30 * time.Second):
			t.Fatal("no card was parked")
			return nil, nil
		}
	}
	answer := func(c *approval.Card, done chan *mcp.CallToolResult) {
		if _, err := r.broker.Answer(context.Background(), "default", c.ID, approval.AllowOnce, "alice", approval.ChannelAPI, c.Digest); err != nil {
			t.Fatal(err)
		}
		if res := <-done; res == nil || res.IsError {
			t.Fatalf("the approved call: %+v", res)
		}
	}
	// read calls files_read raw on a session, and returns the reply and its Retry-After.
	read := func(cs *mcp.ClientSession, id int) (rpcReply, string) {
		hc := &headerCatcher{}
		got := send(t, &http.Client{Transport: hc}, r.request("POST", secret, cs.ID(), strings.NewReader(
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"files_read","arguments":{"path":"nothing.txt"}}}`, id))))
		return got, hc.h.Get("Retry-After")
	}

	// Session a holds one call: its next is refused, with Retry-After, and recorded.
	ca, doneA := wait(a)
	mark := r.mark()
	got, retry := read(a, 7)
	wantError(t, "a call past the session's cap", got, http.StatusTooManyRequests, codeBusy, 7, "too_many_calls", "this session has 1 tool calls in flight")
	if retry == "" {
		t.Error("a call past the session's cap: no Retry-After")
	}
	if e := r.refusal(audit.Filter{Tenant: "default", AfterID: mark}, "too_many_calls"); e != nil && e.Session == "" {
		t.Errorf("the refusal does not name its session: %+v", e)
	}
	// Session b's call is served; then b holds one too, and the token's cap of two is full,
	// for a third session as well; another token's calls are served.
	if got, _ := read(b, 8); got.status != http.StatusOK || got.Error != nil {
		t.Errorf("session b's call: HTTP %d %s", got.status, got.body)
	}
	cb, doneB := wait(b)
	c := r.connect(secret, nil)
	got, _ = read(c, 9)
	wantError(t, "a call past the token's cap", got, http.StatusTooManyRequests, codeBusy, 9, "too_many_calls", "this token's sessions have 2 tool calls in flight")
	if _, err := other.CallTool(context.Background(), &mcp.CallToolParams{Name: "files_read", Arguments: map[string]any{"path": "nothing.txt"}}); err != nil {
		t.Errorf("another token's call: %v", err)
	}
	// Once the calls have finished, the same calls are served again.
	answer(ca, doneA)
	answer(cb, doneB)
	settle(t, r.gw) // the client has its answers a moment before the server is done with them
	for i, cs := range []*mcp.ClientSession{a, c} {
		if got, _ := read(cs, 10+i); got.status != http.StatusOK || got.Error != nil {
			t.Errorf("a call after the others finished: HTTP %d %s", got.status, got.body)
		}
	}
}

// headerCatcher keeps the header of the last response it carried.
type headerCatcher struct{ h http.Header }

func (c *headerCatcher) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		c.h = resp.Header
	}
	return resp, err
}

// The bytes of a call waiting for approval are held until it ends: a request that would
// pass the cap on bytes in flight meanwhile is refused with 503 and Retry-After, and
// recorded, and served once the call has ended.
func TestBytesInFlightAreCapped(t *testing.T) {
	opt, settle := withReleases(Bounds{BytesInFlight: 1000})
	r := newRigWith(t, []byte(askPolicy), nil, opt)
	secret := r.token("default", "person", "")
	cs := r.connect(secret, nil)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "files_write",
			Arguments: map[string]any{"path": "a.txt", "content": strings.Repeat("x", 600)}})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	var c *approval.Card
	select {
	case c = <-r.cards:
	case <-time.After(30 * time.Second):
		t.Fatal("no card was parked")
	}
	body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"files_read","arguments":{"path":"` + strings.Repeat("n", 400) + `"}}}`
	hc := &headerCatcher{}
	mark := r.mark()
	got := send(t, &http.Client{Transport: hc}, r.request("POST", secret, cs.ID(), strings.NewReader(body)))
	wantError(t, "a request past the bytes in flight", got, http.StatusServiceUnavailable, codeBusy, nil, "busy", "1000 bytes")
	if hc.h.Get("Retry-After") == "" {
		t.Error("a request past the bytes in flight: no Retry-After")
	}
	r.refusal(audit.Filter{Tenant: "default", AfterID: mark}, "busy")
	if _, err := r.broker.Answer(context.Background(), "default", c.ID, approval.AllowOnce, "alice", approval.ChannelAPI, c.Digest); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res == nil || res.IsError {
		t.Fatalf("the approved call: %+v", res)
	}
	settle(t, r.gw)
	if got := r.post(secret, cs.ID(), body); got.status != http.StatusOK || got.Error != nil {
		t.Errorf("the same request once the call had ended: HTTP %d %s", got.status, got.body)
	}
}
