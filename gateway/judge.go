package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/surface"
)

var _ server.AgentReviewer = (*Gateway)(nil)

// ReviewFor judges one call that an agent's own runtime runs (a Claude Code hook, a Claude
// Agent SDK canUseTool, a CI bot), for an agent token (server.AgentReviewer). The session is
// the one the token binds, as an MCP session with it would be: its tenant, role and profile,
// its model and harness (the policy's default harness when the token binds none; q.Harness is
// a label for the audit trail, never a harness of the policy, so it cannot pick a wider
// surface), with the tenant's hard blocks in force.
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

	// The route is the token's, as for an MCP session with it (routeOf): a model the token
	// binds, or else the one the body states; a body that states another model than the
	// token binds is refused, so no runtime can claim a certified model its token does not.
	model := tok.Model
	if q.Model != "" {
		if err := policy.CheckModelID(q.Model); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		if model != "" && model != q.Model {
			return nil, fmt.Errorf("the body states the model %s, but the token binds the model %s", q.Model, model)
		}
		model = q.Model
	}
	snap := g.snapshot.Load()
	sf, err := surface.Open(snap.env, surface.Spec{Tenant: tok.Tenant, Role: tok.SessionRole, Profile: tok.Profile,
		Harness: tok.Harness, Model: model})
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
	callID := q.Call
	if callID == "" {
		callID = gate.NewCallID()
	} else {
		// The runtime's own id (Claude Code's tool_use_id), under which it reports the
		// outcome: new in the tenant, so that no call is recorded under another's.
		evs, err := g.o.Store.Query(ctx, audit.Filter{Tenant: tok.Tenant, CallID: callID, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(evs) > 0 {
			return nil, fmt.Errorf("call %s: %w", callID, server.ErrCallTaken)
		}
	}
	j, err := g.o.Gate.JudgeAs(ctx, gs, callID, q.Tool, q.Input, q.Harness, wait)
	ans := &server.ReviewAnswer{Verdict: j.Verdict, Call: j.CallID}
	if c := j.Card; c != nil {
		ans.Card = &server.ReviewCard{ID: c.ID, State: c.State, Answer: c.Answer}
	}
	return ans, err
}

// OutcomeFor records how a call ReviewFor judged for the token ended (server.AgentReviewer):
// the call must be one this token's session was judged (its tenant, its principal), and have
// no outcome on record yet.
func (g *Gateway) OutcomeFor(ctx context.Context, tok *auth.Token, q server.OutcomeReport) error {
	if tok.Role != auth.RoleAgent {
		return fmt.Errorf("%s token has no session to report outcomes in", auth.A(tok.Role))
	}
	evs, err := g.o.Store.Query(ctx, audit.Filter{Tenant: tok.Tenant, CallID: q.Call})
	if err != nil {
		return err
	}
	var decision *audit.Event
	for _, e := range evs {
		switch {
		case e.Kind == audit.KindOutcome:
			return server.ErrOutcomeRecorded
		case e.Kind == audit.KindDecision && e.Principal == principal(tok) && decision == nil:
			decision = e
		}
	}
	if decision == nil {
		return server.ErrNoSuchCall
	}
	return g.o.Gate.JudgedOutcome(ctx, decision, q.Outcome, q.Error)
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
