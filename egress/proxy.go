package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ProxyOptions configure a Proxy. The zero value of each field is its default.
type ProxyOptions struct {
	// DialTimeout bounds a check's lookup and the connection to the checked addresses
	// together. Default 10s.
	DialTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for an upstream's response headers to a forwarded
	// request. Default 60s.
	ResponseHeaderTimeout time.Duration
	// IdleTimeout closes a CONNECT tunnel with no traffic either way for this long, and an idle
	// keep-alive connection on either side. Default 5m.
	IdleTimeout time.Duration
	// ReadHeaderTimeout bounds reading a client's request headers (Serve only). Default 10s.
	ReadHeaderTimeout time.Duration
	// Tenant, if set, returns the list of hosts a person allowed for the proxy's tenant
	// (nil for none). It is called on every check, from the request's goroutine, so a host
	// added to the tenant's list widens every proxy sharing it at once: it must be safe for
	// concurrent use and fast.
	Tenant func() *Allowlist
	// CALifetime is how long the proxy's certificate authority is valid (see CA); a new one
	// is made when it has run out. Default DefaultCALifetime.
	CALifetime time.Duration
	// Now is the clock the CA's lifetime is read from. Default time.Now.
	Now func() time.Time
	// OnDecision, if set, is called with every decision the proxy makes, from the request's
	// goroutine (a tunnel's server name refused, ReasonSNIMismatch, from the goroutine relaying
	// the tunnel, after the CONNECT's own decision): it must be safe for concurrent use and
	// should not block.
	OnDecision func(Decision)
}

// A Proxy is an HTTP forward proxy and CONNECT handler that lets through only what its Checker
// allows (on ports 80 and 443, or one an entry names), and connects only to the addresses the
// check saw. A refused request gets 403 with
// the reason in the X-Warden-Egress-Reason header and the body.
//
// The target is always the request-target (absolute-form URL or CONNECT authority); the Host
// header never chooses a destination, and a forwarded request's Host is set to the checked
// host. Requests in origin-form ("GET / HTTP/1.1") are refused with 400.
//
// A CONNECT tunnel that starts with a TLS ClientHello is held until the whole ClientHello is
// in, and its server name (SNI) is checked before any of it is forwarded: in allowlist mode it
// must be the CONNECT host or a name the lists allow, and in either mode it must not be a
// never-allowed name or address. A refused one closes the tunnel (ReasonSNIMismatch). A tunnel
// that does not start like TLS is relayed unread.
//
// A Proxy serves one sandbox (one session): AllowOnce widens it alone. Make one with NewProxy;
// its methods are safe for concurrent use.
type Proxy struct {
	checker *Checker
	opts    ProxyOptions
	dialer  net.Dialer
	rp      *httputil.ReverseProxy
	tr      *http.Transport

	mu      sync.Mutex // guards the writers of extra and subs, tunnels, and ca
	extra   atomic.Pointer[Allowlist]
	subs    atomic.Pointer[subTable] // nil: no placeholder held
	tunnels map[net.Conn]struct{}
	closed  bool
	ca      *CA
}

// ErrNoResolve is returned by NewProxy for a Checker that does not resolve names: a proxy
// must know the addresses it connects to.
var ErrNoResolve = errors.New("egress: a proxy needs a checker that resolves names")

// NewProxy returns a Proxy enforcing c.
func NewProxy(c *Checker, o ProxyOptions) (*Proxy, error) {
	if c == nil {
		c = New(Options{})
	}
	if c.noResolve {
		return nil, ErrNoResolve
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.ResponseHeaderTimeout <= 0 {
		o.ResponseHeaderTimeout = 60 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 5 * time.Minute
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.CALifetime <= 0 {
		o.CALifetime = DefaultCALifetime
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Proxy{checker: c, opts: o, tunnels: map[net.Conn]struct{}{}}
	p.dialer = net.Dialer{Timeout: o.DialTimeout, Control: p.refuseAtConnect}
	p.tr = &http.Transport{
		Proxy:                 nil, // never chain to the host's own proxy settings
		DialContext:           p.DialContext,
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
		IdleConnTimeout:       o.IdleTimeout,
		TLSHandshakeTimeout:   o.DialTimeout,
		MaxIdleConnsPerHost:   16,
		DisableCompression:    true, // pass bodies through as the upstream sent them
		// Where the proxy terminates TLS (placeholders), the real host's certificate is
		// verified as any client would.
		TLSClientConfig: &tls.Config{RootCAs: c.roots, MinVersion: tls.VersionTLS12},
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        func(*httputil.ProxyRequest) {}, // ServeHTTP sets the outbound URL and Host
		Transport:      p.tr,
		ModifyResponse: hide, // placeholders back in place of values a host echoes
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if ref, ok := r.Context().Value(refusalKey{}).(*refusal); ok && ref.get() != nil {
				p.refusePlaceholder(w, r.URL.Host, ref.get()) // a streamed body's placeholder
				return
			}
			if re, ok := errors.AsType[*RefusedError](err); ok {
				refuse(w, r.URL.Host, re.Decision) // DialContext reported it
				return
			}
			answer(w, http.StatusBadGateway, "", fmt.Sprintf("warden egress: %s: the upstream failed: %v\n", r.URL.Host, err))
		},
	}
	return p, nil
}

// refuseAtConnect runs just before every connect(2): whatever path led here, a socket is never
// connected to a never-allowed address or to one of this host's own addresses as last read.
func (p *Proxy) refuseAtConnect(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress: refusing to dial %q: not an address", address)
	}
	a := canonicalAddr(ap.Addr())
	if r, ok := Classify(a); ok && r.NeverAllowed {
		return fmt.Errorf("egress: refusing to dial %s: %s", ap, r.Name)
	}
	// The addresses as the check just read them: asking the kernel again would cost a system
	// call per connection, and a change since is caught after connect(2) (selfConnected).
	own, err := p.checker.own.known()
	if err != nil || isOwn(own, a) {
		return &RefusedError{Decision: deny(Decision{Host: a.String(), Port: ap.Port()}, ReasonHostAddress,
			"%s is one of this host's own addresses (or they cannot be read), which are never allowed", a)}
	}
	return nil
}

// selfConnected reports whether c connects this host to itself: the kernel picks the
// destination itself as the source of a connection to a local address (or a local route's
// preferred source), so this holds for every address the kernel delivers locally, including
// routes of type local that are no interface's address, which the address check cannot know.
func selfConnected(c net.Conn) (netip.Addr, bool) {
	l, lok := c.LocalAddr().(*net.TCPAddr)
	r, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return netip.Addr{}, false
	}
	la, ra := canonicalAddr(l.AddrPort().Addr()), canonicalAddr(r.AddrPort().Addr())
	return ra, la == ra
}

// Checker returns the proxy's checker.
func (p *Proxy) Checker() *Checker { return p.checker }

// AllowOnce widens this proxy's allowlist in place with one entry (host, *.domain, IP or
// CIDR, with an optional :port, under the rules of the allowlist), for the rest of its life. Requests already refused
// are not replayed. A never-allowed, malformed or too broad entry is an error and changes
// nothing.
func (p *Proxy) AllowOnce(entry string) error {
	if strings.TrimSpace(entry) == "" {
		return fmt.Errorf("allow %q: %w: empty entry", entry, ErrMalformed)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	next, err := p.extra.Load().With(entry)
	if err != nil {
		var list ListError
		if errors.As(err, &list) && len(list) == 1 {
			return fmt.Errorf("allow %q: %w", entry, list[0].Err)
		}
		return err
	}
	p.extra.Store(next)
	return nil
}

// AllowedOnce returns the entries added with AllowOnce, in order.
func (p *Proxy) AllowedOnce() []string { return p.extra.Load().Entries() }

func (p *Proxy) extras() extras {
	e := extras{once: p.extra.Load()}
	if p.opts.Tenant != nil {
		e.tenant = p.opts.Tenant()
	}
	return e
}

// Check judges a target with the proxy's checker, its tenant's list and the entries added
// with AllowOnce.
func (p *Proxy) Check(ctx context.Context, target string) Decision {
	return p.checker.check(ctx, target, p.extras())
}

func (p *Proxy) checkHost(ctx context.Context, h Host, port uint16) Decision {
	d := p.checker.checkHost(ctx, h, port, p.extras())
	if p.opts.OnDecision != nil {
		p.opts.OnDecision(d)
	}
	return d
}

// checkedKey carries a request's decision to DialContext, so the transport dials the
// addresses the decision checked rather than looking the name up again.
type checkedKey struct{}

// DialContext connects to addr ("host:port") if the proxy allows it: it checks the host,
// resolving a name once, and connects only to the checked addresses, in order. It suits
// http.Transport.DialContext, for a client (such as net_fetch's) that must obey the same rules
// without going through the proxy's listener.
func (p *Proxy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("egress: %s is not allowed, only tcp", network)
	}
	host, port, err := splitHostPort(addr)
	if err != nil || port == "" {
		return nil, fmt.Errorf("egress: dial %q: want host:port", addr)
	}
	h, err := ParseHost(host)
	if err != nil {
		return nil, err
	}
	pn, err := parsePort(port)
	if err != nil {
		return nil, err
	}
	d, ok := ctx.Value(checkedKey{}).(*Decision)
	if !ok || d.Host != h.String() || d.Port != pn || !d.Allow {
		dctx, cancel := context.WithTimeout(ctx, p.opts.DialTimeout)
		defer cancel()
		dd := p.checkHost(dctx, h, pn)
		d = &dd
	}
	if !d.Allow {
		return nil, &RefusedError{Decision: *d}
	}
	c, err := p.dialChecked(ctx, *d)
	if re, ok := errors.AsType[*RefusedError](err); ok {
		p.report(re.Decision)
	}
	return c, err
}

// A RefusedError is a dial the check refused.
type RefusedError struct {
	// Decision is the refusal.
	Decision Decision
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("egress: %s refused (%s): %s", e.Decision.Host, e.Decision.Reason, e.Decision.Detail)
}

// dialChecked connects to the first of d.Addrs that answers. A connection refused at the last
// moment (the address became one of this host's own after the check, or the connection
// turned out to reach this host) ends the dial with a *RefusedError.
func (p *Proxy) dialChecked(ctx context.Context, d Decision) (net.Conn, error) {
	if len(d.Addrs) == 0 || d.Port == 0 {
		return nil, fmt.Errorf("egress: %s: no checked address and port to dial", d.Host)
	}
	var errs []error
	for _, a := range d.Addrs {
		c, err := p.dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, d.Port).String())
		if err == nil {
			if self, ok := selfConnected(c); ok {
				// The handshake is done, but not a byte is sent.
				c.Close()
				return nil, &RefusedError{Decision: deny(d, ReasonHostAddress,
					"%s reaches this host itself (the kernel delivers %s locally), which is never allowed", d.Host, self)}
			}
			return c, nil
		}
		if _, ok := errors.AsType[*RefusedError](err); ok {
			return nil, err
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// ServeHTTP handles one proxy request: CONNECT, or a request in absolute form.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.serveConnect(w, r)
		return
	}
	p.forward(w, r)
}

// forward handles a request in absolute form: checked, rewritten (placeholders) and sent on.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	if !r.URL.IsAbs() || r.URL.Host == "" {
		answer(w, http.StatusBadRequest, "",
			"warden egress: this is a proxy: send CONNECT host:port or an absolute URL (GET http://host/path); the Host header never chooses a destination\n")
		return
	}
	if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
		answer(w, http.StatusBadRequest, "", fmt.Sprintf("warden egress: the scheme %q is not proxied (http and https only)\n", r.URL.Scheme))
		return
	}
	t, err := targetFromURL(r.URL)
	if err != nil {
		d := Decision{Host: r.URL.Host, Reason: ReasonInvalidTarget, Detail: err.Error()}
		p.report(d)
		refuse(w, r.URL.Host, d)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.opts.DialTimeout)
	d := p.checkHost(ctx, t.Host, t.Port)
	cancel()
	if !d.Allow {
		refuse(w, t.String(), d)
		return
	}
	out := r.Clone(context.WithValue(r.Context(), checkedKey{}, &d))
	// The upstream sees the host that was checked, in its canonical form, and nothing the
	// client put in a Host header.
	if t.Port == defaultPorts[t.Scheme] {
		out.URL.Host = t.Host.hostPort(0)
	} else {
		out.URL.Host = t.Host.hostPort(t.Port)
	}
	out.Host = out.URL.Host
	ref := &refusal{}
	if err := p.rewrite(out, t.Host, t.Port, ref); err != nil {
		p.refusePlaceholder(w, t.String(), err)
		return
	}
	rctx := context.WithValue(out.Context(), refusalKey{}, ref)
	if hd := p.subs.Load().hiderFor(t.Host, t.Port); hd != nil {
		// The response is read for the values sent here, so it must come unencoded.
		out.Header.Del("Accept-Encoding")
		rctx = context.WithValue(rctx, hideKey{}, hd)
	}
	p.rp.ServeHTTP(w, out.WithContext(rctx))
}

// refusalKey carries a request's refusal to the reverse proxy's ErrorHandler.
type refusalKey struct{}

// refusePlaceholder answers 403 for a request refused for a placeholder, and reports it.
func (p *Proxy) refusePlaceholder(w http.ResponseWriter, target string, err error) {
	host, port := target, uint16(0)
	if t, perr := ParseTarget(target); perr == nil {
		host, port = t.Host.String(), t.Port
	}
	d := Decision{Host: host, Port: port, Reason: ReasonPlaceholder, Detail: err.Error()}
	if !errors.Is(err, ErrPlaceholder) {
		answer(w, http.StatusBadRequest, "", fmt.Sprintf("warden egress: %s: %v\n", target, err))
		return
	}
	p.report(d)
	refuse(w, target, d)
}

func (p *Proxy) report(d Decision) {
	if p.opts.OnDecision != nil {
		p.opts.OnDecision(d)
	}
}

func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	// Only the authority-form request-target counts: for "CONNECT /x" net/http takes r.Host
	// from the Host header, which never chooses a destination here.
	authority := r.URL.Host
	if authority == "" || r.URL.Path != "" {
		answer(w, http.StatusBadRequest, "", "warden egress: CONNECT takes host:port as its target\n")
		return
	}
	_, port, err := splitHostPort(authority)
	if err == nil && port == "" {
		err = fmt.Errorf("%w: CONNECT %s: a port is required", ErrInvalidHost, authority)
	}
	var t Target
	if err == nil {
		t, err = ParseTarget(authority)
	}
	if err != nil {
		d := Decision{Host: authority, Reason: ReasonInvalidTarget, Detail: err.Error()}
		p.report(d)
		refuse(w, authority, d)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.opts.DialTimeout)
	defer cancel()
	d := p.checkHost(ctx, t.Host, t.Port)
	if !d.Allow {
		refuse(w, t.String(), d)
		return
	}
	if p.subs.Load() != nil {
		// While placeholders are held every tunnel is opened and read, so that one carrying a
		// placeholder where its value may not go is refused, not relayed unread.
		cancel()
		p.intercept(w, t)
		return
	}
	upstream, err := p.dialChecked(ctx, d)
	if re, ok := errors.AsType[*RefusedError](err); ok {
		p.report(re.Decision)
		refuse(w, t.String(), re.Decision)
		return
	}
	if err != nil {
		answer(w, http.StatusBadGateway, "", fmt.Sprintf("warden egress: CONNECT %s: allowed, but the connection failed: %v\n", t, err))
		return
	}
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		upstream.Close()
		answer(w, http.StatusInternalServerError, "", "warden egress: CONNECT needs HTTP/1.1\n")
		return
	}
	// Bytes the client sent after the request (an eager TLS hello) are in brw's buffer: they
	// are the start of the tunnel, and are screened with what follows.
	var early []byte
	if n := brw.Reader.Buffered(); n > 0 {
		peeked, _ := brw.Reader.Peek(n)
		early = bytes.Clone(peeked)
	}
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	if !p.track(client, upstream) {
		client.Close()
		upstream.Close()
		return
	}
	p.pipe(client, upstream, early, t)
	p.untrack(client, upstream)
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.tunnels, c)
	}
}

// pipe copies both ways, the client's early bytes first, until both sides are done or the
// tunnel has been idle for IdleTimeout, then closes both. The client's first bytes are
// screened (screenHello) before any of them reach the upstream, which may speak first
// meanwhile: its direction is never held back, so a protocol whose server speaks first works
// as it did, and waiting gets the client past no check.
func (p *Proxy) pipe(client, upstream net.Conn, early []byte, t Target) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan struct{}, 2)
	screen := func(first []byte) ([]byte, bool) { return p.screenHello(client, first, t, &last) }
	go p.copyIdle(upstream, client, &last, done, early, screen)
	go p.copyIdle(client, upstream, &last, done, nil, nil)
	<-done
	<-done
	client.Close()
	upstream.Close()
}

// copyIdle copies pending, then src, to dst. screen, if set, is given the first bytes (at
// least one, with spare capacity behind them) and returns what to forward in their place, or
// false to close both sides without forwarding anything.
func (p *Proxy) copyIdle(dst, src net.Conn, last *atomic.Int64, done chan<- struct{}, pending []byte, screen func([]byte) ([]byte, bool)) {
	defer func() { done <- struct{}{} }()
	buf := make([]byte, 32<<10)
	for {
		var n int
		var err error
		if len(pending) > 0 {
			n = copy(buf, pending)
			pending = pending[n:]
		} else {
			_ = src.SetReadDeadline(time.Now().Add(p.opts.IdleTimeout))
			n, err = src.Read(buf)
		}
		if n > 0 {
			last.Store(time.Now().UnixNano())
			out := buf[:n]
			if screen != nil {
				if len(pending) > 0 {
					// The screen reads on from src itself, so it must see every early byte.
					out = append(out, pending...)
					pending = nil
				}
				var ok bool
				if out, ok = screen(out); !ok {
					src.Close()
					dst.Close()
					return
				}
				screen = nil
			}
			_ = dst.SetWriteDeadline(time.Now().Add(p.opts.IdleTimeout))
			if _, werr := dst.Write(out); werr != nil {
				src.Close()
				dst.Close()
				return
			}
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && time.Since(time.Unix(0, last.Load())) < p.opts.IdleTimeout {
				continue // the other direction is busy
			}
			if err == io.EOF {
				// Half-close: pass the end of one direction on, keep the other open.
				if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
					return
				}
			}
			if errors.Is(err, syscall.ECONNRESET) {
				// A reset is passed on as a reset, which also leaves no TIME_WAIT behind.
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
			}
			src.Close()
			dst.Close()
			return
		}
	}
}

// Serve accepts proxy connections on ln until ctx ends or Close is called, then closes the
// listener, the open tunnels and the idle upstream connections.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: p.opts.ReadHeaderTimeout,
		IdleTimeout:       p.opts.IdleTimeout,
	}
	stop := context.AfterFunc(ctx, func() {
		srv.Close()
		p.Close()
	})
	defer stop()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close ends every open CONNECT tunnel and drops idle upstream connections; the proxy refuses
// new tunnels afterwards. It does not close listeners given to Serve (cancel Serve's context).
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	p.tr.CloseIdleConnections()
	return nil
}

// refuse answers 403 for a refused target.
func refuse(w http.ResponseWriter, target string, d Decision) {
	answer(w, http.StatusForbidden, d.Reason,
		fmt.Sprintf("warden egress: %s refused (%s): %s\n", target, d.Reason, d.Detail))
}

func answer(w http.ResponseWriter, status int, reason Reason, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if reason != "" {
		h.Set("X-Warden-Egress-Reason", string(reason))
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
