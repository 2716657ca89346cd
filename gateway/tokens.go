package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/internal/feed"
	"github.com/wardenhq/warden/verdict"
)

// Every MCP request carries its bearer token, and looking it up in the store (a query, on
// SQLite a read transaction) was the largest single cost of a tools/call. With
// Options.TokenTTL set, a good token found in the store is trusted, without asking the store
// again, for that long:
//
//   - only good tokens are remembered: an unknown or revoked secret, or one the store cannot
//     check right now, asks the store on every request;
//   - a token revoked through this gateway (RevokeToken) is forgotten before RevokeToken
//     returns, and a lookup that was under way when it was revoked is not remembered, so the
//     very next request with it is refused;
//   - a token revoked elsewhere (another process on the same SQLite file, another instance
//     sharing PostgreSQL) is heard of through the store's change feed when the store has one
//     (auth.RevocationWatcher: SQLite within its poll interval, PostgreSQL by NOTIFY as the
//     revocation commits): it is forgotten, and the sessions it opened end, at once;
//   - a token revoked where no feed tells of it (SQL by hand on SQLite's file is polled
//     too; a store without a feed) is refused once its entry expires: within TokenTTL.

// tokenCache remembers good tokens by hash for a while. The zero value remembers nothing.
type tokenCache struct {
	ttl time.Duration

	mu sync.Mutex
	// gen counts forgets: a lookup whose store read began before one may have read a token
	// since revoked, so its result is not remembered.
	gen     uint64
	entries map[string]tokenEntry // by hash
}

type tokenEntry struct {
	tok   auth.Token
	until time.Time
}

// tokenCacheSweep is the size at which a new entry first clears out the expired ones.
const tokenCacheSweep = 1024

// lookup returns the good token with the hash: remembered, or read from the store (and then
// remembered). The caller gets its own copy.
func (c *tokenCache) lookup(ctx context.Context, store auth.Store, hash string) (*auth.Token, error) {
	if c.ttl <= 0 {
		return store.TokenByHash(ctx, hash)
	}
	c.mu.Lock()
	e, ok := c.entries[hash]
	gen := c.gen
	c.mu.Unlock()
	now := time.Now()
	if ok && now.Before(e.until) && !e.tok.Expired(now) {
		tok := e.tok
		return &tok, nil
	}
	tok, err := store.TokenByHash(ctx, hash)
	if err != nil {
		return nil, err // never remembered: the next request asks again
	}
	c.mu.Lock()
	if c.gen == gen {
		if c.entries == nil {
			c.entries = map[string]tokenEntry{}
		}
		if len(c.entries) >= tokenCacheSweep {
			for h, e := range c.entries {
				if !now.Before(e.until) {
					delete(c.entries, h)
				}
			}
		}
		// Counted from before the read, so an entry never outlives TTL from when the store
		// said the token was good.
		c.entries[hash] = tokenEntry{tok: *tok, until: now.Add(c.ttl)}
	}
	c.mu.Unlock()
	return tok, nil
}

// forget drops what is remembered of the token with the ID, and keeps lookups under way from
// remembering it.
func (c *tokenCache) forget(id string) {
	c.forgetAll(map[string]bool{id: true})
}

// forgetAll forgets every token whose ID is in ids.
func (c *tokenCache) forgetAll(ids map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for h, e := range c.entries {
		if ids[e.tok.ID] {
			delete(c.entries, h)
		}
	}
}

// RevokeToken revokes a stored token, and makes the gateway forget it at once: the next
// request with it is refused (and ends the sessions it opened, as for any revoked token),
// even within Options.TokenTTL. A process that serves the gateway should revoke tokens
// through here rather than through the store; a revocation made elsewhere takes effect
// within TokenTTL. The token is forgotten even when the store fails.
func (g *Gateway) RevokeToken(ctx context.Context, id string, at time.Time) error {
	err := g.o.Store.RevokeToken(ctx, id, at)
	g.tokens.forget(id)
	if err == nil {
		g.endSessionsOf(ctx, map[string]bool{id: true})
	}
	return err
}

// watchRevocations follows the store's revocations until ctx ends: each time a token may
// have been revoked (on any instance), the revoked tokens are forgotten and the sessions they
// opened end.
func (g *Gateway) watchRevocations(ctx context.Context, w auth.RevocationWatcher) {
	feed.Follow(ctx, g.logger, "token revocations", w.WatchRevocations, g.applyRevocations, g.o.RevocationsRead)
}

// applyRevocations reads which tokens are revoked, forgets them, and ends their sessions.
func (g *Gateway) applyRevocations(ctx context.Context) error {
	list, err := g.o.Store.Tokens(ctx)
	if err != nil {
		return err
	}
	revoked := map[string]bool{}
	for _, t := range list {
		if !t.Revoked.IsZero() {
			revoked[t.ID] = true
		}
	}
	if len(revoked) == 0 {
		return nil
	}
	g.tokens.forgetAll(revoked)
	g.endSessionsOf(ctx, revoked)
	return nil
}

// endSessionsOf ends the live sessions opened with the tokens: they are forgotten and their
// runs end, the cards their calls wait on are cancelled (so those calls are refused, never
// run), and their MCP sessions are closed.
func (g *Gateway) endSessionsOf(ctx context.Context, ids map[string]bool) {
	ctx = context.WithoutCancel(ctx)
	for _, s := range g.live() {
		if !ids[s.token.ID] {
			continue
		}
		g.logger.Info("a session's token was revoked; the session ends", "session", s.id, "token", s.token.ID)
		g.recordRevoked(ctx, s)
		s.end(ctx)
		g.cancelCards(ctx, s)
		if ss := s.ss.Load(); ss != nil {
			// Closing waits for the session's calls in flight to return: not here, so that
			// one slow call does not hold up the other sessions' ends.
			go func() { _ = ss.Close() }()
		}
	}
}

// tokenRevoked is the audit code of a session ended because its token was revoked.
const tokenRevoked = "token_revoked"

// recordRevoked records, as the session's, that it ends because its token was revoked.
func (g *Gateway) recordRevoked(ctx context.Context, s *session) {
	tok := s.token
	e := &audit.Event{Time: time.Now(), Kind: audit.KindDecision, Tool: "mcp:session", Decision: verdict.Deny.String(),
		Tenant: tok.Tenant, Role: tok.SessionRole, Profile: tok.Profile, Principal: tok.Name, Session: s.id,
		Blockers: []audit.Blocker{{Code: tokenRevoked, Detail: "the session's token " + tok.ID + " was revoked: the session ended, and its waiting calls were cancelled"}}}
	if err := g.o.Store.Append(ctx, e); err != nil {
		g.logger.Error("the end of a revoked token's session could not be recorded", "session", s.id, "err", err)
	}
}

// cardLister is a store that lists cards (every store of Warden's).
type cardLister interface {
	Cards(ctx context.Context, f approval.CardFilter) ([]*approval.Card, error)
}

// cancelCards cancels the pending cards of an ended session's calls.
func (g *Gateway) cancelCards(ctx context.Context, s *session) {
	store, ok := g.o.Store.(cardLister)
	if !ok {
		return // a store that keeps no cards has none waiting
	}
	cards, err := store.Cards(ctx, approval.CardFilter{Tenant: s.token.Tenant, State: approval.Pending})
	if err != nil {
		g.logger.Error("the cards of a revoked token's session could not be read; they wait until their deadline", "session", s.id, "err", err)
		return
	}
	for _, c := range cards {
		if c.Session != s.id {
			continue
		}
		if err := g.o.Broker.Cancel(ctx, c.ID); err != nil {
			g.logger.Error("a card of a revoked token's session could not be cancelled", "card", c.ID, "err", err)
		}
	}
}
