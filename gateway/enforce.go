package gateway

import (
	"context"
	"fmt"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/sandbox"
	"github.com/wardenhq/warden/verdict"
)

// sandboxRules returns the session's tenant's hard blocks for the sandbox to enforce at the
// system call, read at each run so that a change applies to the next command; nil when the
// tenant has none (nothing to enforce, and nothing to slow the command down).
func (s *session) sandboxRules() sandbox.HardBlocks {
	if s.g.rules == nil {
		return nil
	}
	set := s.g.rules(s.gs.Load().Review.Surface.Tenant().ID)
	if set == nil {
		return nil
	}
	if set.Invalid() == nil && len(set.Rules()) == 0 {
		return nil
	}
	return set
}

// recordRefusals records the system calls of a call's sandboxed programs that the hard blocks
// refused, as one enforcement event with a blocker each.
func (s *session) recordRefusals(ctx context.Context, tool string, args map[string]any, refusals []sandbox.Refusal, dropped int) {
	if len(refusals) == 0 {
		return
	}
	gs := s.gs.Load()
	sf := gs.Review.Surface
	e := &audit.Event{Time: s.g.o.Gate.Now(), Kind: audit.KindEnforcement, Tenant: sf.Tenant().ID, Session: s.id,
		Principal: gs.Principal, Role: sf.Role().ID, Tool: tool, Digest: action.Digest(tool, args),
		Decision: verdict.Deny.String(), PolicyRevision: sf.Policy().Revision}
	for _, r := range refusals {
		e.Blockers = append(e.Blockers, refusalBlocker(r))
	}
	if dropped > 0 {
		e.Blockers = append(e.Blockers, audit.Blocker{Code: string(verdict.HardBlock), Detail: "more calls refused", Count: dropped})
	}
	if pr := sf.Profile(); pr != nil {
		e.Profile = pr.ID
	}
	if gs.Run != nil {
		e.Run = gs.Run.ID
	}
	if err := s.g.o.Store.Append(context.WithoutCancel(ctx), e); err != nil {
		s.g.logger.Error("refused system calls could not be recorded", "tool", tool, "err", err)
	}
}

// connectorEnforced records a system call that a sandboxed connector's process, serving
// tenant alone, was refused by the tenant's hard blocks: an enforcement event under the
// connector (its principal "connector:<id>"), once per connector, tenant, rule, operation and
// path (a connector that retries is one event).
func (g *Gateway) connectorEnforced(connector, tenant string, r sandbox.Refusal) {
	key := fmt.Sprintf("%s|%s|%s|%s|%s|%s", connector, tenant, r.Rule, r.Op, r.Path, r.Command)
	if !g.enforcedSeen.first(key) {
		return
	}
	b := refusalBlocker(r)
	g.logger.Info("a sandboxed connector's system call was refused", "connector", connector, "tenant", tenant, "rule", r.Rule, "detail", b.Detail)
	e := &audit.Event{Time: g.o.Gate.Now(), Kind: audit.KindEnforcement, Tenant: tenant, Principal: "connector:" + connector,
		Decision: verdict.Deny.String(), Blockers: []audit.Blocker{b},
		PolicyRevision: g.snapshot.Load().p.Revision}
	if err := g.o.Store.Append(context.Background(), e); err != nil {
		g.enforcedSeen.forget(key)
		g.logger.Error("a sandboxed connector's refused system call could not be recorded", "connector", connector, "err", err)
	}
}

// refusalBlocker is how a system call the supervisor refused reads in an enforcement event:
// the operation, what it named, the call and the process, and the rule's reason.
func refusalBlocker(r sandbox.Refusal) audit.Blocker {
	what := r.Path
	if r.Command != "" {
		what = r.Command + " (" + r.Path + ")"
	}
	detail := fmt.Sprintf("%s %s (%s, pid %d)", r.Op, what, r.Call, r.PID)
	if r.Reason != "" {
		detail += ": " + r.Reason
	}
	code := string(verdict.HardBlock)
	if r.Rule == boundary.ConfigInvalidID {
		code = string(verdict.BoundaryInvalid)
	}
	return audit.Blocker{Code: code, Rule: r.Rule, Detail: detail}
}
