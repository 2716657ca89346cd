package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/store/sqlite"
)

// testBounds are serve's bounds with every timeout an hour: each test shortens only the one
// it is about, so that nothing else it does can race a deadline.
func testBounds() httpBounds {
	return httpBounds{readHeader: time.Hour, read: time.Hour, write: time.Hour, idle: time.Hour, maxConns: 1024,
		maxAPIBody: 1 << 20, callsPerSession: 16, callsPerToken: 64, bytesInFlight: 64 << 20}
}

// boundedServer is `warden serve`'s HTTP server on the quickstart policy and a fresh SQLite
// store, within b, on a loopback port.
type boundedServer struct {
	addr  string
	db    *sqlite.DB
	st    *stack
	conns *connLimiter
	// idle receives each time the server finds a connection idle (after a request).
	idle chan struct{}
}

func newBoundedServer(t *testing.T, b httpBounds) *boundedServer {
	t.Helper()
	if err := b.check(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db, err := sqlite.Open(t.Context(), filepath.Join(dir, "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p, err := policy.Parse("quickstart.yaml", examples.Quickstart)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := newStack(p, db, filepath.Join(dir, "ws"), &sandboxState{}, logger, "", func(o *gateway.Options) { o.Bounds = b.gateway() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.close)
	mux := http.NewServeMux()
	mux.Handle("/mcp", st.gateway.Handler())
	mux.Handle("/", server.New(server.Options{Store: db, Broker: st.broker, Logger: logger, Boundaries: st.gateway, Agents: st.gateway}))
	hs, conns := b.server(mux, logger)
	s := &boundedServer{db: db, st: st, conns: conns, idle: make(chan struct{}, 4096)}
	state := hs.ConnState
	hs.ConnState = func(c net.Conn, cs http.ConnState) {
		state(c, cs)
		if cs == http.StateIdle {
			s.idle <- struct{}{}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	go func() { _ = hs.Serve(conns.listener(ln)) }()
	t.Cleanup(func() { hs.Close() })
	return s
}

// dial opens a raw connection to the server; a read on it fails the test after a minute
// rather than hang (a bound on the test, not a measure of the server).
func (s *boundedServer) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return c
}

// unauthenticated is a raw request to /mcp without a token.
func unauthenticated() string {
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: warden\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// exchange writes a raw request on c and reads its response's status and body.
func exchange(t *testing.T, c net.Conn, br *bufio.Reader, req string) (int, string) {
	t.Helper()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// closedByServer reads c to its end and reports whether the server closed it (an orderly
// end, or a reset when the server closed it with something unread).
func closedByServer(c net.Conn, br *bufio.Reader) error {
	_, err := io.Copy(io.Discard, br)
	if err == nil || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return err
}

// unauthenticatedCount is how many requests without a valid token the audit trail counts,
// and in how many rows.
func unauthenticatedCount(t *testing.T, db *sqlite.DB) (rows, requests int) {
	t.Helper()
	evs, err := db.Query(context.Background(), audit.Filter{Decision: "deny"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if len(e.Blockers) == 1 && e.Blockers[0].Code == "unauthenticated" {
			rows++
			requests += max(1, e.Blockers[0].Count)
		}
	}
	return rows, requests
}

// 500 idle connections without a token, half of which never send a request and half of which
// sent one, are closed by the server (the header and idle timeouts), while /healthz answers;
// and their requests are counted in a few audit rows.
func TestIdleConnectionsAreClosed(t *testing.T) {
	b := testBounds()
	b.readHeader, b.idle = 500*time.Millisecond, 500*time.Millisecond
	s := newBoundedServer(t, b)
	type open struct {
		c  net.Conn
		br *bufio.Reader
	}
	var conns []open
	for i := range 500 {
		c := s.dial(t)
		if i%2 == 1 {
			if _, err := io.WriteString(c, unauthenticated()); err != nil {
				t.Fatal(err)
			}
		}
		conns = append(conns, open{c, bufio.NewReader(c)})
	}
	health := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := health.Get("http://" + s.addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz with 500 idle connections open: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz with 500 idle connections open: HTTP %d", resp.StatusCode)
	}
	answered := 0
	for i, o := range conns {
		if i%2 == 1 {
			// A connection that sent its request is answered first (unless the machine was
			// so slow that it was closed before its request arrived).
			if resp, err := http.ReadResponse(o.br, nil); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("connection %d: HTTP %d, want 401", i, resp.StatusCode)
				}
				answered++
			}
		}
		if err := closedByServer(o.c, o.br); err != nil {
			t.Fatalf("connection %d was not closed by the server: %v", i, err)
		}
	}
	s.st.close() // records the refusals still counted
	rows, requests := unauthenticatedCount(t, s.db)
	if requests != answered || rows >= 100 {
		t.Errorf("%d requests without a token were answered; the audit trail counts %d in %d rows, want all of them in fewer than 100", answered, requests, rows)
	}
}

// At the cap on connections, a new one closes the one idle longest: 500 idle connections
// under a cap of 50 leave the newest open, and /healthz is answered all along.
func TestConnectionCapClosesTheLongestIdle(t *testing.T) {
	b := testBounds()
	b.maxConns = 50
	s := newBoundedServer(t, b)
	type open struct {
		c  net.Conn
		br *bufio.Reader
	}
	health := func(at int) {
		c := s.dial(t)
		defer c.Close()
		if status, body := exchange(t, c, bufio.NewReader(c), "GET /healthz HTTP/1.1\r\nHost: warden\r\n\r\n"); status != http.StatusOK {
			t.Fatalf("/healthz with %d idle connections made: HTTP %d %s", at, status, body)
		}
		<-s.idle
	}
	var conns []open
	for i := range 500 {
		if i%100 == 0 {
			health(i)
		}
		c := s.dial(t)
		br := bufio.NewReader(c)
		if status, _ := exchange(t, c, br, unauthenticated()); status != http.StatusUnauthorized {
			t.Fatalf("connection %d: HTTP %d, want 401", i, status)
		}
		<-s.idle // the server has it as idle: the next connection may close it
		conns = append(conns, open{c, br})
	}
	health(500)
	if n := s.conns.open(); n > 50 {
		t.Errorf("%d connections held, over the cap of 50", n)
	}
	// Five health checks made room too, so the oldest 445 to 455 were closed.
	for i, o := range conns[:400] {
		if err := closedByServer(o.c, o.br); err != nil {
			t.Fatalf("connection %d, idle longest, was not closed: %v", i, err)
		}
	}
	for i, o := range conns[460:] {
		if status, _ := exchange(t, o.c, o.br, unauthenticated()); status != http.StatusUnauthorized {
			t.Errorf("connection %d, among the newest: HTTP %d, want 401", 460+i, status)
		}
	}
}

// A body that stops arriving is cut at the read timeout, even with a valid token (408), and
// the refusal is recorded; REST bodies past their limit are refused with 413 in JSON.
func TestSlowAndLargeBodiesAreCut(t *testing.T) {
	b := testBounds()
	b.read = 300 * time.Millisecond
	b.maxAPIBody = 1000
	s := newBoundedServer(t, b)
	secret, hash, err := auth.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.CreateToken(t.Context(), &auth.Token{ID: newTokenID(), Hash: hash, Role: auth.RoleAgent, Tenant: "default",
		SessionRole: "person", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c := s.dial(t)
	br := bufio.NewReader(c)
	if _, err := fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: warden\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", secret); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("a slow body was not answered: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "request_timeout") {
		t.Errorf("a slow body: HTTP %d %s, want 408 request_timeout", resp.StatusCode, body)
	}
	if err := closedByServer(c, br); err != nil {
		t.Errorf("the connection of a slow body was not closed: %v", err)
	}
	evs, err := s.db.Query(t.Context(), audit.Filter{Tenant: "default", Decision: "deny"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Blockers[0].Code != "request_timeout" {
		t.Errorf("the slow body's refusal is not recorded: %+v", evs)
	}

	// REST bodies: one too large by its length, and one too large without a length.
	for _, chunked := range []bool{false, true} {
		var r io.Reader = strings.NewReader(strings.Repeat("x", 2000))
		if chunked {
			r = io.MultiReader(r) // no length: sent chunked
		}
		req, _ := http.NewRequest(http.MethodPut, "http://"+s.addr+"/api/v1/tenants/default/boundaries", r)
		req.Header.Set("Authorization", "Bearer wdn_nope")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Content-Type") != "application/json" ||
			!strings.Contains(string(body), `"too_large"`) || !strings.Contains(string(body), "at most 1000 bytes") {
			t.Errorf("a REST body of 2000 bytes (chunked %v): HTTP %d %s, want 413 too_large in JSON", chunked, resp.StatusCode, body)
		}
	}
}

// An MCP client works through the bounds: its session opens, its event stream is written
// through the per-write deadlines, and its calls are answered.
func TestMCPSessionWithinTheBounds(t *testing.T) {
	b := testBounds()
	b.write = 5 * time.Second // each write; the stream itself stays open as long as it likes
	s := newBoundedServer(t, b)
	secret, hash, err := auth.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.CreateToken(t.Context(), &auth.Token{ID: newTokenID(), Hash: hash, Role: auth.RoleAgent, Tenant: "default",
		SessionRole: "person", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + s.addr + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{secret}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list through the bounds: %v, %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files_list", Arguments: map[string]any{"path": "."}})
	if err != nil || res.IsError {
		t.Fatalf("files_list through the bounds: %+v, %v", res, err)
	}
}

// bearerTransport sends every request with a token.
type bearerTransport struct{ secret string }

func (b bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.secret)
	return http.DefaultTransport.RoundTrip(req)
}

// An agent's review held for its card outlasts the write timeout of REST answers: only the
// answer's writes are bounded, not the wait before it.
func TestReviewHeldPastTheWriteTimeout(t *testing.T) {
	b := testBounds()
	b.write = 20 * time.Millisecond
	s := newBoundedServer(t, b)
	agent := createToken(t, s.db, &auth.Token{Role: auth.RoleAgent, Tenant: "default", SessionRole: "person", Name: "hook"})
	// The card expires after 0.5 s, long past the write timeout: then the answer is written.
	body := `{"tool":"shell_exec","input":{"command":"rm -r build"},"harness":"claude-code","wait":0.5}`
	req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://"+s.addr+"/api/v1/review", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+agent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		Decision string
		Card     struct{ State string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK || a.Decision != "ask" || a.Card.State != "expired" {
		t.Fatalf("%d %+v %v; want the answer, ask with the card expired", resp.StatusCode, a, err)
	}
}
