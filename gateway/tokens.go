package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/wardenhq/warden/auth"
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
//     sharing PostgreSQL, SQL by hand) is refused once its entry expires: within TokenTTL.

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
	if ok && now.Before(e.until) {
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
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for h, e := range c.entries {
		if e.tok.ID == id {
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
	return err
}
