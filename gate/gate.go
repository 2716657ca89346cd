// Package gate is the per-call gate (G1-G3, D1): it takes a reviewed call through a person's
// answer where one is needed and through the money it may spend, records the decision durably
// before anything runs, runs the call through the reviewer's execution boundary, and records
// what happened.
//
// For one call, in order:
//
//  1. review (package review): allow, ask or deny, with every reason;
//  2. price: a call of a connector that bills is priced from the policy (fixed, from an
//     argument, or reserved and settled from the result); a price above the connector's
//     askAbove asks a person; a run without an allowance for the connector is refused;
//  3. a deny is recorded and returned; an ask is recorded, parked on a card (package approval)
//     and waits for its answer or deadline, which is recorded too;
//  4. the spend is reserved in the ledger (package budget), atomically within the run's
//     per-run figure; a call that would exceed it is refused with nothing spent;
//  5. the decision to run is appended to the audit trail; if that fails, the call does not run;
//  6. the call runs through review.Reviewer.Execute, which checks the review token and reviews
//     it again at the execution boundary;
//  7. the reservation is settled at what the call cost (or released if it failed), and the
//     outcome is recorded.
package gate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/verdict"
)

// Gate runs calls through review, approvals, spending and the audit trail. It is safe for
// concurrent use.
type Gate struct {
	reviewer *review.Reviewer
	broker   *approval.Broker
	ledger   budget.Store
	log      audit.Log
	clock    clock.Clock
	redact   func(map[string]any) []byte
	outcomes *outcomeWriter
	instance string
	observer Observer
}

// Options configures a Gate. Reviewer, Broker, Ledger and Log are required.
type Options struct {
	Reviewer *review.Reviewer
	Broker   *approval.Broker
	Ledger   budget.Store
	Log      audit.Log
	// Clock defaults to the real one.
	Clock clock.Clock
	// Redact renders a call's arguments for an approval card with protected values removed;
	// the default is their JSON.
	Redact func(map[string]any) []byte
	// Logger reports what cannot be returned to a caller (an outcome that could not be
	// recorded); the default is slog's.
	Logger *slog.Logger
	// Instance is this process's instance id, recorded on every run the gate starts
	// (budget.Run.Instance) so that recovery ends the runs of a process that died; "" records
	// none.
	Instance string
	// Observe, if set, is told of every call's decisions and outcomes (see Observer).
	Observe Observer
}

// New returns a Gate.
func New(o Options) (*Gate, error) {
	if o.Reviewer == nil || o.Broker == nil || o.Ledger == nil || o.Log == nil {
		return nil, errors.New("gate: a reviewer, a broker, a ledger and an audit log are all required")
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Redact == nil {
		o.Redact = func(args map[string]any) []byte {
			b, err := json.Marshal(args)
			if err != nil {
				return []byte(`{"error":"the arguments cannot be shown"}`)
			}
			return b
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Gate{reviewer: o.Reviewer, broker: o.Broker, ledger: o.Ledger, log: o.Log, clock: o.Clock, redact: o.Redact,
		outcomes: newOutcomeWriter(o.Log, o.Logger), instance: o.Instance, observer: o.Observe}, nil
}

// Sync waits until the outcomes of every call that has returned are in the audit trail.
func (g *Gate) Sync(ctx context.Context) error { return g.outcomes.sync(ctx) }

// Close writes the outcomes still queued and stops the gate's writer; calls after Close record
// their outcomes directly.
func (g *Gate) Close() { g.outcomes.close() }

// Session is a session as the gate sees it.
type Session struct {
	// Review is what the reviewer needs: the surface, the workspace, the hard blocks.
	Review *review.Session
	// Principal is who or what the session acts for (a user, a coworker).
	Principal string
	// Run is the session's run, for unattended sessions; nil for a person's chat, which spends
	// without allowances (each spend is still recorded).
	Run *budget.Run
	// OnStop, if set, is told once when the gate stops the session (its run's limits), with
	// why: so that the other instances serving the same session stop it too (Stop).
	OnStop func(why string)

	// halt holds why the run may make no more calls, once it may not. It is made at its
	// first use and shared by every Rebind of the session, so that a stop made on a session
	// that is being rebound (a hard-block change, a reload) is never lost.
	halt atomic.Pointer[atomic.Pointer[string]]
	// used is what the session has reported against its harness's caps, shared likewise.
	used atomic.Pointer[harnessUse]
}

// harnessUse is what a session has reported against its harness's caps
// (policy.Harness.SessionBudgetUsd, MaxModelCalls).
type harnessUse struct {
	mu    sync.Mutex
	calls int
	usd   float64
}

// harnessUsed is the session's use of its harness, shared with its rebinds.
func (s *Session) harnessUsed() *harnessUse {
	if u := s.used.Load(); u != nil {
		return u
	}
	s.used.CompareAndSwap(nil, &harnessUse{})
	return s.used.Load()
}

// stopped is the session's stop: why it may make no more calls, shared with its rebinds.
func (s *Session) stopped() *atomic.Pointer[string] {
	if c := s.halt.Load(); c != nil {
		return c
	}
	s.halt.CompareAndSwap(nil, new(atomic.Pointer[string]))
	return s.halt.Load()
}

// Rebind returns the session with another review session (a surface computed again after a
// policy reload), the same principal and run, and the same stop: stopping either stops both.
func (s *Session) Rebind(r *review.Session) *Session {
	n := &Session{Review: r, Principal: s.Principal, Run: s.Run, OnStop: s.OnStop}
	n.halt.Store(s.stopped())
	n.used.Store(s.harnessUsed())
	return n
}

// Executor runs a call that passed the gate. Its result (a JSON-like map) is returned to the
// caller and read for a cost settled from the result.
type Executor func(ctx context.Context, a *action.Action) (map[string]any, error)

// Outcome is what came of a call.
type Outcome struct {
	CallID  string
	Verdict review.Verdict
	// Ran says whether the call ran; Result and Err are what it returned.
	Ran    bool
	Result map[string]any
	Err    error
	// Approver is who allowed it, when a person did.
	Approver string
	Spend    *audit.Spend
}

// ErrNotRecorded is matched when a decision could not be written to the audit trail: the call
// was not run.
var ErrNotRecorded = errors.New("the decision could not be recorded, so the call was not run")

// Call takes one call through the gate and, if it passes, runs it with exec. The error is for
// failures of the gate itself (the audit trail or the ledger unreachable); a refused call is an
// Outcome with a deny verdict and a nil error.
func (g *Gate) Call(ctx context.Context, s *Session, tool string, args map[string]any, exec Executor) (*Outcome, error) {
	out := &Outcome{CallID: newID()}
	if g.observer != nil {
		ctx = withCallStart(ctx)
	}
	sf := s.Review.Surface
	v := g.reviewer.Review(s.Review, tool, args)
	if why := s.stopped().Load(); why != nil {
		v.Add(review.Blocker{Code: verdict.RunLimit, Detail: *why, Decision: verdict.Deny}, sf)
	}

	// Price the call.
	var spend *audit.Spend
	var t *policy.Tool
	if v.Action != nil {
		t, _ = sf.Policy().Tool(tool)
	}
	if t != nil && t.Server.Billing != nil && v.Decision != verdict.Deny {
		spend = g.price(s, t, args, &v)
	}
	out.Spend = spend

	base := g.event(s, out.CallID, tool, &v)
	if v.Decision == verdict.Deny {
		out.Verdict = v
		return out, g.append(ctx, base, audit.KindDecision, v.Decision, spend, "")
	}

	token := v.Token
	var answer approval.Answer // how a person allowed the call, if one was asked
	if v.Decision == verdict.Ask {
		if err := g.append(ctx, base, audit.KindDecision, verdict.Ask, spend, ""); err != nil {
			out.Verdict = deny(v, verdict.NotRecorded, err.Error())
			return out, err
		}
		res, err := g.broker.Decide(ctx, approval.Request{
			Tenant: sf.Tenant().ID, Session: s.Review.ID, Principal: s.Principal, Tool: tool,
			Digest: v.Action.Digest, PolicyRevision: sf.Policy().Revision, Args: g.redact(args),
			Reason: reason(v), Channel: sf.ApprovalChannel(),
		})
		if err != nil {
			out.Verdict = deny(v, verdict.ApprovalCanceled, "the approval could not be obtained: "+err.Error())
			_ = g.append(context.WithoutCancel(ctx), base, audit.KindApproval, verdict.Deny, spend, "")
			return out, err
		}
		approvalEvent := base
		approvalEvent.Blockers = nil
		if res.Card != nil {
			approvalEvent.Channel = string(res.Card.Channel)
		}
		if res.Decision != verdict.Allow {
			out.Verdict = deny(v, res.Code, "the call was not approved")
			approvalEvent.Blockers = []audit.Blocker{{Code: string(res.Code)}}
			return out, g.append(context.WithoutCancel(ctx), approvalEvent, audit.KindApproval, verdict.Deny, spend, res.Approver)
		}
		out.Approver = res.Approver
		answer = approval.AllowOnce
		if res.Standing != nil || (res.Card != nil && res.Card.Answer == approval.AllowTenant) {
			answer = approval.AllowTenant
		}
		if err := g.append(ctx, approvalEvent, audit.KindApproval, verdict.Allow, spend, res.Approver); err != nil {
			out.Verdict = deny(v, verdict.NotRecorded, err.Error())
			return out, err
		}
		if token, err = g.reviewer.Approved(s.Review, v.Token, tool, args); err != nil {
			out.Verdict = deny(v, verdict.ReviewTokenInvalid, err.Error())
			return out, g.append(ctx, base, audit.KindDecision, verdict.Deny, spend, out.Approver)
		}
	}

	// Hold the money, within the run's allowance.
	var res *budget.Reservation
	if spend != nil && s.Run != nil {
		res = &budget.Reservation{ID: newID(), Run: s.Run.ID, Call: out.CallID, Connector: spend.Connector, Amount: spend.Amount, Created: g.clock.Now()}
		if err := g.ledger.Reserve(ctx, res); err != nil {
			code, detail := verdict.RunAllowance, fmt.Sprintf("%g %s would take run %s above its allowance for %s", spend.Amount, spend.Unit, s.Run.ID, spend.Connector)
			if !errors.Is(err, budget.ErrRunAllowance) {
				code, detail = verdict.RunLimit, err.Error()
			}
			out.Verdict = deny(v, code, detail)
			evt := base
			evt.Blockers = blockers(out.Verdict)
			if aerr := g.append(ctx, evt, audit.KindDecision, verdict.Deny, spend, out.Approver); aerr != nil {
				return out, aerr
			}
			if errors.Is(err, budget.ErrRunAllowance) || errors.Is(err, budget.ErrRunEnded) || errors.Is(err, budget.ErrInvalid) {
				return out, nil
			}
			return out, err
		}
	}

	// Record the decision to run, durably, before running.
	if err := g.append(ctx, base, audit.KindDecision, verdict.Allow, spend, out.Approver); err != nil {
		if res != nil {
			_ = g.ledger.Release(context.WithoutCancel(ctx), res.ID, g.clock.Now())
		}
		out.Verdict = deny(v, verdict.NotRecorded, err.Error())
		return out, fmt.Errorf("%w: %v", ErrNotRecorded, err)
	}

	var result map[string]any
	var runErr error
	second, err := g.reviewer.Execute(s.Review, token, tool, args, func(a *action.Action) error {
		out.Ran = true
		ectx := context.WithValue(ctx, callIDKey{}, out.CallID)
		if answer != "" {
			ectx = context.WithValue(ectx, answerKey{}, answer)
		}
		result, runErr = exec(ectx, a)
		return runErr
	})
	out.Verdict, out.Result, out.Err = second, result, runErr
	if !out.Ran {
		// Refused at the execution boundary: the second review or the token said no.
		out.Err = err
	}

	// Settle, and record the outcome.
	if res != nil {
		now := g.clock.Now()
		if !out.Ran || runErr != nil {
			err = g.ledger.Release(context.WithoutCancel(ctx), res.ID, now)
			spend.Amount = 0
		} else {
			actual, ok, cerr := t.Cost.Actual(args, result)
			if !ok || cerr != nil {
				actual = res.Amount // the result does not say: what was held is what it cost
			}
			err = g.ledger.Settle(context.WithoutCancel(ctx), res.ID, actual, now)
			spend.Amount = actual
		}
		if err != nil {
			return out, fmt.Errorf("settle the call's spending: %w", err)
		}
	} else if spend != nil && out.Ran && runErr == nil {
		if actual, ok, _ := t.Cost.Actual(args, result); ok {
			spend.Amount = actual
		}
	}
	outcome := base
	outcome.Blockers = blockers(second)
	outcome.Outcome = "ok"
	if out.Err != nil {
		outcome.Outcome, outcome.Error = "error", out.Err.Error()
	}
	if !out.Ran {
		outcome.Outcome = "refused"
	}
	ran := verdict.Deny
	if out.Ran {
		ran = verdict.Allow
	}
	outcome.Time, outcome.Kind, outcome.Decision, outcome.Approver = g.clock.Now(), audit.KindOutcome, ran.String(), out.Approver
	if spend != nil {
		sp := *spend
		outcome.Spend = &sp
	}
	g.observe(ctx, &outcome)
	return out, g.outcomes.add(context.WithoutCancel(ctx), &outcome)
}

// price works out what a billed call costs, and adds the blockers that follow: a call that
// cannot be priced, a run with no allowance for the connector, a price above the threshold.
func (g *Gate) price(s *Session, t *policy.Tool, args map[string]any, v *review.Verdict) *audit.Spend {
	b := t.Server.Billing
	sf := s.Review.Surface
	est, err := t.Cost.Estimate(args)
	if err != nil {
		v.Add(review.Blocker{Code: verdict.Unpriced, Detail: err.Error(), Decision: verdict.Deny}, sf)
		return nil
	}
	spend := &audit.Spend{Connector: t.Server.ID, Unit: b.Unit, Amount: est}
	if s.Run != nil && !hasAllowance(s.Run, t.Server.ID) {
		v.Add(review.Blocker{Code: verdict.NoAllowance, Decision: verdict.Deny,
			Detail: fmt.Sprintf("%s bills in %s, and run %s holds no allowance for it", t.Server.ID, b.Unit, s.Run.ID)}, sf)
		return spend
	}
	if b.AskAbove > 0 && est > b.AskAbove {
		v.Add(review.Blocker{Code: verdict.SpendAsk, Decision: verdict.Ask,
			Detail: fmt.Sprintf("this call costs %g %s, above the %g a person must approve", est, b.Unit, b.AskAbove)}, sf)
	}
	return spend
}

func hasAllowance(r *budget.Run, connector string) bool {
	for _, a := range r.Allowances {
		if a.Connector == connector {
			return true
		}
	}
	return false
}

// deny turns a verdict into a denial with one more blocker.
func deny(v review.Verdict, code verdict.Code, detail string) review.Verdict {
	v.Blockers = append(append([]review.Blocker(nil), v.Blockers...), review.Blocker{Code: code, Detail: detail, Decision: verdict.Deny})
	v.Decision = verdict.Deny
	v.Token = ""
	return v
}

func reason(v review.Verdict) string {
	for _, b := range v.Blockers {
		if b.Decision == verdict.Ask {
			return b.Detail
		}
	}
	return "the call needs a person's approval"
}

func blockers(v review.Verdict) []audit.Blocker {
	if len(v.Blockers) == 0 {
		return nil
	}
	out := make([]audit.Blocker, len(v.Blockers))
	for i, b := range v.Blockers {
		out[i] = audit.Blocker{Code: string(b.Code), Rule: b.Rule, Detail: b.Detail}
	}
	return out
}

// event is the part of a call's audit events that every one of them shares.
func (g *Gate) event(s *Session, callID, tool string, v *review.Verdict) audit.Event {
	sf := s.Review.Surface
	e := audit.Event{
		CallID: callID, Tenant: sf.Tenant().ID, Session: s.Review.ID, Principal: s.Principal,
		Role: sf.Role().ID, Tool: tool, Blockers: blockers(*v), Rules: v.Rules,
		PolicyRevision: sf.Policy().Revision,
	}
	if pr := sf.Profile(); pr != nil {
		e.Profile = pr.ID
	}
	if s.Run != nil {
		e.Run = s.Run.ID
	}
	if v.Action != nil {
		e.Digest = v.Action.Digest
	} else {
		e.Digest = action.Digest(tool, nil)
	}
	return e
}

func (g *Gate) append(ctx context.Context, e audit.Event, kind string, d verdict.Decision, spend *audit.Spend, approver string) error {
	e.Time = g.clock.Now()
	e.Kind = kind
	e.Decision = d.String()
	e.Approver = approver
	if spend != nil {
		sp := *spend
		e.Spend = &sp
	}
	// The decision is durable before the call runs either way; a log with a journal makes it
	// so without waiting for its index (store/sqlite's Options.Journal).
	var err error
	if j, ok := g.log.(audit.Journaler); ok {
		err = j.Journal(ctx, &e)
	} else {
		err = g.log.Append(ctx, &e)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotRecorded, err)
	}
	g.observe(ctx, &e)
	return nil
}

type callIDKey struct{}

type answerKey struct{}

// Answer returns, inside an Executor, how a person allowed the call it runs:
// approval.AllowOnce, or approval.AllowTenant (a card answered so, or the standing approval an
// earlier one saved). ok is false for a call that asked nobody. A tool whose effect depends on
// the answer (sandbox_allow_host) reads it here.
func Answer(ctx context.Context) (a approval.Answer, ok bool) {
	a, ok = ctx.Value(answerKey{}).(approval.Answer)
	return a, ok
}

// CallID returns the id of the call an Executor is running (the id its audit events carry).
func CallID(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// NewCallID returns a new call id, as the gate makes them (24 hex digits).
func NewCallID() string { return newID() }

func newID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// Now is the gate's clock, for callers that stamp runs.
func (g *Gate) Now() time.Time { return g.clock.Now() }
