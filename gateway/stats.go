package gateway

import (
	"sync"

	"github.com/wardenhq/warden/policy"
)

// LiveSessions returns how many sessions are open on this gateway now, by tenant.
func (g *Gateway) LiveSessions() map[string]int {
	out := map[string]int{}
	for _, s := range g.live() {
		out[s.token.Tenant]++
	}
	return out
}

// UpstreamErrors returns how many tool calls have failed at each connector's upstream since
// the gateway started (no answer in time, a broken or garbled connection, an error from the
// SDK), by connector; a call its caller gave up on is not counted. A tool's own error result
// is an answer, not a failure.
func (g *Gateway) UpstreamErrors() map[string]uint64 { return g.upstream.errs.snapshot() }

// counts is a set of counters by name, safe for concurrent use.
type counts struct {
	mu sync.Mutex
	n  map[string]uint64
}

func (c *counts) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]uint64{}
	}
	c.n[name]++
}

func (c *counts) snapshot() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]uint64, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// Policy returns the policy in force.
func (g *Gateway) Policy() *policy.Policy { return g.snapshot.Load().p }
