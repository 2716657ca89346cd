package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// heldUpstream is an MCP server answering calls with event streams, whose handler holds the end
// of each tools/call's stream (the end of its chunked body) after the response is written,
// until the test lets it go: the moment in which the lean hop would close the stream unread.
// It records the connection each call came on.
type heldUpstream struct {
	url      string
	answered chan chan struct{} // for each call: its stream's end, to close to let it go
	dropped  chan struct{}      // a call's stream was closed by the client while held

	mu    sync.Mutex
	conns []int64 // the connection of each call, in order
}

type connKey struct{}

func newHeldUpstream(t *testing.T) *heldUpstream {
	t.Helper()
	h := &heldUpstream{answered: make(chan chan struct{}, 64), dropped: make(chan struct{}, 64)}
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Msg string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Msg}}}, nil
		})
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var nextConn atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method == http.MethodPost {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		var msg struct{ Method string }
		_ = json.Unmarshal(body, &msg)
		inner.ServeHTTP(w, r)
		if msg.Method != "tools/call" {
			return
		}
		h.mu.Lock()
		h.conns = append(h.conns, r.Context().Value(connKey{}).(int64))
		h.mu.Unlock()
		end := make(chan struct{})
		h.answered <- end
		select {
		case <-end:
		case <-r.Context().Done():
			h.dropped <- struct{}{}
		}
	}))
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, nextConn.Add(1))
	}
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	h.url = srv.URL
	return h
}

// callHeld makes a call whose upstream stream end is held, and returns once the call has been
// answered, with the stream's end still held.
func callHeld(t *testing.T, cs *mcp.ClientSession, h *heldUpstream) (end chan struct{}) {
	t.Helper()
	if got, isErr := call(t, cs, "mcp__up__echo", map[string]any{"msg": "hi"}); isErr || got != "echo: hi" {
		t.Fatalf("the call: %q (error %v)", got, isErr)
	}
	return <-h.answered
}

// TestLeanHopReusesAConnectionAfterAnEventStream: an upstream that answers with an event
// stream ends it after the response, a moment later. The lean hop reads the stream to its end,
// so that the HTTP client keeps the connection for the next call, instead of closing it unread
// and dialing again for every call.
func TestLeanHopReusesAConnectionAfterAnEventStream(t *testing.T) {
	h := newHeldUpstream(t)
	r := newRig(t, fmt.Appendf(nil, benchPolicy, h.url), nil)
	cs := r.connect(r.token("default", "person", ""), nil)
	const calls = 20
	for range calls {
		end := callHeld(t, cs, h)
		close(end) // the stream ends only now, after the client has its answer
	}
	select {
	case <-h.dropped:
		t.Error("the lean hop closed a call's stream before its end")
	default:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	distinct := map[int64]bool{}
	for _, c := range h.conns {
		distinct[c] = true
	}
	// A call finds the last call's connection still being read to its end only if it comes
	// quicker than one read of a few bytes; closing streams unread dials for every call.
	if len(distinct) > 3 {
		t.Errorf("%d calls came on %d connections, want them to reuse one", calls, len(distinct))
	}
	if r.gw.upstream.lean.Load() == 0 {
		t.Error("the lean hop made no call")
	}
}

// TestLeanHopClosesAStreamTheUpstreamKeepsOpen: an upstream that keeps a call's stream open
// after the response does not hold the call: it is answered, the stream is closed once the
// lean hop stops waiting for its end, and once that has happened drainStrikes times in a row
// the next calls close their streams at once.
func TestLeanHopClosesAStreamTheUpstreamKeepsOpen(t *testing.T) {
	h := newHeldUpstream(t)
	r := newRig(t, fmt.Appendf(nil, benchPolicy, h.url), nil)
	cs := r.connect(r.token("default", "person", ""), nil)
	var up *upstream
	for i := range drainStrikes {
		callHeld(t, cs, h) // its end is never let go
		<-h.dropped        // closed by the lean hop, which gave up waiting
		if i == 0 {
			r.gw.upstream.mu.Lock()
			for _, u := range r.gw.upstream.all {
				up = u
			}
			r.gw.upstream.mu.Unlock()
		}
		if up == nil {
			t.Fatal("no upstream")
		}
		if got, want := up.openStreams.Load(), i == drainStrikes-1; got != want {
			t.Fatalf("after %d streams kept open: known to keep them open %v, want %v", i+1, got, want)
		}
	}
	for range 3 {
		callHeld(t, cs, h)
		<-h.dropped // closed right after the response
	}
}
