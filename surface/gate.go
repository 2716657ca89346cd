package surface

import (
	"fmt"

	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/verdict"
)

// GateResult is what the per-call gate requires of a tool's calls in this session, before
// looking at any call's arguments: the static part of the gate. The argument-aware parts (the
// amount a call would spend, argument constraints) are decided per call on top of it.
type GateResult struct {
	Tool     string
	Decision verdict.Decision
	// Code is set unless the decision is a plain allow.
	Code   verdict.Code
	Reason string
	// Billing is set when the tool's calls also pass the spending gate.
	Billing *policy.Billing
	// Note says which calls the gate covers, when narrower than every call.
	Note string
	// Effects, when set, narrows an approval to the calls whose review finds an effect of one
	// of these operations: review judges each call.
	Effects []policy.Effect
}

// Gate returns the static gate of the named tool for this session. A tool outside the surface
// is denied with permission_denied.
//
// A surface does not change once open, and its environment does not either: each tool's gate
// is worked out once (its reasons are written out with fmt) and kept.
func (s *Surface) Gate(name string) GateResult {
	if g, ok := s.gates.Load(name); ok {
		return g.(GateResult)
	}
	g := s.gate(name)
	if _, in := s.pol.Tool(name); in {
		s.gates.Store(name, g) // names outside the policy are not kept: there is no end to them
	}
	return g
}

func (s *Surface) gate(name string) GateResult {
	res := GateResult{Tool: name}
	t, ok := s.pol.Tool(name)
	if !ok || !s.tools.Has(t.Index) {
		res.Code = verdict.PermissionDenied
		res.Reason = s.Explain(name).Reason
		return res
	}
	res.Billing = t.Server.Billing
	g := t.Gate
	if g == nil {
		res.Decision, res.Reason = verdict.Allow, "no gate"
		return res
	}
	res.Note, res.Effects = g.Note, g.Effects
	if g.Requires != nil {
		if st := s.stateOf(g.Requires); !st.On {
			res.Code = verdict.SwitchOff
			res.Reason = fmt.Sprintf("its calls need %s on: %s", g.Requires.Name, st.Describe())
			return res
		}
	}
	switch {
	case !g.Approval:
		res.Decision, res.Reason = verdict.Allow, "its switch is on"
	case !s.facts.ApprovalChannel:
		// Whether approvals are on or off: a session that cannot ask anybody refuses.
		res.Code = verdict.NoApprovalChannel
		res.Reason = fmt.Sprintf("it needs a person's approval and %s", s.noChannel())
	case s.env.ApprovalsOn():
		res.Decision, res.Code = verdict.Ask, verdict.ApprovalRequired
		res.Reason = "it asks a person before each call while approvals are on"
	default:
		st, _ := s.env.Switch(policy.SwitchRequireApproval)
		res.Decision, res.Reason = verdict.Allow, fmt.Sprintf("approvals are off: %s", st.Describe())
	}
	return res
}

func (s *Surface) stateOf(sw *policy.Switch) policy.SwitchState {
	st, _ := s.env.Switch(sw.Name)
	return st
}

// noChannel says why the session has nobody to ask.
func (s *Surface) noChannel() string {
	if s.role.ApprovalChannel {
		return "this child session's parent has no approval channel, so neither has the child"
	}
	return fmt.Sprintf("role %s has no approval channel", s.role.ID)
}
