package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/server/console"
)

// httpBounds are the flags that bound what clients can hold of `warden serve`: how long a
// request may take to arrive and its response to leave, how long an idle connection is kept,
// how many connections are open at once, how large a REST body is, and the gateway's caps on
// calls and request bytes in flight.
type httpBounds struct {
	readHeader, read, write, idle  time.Duration
	maxConns                       int
	maxAPIBody                     int64
	callsPerSession, callsPerToken int
	bytesInFlight                  int64
}

func (b *httpBounds) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&b.readHeader, "read-header-timeout", 5*time.Second, "how long a connection may take to send a request's header; one that has sent none by then is closed")
	f.DurationVar(&b.read, "read-timeout", 30*time.Second, "how long a request's body may take to arrive, from the end of its header (then 408)")
	f.DurationVar(&b.write, "write-timeout", 30*time.Second, "how long a REST response may take, from the end of the request's header; on /mcp and POST /api/v1/review (which may wait for a card), how long each write of a response or event stream may block")
	f.DurationVar(&b.idle, "conn-idle-timeout", 60*time.Second, "how long a keep-alive connection is kept between requests")
	f.IntVar(&b.maxConns, "max-conns", 1024, "the most connections open at once; past it, the one idle longest (or waiting longest for its first request) is closed to make room")
	f.Int64Var(&b.maxAPIBody, "max-request-body", 1<<20, "the largest REST request body, in bytes (then 413); /mcp takes up to 4 MiB")
	f.IntVar(&b.callsPerSession, "max-calls-per-session", gateway.DefaultCallsPerSession, "the most tool calls one MCP session may have in flight (then 429)")
	f.IntVar(&b.callsPerToken, "max-calls-per-token", gateway.DefaultCallsPerToken, "the most tool calls one token's sessions may have in flight together (then 429)")
	f.Int64Var(&b.bytesInFlight, "max-bytes-in-flight", gateway.DefaultBytesInFlight, "the most bytes of MCP request bodies read or held at once (then 503)")
}

// check refuses bounds that would turn a bound off or make the server unusable.
func (b *httpBounds) check() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--read-header-timeout", b.readHeader}, {"--read-timeout", b.read}, {"--write-timeout", b.write}, {"--conn-idle-timeout", b.idle}} {
		if d.v <= 0 {
			return fmt.Errorf("%s must be more than 0, not %s", d.name, d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"--max-conns", int64(b.maxConns)}, {"--max-request-body", b.maxAPIBody}, {"--max-calls-per-session", int64(b.callsPerSession)},
		{"--max-calls-per-token", int64(b.callsPerToken)}, {"--max-bytes-in-flight", b.bytesInFlight}} {
		if n.v <= 0 {
			return fmt.Errorf("%s must be more than 0, not %d", n.name, n.v)
		}
	}
	return nil
}

// gateway is what the gateway enforces of these bounds.
func (b *httpBounds) gateway() gateway.Bounds {
	return gateway.Bounds{CallsPerSession: b.callsPerSession, CallsPerToken: b.callsPerToken, BytesInFlight: b.bytesInFlight}
}

// serve serves h on ln within the bounds until the server is shut down. The server sets no
// blanket read or write timeout: MCP event streams stay open for as long as their session,
// and a call's response may wait minutes for a person's approval; each request gets its own
// deadlines instead (handler).
func (b *httpBounds) server(h http.Handler, logger *slog.Logger) (*http.Server, *connLimiter) {
	lim := &connLimiter{max: b.maxConns, write: b.write, conns: map[net.Conn]*connEntry{}}
	hs := &http.Server{Handler: b.handler(h), ReadHeaderTimeout: b.readHeader, IdleTimeout: b.idle,
		ConnState: lim.state, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	return hs, lim
}

// handler gives each request its deadlines, and bounds the REST API's bodies. A body must
// arrive whole within the read timeout (a request without one sets no read deadline: the
// server watches its connection for the client going away, and a deadline would end that).
// A REST response must be written within the write timeout; an /mcp response may stream for
// as long as its call or session lasts, and an agent's review wait for its card, but no single
// write of either may block longer.
func (b *httpBounds) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		now := time.Now()
		if r.ContentLength != 0 {
			// The server clears it once the body has been read to its end.
			_ = rc.SetReadDeadline(now.Add(b.read))
		}
		switch r.URL.Path {
		case "/mcp": // the gateway bounds its own bodies, and records what it refuses
			h.ServeHTTP(&writeBound{ResponseWriter: w, rc: rc, timeout: b.write}, r)
			return
		case "/api/v1/approvals/events", console.EventsPath: // event streams, open as long as their page
			if r.ContentLength == 0 {
				h.ServeHTTP(&writeBound{ResponseWriter: w, rc: rc, timeout: b.write}, r)
				return
			}
		}
		if r.URL.Path == "/api/v1/review" {
			// An agent's review may be held for a person's answer (its wait, up to
			// server.MaxReviewWait): the answer's writes are bounded, not its wait.
			w = &writeBound{ResponseWriter: w, rc: rc, timeout: b.write}
		} else {
			_ = rc.SetWriteDeadline(now.Add(b.write))
		}
		if r.ContentLength > b.maxAPIBody {
			apiFail(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("a request body to %s is at most %d bytes", r.URL.Path, b.maxAPIBody))
			return
		}
		if r.ContentLength < 0 {
			// A body of unknown length is read here, so that one too large is refused here too
			// (REST bodies are small).
			data, err := io.ReadAll(io.LimitReader(r.Body, b.maxAPIBody+1))
			var timeout net.Error
			switch {
			case errors.As(err, &timeout) && timeout.Timeout():
				apiFail(w, http.StatusRequestTimeout, "request_timeout", fmt.Sprintf("the request body did not arrive within %s", b.read))
				return
			case err != nil:
				apiFail(w, http.StatusBadRequest, "bad_request", "the request body could not be read: "+err.Error())
				return
			case int64(len(data)) > b.maxAPIBody:
				apiFail(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("a request body to %s is at most %d bytes", r.URL.Path, b.maxAPIBody))
				return
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
		}
		h.ServeHTTP(w, r)
	})
}

// apiFail answers as the REST API answers an error.
func apiFail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Connection", "close") // what is left of the body is not read
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// writeBound gives each write of a response its own deadline, so that a client that stops
// reading an event stream is cut off, while a stream that is only quiet is not.
type writeBound struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *writeBound) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	return w.ResponseWriter.Write(p)
}

func (w *writeBound) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	_ = w.rc.Flush()
}

func (w *writeBound) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// A connLimiter caps the connections open at once. At the cap, a new connection makes room by
// closing the one that has been idle longest, or has waited longest without sending a whole
// request header: a flood of idle or slow clients cannot keep out a health check or an
// agent, whose connections are the newest. Only when every connection is serving a request
// is the new one refused, with 503. It is safe for concurrent use.
type connLimiter struct {
	max   int
	write time.Duration

	mu    sync.Mutex
	conns map[net.Conn]*connEntry
}

type connEntry struct {
	busy  bool      // serving a request
	since time.Time // when it last became idle, or was accepted
}

// listener wraps ln so that every connection it accepts is admitted through l.
func (l *connLimiter) listener(ln net.Listener) net.Listener { return limitedListener{ln, l} }

type limitedListener struct {
	net.Listener
	l *connLimiter
}

func (ll limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ll.l.admit(c) {
			return c, nil
		}
		go ll.l.refuse(c)
	}
}

// admit makes room for c, or reports that there is none.
func (l *connLimiter) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) >= l.max {
		var oldest net.Conn
		var at time.Time
		for o, e := range l.conns {
			if !e.busy && (oldest == nil || e.since.Before(at)) {
				oldest, at = o, e.since
			}
		}
		if oldest == nil {
			return false
		}
		delete(l.conns, oldest)
		_ = oldest.Close() // the server sees it fail, and forgets it
	}
	l.conns[c] = &connEntry{since: time.Now()}
	return true
}

// state follows the server's view of each connection (http.Server.ConnState).
func (l *connLimiter) state(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.conns[c]
	if e == nil {
		return
	}
	switch s {
	case http.StateActive:
		e.busy = true
	case http.StateIdle:
		e.busy, e.since = false, time.Now()
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	}
}

// open is how many connections are held.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// refuse answers a connection there is no room for, and closes it.
func (l *connLimiter) refuse(c net.Conn) {
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(l.write))
	body := fmt.Sprintf(`{"error":{"code":"busy","message":"the server holds %d connections, all serving requests: try again shortly"}}`+"\n", l.max)
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}
