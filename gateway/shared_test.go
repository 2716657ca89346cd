package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/store/postgres"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/store/storetest"
)

// roundRobin sends each request to the next of several servers in turn, as a load balancer
// without affinity does.
type roundRobin struct {
	secret string
	hosts  []string
	next   atomic.Uint64
	// seen counts the requests each server was sent.
	seen []atomic.Int64
}

func newRoundRobin(secret string, urls ...string) *roundRobin {
	rr := &roundRobin{secret: secret, seen: make([]atomic.Int64, len(urls))}
	for _, u := range urls {
		p, _ := url.Parse(u)
		rr.hosts = append(rr.hosts, p.Host)
	}
	return rr
}

func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	i := int(rr.next.Add(1)-1) % len(rr.hosts)
	rr.seen[i].Add(1)
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = rr.hosts[i], rr.hosts[i]
	req.Header.Set("Authorization", "Bearer "+rr.secret)
	return http.DefaultTransport.RoundTrip(req)
}

// connectVia opens an MCP client session at endpoint whose requests go through rt, without
// the client's own event stream; the test closes it.
func connectVia(ctx context.Context, t *testing.T, endpoint string, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// postTo sends one MCP POST on a session with a token's secret and returns the HTTP status.
func postTo(t *testing.T, url, secret, session, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// twoInstances are two gateways on one store, as two instances of warden serve on one
// database are.
func twoInstances(t *testing.T, a, b storetest.Store, src []byte) (*rig, *rig) {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws") // one volume of workspaces, as the instances mount
	shared := func(name string, db storetest.Store) func(*Options) {
		return func(o *Options) { o.Sessions, o.Instance, o.Workspaces = db, name, ws }
	}
	return newRigOn(t, a, src, nil, shared("instance-a", a)), newRigOn(t, b, src, nil, shared("instance-b", b))
}

func sqliteTwice(t *testing.T) (storetest.Store, storetest.Store) {
	path := filepath.Join(t.TempDir(), "warden.db")
	open := func() storetest.Store {
		db, err := sqlite.OpenWith(context.Background(), path, sqlite.Options{Journal: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	return open(), open()
}

func postgresTwice(t *testing.T) (storetest.Store, storetest.Store) {
	u := postgresSchema(t)
	open := func() storetest.Store {
		db, err := postgres.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	return open(), open()
}

// TestAnyInstanceServesTheSession: one MCP session whose requests alternate between two
// instances lists, calls, waits for a person whose card it sees answered, and spawns a
// subagent that connects to either; each call runs once and is recorded once; DELETE on one
// instance ends it on both.
func TestAnyInstanceServesTheSession(t *testing.T) {
	for _, st := range []struct {
		name string
		open func(*testing.T) (storetest.Store, storetest.Store)
	}{{"sqlite", sqliteTwice}, {"postgres", postgresTwice}} {
		t.Run(st.name, func(t *testing.T) {
			dbA, dbB := st.open(t)
			a, b := twoInstances(t, dbA, dbB, examples.Quickstart)
			secret := a.token("default", "person", "")
			rr := newRoundRobin(secret, a.url, b.url)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs := connectVia(ctx, t, a.url, rr)
			first := names(t, cs)
			for range 3 {
				if got := names(t, cs); !slices.Equal(got, first) {
					t.Fatalf("the instances list different tools: %v, then %v", first, got)
				}
			}
			if !slices.Contains(first, "files_write") {
				t.Fatalf("tools: %v", first)
			}
			for i := range 4 {
				if out, isErr := call(t, cs, "files_write", map[string]any{"path": "n.txt", "content": strings.Repeat("x", i+1)}); isErr {
					t.Fatalf("write %d: %s", i, out)
				}
				if out, isErr := call(t, cs, "files_read", map[string]any{"path": "n.txt"}); isErr || !strings.Contains(out, strings.Repeat("x", i+1)) {
					t.Fatalf("read %d: %v %s", i, isErr, out)
				}
			}
			if rr.seen[0].Load() < 4 || rr.seen[1].Load() < 4 {
				t.Fatalf("requests were not spread: %d and %d", rr.seen[0].Load(), rr.seen[1].Load())
			}
			// Each call ran on one instance and is on record once (both share the trail).
			if err := b.gate.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			decided, ran := map[string]int{}, map[string]int{}
			var sessions []string
			for _, e := range a.audited(audit.Filter{Kind: audit.KindDecision}) {
				decided[e.CallID]++
				if !slices.Contains(sessions, e.Session) {
					sessions = append(sessions, e.Session)
				}
			}
			for _, e := range a.audited(audit.Filter{Kind: audit.KindOutcome}) {
				ran[e.CallID]++
			}
			if len(sessions) != 1 || len(decided) != 8 {
				t.Fatalf("%d calls decided under sessions %v, want 8 under one", len(decided), sessions)
			}
			for id, n := range decided {
				if n != 1 || ran[id] != 1 {
					t.Errorf("call %s: %d decisions, %d outcomes", id, n, ran[id])
				}
			}

			// A subagent's token comes back as a handle from one instance; the next call goes
			// to the other, which does not hold the value, and says so, naming the handle.
			out, isErr := call(t, cs, "spawn_subagent", map[string]any{"root": ".", "task": "read the notes"})
			if isErr {
				t.Fatalf("spawn: %s", out)
			}
			var res struct{ Token string }
			if err := json.Unmarshal([]byte(out[strings.IndexByte(out, '{'):]), &res); err != nil || !strings.HasPrefix(res.Token, "protected://") {
				t.Fatalf("the subagent's token is not a handle: %s", out)
			}
			out, isErr = call(t, cs, "shell_exec", map[string]any{"command": "true", "protectedBindings": map[string]any{"T": res.Token}})
			if !isErr || !strings.Contains(out, res.Token) || !strings.Contains(out, "not held by this instance") {
				t.Fatalf("a handle another instance issued: %v %s", isErr, out)
			}
			// The subagent connects through the balancer too: its token, made on one instance,
			// is good on both while its parent lives.
			var kidSecret string
			for _, r := range []*rig{a, b} {
				for _, s := range r.gw.live() {
					if v, err := s.secrets.Resolve(map[string]string{"T": res.Token}); err == nil {
						kidSecret = v["T"].Reveal()
					}
				}
			}
			if kidSecret == "" {
				t.Fatal("no instance holds the subagent's token")
			}
			kid := connectVia(ctx, t, a.url, newRoundRobin(kidSecret, b.url, a.url))
			kidTools := names(t, kid)
			for range 2 {
				if got := names(t, kid); !slices.Equal(got, kidTools) || slices.Contains(got, "spawn_subagent") {
					t.Fatalf("the subagent's tools: %v, then %v", kidTools, got)
				}
			}
			kid.Close()

			// Another token of the same tenant presenting the session's id is refused by both
			// instances, and neither builds the session for it.
			other := a.token("default", "person", "")
			for _, r := range []*rig{a, b} {
				held := r.gw.sessionByMCP(cs.ID()) != nil
				if code := postTo(t, r.url, other, cs.ID(), `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`); code != http.StatusNotFound {
					t.Errorf("another token with the session's id at %s: HTTP %d, want 404", r.url, code)
				}
				if !held && r.gw.sessionByMCP(cs.ID()) != nil {
					t.Errorf("%s built the session for another token", r.url)
				}
			}

			// DELETE through either instance ends it on both: the other's copy asks the store
			// at its next request (the test makes that request due for the check).
			id := cs.ID()
			cs.Close()
			for _, r := range []*rig{a, b} {
				if s := r.gw.sessionByMCP(id); s != nil {
					s.liveAt.Store(0)
				}
				if code := postTo(t, r.url, secret, id, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`); code != http.StatusNotFound {
					t.Errorf("a request of the ended session to %s: HTTP %d, want 404", r.url, code)
				}
			}
			for _, r := range []*rig{a, b} {
				deadline := time.Now().Add(20 * time.Second)
				for r.gw.LiveSessions()["default"] != 0 {
					r.gw.SweepSessions(context.Background())
					if time.Now().After(deadline) {
						t.Fatalf("a copy of the ended session is still live: %v", r.gw.LiveSessions())
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
}

// TestACardAnsweredWhileTheSessionMoves: a call waiting for a person on one instance is
// answered through the store while the session's other requests go to another instance.
func TestACardAnsweredWhileTheSessionMoves(t *testing.T) {
	dbA, dbB := sqliteTwice(t)
	a, b := twoInstances(t, dbA, dbB, examples.Quickstart)
	secret := a.token("default", "person", "")
	rr := newRoundRobin(secret, a.url, b.url)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connectVia(ctx, t, a.url, rr)
	done := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell_exec", Arguments: map[string]any{"command": "rm -f gone.txt"}})
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		b, _ := json.Marshal(res)
		done <- string(b)
	}()
	var card *approval.Card
	select {
	case card = <-a.cards:
	case card = <-b.cards:
	case <-ctx.Done():
		t.Fatal("no card")
	}
	// Meanwhile the session goes on, on both instances.
	for range 3 {
		names(t, cs)
	}
	if _, err := b.broker.Answer(ctx, card.Tenant, card.ID, approval.AllowOnce, "carol", approval.ChannelAPI, card.Digest); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if strings.Contains(got, `"isError":true`) || strings.HasPrefix(got, "error") {
			t.Fatalf("the approved call: %s", got)
		}
	case <-ctx.Done():
		t.Fatal("the approved call never finished")
	}
}

// router sends GETs (the client's event stream) to one server and everything else to another.
type router struct {
	secret     string
	get, other string
}

func (rt router) RoundTrip(req *http.Request) (*http.Response, error) {
	host := rt.other
	if req.Method == http.MethodGet {
		host = rt.get
	}
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = host, host
	req.Header.Set("Authorization", "Bearer "+rt.secret)
	return http.DefaultTransport.RoundTrip(req)
}

// TestProgressReachesTheStreamOnAnotherInstance: a call waiting for a person on one instance
// tells its client so through the event stream the client holds on another (PostgreSQL relays
// the message between them).
func TestProgressReachesTheStreamOnAnotherInstance(t *testing.T) {
	dbA, dbB := postgresTwice(t)
	a, b := twoInstances(t, dbA, dbB, examples.Quickstart)
	secret := a.token("default", "person", "")
	ua, _ := url.Parse(a.url)
	ub, _ := url.Parse(b.url)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	progress := make(chan string, 8)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params.Message
		}})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.url,
		HTTPClient: &http.Client{Transport: router{secret: secret, get: ua.Host, other: ub.Host}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The stream is open on a (which built the session from its record) before the call.
	for {
		if s := a.gw.sessionByMCP(cs.ID()); s != nil && s.streams.Load() > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the client's event stream never reached instance a")
		}
		time.Sleep(10 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell_exec", Arguments: map[string]any{"command": "rm -f gone.txt"},
			Meta: mcp.Meta{"progressToken": "p1"}})
		done <- err
	}()
	var card *approval.Card
	select {
	case card = <-b.cards:
	case <-ctx.Done():
		t.Fatal("no card on instance b")
	}
	select {
	case msg := <-progress:
		if !strings.Contains(msg, card.ID) {
			t.Errorf("progress %q does not name card %s", msg, card.ID)
		}
	case <-ctx.Done():
		t.Fatal("no progress reached the client's stream on instance a")
	}
	if _, err := a.broker.Answer(ctx, card.Tenant, card.ID, approval.AllowOnce, "carol", approval.ChannelAPI, card.Digest); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestASessionThisInstanceMayNotHoldIsRefused: an instance whose own caps leave no room for
// another session of a token refuses to build one another instance opened, as it would refuse
// its initialize (403 session_refused), rather than as a store failure.
func TestASessionThisInstanceMayNotHoldIsRefused(t *testing.T) {
	dbA, dbB := sqliteTwice(t)
	ws := filepath.Join(t.TempDir(), "ws")
	a := newRigOn(t, dbA, examples.Quickstart, nil, func(o *Options) { o.Sessions, o.Instance, o.Workspaces = dbA, "instance-a", ws })
	b := newRigOn(t, dbB, examples.Quickstart, nil, func(o *Options) {
		o.Sessions, o.Instance, o.Workspaces, o.MaxSessionsPerToken = dbB, "instance-b", ws, 1
	})
	secret := a.token("default", "person", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connectVia(ctx, t, b.url, bearer{secret, http.DefaultTransport}) // b's one session for the token
	onA := connectVia(ctx, t, a.url, bearer{secret, http.DefaultTransport})
	req, _ := http.NewRequest(http.MethodPost, b.url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", onA.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Message string
			Data    struct{ Code string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusForbidden || body.Error.Data.Code != "session_refused" || !strings.Contains(body.Error.Message, "cap") {
		t.Fatalf("HTTP %d %+v; want 403 session_refused naming the cap", resp.StatusCode, body.Error)
	}
	// The session itself is untouched: a still serves it.
	if got := names(t, onA); len(got) == 0 {
		t.Fatal("the session no longer lists tools on the instance that opened it")
	}
}

// TestRPCError: a replayed request fails on a JSON-RPC error in either form of answer, and
// not on a result that merely mentions one.
func TestRPCError(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"bad"}}`, true},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32600,\"message\":\"bad\"}}\n\n", true},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"instructions\":\"an \\\"error\\\" is said\"}}\n\n", false},
		{`{"jsonrpc":"2.0","id":1,"result":{"note":"\"error\""}}`, false},
		{"", false},
	} {
		if msg, got := rpcError([]byte(c.body)); got != c.want || (got && msg != "bad") {
			t.Errorf("rpcError(%q) = %q, %v; want %v", c.body, msg, got, c.want)
		}
	}
}
