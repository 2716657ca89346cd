package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/audit"
)

// TestTrio deploys Warden as a user runs several instances: three `warden serve` processes on
// one PostgreSQL schema, with one policy file, behind a round-robin proxy with no affinity,
// and one session of the official TypeScript SDK client through the proxy. The client lists
// its tools and calls one; calls one that needs a person, whose card the test answers through
// the REST API of an instance other than the one the call went to; is told (list_changed)
// of a connection the test adds through a third instance's API; then one instance is killed
// (SIGKILL) in the middle of the session, with a call in flight on it where the proxy sends
// it there, and the client carries on as the SDK does: more calls, its GET stream opened
// again, another list_changed. At the end the audit trail, read from a live instance, and the
// upstream's own count of what it ran must agree: every call the client saw succeed is
// recorded once, with its decision and its outcome; the call cut off by the kill ran at most
// once and, if it ran, its decision is on record; no call ran twice and none ran unrecorded.
//
// "one instance" puts only the first instance behind the proxy (the other two answer the
// card, take the changes and one of them is killed); "three" puts all three behind it, so that
// each request of the session may land on any of them.
func TestTrio(t *testing.T) {
	t.Run("one instance behind the proxy", func(t *testing.T) { trio(t, 1) })
	t.Run("three instances behind the proxy", func(t *testing.T) { trio(t, 3) })
}

// trioPolicy: the echo connector `up`, whose calls need nobody; a second connector `extra`
// with no connection in the file (the test adds and removes one through the API, which
// changes the session's tools); and files_write, which asks a person.
const trioPolicy = `
version: 1
builtins:
  - name: files_read
  - name: files_write
    gate: {approval: true}
connectors:
  - id: up
    effect: read
    discover: true
    upstream: {url: %[1]q, timeoutMs: 120000}
  - id: extra
    effect: read
    discover: true
    upstream: {url: %[1]q, timeoutMs: 120000}
tenants:
  - id: default
    connections: [{id: up, connector: up}]
`

func trio(t *testing.T, behind int) {
	peers(t)
	su := pgSchema(t, "warden_trio")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	up := newEcho(t)
	dir := t.TempDir()
	policy := filepath.Join(dir, "warden.yaml")
	if err := os.WriteFile(policy, fmt.Appendf(nil, trioPolicy, up.url), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "workspaces")
	admin := lastLine(wardenCmd(t, dir, "token", "create", "--access", "admin", "--postgres", su, "-c", policy))
	person := lastLine(wardenCmd(t, dir, "token", "create", "--postgres", su, "-c", policy, "--tenant", "default", "--role", "person"))
	var inst []*server
	for range 3 {
		s := serve(t, dir, nil, "--postgres", su, "-c", policy, "--workspaces", ws, "--heartbeat", "100ms")
		s.adminToken = admin
		inst = append(inst, s)
	}
	var bases []string
	for _, s := range inst[:behind] {
		bases = append(bases, s.base)
	}
	proxy, proxyURL := startProxy(t, bases)
	defer func() {
		if t.Failed() {
			t.Logf("what the proxy passed on:\n%s", describeHops(proxy.Hops()))
		}
	}()

	cl := startSession(t, ctx, proxyURL+"/mcp", person)
	seen := map[string]bool{} // the echo messages whose calls the client saw succeed
	echo := func(tool, msg string) {
		t.Helper()
		r := cl.do(map[string]any{"op": "call", "name": tool, "arguments": map[string]any{"msg": msg}})
		if !r.OK || r.IsError || r.Text != "echo: "+msg {
			t.Fatalf("%s %q: %+v", tool, msg, r)
		}
		seen[msg] = true
	}

	// Lists its tools and calls one. The upstream's catalog may come after the first list
	// (a session lists what is there after a short wait), then with a list_changed.
	r := cl.do(map[string]any{"op": "tools"})
	if !r.OK {
		t.Fatalf("tools/list: %+v", r)
	}
	if !slices.Contains(r.Names, "mcp__up__echo") {
		r = cl.do(map[string]any{"op": "changed", "after": r.Changes, "name": "mcp__up__echo", "present": true})
	}
	if want := []string{"files_read", "files_write", "mcp__up__echo"}; !r.OK || !slices.Equal(r.Names, want) {
		t.Fatalf("the session lists %+v, want %q", r, want)
	}
	echo("mcp__up__echo", "call-1")

	// A call that needs a person: its card is answered through another instance's API.
	cardCall := cl.send(map[string]any{"op": "call", "name": "files_write", "arguments": map[string]any{"path": "card.txt", "content": "allowed"}})
	holder := proxy.backendOf(ctx, t, `"card.txt"`)
	answerer, changer := (holder+1)%3, (holder+2)%3
	card := pendingCard(t, inst[answerer])
	if card.Tool != "files_write" {
		t.Fatalf("the pending card is for %s", card.Tool)
	}
	answer(t, inst[answerer], card.ID, "allow_once")
	if r := cl.await(cardCall); !r.OK || r.IsError {
		t.Fatalf("the call whose card instance %d allowed: %+v", answerer, r)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "default", "card.txt")); err != nil || string(b) != "allowed" {
		t.Fatalf("the allowed write left %q, %v", b, err)
	}

	// A change through a third instance's API: the session is told and lists the new tool.
	if err := proxy.Wait(ctx, func(_ []Hop, streams []int) bool { return sum(streams) > 0 }); err != nil {
		t.Fatalf("the client opened no GET stream for its notifications: %v", err)
	}
	r = cl.do(map[string]any{"op": "tools"})
	if !r.OK || slices.Contains(r.Names, "mcp__extra__echo") {
		t.Fatalf("before the change: %+v", r)
	}
	adminAPI(t, inst[changer], http.MethodPost, "/api/v1/tenants/default/connections", `{"id": "extra", "connector": "extra"}`)
	r = cl.do(map[string]any{"op": "changed", "after": r.Changes, "name": "mcp__extra__echo", "present": true})
	if !r.OK {
		t.Fatalf("waiting for list_changed after a connection was added on instance %d: %+v", changer, r)
	}
	echo("mcp__extra__echo", "call-extra")

	// One instance dies in the middle of the session: with three behind the proxy, the one
	// that holds the client's GET stream, with a call in flight on it; with one, another.
	victim := answerer
	if behind == 3 {
		streams := proxy.Streams()
		victim = slices.IndexFunc(streams, func(n int) bool { return n > 0 })
		for proxy.Next() != victim {
			if r := cl.do(map[string]any{"op": "ping"}); !r.OK {
				t.Fatalf("ping: %+v", r)
			}
		}
	}
	hold := up.hold("held-1")
	heldCall := cl.send(map[string]any{"op": "call", "name": "mcp__up__echo", "arguments": map[string]any{"msg": "held-1"}, "timeoutMs": 60000})
	select {
	case <-hold.reached:
	case <-ctx.Done():
		t.Fatal("the held call never reached the upstream")
	}
	heldOn := proxy.backendOf(ctx, t, `"held-1"`)
	cutOff := heldOn == victim
	if behind == 3 && !cutOff {
		t.Fatalf("the held call went to instance %d, not to %d, which holds the GET stream", heldOn, victim)
	}
	if err := inst[victim].proc.Kill(); err != nil {
		t.Fatal(err)
	}
	<-inst[victim].exited
	if victim < behind {
		// Its GET stream ends with it; the SDK opens another below.
		if err := proxy.Wait(ctx, func(_ []Hop, streams []int) bool { return streams[victim] == 0 }); err != nil {
			t.Fatalf("the killed instance's GET stream did not end: %v", err)
		}
	}
	close(hold.release)
	r = cl.await(heldCall)
	switch {
	case cutOff && r.OK:
		t.Fatalf("the call in flight on the killed instance answered: %+v", r)
	case cutOff:
		t.Logf("the call in flight on the killed instance failed, as it should: %s", r.Error)
	case !r.OK || r.IsError || r.Text != "echo: held-1":
		t.Fatalf("the held call on a live instance: %+v", r)
	default:
		seen["held-1"] = true
	}

	// The client carries on: calls land on the live instances, the SDK opens its GET stream
	// again, and a change made on a live instance reaches it.
	for i := range 6 {
		echo("mcp__up__echo", fmt.Sprintf("after-%d", i))
	}
	if err := proxy.Wait(ctx, func(_ []Hop, streams []int) bool { return sum(streams) > 0 }); err != nil {
		t.Fatalf("the client's GET stream was not opened again after instance %d died: %v", victim, err)
	}
	live := slices.IndexFunc(inst, func(s *server) bool { return s != inst[victim] })
	r = cl.do(map[string]any{"op": "tools"})
	if !r.OK || !slices.Contains(r.Names, "mcp__extra__echo") {
		t.Fatalf("after the kill: %+v", r)
	}
	adminAPI(t, inst[live], http.MethodDelete, "/api/v1/tenants/default/connections/extra", "")
	r = cl.do(map[string]any{"op": "changed", "after": r.Changes, "name": "mcp__extra__echo", "present": false})
	if !r.OK {
		t.Fatalf("waiting for list_changed after the connection was removed on instance %d: %+v", live, r)
	}
	echo("mcp__up__echo", "last")
	cl.close()

	// The record: what the client saw, what the upstream ran and what the trail says agree.
	events := auditTrail(t, inst[live])
	byDigest := map[string][]*audit.Event{}
	byCall := map[string][]*audit.Event{}
	for _, e := range events {
		if e.Digest != "" {
			byDigest[e.Digest] = append(byDigest[e.Digest], e)
		}
		if e.CallID != "" {
			byCall[e.CallID] = append(byCall[e.CallID], e)
		}
	}
	ran := up.ran()
	for msg, n := range ran {
		if n != 1 {
			t.Errorf("the upstream ran %q %d times", msg, n)
		}
	}
	checkCall := func(what, digest string, succeeded bool) {
		t.Helper()
		var allowed []*audit.Event
		for _, e := range byDigest[digest] {
			if e.Kind == audit.KindDecision && e.Decision == "allow" {
				allowed = append(allowed, e)
			}
		}
		if len(allowed) > 1 {
			t.Errorf("%s: %d allowing decisions on record, want one: it was decided twice", what, len(allowed))
		}
		if len(allowed) == 0 {
			if succeeded {
				t.Errorf("%s: the client saw it succeed, but no decision is on record", what)
			}
			return
		}
		var outcomes []*audit.Event
		for _, e := range byCall[allowed[0].CallID] {
			if e.Kind == audit.KindOutcome {
				outcomes = append(outcomes, e)
			}
		}
		switch {
		case len(outcomes) > 1:
			t.Errorf("%s: %d outcomes on record", what, len(outcomes))
		case succeeded && (len(outcomes) != 1 || outcomes[0].Outcome != "ok"):
			t.Errorf("%s: the client saw it succeed, but its outcomes are %+v", what, outcomes)
		}
	}
	echoDigest := func(msg string) string {
		tool := "mcp__up__echo"
		if msg == "call-extra" {
			tool = "mcp__extra__echo"
		}
		return action.Digest(tool, map[string]any{"msg": msg})
	}
	for msg := range seen {
		if ran[msg] != 1 {
			t.Errorf("%q: the client saw it succeed; the upstream ran it %d times", msg, ran[msg])
		}
		checkCall(msg, echoDigest(msg), true)
	}
	checkCall("the card's write", action.Digest("files_write", map[string]any{"path": "card.txt", "content": "allowed"}), true)
	for msg := range ran {
		if !slices.ContainsFunc(byDigest[echoDigest(msg)], func(e *audit.Event) bool {
			return e.Kind == audit.KindDecision && e.Decision == "allow"
		}) {
			t.Errorf("%q ran with no decision on record", msg)
		}
	}
	if cutOff {
		checkCall("the call cut off by the kill", echoDigest("held-1"), false)
		if ran["held-1"] != 1 {
			t.Errorf("the call cut off by the kill reached the upstream %d times", ran["held-1"])
		}
	}
	if len(seen) != len(ran)-btoi(cutOff) {
		t.Errorf("the client saw %d echo calls succeed; the upstream ran %d (%v)", len(seen), len(ran), ran)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// pgSchema makes a schema of its own on the test PostgreSQL server (WARDEN_TEST_POSTGRES_URL)
// and returns a URL whose search_path is it; the schema is dropped at the end. Without a
// server the test skips, unless WARDEN_INTEROP=require.
func pgSchema(t *testing.T, prefix string) string {
	t.Helper()
	u := os.Getenv("WARDEN_TEST_POSTGRES_URL")
	if u == "" {
		if os.Getenv("WARDEN_INTEROP") == "require" {
			t.Fatal("WARDEN_TEST_POSTGRES_URL is required (WARDEN_INTEROP=require): several instances share a PostgreSQL store")
		}
		t.Skip("WARDEN_TEST_POSTGRES_URL is not set: several instances need a PostgreSQL store " +
			"(set it to e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	if _, err := conn.Exec(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "search_path=" + schema
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// startProxy serves a recording round-robin proxy over backends on a loopback port.
func startProxy(t *testing.T, backends []string) (*RoundRobin, string) {
	t.Helper()
	p, err := NewRoundRobin(backends, true)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); p.Close() })
	return p, "http://" + ln.Addr().String()
}

// backendOf waits until the proxy has sent on a POST whose body holds marker, and returns
// the backend it went to.
func (p *RoundRobin) backendOf(ctx context.Context, t *testing.T, marker string) int {
	t.Helper()
	at := -1
	err := p.Wait(ctx, func(hops []Hop, _ []int) bool {
		for _, h := range hops {
			if h.Method == http.MethodPost && h.Backend >= 0 && bytes.Contains(h.Body, []byte(marker)) {
				at = h.Backend
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no request holding %s went through the proxy: %v", marker, err)
	}
	return at
}

func describeHops(hops []Hop) string {
	var b strings.Builder
	for i, h := range hops {
		fmt.Fprintf(&b, "%3d %-6s %-28s backend %d, status %d", i, h.Method, h.RPC, h.Backend, h.Status)
		if h.Err != "" {
			fmt.Fprintf(&b, ", error %s", h.Err)
		}
		fmt.Fprintf(&b, ", session %.12s\n", h.Session)
	}
	return b.String()
}

// adminAPI sends body to an instance's REST API with the admin token and fails the test on
// anything but 2xx.
func adminAPI(t *testing.T, s *server, method, path, body string) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.adminToken)
	req.Header.Set("Content-Type", "application/json")
	if method != http.MethodPost {
		req.Header.Set("If-Match", "*")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s on %s: %s %s", method, path, s.base, resp.Status, data)
	}
}

// auditTrail reads tenant default's whole trail from an instance, page by page.
func auditTrail(t *testing.T, s *server) []*audit.Event {
	t.Helper()
	var all []*audit.Event
	after := int64(0)
	for {
		var page struct {
			Events []*audit.Event
			Next   *int64
		}
		api(t, s, http.MethodGet, fmt.Sprintf("/api/v1/audit?tenant=default&limit=1000&after=%d", after), nil, &page)
		all = append(all, page.Events...)
		if page.Next == nil {
			return all
		}
		after = *page.Next
	}
}

// echoServer is the upstream both connectors reach: an MCP server over streamable HTTP with
// one tool, echo, that counts every call it runs by its message, and holds a call whose
// message the test named until the test lets it go.
type echoServer struct {
	url   string
	mu    sync.Mutex
	runs  map[string]int
	holds map[string]*held
}

type held struct {
	reached chan struct{} // closed when the call has arrived
	release chan struct{} // closed by the test to let it answer
}

func newEcho(t *testing.T) *echoServer {
	t.Helper()
	e := &echoServer{runs: map[string]int{}, holds: map[string]*held{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"msg": map[string]any{"type": "string"}}, "required": []string{"msg"}}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Msg string }
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			e.mu.Lock()
			e.runs[a.Msg]++
			h := e.holds[a.Msg]
			e.mu.Unlock()
			if h != nil {
				close(h.reached)
				select {
				case <-h.release:
				case <-ctx.Done():
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Msg}}}, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil),
		ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
	e.url = (&url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/"}).String()
	return e
}

// hold makes the next call with msg wait until the returned hold's release is closed.
func (e *echoServer) hold(msg string) *held {
	h := &held{reached: make(chan struct{}), release: make(chan struct{})}
	e.mu.Lock()
	e.holds[msg] = h
	e.mu.Unlock()
	return h
}

func (e *echoServer) ran() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.runs))
	for k, v := range e.runs {
		out[k] = v
	}
	return out
}

// tsSession is a running session.mjs: one session of the TypeScript SDK client, driven by
// commands on its standard input.
type tsSession struct {
	t      *testing.T
	ctx    context.Context
	cmd    *exec.Cmd
	in     io.WriteCloser
	exited chan struct{}

	mu      sync.Mutex
	next    int
	waiting map[int]chan tsReply
	stderr  bytes.Buffer
}

// tsReply is one line session.mjs printed.
type tsReply struct {
	ID      int      `json:"id"`
	OK      bool     `json:"ok"`
	Error   string   `json:"error"`
	Names   []string `json:"names"`
	Changes int      `json:"changes"`
	IsError bool     `json:"isError"`
	Text    string   `json:"text"`
	Ready   bool     `json:"ready"`
	Session string   `json:"session"`
	Server  struct{ Name string }
}

// startSession starts session.mjs against url and waits until it has connected.
func startSession(t *testing.T, ctx context.Context, url, token string) *tsSession {
	t.Helper()
	s := &tsSession{t: t, ctx: ctx, waiting: map[int]chan tsReply{}, exited: make(chan struct{})}
	s.cmd = exec.Command("node", "session.mjs", url, token)
	s.cmd.Stderr = &lockedWriter{mu: &s.mu, w: &s.stderr}
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan tsReply, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			var r tsReply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				r = tsReply{ID: -1, Error: fmt.Sprintf("a line that is not JSON: %s", sc.Text())}
			}
			if r.Ready {
				ready <- r
				continue
			}
			s.mu.Lock()
			ch := s.waiting[r.ID]
			delete(s.waiting, r.ID)
			s.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		}
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
		if t.Failed() {
			t.Logf("the TypeScript client's standard error:\n%s", s.errors())
		}
	})
	select {
	case r := <-ready:
		if r.Server.Name != "warden" {
			t.Fatalf("the client connected to %q, want warden", r.Server.Name)
		}
	case <-s.exited:
		t.Fatalf("the TypeScript client could not connect through the proxy:\n%s", s.errors())
	case <-ctx.Done():
		t.Fatalf("the TypeScript client did not connect:\n%s", s.errors())
	}
	return s
}

func (s *tsSession) errors() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// send sends a command and returns where its reply will come.
func (s *tsSession) send(cmd map[string]any) chan tsReply {
	s.t.Helper()
	ch := make(chan tsReply, 1)
	s.mu.Lock()
	s.next++
	id := s.next
	s.waiting[id] = ch
	s.mu.Unlock()
	cmd["id"] = id
	b, _ := json.Marshal(cmd)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatalf("the TypeScript client is gone: %v\n%s", err, s.errors())
	}
	return ch
}

// await waits for a reply.
func (s *tsSession) await(ch chan tsReply) tsReply {
	s.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-s.exited:
		select {
		case r := <-ch: // its last reply came before it exited
			return r
		default:
		}
		s.t.Fatalf("the TypeScript client stopped:\n%s", s.errors())
	case <-s.ctx.Done():
		s.t.Fatalf("the TypeScript client did not answer:\n%s", s.errors())
	}
	return tsReply{}
}

func (s *tsSession) do(cmd map[string]any) tsReply { s.t.Helper(); return s.await(s.send(cmd)) }

// close ends the session (the SDK's close) and waits for the process to exit.
func (s *tsSession) close() {
	s.t.Helper()
	if r := s.do(map[string]any{"op": "close"}); !r.OK {
		s.t.Fatalf("close: %+v", r)
	}
	select {
	case <-s.exited:
	case <-s.ctx.Done():
		s.t.Fatal("the TypeScript client did not exit after closing")
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
