package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
)

// RoundRobin is an HTTP reverse proxy that sends each request to the next of its backends in
// turn, with no affinity of any kind: two requests of one MCP session go to two instances, as
// a load balancer without sticky sessions sends them. Responses stream through unbuffered
// (server-sent events reach the client as each is written).
//
// A backend that refuses the connection is skipped and the request goes to the next one: it
// never reached anyone, so sending it elsewhere cannot run anything twice (a load balancer's
// redispatch on connect failure). A request that reached a backend and then lost it is never
// sent again: its client gets 502, or a response cut short.
//
// The multi-instance test (TestTrio) and the benchmark (bench/) put it in front of several
// `warden serve` processes sharing one PostgreSQL store.
type RoundRobin struct {
	backends []*url.URL
	next     atomic.Uint64
	tr       *http.Transport
	proxy    *httputil.ReverseProxy
	record   bool

	mu      sync.Mutex
	hops    []Hop
	streams []int         // per backend: GET event streams open now
	changed chan struct{} // closed and replaced when hops or streams change
}

// Hop is one request the proxy passed on, as Record keeps it.
type Hop struct {
	Backend int    // the index of the backend it was sent to; -1 until then, or if none could be reached
	Method  string // the HTTP method
	Session string // the Mcp-Session-Id it carried
	RPC     string // the JSON-RPC method of a POST ("tools/call"), if its body is one
	Body    []byte // the request's body
	Status  int    // the backend's status; 0 until it answers, or when it never did
	Err     string // why it got no answer
	Done    bool   // the backend answered or failed
}

// NewRoundRobin returns a proxy over the backends' base URLs (http://host:port), which it
// sends requests to with their path unchanged. With record set it keeps every request it
// passes on (Hops) and counts the event streams open on each backend (Streams); the benchmark
// leaves it off.
func NewRoundRobin(backends []string, record bool) (*RoundRobin, error) {
	if len(backends) == 0 {
		return nil, errors.New("a round-robin proxy needs at least one backend")
	}
	p := &RoundRobin{record: record, streams: make([]int, len(backends)), changed: make(chan struct{})}
	for _, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			return nil, err
		}
		if u.Scheme != "http" || u.Host == "" {
			return nil, errors.New("a backend is an http://host:port URL, not " + b)
		}
		p.backends = append(p.backends, u)
	}
	p.tr = http.DefaultTransport.(*http.Transport).Clone()
	p.tr.MaxIdleConns, p.tr.MaxIdleConnsPerHost = 1024, 256
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			// The backend is chosen in RoundTrip, where a refused connection can move on.
			r.Out.URL.Scheme, r.Out.URL.Host = "http", "backend"
			r.Out.Host = r.In.Host
		},
		Transport:     roundTripper{p},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	return p, nil
}

// ServeHTTP passes the request on to the next backend.
func (p *RoundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.proxy.ServeHTTP(w, r) }

// Close closes the proxy's idle connections to the backends.
func (p *RoundRobin) Close() { p.tr.CloseIdleConnections() }

// Next is the index of the backend the next request goes to, if it answers.
func (p *RoundRobin) Next() int { return int(p.next.Load() % uint64(len(p.backends))) }

// Hops returns a copy of the requests passed on so far, in the order they arrived (with
// record set).
func (p *RoundRobin) Hops() []Hop {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Hop(nil), p.hops...)
}

// Streams returns, per backend, how many GET event streams are open through the proxy now
// (with record set).
func (p *RoundRobin) Streams() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.streams...)
}

// Wait returns when cond, called with the requests so far and the open streams, holds, or
// when ctx ends (with its error). It wakes on each change rather than polling.
func (p *RoundRobin) Wait(ctx context.Context, cond func(hops []Hop, streams []int) bool) error {
	for {
		p.mu.Lock()
		ok := cond(p.hops, p.streams)
		ch := p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// update changes the record under the lock and wakes Wait.
func (p *RoundRobin) update(f func()) {
	p.mu.Lock()
	f()
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

type roundTripper struct{ p *RoundRobin }

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	p := rt.p
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	hop := -1
	if p.record {
		h := Hop{Backend: -1, Method: req.Method, Session: req.Header.Get("Mcp-Session-Id"), Body: body}
		var rpc struct{ Method string }
		if json.Unmarshal(body, &rpc) == nil {
			h.RPC = rpc.Method
		}
		p.update(func() { hop = len(p.hops); p.hops = append(p.hops, h) })
	}
	n := uint64(len(p.backends))
	first := p.next.Add(1) - 1
	var err error
	for k := range n {
		i := int((first + k) % n)
		out := req.Clone(req.Context())
		out.URL.Scheme, out.URL.Host = p.backends[i].Scheme, p.backends[i].Host
		if body != nil {
			out.Body = io.NopCloser(bytes.NewReader(body))
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			out.ContentLength = int64(len(body))
		}
		if p.record {
			p.update(func() { p.hops[hop].Backend = i })
		}
		var resp *http.Response
		resp, err = p.tr.RoundTrip(out)
		if err == nil {
			if p.record {
				p.update(func() { p.hops[hop].Status, p.hops[hop].Done = resp.StatusCode, true })
				if req.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
					p.update(func() { p.streams[i]++ })
					resp.Body = &stream{ReadCloser: resp.Body, done: func() { p.update(func() { p.streams[i]-- }) }}
				}
			}
			return resp, nil
		}
		var op *net.OpError
		if !errors.As(err, &op) || op.Op != "dial" {
			// It may have reached the backend: it is not sent again.
			if p.record {
				p.update(func() { p.hops[hop].Err, p.hops[hop].Done = err.Error(), true })
			}
			return nil, err
		}
	}
	if p.record {
		p.update(func() { p.hops[hop].Backend, p.hops[hop].Err, p.hops[hop].Done = -1, err.Error(), true })
	}
	return nil, err
}

// stream is a GET response's body, counted as open until it ends or is closed.
type stream struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (s *stream) Read(b []byte) (int, error) {
	n, err := s.ReadCloser.Read(b)
	if err != nil {
		s.once.Do(s.done)
	}
	return n, err
}

func (s *stream) Close() error {
	s.once.Do(s.done)
	return s.ReadCloser.Close()
}
