package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/store/sqlite"
)

// BenchmarkToolsCall measures the latency Warden adds to a tools/call: the same call of the
// same in-process upstream tool (echo, over loopback streamable HTTP), made directly with the
// go-sdk client, and made through the gateway, where it takes the whole pipeline (surface,
// schema, review, the gate with no card, the decision committed to SQLite before the call and
// the outcome after, the upstream call, protection of the result).
//
// Each client is its own MCP session with its own HTTP connections; with clients=32 exactly 32
// sessions have a call in flight at a time. Besides ns/op (wall time over calls: with 32
// clients, the inverse of throughput), each run reports the per-call latency's p50 and p99; the
// warden runs also report added-p50-ns and added-p99-ns, the difference from the last direct
// run with as many clients in the same process (absent when direct did not run, as with
// -bench ToolsCall/warden). upstream-dials/op counts the TCP connections the upstream accepted
// per call: the gateway's connection churn towards it, not the clients'.
//
// A third kind, proxy, is the floor any proxy built on the go-sdk pays: a bare go-sdk server
// whose echo forwards the call to the upstream with a go-sdk client, and does nothing else.
// Its added latency is the second MCP hop; warden's over-proxy-p50-ns is what Warden's own
// pipeline adds on top of that hop.
func BenchmarkToolsCall(b *testing.B) {
	br := newBenchRig(b)
	direct := map[int][2]time.Duration{} // clients → p50, p99 of the last direct run
	proxy := map[int]time.Duration{}     // clients → p50 of the last proxy run
	for _, kind := range []string{"direct", "proxy", "warden"} {
		b.Run(kind, func(b *testing.B) {
			for _, clients := range []int{1, 32} {
				sessions := make([]*mcp.ClientSession, clients)
				for i := range sessions {
					sessions[i] = br.dial(b, kind)
				}
				tool := "echo"
				if kind == "warden" {
					tool = "mcp__up__echo"
				}
				b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
					p50, p99 := br.measure(b, sessions, tool)
					if kind == "direct" {
						direct[clients] = [2]time.Duration{p50, p99}
					} else if d, ok := direct[clients]; ok {
						b.ReportMetric(float64(p50-d[0]), "added-p50-ns")
						b.ReportMetric(float64(p99-d[1]), "added-p99-ns")
					}
					if kind == "proxy" {
						proxy[clients] = p50
					} else if p, ok := proxy[clients]; ok && kind == "warden" {
						b.ReportMetric(float64(p50-p), "over-proxy-p50-ns")
					}
				})
				for _, cs := range sessions {
					_ = cs.Close()
				}
			}
		})
	}
	if n := br.pending.Load(); n > 0 {
		b.Errorf("%d calls parked an approval card; the benchmark must measure calls that need none", n)
	}
}

// benchRig is a gateway on a SQLite store in a temporary directory, in front of an in-process
// upstream, both served over loopback HTTP.
type benchRig struct {
	upURL, gwURL, proxyURL string
	secret                 string
	dials                  atomic.Int64 // TCP connections the upstream accepted
	pending                atomic.Int64 // approval cards parked (there must be none)

	mu         sync.Mutex
	transports []*http.Transport
}

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

func newBenchRig(b *testing.B) *benchRig {
	b.Helper()
	ctx := context.Background()
	br := &benchRig{}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil)) // info and above, formatted then dropped

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
	upSrv := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up },
		&mcp.StreamableHTTPOptions{Logger: logger}))
	upSrv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			br.dials.Add(1)
		}
	}
	upSrv.Start()
	b.Cleanup(upSrv.Close) // last: the gateway's own upstream connection is closed before
	br.upURL = upSrv.URL

	// The bare go-sdk proxy: one client session to the upstream, shared by its callers, as the
	// gateway shares its upstream connection.
	pc := mcp.NewClient(&mcp.Implementation{Name: "proxy", Version: "1"}, nil)
	pcs, err := pc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: br.upURL,
		HTTPClient: &http.Client{Transport: upstreamTransport}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pcs.Close() })
	ps := mcp.NewServer(&mcp.Implementation{Name: "proxy", Version: "1"}, &mcp.ServerOptions{Logger: logger})
	ps.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return pcs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: req.Params.Arguments})
		})
	proxySrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ps },
		&mcp.StreamableHTTPOptions{Logger: logger}))
	b.Cleanup(proxySrv.Close)
	br.proxyURL = proxySrv.URL

	dir := b.TempDir()
	db, err := sqlite.OpenWith(ctx, filepath.Join(dir, "warden.db"), sqlite.Options{Journal: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	p, err := policy.Parse("bench.yaml", fmt.Appendf(nil, benchPolicy, br.upURL))
	if err != nil {
		b.Fatal(err)
	}
	var gw atomic.Pointer[Gateway]
	broker := approval.NewBroker(approval.Options{Store: db, Timeout: time.Minute, OnCard: func(c *approval.Card) {
		if c.State == approval.Pending {
			br.pending.Add(1)
		}
		if g := gw.Load(); g != nil {
			g.OnCard(c)
		}
	}})
	rv, err := review.New(review.Options{})
	if err != nil {
		b.Fatal(err)
	}
	g, err := gate.New(gate.Options{Reviewer: rv, Broker: broker, Ledger: db, Log: db, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(g.Close)
	w, err := New(Options{Policy: p, Env: p.Env(policy.MapLookup(nil)), Store: db, Gate: g, Reviewer: rv,
		Broker: broker, Workspaces: filepath.Join(dir, "ws"), Native: native.Options{Timeout: 10 * time.Second},
		Logger: logger, TokenTTL: time.Second}) // as warden serve runs it
	if err != nil {
		b.Fatal(err)
	}
	gw.Store(w)
	b.Cleanup(w.Close)
	gwSrv := httptest.NewServer(w.Handler())
	b.Cleanup(gwSrv.Close)
	br.gwURL = gwSrv.URL
	b.Cleanup(br.closeIdle) // first: the clients' idle connections, so that the servers can close

	// The person's role runs a read connector's tools without asking anyone.
	secret, hash, err := auth.NewSecret()
	if err != nil {
		b.Fatal(err)
	}
	tok := &auth.Token{ID: "tok_" + newID(), Hash: hash, Role: auth.RoleAgent, Tenant: "default", SessionRole: "person",
		Name: "bench", Created: time.Now()}
	if err := db.CreateToken(ctx, tok); err != nil {
		b.Fatal(err)
	}
	br.secret = secret
	return br
}

// dial opens a client session (kind direct, proxy or warden), with HTTP connections of its
// own. All carry the bearer token (the upstream and the proxy ignore it), so that the clients
// do the same work.
func (br *benchRig) dial(b *testing.B, kind string) *mcp.ClientSession {
	b.Helper()
	endpoint := map[string]string{"direct": br.upURL, "proxy": br.proxyURL, "warden": br.gwURL}[kind]
	tr := http.DefaultTransport.(*http.Transport).Clone()
	br.mu.Lock()
	br.transports = append(br.transports, tr)
	br.mu.Unlock()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{br.secret, tr}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

func (br *benchRig) closeIdle() {
	br.mu.Lock()
	defer br.mu.Unlock()
	for _, tr := range br.transports {
		tr.CloseIdleConnections()
	}
}

// measure makes b.N calls of the tool, spread over the sessions, each session with one call in
// flight at a time, and reports the per-call latency's p50 and p99. The durations go to a slice
// of b.N made before the timer starts; nothing else grows with b.N.
func (br *benchRig) measure(b *testing.B, sessions []*mcp.ClientSession, tool string) (p50, p99 time.Duration) {
	b.ReportAllocs()
	durs := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, cs := range sessions {
		wg.Go(func() {
			params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"msg": "hi"}}
			ctx := context.Background()
			<-start
			for !failed.Load() {
				i := next.Add(1) - 1
				if i >= int64(len(durs)) {
					return
				}
				t0 := time.Now()
				res, err := cs.CallTool(ctx, params)
				durs[i] = time.Since(t0)
				if err := checkEcho(res, err); err != nil {
					b.Error(err)
					failed.Store(true)
				}
			}
		})
	}
	dials := br.dials.Load()
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(br.dials.Load()-dials)/float64(b.N), "upstream-dials/op")
	slices.Sort(durs)
	p50, p99 = percentile(durs, 0.50), percentile(durs, 0.99)
	b.ReportMetric(float64(p50), "p50-ns")
	b.ReportMetric(float64(p99), "p99-ns")
	return p50, p99
}

func checkEcho(res *mcp.CallToolResult, err error) error {
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("the call failed: %+v", res.Content)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "echo: hi" {
		return fmt.Errorf("unexpected result: %+v", res.Content[0])
	}
	return nil
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
