package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/surface"
)

var _ server.AgentReviewer = (*Gateway)(nil)

// ReviewFor judges one call that an agent's own runtime runs (a Claude Code hook, a Claude
// Agent SDK canUseTool, a CI bot), for an agent token (server.AgentReviewer). The session is
// the one the token binds, as an MCP session with it would be: its tenant, role and profile,
// on the policy's default harness (q.Harness is a label for the audit trail, never a harness
// of the policy, so it cannot pick a wider surface), with the tenant's hard blocks in force.
// The hard blocks count as enforced at the system call (review.Session.Enforced) only when
// q.Sandboxed says the call runs in Warden's sandbox, and the sandbox is on here. The decision
// is recorded (gate.Gate.Judge); an ask opens a card that waits at most wait. Nothing runs.
func (g *Gateway) ReviewFor(ctx context.Context, tok *auth.Token, q server.ReviewQuery, wait time.Duration) (*server.ReviewAnswer, error) {
	if tok.Role != auth.RoleAgent {
		return nil, fmt.Errorf("%s token has no session to review calls in", auth.A(tok.Role))
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	held := &heldReview{cancel: cancel}
	if !g.holdReview(held) {
		return nil, fmt.Errorf("%w: %v", server.ErrUnavailable, errShuttingDown)
	}
	defer g.releaseReview(held)

	snap := g.snapshot.Load()
	sf, err := surface.Open(snap.env, surface.Spec{Tenant: tok.Tenant, Role: tok.SessionRole, Profile: tok.Profile})
	if err != nil {
		return nil, err
	}
	ws := q.Workspace
	switch {
	case ws == "":
		if ws, err = g.workspace(tok.Tenant); err != nil {
			return nil, err
		}
	case !filepath.IsAbs(ws):
		return nil, fmt.Errorf("workspace %q: want an absolute path", ws)
	}
	paths, err := action.NewResolver(ws, ws)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w (the workspace must exist where warden serve runs)", ws, err)
	}
	rs := &review.Session{ID: q.Session, Surface: sf, Paths: paths}
	if g.rules != nil {
		rs.Boundaries = g.rules(tok.Tenant)
		// A hook's Bash runs in the runtime's own shell, where nothing enforces the rules at
		// the system call: only a call said to run in the sandbox is judged as one that does.
		rs.Enforced = q.Sandboxed && !g.o.Native.Sandbox.Off
	}
	gs := &gate.Session{Review: rs, Principal: principal(tok)}
	j, err := g.o.Gate.Judge(ctx, gs, q.Tool, q.Input, q.Harness, wait)
	ans := &server.ReviewAnswer{Verdict: j.Verdict, Call: j.CallID}
	if c := j.Card; c != nil {
		ans.Card = &server.ReviewCard{ID: c.ID, State: c.State, Answer: c.Answer}
	}
	return ans, err
}

// A heldReview is a review of ReviewFor in progress, which may wait for a person.
type heldReview struct{ cancel context.CancelCauseFunc }

// holdReview registers a review, so that Shutdown cancels its wait; false once the gateway is
// shutting down.
func (g *Gateway) holdReview(h *heldReview) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.draining {
		return false
	}
	if g.reviews == nil {
		g.reviews = map[*heldReview]struct{}{}
	}
	g.reviews[h] = struct{}{}
	return true
}

func (g *Gateway) releaseReview(h *heldReview) {
	g.mu.Lock()
	delete(g.reviews, h)
	g.mu.Unlock()
}

// cancelReviews ends the waits of the reviews in progress: their cards expire, recorded, and
// each answers ask with the card expired.
func (g *Gateway) cancelReviews(why error) {
	g.mu.Lock()
	hs := make([]*heldReview, 0, len(g.reviews))
	for h := range g.reviews {
		hs = append(hs, h)
	}
	g.mu.Unlock()
	for _, h := range hs {
		h.cancel(why)
	}
}
