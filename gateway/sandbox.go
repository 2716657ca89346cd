package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/sandbox"
	"github.com/wardenhq/warden/verdict"
)

// fetchTimeout bounds a net_fetch when Options.Native.Fetch does not say otherwise.
const fetchTimeout = 30 * time.Second

// sessionNet is a session's way out to the network: its own egress proxy, which the sandboxed
// commands of shell_exec reach through their HTTP(S)_PROXY and net_fetch dials through. It is
// started at its first use and closed when the session ends. AllowOnce on its proxy widens this
// session alone; the tenant's list (hosts a person allowed for the tenant) is shared.
type sessionNet struct {
	once   sync.Once
	proxy  *egress.Proxy
	ln     *sandbox.Listener
	cancel context.CancelFunc
	err    error
}

// net returns the session's egress proxy, starting it the first time.
func (s *session) net() (*egress.Proxy, *sandbox.Listener, error) {
	n := &s.egress
	n.once.Do(func() {
		tenant := s.gs.Load().Review.Surface.Tenant().ID
		n.proxy, n.err = egress.NewProxy(s.g.checker, egress.ProxyOptions{
			Tenant:     s.g.allowed.list(tenant),
			OnDecision: s.onEgress,
		})
		if n.err != nil {
			return
		}
		var ctx context.Context
		ctx, n.cancel = context.WithCancel(context.Background())
		n.ln = sandbox.NewListener()
		go n.proxy.Serve(ctx, n.ln)
	})
	return n.proxy, n.ln, n.err
}

// closeNet stops the session's egress proxy, if it was started: every tunnel it holds open
// is closed.
func (s *session) closeNet() {
	n := &s.egress
	n.once.Do(func() { n.err = errSessionEnded }) // never started: it never will be
	if n.proxy != nil {
		n.cancel()
		n.ln.Close()
		n.proxy.Close()
	}
}

// onEgress records what the session's proxy refused, once per host, port and reason (and
// refused TLS server name; a command that retries in a loop is one event), in the audit trail and the log; what it
// allowed is routine.
func (s *session) onEgress(d egress.Decision) {
	if d.Allow {
		return
	}
	key := fmt.Sprintf("%s|%d|%s", d.Host, d.Port, d.Reason)
	if d.Reason == egress.ReasonSNIMismatch || d.Reason == egress.ReasonPlaceholder {
		key += "|" + d.Detail // each server name, or binding, refused on one host is its own event
	}
	if !s.egressSeen.first(key) {
		return
	}
	s.g.logger.Info("egress refused", "session", s.id, "host", d.Host, "port", d.Port, "reason", d.Reason, "detail", d.Detail)
	gs := s.gs.Load()
	sf := gs.Review.Surface
	e := &audit.Event{Time: s.g.o.Gate.Now(), Kind: audit.KindEgress, Tenant: sf.Tenant().ID, Session: s.id,
		Principal: gs.Principal, Role: sf.Role().ID, Decision: verdict.Deny.String(),
		Blockers:       []audit.Blocker{{Code: string(d.Reason), Detail: d.Detail}},
		PolicyRevision: sf.Policy().Revision}
	if pr := sf.Profile(); pr != nil {
		e.Profile = pr.ID
	}
	if gs.Run != nil {
		e.Run = gs.Run.ID
	}
	if err := s.g.o.Store.Append(context.Background(), e); err != nil {
		s.egressSeen.forget(key)
		s.g.logger.Error("a refused connection could not be recorded", "session", s.id, "host", d.Host, "err", err)
	}
}

// connectorEgressRefused records a connection a sandboxed connector's process was refused, once
// per connector, host, port and reason (and refused TLS server name, or binding). A connector's process
// serves every tenant that resolves to its credential, so the event names the connector (as
// its principal, "connector:<id>") and no tenant.
func (g *Gateway) connectorEgressRefused(connector string, d egress.Decision) {
	key := fmt.Sprintf("%s|%s|%d|%s", connector, d.Host, d.Port, d.Reason)
	if d.Reason == egress.ReasonSNIMismatch || d.Reason == egress.ReasonPlaceholder {
		key += "|" + d.Detail
	}
	if !g.egressSeen.first(key) {
		return
	}
	e := &audit.Event{Time: g.o.Gate.Now(), Kind: audit.KindEgress, Principal: "connector:" + connector,
		Decision: verdict.Deny.String(), Blockers: []audit.Blocker{{Code: string(d.Reason), Detail: d.Detail}},
		PolicyRevision: g.snapshot.Load().p.Revision}
	if err := g.o.Store.Append(context.Background(), e); err != nil {
		g.egressSeen.forget(key)
		g.logger.Error("a refused connection could not be recorded", "connector", connector, "host", d.Host, "err", err)
	}
}

// proxyConn hands a connection a sandboxed command made to its proxy to the session's egress
// proxy (native.Sandbox.Proxy).
func (s *session) proxyConn(c net.Conn) {
	_, ln, err := s.net()
	if err != nil {
		c.Close()
		return
	}
	ln.Handle(c)
}

// dial connects net_fetch through the session's egress proxy's checks.
func (s *session) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	p, _, err := s.net()
	if err != nil {
		return nil, err
	}
	return p.DialContext(ctx, network, addr)
}

// nativeOptions are the options of a session's executor: the gateway's, with the session's
// workspace, the session's proxy as the sandbox's way out and net_fetch's dialer, and the
// other tenants' workspaces hidden.
func (s *session) nativeOptions() native.Options {
	o := s.g.o.Native
	o.Workspace = s.workspace
	o.Sandbox.Proxy = s.proxyConn
	o.Sandbox.CABundle = s.caBundle
	o.Sandbox.Hidden = append(append([]string(nil), o.Sandbox.Hidden...), s.g.otherWorkspaces(s.workspace)...)
	o.Sandbox.Boundaries = s.sandboxRules
	timeout := fetchTimeout
	if o.Fetch != nil && o.Fetch.Timeout > 0 {
		timeout = o.Fetch.Timeout
	}
	// Whatever client was given, its connections go through the egress checks: net_fetch runs
	// in Warden's own process, which can reach what a sandboxed command cannot.
	o.Fetch = &http.Client{Timeout: timeout, Transport: &http.Transport{
		Proxy:                 nil,
		DialContext:           s.dial,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
	}}
	return o
}

// otherWorkspaces are the workspaces under Options.Workspaces other than ws (and the one ws
// lies in, for a subagent's root): a sandboxed command may not read them, even where the
// workspaces lie under a directory the sandbox lets it read.
func (g *Gateway) otherWorkspaces(ws string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(dir string) {
		if seen[dir] {
			return
		}
		seen[dir] = true
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			dir = r
		}
		if dir == ws || within(ws, dir) {
			return // the session's own (a subagent works inside its parent's)
		}
		out = append(out, dir)
	}
	for t := range g.snapshot.Load().p.Tenants() {
		add(filepath.Join(g.o.Workspaces, t.ID))
	}
	if entries, err := os.ReadDir(g.o.Workspaces); err == nil {
		for _, e := range entries {
			add(filepath.Join(g.o.Workspaces, e.Name()))
		}
	}
	return out
}

// within reports whether p lies inside dir.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !filepath.IsAbs(rel) && (len(rel) < 3 || rel[:3] != "../")
}
