package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/instance"
)

// Sessions any instance serves (Options.Sessions).
//
// A session opened here is recorded in the store before its client learns its id: who opened
// it, on what route, and the client's initialize params as it sent them. A request naming a
// session this instance does not hold is served all the same: the session is built again from
// its record (its surface and tools under the policy in force, its run by id), and the
// client's initialize is replayed to the SDK on a session of that id, so the SDK holds it as
// the instance that opened it did (the negotiated version, the client's capabilities). Its
// protected values are not stored: a handle issued on another instance is refused here,
// named, as an unknown one is.
//
// A session has one life in the store and a copy on every instance that served it. Ending it
// (DELETE, a revoked token, idle everywhere) ends the record and its run; a copy that goes
// unused here, or an instance shutting down, drops only its copy. Instances write when a copy
// was last used at most once per touch interval, and each expires the sessions no instance
// has used for the idle timeout (ExpireSessions: one instance ends each).

// touchEvery is how often the sessions used here are marked used in the store.
const touchEvery = time.Minute

// liveEvery is how often a request of a session held here has the store asked whether the
// session still lives (ended on another instance: DELETE there).
const liveEvery = 5 * time.Second

// errUnknownSession is a session id the store does not hold live for the token.
var errUnknownSession = errors.New("session not found: it has ended, or never existed")

// shared reports whether sessions are kept in the store.
func (g *Gateway) shared() bool { return g.o.Sessions != nil }

// recordOpened writes a session opened here to the store, before its client learns its id.
func (g *Gateway) recordOpened(ctx context.Context, s *session, id string, init json.RawMessage) error {
	now := g.o.Gate.Now()
	rec := &instance.Session{ID: id, Warden: s.id, Token: s.token.ID, Tenant: s.token.Tenant, Principal: principal(s.token),
		Model: s.route.model, Harness: s.route.harness, Protocol: protocolOf(init), Init: init, Instance: g.o.Instance,
		Opened: now, Seen: now}
	if gs := s.gs.Load(); gs != nil {
		if gs.Run != nil {
			rec.Run, rec.Profile = gs.Run.ID, gs.Run.Profile
		}
	}
	return g.o.Sessions.OpenSession(context.WithoutCancel(ctx), rec)
}

// protocolOf is the protocol version an initialize's params ask for.
func protocolOf(init json.RawMessage) string {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(init, &p)
	return p.ProtocolVersion
}

// initParams are the params of the initialize among msgs (nil: none).
func initParams(msgs []*jsonrpc.Request) json.RawMessage {
	for _, m := range msgs {
		if m.Method == "initialize" {
			return m.Params
		}
	}
	return nil
}

// An adoption is a session being built again here from its record, which requests naming it
// wait for rather than building it twice.
type adoption struct {
	done chan struct{}
	s    *session
	err  error
}

// adopt serves here a session another instance opened (or this one, before a restart): it
// returns the session built again from its record, or errUnknownSession when the store holds
// no live session of that id for tok (another token's is as unknown as one that never was).
func (g *Gateway) adopt(ctx context.Context, id string, tok *auth.Token) (*session, error) {
	g.mu.Lock()
	if a := g.adopting[id]; a != nil {
		g.mu.Unlock()
		select {
		case <-a.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if a.err != nil {
			return nil, a.err
		}
		if a.s.token.ID != tok.ID {
			return nil, errUnknownSession
		}
		return a.s, nil
	}
	a := &adoption{done: make(chan struct{})}
	g.adopting[id] = a
	g.mu.Unlock()
	a.s, a.err = g.rebuild(ctx, id, tok)
	g.mu.Lock()
	delete(g.adopting, id)
	g.mu.Unlock()
	close(a.done)
	return a.s, a.err
}

func (g *Gateway) rebuild(ctx context.Context, id string, tok *auth.Token) (*session, error) {
	rec, err := g.o.Sessions.Session(ctx, id)
	if errors.Is(err, instance.ErrNoSession) {
		return nil, errUnknownSession
	}
	if err != nil {
		return nil, fmt.Errorf("the session cannot be read from the store: %w", err)
	}
	if !rec.Ended.IsZero() || rec.Token != tok.ID {
		return nil, errUnknownSession
	}
	rt, err := routeOf(tok, metaOf(rec.Init))
	if err != nil {
		return nil, refusedError{err}
	}
	s, err := g.openAs(ctx, tok, rt, rec)
	if err != nil {
		return nil, refusedError{err}
	}
	// The client's initialize, replayed to the SDK on a session of the same id (the session's
	// server names it: GetSessionID), and its notifications/initialized if it sent it.
	sctx := context.WithValue(context.WithValue(context.WithoutCancel(ctx), tokenKey, tok), sessionKey, s)
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"warden-resume","method":"initialize","params":%s}`, rec.Init)
	if err := g.replay(sctx, "", body, rec.ID); err != nil {
		s.drop(ctx, err)
		return nil, fmt.Errorf("the session cannot be resumed here: %w", err)
	}
	s.mcpID.Store(&id)
	g.mu.Lock()
	g.byMCP[id] = s
	g.mu.Unlock()
	if rec.Initialized {
		if err := g.replay(sctx, id, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), id); err != nil {
			s.drop(ctx, err)
			return nil, fmt.Errorf("the session cannot be resumed here: %w", err)
		}
	}
	g.logger.Info("session resumed", "session", s.id, "mcpSession", id, "openedBy", rec.Instance, "tenant", rec.Tenant)
	return s, nil
}

// replay sends the SDK a request of the session's client, as if it had come over HTTP, and
// wants it accepted (and, for an initialize, the session to get the id want).
func (g *Gateway) replay(ctx context.Context, id string, body []byte, want string) error {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
	if err != nil {
		return err
	}
	// Its own host, so that the SDK's guard against DNS rebinding (a request on a loopback
	// address naming another host) lets it through: it never came over the network.
	r.Host = "localhost"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		r.Header.Set("Mcp-Session-Id", id)
	}
	w := &replayWriter{header: http.Header{}}
	g.sdk.ServeHTTP(w, r)
	if w.status >= 300 {
		return fmt.Errorf("the replayed request was refused (%d): %s", w.status, strings.TrimSpace(w.body.String()))
	}
	if id == "" && w.header.Get("Mcp-Session-Id") != want {
		return fmt.Errorf("the replayed initialize made session %q, not %q", w.header.Get("Mcp-Session-Id"), want)
	}
	if msg, failed := rpcError(w.body.Bytes()); failed {
		return fmt.Errorf("the replayed request failed: %s", msg)
	}
	return nil
}

// rpcError finds a JSON-RPC error in the SDK's answer to a replayed request: one JSON
// document, or the data lines of an event stream.
func rpcError(body []byte) (string, bool) {
	docs := [][]byte{body}
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		docs = nil
		for line := range bytes.Lines(body) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				docs = append(docs, d)
			}
		}
	}
	for _, d := range docs {
		var resp struct {
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(d, &resp) == nil && resp.Error != nil {
			return resp.Error.Message, true
		}
	}
	return "", false
}

// replayWriter keeps the SDK's answer to a replayed request.
type replayWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *replayWriter) Header() http.Header { return w.header }
func (w *replayWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *replayWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}
func (w *replayWriter) Flush() {}

// endStored ends the session's record; it reports whether this call ended it (and so whose
// run it is to end).
func (g *Gateway) endStored(ctx context.Context, s *session, why error) bool {
	id := s.mcpID.Load()
	if id == nil {
		return true // never recorded: its run is this copy's to end
	}
	ended, err := g.o.Sessions.EndSession(context.WithoutCancel(ctx), *id, g.o.Gate.Now(), why.Error())
	if err != nil {
		g.logger.Error("a session's end could not be recorded; it expires when idle", "session", s.id, "err", err)
		return false
	}
	return ended
}

// keepShared runs, every touch interval until Close, the upkeep of shared sessions: the
// sessions used here are marked used, copies of sessions ended elsewhere are dropped, and
// sessions no instance used for the idle timeout are ended.
func (g *Gateway) keepShared(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.SweepSessions(ctx)
		}
	}
}

// SweepSessions does once what the gateway does every minute when sessions are kept in the
// store (Options.Sessions): it marks the sessions used here since the last sweep as used, drops
// its copies of sessions that ended elsewhere, and ends the sessions that no instance has used
// for the idle timeout, with their runs. Tests call it instead of waiting.
func (g *Gateway) SweepSessions(ctx context.Context) {
	if !g.shared() {
		return
	}
	now := g.o.Gate.Now()
	for _, s := range g.live() {
		id := s.mcpID.Load()
		if id == nil || !(s.active.Swap(false) || s.busy()) {
			continue
		}
		live, err := g.o.Sessions.TouchSession(ctx, *id, now, false)
		if err != nil {
			g.logger.Warn("a session's use could not be recorded", "session", s.id, "err", err)
			continue
		}
		if !live {
			s.drop(ctx, errSessionEnded)
			if ss := s.ss.Load(); ss != nil {
				_ = ss.Close()
			}
		}
	}
	if g.o.IdleTimeout <= 0 {
		return
	}
	for {
		expired, err := g.o.Sessions.ExpireSessions(ctx, now.Add(-g.o.IdleTimeout), time.Time{}, now, "idle", 100)
		if err != nil {
			g.logger.Error("idle sessions could not be expired", "err", err)
			return
		}
		for _, rec := range expired {
			g.expired(ctx, rec)
		}
		if len(expired) < 100 {
			return
		}
	}
}

// expired ends what is left of a session the store expired: this instance's copy, and its run.
func (g *Gateway) expired(ctx context.Context, rec *instance.Session) {
	if s := g.sessionByMCP(rec.ID); s != nil {
		s.drop(ctx, errIdle)
		if ss := s.ss.Load(); ss != nil {
			_ = ss.Close()
		}
	}
	if rec.Run != "" {
		r := &budget.Run{ID: rec.Run, Tenant: rec.Tenant, Profile: rec.Profile}
		if err := g.o.Gate.EndRunOf(ctx, r, rec.Warden, rec.Principal); err != nil && !errors.Is(err, budget.ErrRunEnded) {
			g.logger.Error("the run of an expired session could not be ended", "session", rec.Warden, "run", rec.Run, "err", err)
		}
	}
	g.logger.Info("session expired", "session", rec.Warden, "mcpSession", rec.ID, "idleSince", rec.Seen)
}

// errIdle ends a session nobody used for the idle timeout.
var errIdle = errors.New("the session was idle for too long")

// storedChild is the token of a subagent whose parent session another instance spawned it
// from (or this one, before a restart), while that session lives: the parent is built again
// here, and the subagent's sessions derive their surface from it as on the instance that
// spawned it.
func (g *Gateway) storedChild(ctx context.Context, hash string) (*auth.Token, error) {
	rec, err := g.o.Sessions.Child(ctx, hash)
	if errors.Is(err, instance.ErrNoSession) {
		return nil, errTokenInvalid
	}
	if err != nil {
		return nil, fmt.Errorf("the token cannot be checked: %w", err)
	}
	parent := g.sessionByMCP(rec.Parent)
	if parent == nil {
		prec, err := g.o.Sessions.Session(ctx, rec.Parent)
		if err != nil {
			return nil, fmt.Errorf("the token cannot be checked: the subagent's parent session: %w", err)
		}
		ptok, err := g.tokenByID(ctx, prec.Token)
		if err != nil {
			return nil, err
		}
		if parent, err = g.adopt(ctx, rec.Parent, ptok); err != nil {
			if errors.Is(err, errUnknownSession) {
				return nil, errTokenInvalid
			}
			return nil, fmt.Errorf("the token cannot be checked: the subagent's parent session: %w", err)
		}
	}
	tok := &auth.Token{ID: rec.Token, Hash: hash, Role: auth.RoleAgent, Tenant: rec.Tenant, SessionRole: rec.Role,
		Profile: rec.Profile, Name: rec.Name, Created: rec.Created}
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.children[hash]; ok {
		return c.token, nil // built meanwhile by another request
	}
	c := &child{token: tok, hash: hash, parent: parent, profile: rec.Spawned, root: rec.Root}
	parent.mu.Lock()
	ended := parent.ended
	if !ended {
		parent.kids = append(parent.kids, c)
	}
	parent.mu.Unlock()
	if ended {
		return nil, errTokenInvalid
	}
	g.children[hash] = c
	return tok, nil
}

// tokenByID is a good agent token of the store by its id (a parent session's, to build that
// session again here).
func (g *Gateway) tokenByID(ctx context.Context, id string) (*auth.Token, error) {
	if f, ok := g.o.Store.(interface {
		TokenByID(ctx context.Context, id string) (*auth.Token, error)
	}); ok {
		t, err := f.TokenByID(ctx, id)
		switch {
		case errors.Is(err, auth.ErrNotFound):
			return nil, errTokenInvalid
		case err != nil:
			return nil, fmt.Errorf("the token cannot be checked: %w", err)
		case t.Role != auth.RoleAgent:
			return nil, errTokenInvalid
		}
		return t, nil
	}
	list, err := g.o.Store.Tokens(ctx)
	if err != nil {
		return nil, fmt.Errorf("the token cannot be checked: %w", err)
	}
	for _, t := range list {
		if t.ID == id && t.Role == auth.RoleAgent && t.Revoked.IsZero() && !t.Expired(g.o.Gate.Now()) {
			return t, nil
		}
	}
	// A subagent's own subagent, whose parent's token is not a stored one, is served only by
	// the instance that holds its parent.
	return nil, errTokenInvalid
}

// catchUp tells this instance's copy of a session that its client is initialized when it
// said so to another instance (the copy was built before it did), so that the copy serves
// as the others do.
func (g *Gateway) catchUp(ctx context.Context, s *session, id string) {
	rec, err := g.o.Sessions.Session(ctx, id)
	if err != nil || !rec.Initialized {
		return
	}
	sctx := context.WithValue(context.WithValue(context.WithoutCancel(ctx), tokenKey, s.token), sessionKey, s)
	if err := g.replay(sctx, id, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), id); err != nil {
		g.logger.Warn("a session's initialized could not be replayed here", "session", s.id, "err", err)
	}
}

// isInitialized reports whether a message is the client's notifications/initialized.
func isInitialized(m *jsonrpc.Request) bool { return m.Method == "notifications/initialized" }

// stopped tells the other instances that the gate stopped the session here (its run's
// limits), so that their copies refuse its calls too.
func (s *session) stopped(why string) {
	if rl, id := s.g.relay, s.mcpID.Load(); rl != nil && id != nil {
		if err := rl.Relay(context.Background(), instance.Relayed{Session: *id, Kind: "stop", Data: []byte(why)}); err != nil {
			s.g.logger.Warn("a session's stop could not be relayed to the other instances", "session", s.id, "err", err)
		}
	}
}

// relay sends a message of the session's client to the other instances, for the one holding
// its event stream (when this one holds none): it reports whether it was sent.
func (s *session) relay(ctx context.Context, kind string, params any) bool {
	rl := s.g.relay
	id := s.mcpID.Load()
	if rl == nil || id == nil || s.streams.Load() > 0 {
		return false
	}
	data, err := json.Marshal(params)
	if err != nil {
		return false
	}
	if err := rl.Relay(ctx, instance.Relayed{Session: *id, Kind: kind, Data: data}); err != nil {
		s.g.logger.Warn("a session's message could not be relayed to the other instances", "session", s.id, "kind", kind, "err", err)
		return false
	}
	return true
}

// deliverRelayed hands the messages the other instances relay to the sessions whose event
// streams are open here, until ctx ends.
func (g *Gateway) deliverRelayed(ctx context.Context, ch <-chan instance.Relayed) {
	for m := range ch {
		s := g.sessionByMCP(m.Session)
		if s != nil && m.Kind == "stop" {
			if gs := s.gs.Load(); gs != nil {
				gs.Stop(string(m.Data))
			}
			continue
		}
		if s == nil || s.streams.Load() == 0 {
			continue
		}
		ss := s.ss.Load()
		if ss == nil {
			continue
		}
		switch m.Kind {
		case "progress":
			var p mcp.ProgressNotificationParams
			if json.Unmarshal(m.Data, &p) == nil {
				_ = ss.NotifyProgress(ctx, &p)
			}
		}
	}
}

// ended reports whether a session held here has ended elsewhere, asking the store at most once
// every liveEvery; it drops this copy when it has. A store that cannot answer is not taken for
// an end (the next check asks again).
func (s *session) endedElsewhere(ctx context.Context, id string) bool {
	now := time.Now().UnixNano()
	last := s.liveAt.Load()
	if now-last < int64(liveEvery) || !s.liveAt.CompareAndSwap(last, now) {
		return false
	}
	rec, err := s.g.o.Sessions.Session(ctx, id)
	if err != nil && !errors.Is(err, instance.ErrNoSession) {
		return false
	}
	if err == nil && rec.Ended.IsZero() {
		return false
	}
	s.drop(ctx, errSessionEnded)
	if ss := s.ss.Load(); ss != nil {
		_ = ss.Close()
	}
	return true
}

// sessionOfRun is the session that runs run, built here from its record if this instance does
// not hold it; nil when it has ended, is a subagent's (whose token is not a stored one), or
// cannot be read (the caller answers from the ledger).
func (g *Gateway) sessionOfRun(ctx context.Context, run string) *session {
	rec, err := g.o.Sessions.SessionOfRun(ctx, run)
	if err != nil || !rec.Ended.IsZero() {
		return nil
	}
	if s := g.sessionByMCP(rec.ID); s != nil {
		return s
	}
	tok, err := g.tokenByID(ctx, rec.Token)
	if err != nil {
		return nil
	}
	s, err := g.adopt(ctx, rec.ID, tok)
	if err != nil {
		g.logger.Warn("a run's session could not be built here", "run", run, "err", err)
		return nil
	}
	return s
}

// refusedError is a session that cannot be built here for what it is (its token's route no
// longer agrees, its role's caps, a surface the policy in force refuses), as opposed to a store
// that cannot be read: the client is refused as initialize would be (session_refused).
type refusedError struct{ error }

func (e refusedError) Unwrap() error { return e.error }
