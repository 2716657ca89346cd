package gate

import (
	"context"
	"fmt"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/verdict"
)

// Judgement is what came of a call judged for a runtime that runs it itself (Judge).
type Judgement struct {
	// CallID is the id the call's audit events carry.
	CallID string
	// Verdict is the review's verdict, with its Decision the answer's once a person answered:
	// allow, or deny with the approval's blocker. A card that expired unanswered leaves it
	// ask, with the expiry's blocker added: the runtime's own user may still be asked. Its
	// Token is always empty: nothing runs through Warden on it.
	Verdict review.Verdict
	// Card is the card an ask opened, as it ended; nil when none was opened (no ask, a
	// standing approval, or a role with no approval channel).
	Card *approval.Card
	// Approver is who allowed or denied it, when a person did.
	Approver string
}

// Judge reviews one call that the caller's own runtime will run, such as Claude Code's
// built-in tools asking through a hook, and runs nothing. The decision is recorded as a call's
// is, with harness naming the runtime (audit.Event.Harness). An ask opens a card that waits
// at most wait for a person (approval.Broker.DecideWithin: wait <= 0 expires it at once); the
// answer or the expiry is recorded as the gate records approvals, except that an expiry is
// recorded as ask, not deny: the runtime goes on to ask its own user, which Warden does not
// see. Nothing is priced or reserved: the call does not run through Warden, so its money is
// not Warden's to hold. The error is for failures of the gate itself; the verdict is then a
// deny.
func (g *Gate) Judge(ctx context.Context, s *Session, tool string, args map[string]any, harness string, wait time.Duration) (*Judgement, error) {
	return g.JudgeAs(ctx, s, newID(), tool, args, harness, wait)
}

// JudgeAs is Judge with the call's id given: the runtime's own (Claude Code's tool_use_id),
// under which it reports the call's outcome (Outcome). The caller makes sure it is new.
func (g *Gate) JudgeAs(ctx context.Context, s *Session, callID, tool string, args map[string]any, harness string, wait time.Duration) (*Judgement, error) {
	out := &Judgement{CallID: callID}
	if g.observer != nil {
		ctx = withCallStart(ctx)
	}
	sf := s.Review.Surface
	if _, known := sf.Policy().Tool(tool); !known {
		ctx = context.WithValue(ctx, unknownToolKey{}, true)
	}
	v := g.reviewer.Review(s.Review, tool, args)
	if why := s.stopped().Load(); why != nil {
		v.Add(review.Blocker{Code: verdict.RunLimit, Detail: *why, Decision: verdict.Deny}, sf)
	}
	v.Token = ""
	out.Verdict = v
	base := g.event(s, out.CallID, tool, &v)
	base.Harness = harness
	if err := g.append(ctx, base, audit.KindDecision, v.Decision, nil, ""); err != nil {
		out.Verdict = deny(v, verdict.NotRecorded, err.Error())
		return out, err
	}
	if v.Decision != verdict.Ask {
		return out, nil
	}

	res, err := g.broker.DecideWithin(ctx, approval.Request{
		Tenant: sf.Tenant().ID, Session: s.Review.ID, Principal: s.Principal, Tool: tool,
		Digest: v.Action.Digest, PolicyRevision: sf.Policy().Revision, Args: g.redact(args),
		Reason: reason(v), Channel: sf.ApprovalChannel(),
	}, wait)
	if err != nil {
		out.Verdict = deny(v, verdict.ApprovalCanceled, "the approval could not be obtained: "+err.Error())
		_ = g.append(context.WithoutCancel(ctx), base, audit.KindApproval, verdict.Deny, nil, "")
		return out, err
	}
	out.Card, out.Approver = res.Card, res.Approver
	approvalEvent := base
	approvalEvent.Blockers = nil
	if res.Card != nil {
		approvalEvent.Channel = string(res.Card.Channel)
	}
	switch {
	case res.Decision == verdict.Allow:
		if err := g.append(ctx, approvalEvent, audit.KindApproval, verdict.Allow, nil, res.Approver); err != nil {
			out.Verdict = deny(v, verdict.NotRecorded, err.Error())
			return out, err
		}
		if err := g.append(ctx, base, audit.KindDecision, verdict.Allow, nil, res.Approver); err != nil {
			out.Verdict = deny(v, verdict.NotRecorded, err.Error())
			return out, err
		}
		out.Verdict.Decision = verdict.Allow
		return out, nil
	case res.Code == verdict.ApprovalTimeout || res.Code == verdict.ApprovalCanceled:
		approvalEvent.Blockers = []audit.Blocker{{Code: string(res.Code)}}
		out.Verdict.Blockers = append(append([]review.Blocker(nil), v.Blockers...), review.Blocker{Code: res.Code,
			Detail: "nobody answered the card while the call waited", Decision: verdict.Ask})
		return out, g.append(context.WithoutCancel(ctx), approvalEvent, audit.KindApproval, verdict.Ask, nil, "")
	default:
		approvalEvent.Blockers = []audit.Blocker{{Code: string(res.Code)}}
		detail := "the call was not approved"
		if res.Code == verdict.NoApprovalChannel {
			detail = "the session's role has no approval channel: nobody can answer its asks, so they are refused"
		}
		out.Verdict = deny(v, res.Code, detail)
		return out, g.append(context.WithoutCancel(ctx), approvalEvent, audit.KindApproval, verdict.Deny, nil, res.Approver)
	}
}

// JudgedOutcome records how a call Judge judged ended, as the runtime that ran it reports it:
// an outcome event under the call's id, with what its decision says of the session (decision
// is the call's decision event as the log holds it).
func (g *Gate) JudgedOutcome(ctx context.Context, decision *audit.Event, outcome, detail string) error {
	e := audit.Event{Time: g.clock.Now(), Kind: audit.KindOutcome, CallID: decision.CallID, Tenant: decision.Tenant,
		Session: decision.Session, Principal: decision.Principal, Role: decision.Role, Profile: decision.Profile,
		Run: decision.Run, Tool: decision.Tool, Digest: decision.Digest, Harness: decision.Harness,
		PolicyRevision: decision.PolicyRevision, Outcome: outcome, Error: detail}
	if err := g.log.Append(ctx, &e); err != nil {
		return fmt.Errorf("%w: %v", ErrNotRecorded, err)
	}
	return nil
}
