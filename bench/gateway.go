package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/store/sqlite"
)

// The three ways of calling the echo tool, in the tables' order; the first is the baseline.
const (
	kindDirect = "direct"
	kindProxy  = "go-sdk proxy"
	kindWarden = "Warden"
)

var gatewayKinds = []string{kindDirect, kindProxy, kindWarden}

// rig is the echo upstream, the bare go-sdk proxy in front of it, and a Warden gateway in
// front of it on a SQLite store, each served over loopback streamable HTTP in this process.
type rig struct {
	urls    map[string]string // kind → endpoint
	tool    map[string]string // kind → the echo tool's name there
	secret  string            // the agent token's secret, sent to all three alike
	pending atomic.Int64      // approval cards parked: there must be none
	closers []func()          // in the order to call them
}

// benchPolicy declares the echo connector, with effect read, so that the person's role
// runs its tools without asking anyone.
const benchPolicy = `
version: 1
connectors:
  - id: up
    effect: read
    discover: true
    upstream: {url: %q, timeoutMs: 10000}
tenants:
  - id: default
    connections: [{id: up, connector: up}]
`

// echoServer serves the echo upstream (go-sdk, streamable HTTP) on a loopback port until the
// returned function is called.
func echoServer(logger *slog.Logger) (url string, stop func(), err error) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, &mcp.ServerOptions{Logger: logger})
	up.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"msg": map[string]any{"type": "string"}}, "required": []string{"msg"}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Msg string }
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Msg}}}, nil
		})
	url, stop, err = serve(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up },
		&mcp.StreamableHTTPOptions{Logger: logger}))
	if err != nil {
		return "", nil, fmt.Errorf("the echo server: %w", err)
	}
	return url, stop, nil
}

// serve serves h on a loopback port until the returned function is called.
func serve(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// newRig builds the three servers; dir holds Warden's database and workspaces.
func newRig(ctx context.Context, dir string) (_ *rig, err error) {
	r := &rig{urls: map[string]string{}, tool: map[string]string{kindDirect: "echo", kindProxy: "echo", kindWarden: "mcp__up__echo"}}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil)) // info and above, formatted then dropped, as a server logs

	upURL, stop, err := echoServer(logger)
	if err != nil {
		return nil, err
	}
	r.closers = append(r.closers, stop)
	r.urls[kindDirect] = upURL

	// The bare go-sdk proxy: one client session to the upstream, shared by its callers, as
	// the gateway shares its upstream connection, over a transport that keeps as many idle
	// connections as the gateway's does.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 256
	pcs, err := mcp.NewClient(&mcp.Implementation{Name: "proxy", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: upURL, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		return nil, fmt.Errorf("the proxy's client: %w", err)
	}
	r.closers = append([]func(){func() { _ = pcs.Close(); tr.CloseIdleConnections() }}, r.closers...)
	ps := mcp.NewServer(&mcp.Implementation{Name: "proxy", Version: "1"}, &mcp.ServerOptions{Logger: logger})
	ps.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return pcs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: req.Params.Arguments})
		})
	proxyURL, stop, err := serve(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ps },
		&mcp.StreamableHTTPOptions{Logger: logger}))
	if err != nil {
		return nil, fmt.Errorf("the proxy: %w", err)
	}
	r.closers = append([]func(){stop}, r.closers...)
	r.urls[kindProxy] = proxyURL

	// Warden, as warden serve runs it, on SQLite.
	db, err := sqlite.OpenWith(ctx, filepath.Join(dir, "warden.db"), sqlite.Options{Journal: true}) // as warden serve
	if err != nil {
		return nil, fmt.Errorf("the store: %w", err)
	}
	r.closers = append(r.closers, func() { db.Close() })
	p, err := policy.Parse("bench.yaml", fmt.Appendf(nil, benchPolicy, upURL))
	if err != nil {
		return nil, fmt.Errorf("the policy: %w", err)
	}
	var gw atomic.Pointer[gateway.Gateway]
	broker := approval.NewBroker(approval.Options{Store: db, Timeout: time.Minute, OnCard: func(c *approval.Card) {
		if c.State == approval.Pending {
			r.pending.Add(1)
		}
		if g := gw.Load(); g != nil {
			g.OnCard(c)
		}
	}})
	rv, err := review.New(review.Options{})
	if err != nil {
		return nil, fmt.Errorf("the reviewer: %w", err)
	}
	g, err := gate.New(gate.Options{Reviewer: rv, Broker: broker, Ledger: db, Log: db, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("the gate: %w", err)
	}
	r.closers = append([]func(){g.Close}, r.closers...)
	w, err := gateway.New(gateway.Options{Policy: p, Env: p.Env(policy.MapLookup(nil)), Store: db, Gate: g, Reviewer: rv,
		Broker: broker, Workspaces: filepath.Join(dir, "ws"), Native: native.Options{Timeout: 10 * time.Second},
		Logger: logger, TokenTTL: time.Second})
	if err != nil {
		return nil, fmt.Errorf("the gateway: %w", err)
	}
	gw.Store(w)
	r.closers = append([]func(){w.Close}, r.closers...)
	gwURL, stop, err := serve(w.Handler())
	if err != nil {
		return nil, fmt.Errorf("the gateway's server: %w", err)
	}
	r.closers = append([]func(){stop}, r.closers...)
	r.urls[kindWarden] = gwURL

	secret, hash, err := auth.NewSecret()
	if err != nil {
		return nil, err
	}
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	tok := &auth.Token{ID: "tok_" + hex.EncodeToString(id[:]), Hash: hash, Role: auth.RoleAgent, Tenant: "default",
		SessionRole: "person", Name: "bench", Created: time.Now()}
	if err := db.CreateToken(ctx, tok); err != nil {
		return nil, fmt.Errorf("the token: %w", err)
	}
	r.secret = secret
	return r, nil
}

func (r *rig) close() {
	for _, c := range r.closers {
		c()
	}
}

// bearer sends the token with every request. All three servers get it (the echo server and
// the proxy ignore it), so that the clients do the same work.
type bearer struct {
	secret string
	base   http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.secret)
	return b.base.RoundTrip(req)
}

// client is one MCP session with HTTP connections of its own.
type client struct {
	cs *mcp.ClientSession
	tr *http.Transport
}

func (r *rig) dial(ctx context.Context, kind string) (*client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: r.urls[kind], HTTPClient: &http.Client{Transport: bearer{r.secret, tr}}}, nil)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, fmt.Errorf("%s: connect: %w", kind, err)
	}
	return &client{cs, tr}, nil
}

func (c *client) close() {
	_ = c.cs.Close()
	c.tr.CloseIdleConnections()
}

// call makes one echo call and checks its answer.
func call(ctx context.Context, cs *mcp.ClientSession, tool string) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"msg": "hi"}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("the call failed: %s", contentText(res.Content))
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "echo: hi" {
		return fmt.Errorf("unexpected result: %s", contentText(res.Content))
	}
	return nil
}

func contentText(cs []mcp.Content) string {
	b, err := json.Marshal(cs)
	if err != nil {
		return fmt.Sprint(cs)
	}
	return string(b)
}

// gatewayResult is one kind at one number of clients, over every round.
type gatewayResult struct {
	kind     string
	clients  int
	calls    int
	wall     time.Duration // summed over the rounds
	cpu      time.Duration // the process's CPU time over the rounds: clients, servers and all
	p50, p99 time.Duration
}

func (g gatewayResult) callsPerSecond() float64 { return float64(g.calls) / g.wall.Seconds() }
func (g gatewayResult) cpuPerCall() time.Duration {
	return time.Duration(float64(g.cpu) / float64(g.calls))
}

// gatewayOptions say how much to measure.
type gatewayOptions struct {
	clients []int
	rounds  int
	calls   int // calls per kind, per number of clients, per round
	warmup  int // calls per session before a measurement, not counted
}

// runGateway measures, for each number of clients, the three kinds in turn, round after
// round, each round in another order, so that a burst of load on the shared machine does not
// fall on one kind only.
func runGateway(ctx context.Context, o gatewayOptions, dir string, logf func(string, ...any)) ([]gatewayResult, error) {
	r, err := newRig(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer r.close()
	var out []gatewayResult
	for _, n := range o.clients {
		res := map[string]*gatewayResult{}
		durs := map[string][]time.Duration{}
		for round := range o.rounds {
			for k := range gatewayKinds {
				kind := gatewayKinds[(k+round)%len(gatewayKinds)] // over three rounds, each kind goes first once
				m, err := r.measure(ctx, kind, n, o.calls, o.warmup)
				if err != nil {
					return nil, fmt.Errorf("gateway, %s, %d clients: %w", kind, n, err)
				}
				if res[kind] == nil {
					res[kind] = &gatewayResult{kind: kind, clients: n}
				}
				res[kind].calls += len(m.durs)
				res[kind].wall += m.wall
				res[kind].cpu += m.cpu
				durs[kind] = append(durs[kind], m.durs...)
			}
		}
		for _, kind := range gatewayKinds {
			g := res[kind]
			slices.Sort(durs[kind])
			g.p50, g.p99 = percentile(durs[kind], 0.50), percentile(durs[kind], 0.99)
			logf("gateway: %s, %d clients: %.0f calls/s, p50 %v, p99 %v, CPU %v per call", kind, n, g.callsPerSecond(), g.p50, g.p99, g.cpuPerCall())
			out = append(out, *g)
		}
	}
	if n := r.pending.Load(); n > 0 {
		return nil, fmt.Errorf("gateway: %d calls parked an approval card; the benchmark must measure calls that need none", n)
	}
	return out, nil
}

type measurement struct {
	durs      []time.Duration
	wall, cpu time.Duration
}

// measure opens n sessions of kind, warms each up, then makes calls of the echo tool spread
// over them, each session with one call in flight at a time.
func (r *rig) measure(ctx context.Context, kind string, n, calls, warmup int) (measurement, error) {
	clients := make([]*client, 0, n)
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	for range n {
		c, err := r.dial(ctx, kind)
		if err != nil {
			return measurement{}, err
		}
		clients = append(clients, c)
		for range warmup {
			if err := call(ctx, c.cs, r.tool[kind]); err != nil {
				return measurement{}, fmt.Errorf("warming up: %w", err)
			}
		}
	}
	durs := make([]time.Duration, calls)
	var next atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, c := range clients {
		wg.Go(func() {
			<-start
			for {
				i := next.Add(1) - 1
				if i >= int64(calls) {
					return
				}
				t0 := time.Now()
				err := call(ctx, c.cs, r.tool[kind])
				durs[i] = time.Since(t0)
				if err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
					next.Store(int64(calls)) // the others stop after their call
					return
				}
			}
		})
	}
	cpu0, err := processCPU()
	if err != nil {
		return measurement{}, err
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(t0)
	cpu1, err := processCPU()
	if err != nil {
		return measurement{}, err
	}
	if firstErr != nil {
		return measurement{}, firstErr
	}
	return measurement{durs: durs, wall: wall, cpu: cpu1 - cpu0}, nil
}

// processCPU is the CPU time, user and system, of every thread of this process so far.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
