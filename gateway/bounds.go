package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/verdict"
)

// Bounds limits what clients can hold of the gateway at once. The zero value of each field is
// its default; a negative cap (calls, bytes) turns that cap off.
type Bounds struct {
	// CallsPerSession caps the tools/call requests one MCP session has in flight (default
	// 16); CallsPerToken caps them over all of a token's sessions (default 64). A call past
	// either cap is refused with HTTP 429, JSON-RPC error codeBusy and Retry-After, and
	// recorded; it may be sent again once a call has finished.
	CallsPerSession int
	CallsPerToken   int
	// BytesInFlight caps the sum of the request bodies being read or held by requests in
	// progress (default 64 MiB). A request that would pass it is refused with HTTP 503 and
	// Retry-After, and recorded.
	BytesInFlight int64
	// RefusalWindow is how long the refusals of requests without a valid token from one
	// source (a remote address without its port) are counted before they are recorded as
	// one event with their count (default one minute). The first refusal of a source is
	// recorded at once.
	RefusalWindow time.Duration
	// RefusalSources caps how many sources are counted apart (default 4096); the refusals
	// of sources past it are counted together, under the source "other".
	RefusalSources int
	// Clock measures the windows (default the real clock).
	Clock clock.Clock

	// released, if set, is called each time a request has given back the calls or bytes it
	// held (for tests, which wait for it instead of sleeping).
	released func()
}

// Default bounds.
const (
	DefaultCallsPerSession = 16
	DefaultCallsPerToken   = 64
	DefaultBytesInFlight   = 64 << 20
	DefaultRefusalWindow   = time.Minute
	DefaultRefusalSources  = 4096
)

// codeBusy is the JSON-RPC error code of a request refused because the gateway, or the
// caller's share of it, is full: an implementation-defined server error, apart from
// codeRefused, since sending it again later may succeed.
const codeBusy = -32002

// retryAfter is what a busy answer asks the client to wait, in seconds.
const retryAfter = "1"

func (b Bounds) withDefaults() Bounds {
	if b.CallsPerSession == 0 {
		b.CallsPerSession = DefaultCallsPerSession
	}
	if b.CallsPerToken == 0 {
		b.CallsPerToken = DefaultCallsPerToken
	}
	if b.BytesInFlight == 0 {
		b.BytesInFlight = DefaultBytesInFlight
	}
	if b.RefusalWindow <= 0 {
		b.RefusalWindow = DefaultRefusalWindow
	}
	if b.RefusalSources <= 0 {
		b.RefusalSources = DefaultRefusalSources
	}
	if b.Clock == nil {
		b.Clock = clock.Real{}
	}
	return b
}

// inFlight counts what requests in progress hold: calls by session and by token, and bytes
// of request bodies. It is safe for concurrent use.
type inFlight struct {
	b  Bounds
	mu sync.Mutex
	// calls are the calls in flight by key: "s:" and an MCP session id, "t:" and a token id.
	calls map[string]int
	bytes int64
}

// acquireCalls takes n call slots of the session (if named) and of the token, or none and a
// rejection that says which cap is full.
func (f *inFlight) acquireCalls(session, token string, n int) *rejection {
	if n == 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if session != "" && f.b.CallsPerSession > 0 && f.calls["s:"+session]+n > f.b.CallsPerSession {
		return busyCalls(fmt.Sprintf("this session has %d tool calls in flight, the most it may (%d): send it again once one has finished",
			f.calls["s:"+session], f.b.CallsPerSession))
	}
	if f.b.CallsPerToken > 0 && f.calls["t:"+token]+n > f.b.CallsPerToken {
		return busyCalls(fmt.Sprintf("this token's sessions have %d tool calls in flight, the most it may (%d): send it again once one has finished",
			f.calls["t:"+token], f.b.CallsPerToken))
	}
	if session != "" {
		f.calls["s:"+session] += n
	}
	f.calls["t:"+token] += n
	return nil
}

// settled reports whether nothing is held, by calls or bytes.
func (f *inFlight) settled() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls) == 0 && f.bytes == 0
}

func busyCalls(msg string) *rejection {
	return &rejection{status: http.StatusTooManyRequests, rpc: codeBusy, code: "too_many_calls", msg: msg}
}

// releaseCalls gives back what acquireCalls took.
func (f *inFlight) releaseCalls(session, token string, n int) {
	if n == 0 {
		return
	}
	f.mu.Lock()
	for _, k := range []string{"s:" + session, "t:" + token} {
		if k == "s:" {
			continue
		}
		if f.calls[k] -= n; f.calls[k] <= 0 {
			delete(f.calls, k) // an idle key holds no memory
		}
	}
	f.mu.Unlock()
	if f.b.released != nil {
		f.b.released()
	}
}

// acquireBytes reserves n bytes of request body, or reports that they would pass the cap.
func (f *inFlight) acquireBytes(n int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.b.BytesInFlight > 0 && f.bytes+n > f.b.BytesInFlight {
		return false
	}
	f.bytes += n
	return true
}

func (f *inFlight) releaseBytes(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bytes -= n
}

// errBusy is a body that cannot be read now because the bodies in flight fill the cap.
var errBusy = errors.New("the gateway holds as many request bytes as it may")

// heldBody reserves the bytes of a request body as they are read, and gives them all back
// at release (when the request has been served, since its bytes are held until then).
type heldBody struct {
	io.ReadCloser
	f    *inFlight
	held int64
	left int64 // what the request's length says is still to come, or -1
}

func (b *heldBody) Read(p []byte) (int, error) {
	if b.left >= 0 && int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // reserve what can come (and a byte to see the end), not the buffer
	}
	if !b.f.acquireBytes(int64(len(p))) {
		return 0, errBusy
	}
	n, err := b.ReadCloser.Read(p)
	b.f.releaseBytes(int64(len(p) - n))
	b.held += int64(n)
	if b.left >= 0 {
		b.left = max(0, b.left-int64(n))
	}
	return n, err
}

func (b *heldBody) release() {
	b.f.releaseBytes(b.held)
	if b.f.b.released != nil {
		b.f.b.released()
	}
}

// busyBytes is the answer to a request refused for the bytes in flight.
func busyBytes(limit int64) rejection {
	return rejection{status: http.StatusServiceUnavailable, rpc: codeBusy, code: "busy",
		msg: fmt.Sprintf("the gateway is reading or holding %d bytes of requests, the most it may: send it again shortly", limit)}
}

// A refusalSampler counts the refusals of requests without a valid token by source, and
// records them as one event per source and window, with their count: a flood of them costs a
// map entry per source, not an audit row per request. It is safe for concurrent use.
type refusalSampler struct {
	g       *Gateway
	window  time.Duration
	sources int
	clock   clock.Clock

	mu      sync.Mutex
	counts  map[string]*refusals
	stopped chan struct{}
	done    chan struct{}
	once    sync.Once
}

// refusals are one source's refusals in its current window, not yet recorded.
type refusals struct {
	start   time.Time
	pending int
	method  string // of the last refusal
	msg     string // of the last refusal
}

// otherSources is the source under which sources past the cap are counted.
const otherSources = "other"

func newRefusalSampler(g *Gateway, b Bounds) *refusalSampler {
	s := &refusalSampler{g: g, window: b.RefusalWindow, sources: b.RefusalSources, clock: b.Clock,
		counts: map[string]*refusals{}, stopped: make(chan struct{}), done: make(chan struct{})}
	go s.sweep()
	return s
}

// source is a request's remote address without its port.
func source(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// note counts one refusal; the first of a source, and the first after its window has passed,
// are recorded at once (with what was counted before).
func (s *refusalSampler) note(r *http.Request, msg string) {
	src := source(r)
	now := s.clock.Now()
	s.mu.Lock()
	e := s.counts[src]
	if e == nil && len(s.counts) >= s.sources {
		src = otherSources
		e = s.counts[src]
	}
	var n int
	switch {
	case e == nil:
		e = &refusals{start: now}
		s.counts[src] = e
		n = 1
	case now.Sub(e.start) >= s.window:
		n = e.pending + 1
		e.start, e.pending = now, 0
	default:
		e.pending++
	}
	e.method, e.msg = r.Method, msg
	s.mu.Unlock()
	if n > 0 {
		s.record(context.WithoutCancel(r.Context()), src, r.Method, msg, n, now)
	}
}

// flush records what was counted in every window that has passed (all of them if all), and
// forgets the sources that had nothing to record.
func (s *refusalSampler) flush(all bool) {
	type row struct {
		src, method, msg string
		n                int
	}
	var rows []row
	now := s.clock.Now()
	s.mu.Lock()
	for src, e := range s.counts {
		if !all && now.Sub(e.start) < s.window {
			continue
		}
		if e.pending == 0 {
			delete(s.counts, src)
			continue
		}
		rows = append(rows, row{src, e.method, e.msg, e.pending})
		e.start, e.pending = now, 0
	}
	s.mu.Unlock()
	for _, x := range rows {
		s.record(context.Background(), x.src, x.method, x.msg, x.n, now)
	}
}

// sweep flushes every window until close.
func (s *refusalSampler) sweep() {
	defer close(s.done)
	for {
		tick, stop := s.clock.After(s.window)
		select {
		case <-tick:
			s.flush(false)
		case <-s.stopped:
			stop()
			return
		}
	}
}

// close stops the sweep and records everything counted. Later calls do nothing.
func (s *refusalSampler) close() {
	s.once.Do(func() {
		close(s.stopped)
		<-s.done
		s.flush(true)
	})
}

// record appends one sampled event: n refusals from src.
func (s *refusalSampler) record(ctx context.Context, src, method, msg string, n int, at time.Time) {
	detail := fmt.Sprintf("%d %s without a valid token from %s (the last: %s)", n, plural(n, "request", "requests"), src, msg)
	e := &audit.Event{Time: at, Kind: audit.KindDecision, Tool: "mcp:" + method, Decision: verdict.Deny.String(),
		Principal: "remote " + src,
		Blockers:  []audit.Blocker{{Code: "unauthenticated", Detail: clip(detail), Count: n}}}
	if err := s.g.o.Store.Append(ctx, e); err != nil {
		s.g.logger.Error("refused requests could not be recorded", "source", src, "count", n, "err", err)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// countCalls is how many of a body's requests are tool calls.
func countCalls(msgs []*jsonrpc.Request) int {
	n := 0
	for _, m := range msgs {
		if m.Method == "tools/call" {
			n++
		}
	}
	return n
}
