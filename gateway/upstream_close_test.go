package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/policy"
)

// TestCloseEndsADialInFlight: an upstream being dialled when the gateway closes (a reconnect
// in flight as it stops) must not leave a session behind, with its event stream open, once the
// dial completes: the session is ended (the client's DELETE reaches the upstream), and nothing
// is dialled after the close.
func TestCloseEndsADialInFlight(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	initializing := make(chan struct{})
	release := make(chan struct{})
	deleted := make(chan struct{}, 1)
	var first atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && first.CompareAndSwap(false, true) {
			close(initializing) // the dial's initialize: held until the gateway has closed
			<-release
		}
		if r.Method == http.MethodDelete {
			select {
			case deleted <- struct{}{}:
			default:
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})

	p := &pool{all: map[string]*upstream{}, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	server := &policy.Server{ID: "up", Upstream: &policy.Upstream{URL: srv.URL, Timeout: time.Minute}}
	got := make(chan error, 1)
	go func() {
		_, err := p.get(context.Background(), server, credential{}, "t")
		got <- err
	}()
	<-initializing
	p.closeAll()
	close(release)
	if err := <-got; !errors.Is(err, errUpstreamClosed) {
		t.Fatalf("a dial that completed after the close: %v, want errUpstreamClosed", err)
	}
	select {
	case <-deleted:
	case <-time.After(time.Minute): // a deadline for a broken build, not a measure
		t.Fatal("the session the dial opened was never ended")
	}
	for _, u := range p.all {
		u.mu.Lock()
		open := u.session != nil
		u.mu.Unlock()
		if open {
			t.Error("an upstream holds a session after the close")
		}
	}
	if _, err := p.get(context.Background(), &policy.Server{ID: "other", Upstream: server.Upstream}, credential{}, "t"); !errors.Is(err, errUpstreamClosed) {
		t.Errorf("an upstream opened after the close: %v", err)
	}
}
