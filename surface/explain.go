package surface

import (
	"fmt"
	"slices"
	"strings"

	"github.com/wardenhq/warden/policy"
)

// Filter names the stage that removed a tool from a session's surface.
type Filter string

// The filters, in the order they apply.
const (
	FilterRegistration Filter = "registration"
	FilterCeiling      Filter = "ceiling"
	FilterProfile      Filter = "profile"
	FilterGrant        Filter = "grant"
	FilterGate         Filter = "gate"
)

// Explanation says whether a session holds a tool and why.
type Explanation struct {
	Tool  string
	Given bool
	// Filter is the stage that removed the tool; empty when it is given.
	Filter Filter
	Reason string
}

// Explain says why the session holds the named tool, or which filter removed it and why. It
// answers for names the policy does not know too (withheld or unknown tools), which are never
// registered.
func (s *Surface) Explain(name string) Explanation {
	t, ok := s.pol.Tool(name)
	if !ok {
		if srv, w, withheld := s.pol.WithheldFor(name); withheld {
			return Explanation{Tool: name, Filter: FilterRegistration,
				Reason: fmt.Sprintf("withheld: %s never builds it: %s", srv.ID, w)}
		}
		return Explanation{Tool: name, Filter: FilterRegistration, Reason: "not a tool of this policy"}
	}
	e := s.explain(t)
	e.Tool = name
	if e.Given != s.tools.Has(t.Index) {
		// Explain mirrors Open's set algebra step by step; if they ever disagree, say so rather
		// than give a confident wrong answer.
		e.Reason = fmt.Sprintf("inconsistent explanation (please report): the surface says given=%v; %s", s.tools.Has(t.Index), e.Reason)
		e.Given = s.tools.Has(t.Index)
	}
	return e
}

// Absent explains every tool of the policy that the session does not hold, in policy order.
func (s *Surface) Absent() []Explanation {
	out := make([]Explanation, 0, s.pol.NumTools()-s.tools.Len())
	for t := range s.pol.Tools() {
		if !s.tools.Has(t.Index) {
			out = append(out, s.Explain(t.Name))
		}
	}
	return out
}

func (s *Surface) explain(t *policy.Tool) Explanation {
	r, pr := s.role, s.profile
	if !s.registered.Has(t.Index) {
		return Explanation{Filter: FilterRegistration, Reason: s.registrationReason(t)}
	}
	if s.ro != nil && !s.ro.Ceiling.Has(t.Index) {
		return Explanation{Filter: FilterCeiling, Reason: fmt.Sprintf(
			"the session runs the read-only route (%s), and it is not in the ceiling of role read_only (%s)", s.roWhy, selectorList(s.ro.CeilingSelectors))}
	}
	if s.parent != nil && !s.parent.tools.Has(t.Index) {
		return Explanation{Filter: FilterCeiling, Reason: "the parent session does not hold it, and a child's surface is a subset of its parent's"}
	}
	how := ""
	switch {
	case pr != nil && r.Grants && pr.Granted.Has(t.Index):
		_, how = pr.GrantFor(t)
	case t.GrantOnly():
		return s.grantOnlyReason(t)
	case pr != nil && r.Grants && grantPath(t) && !r.Ceiling.Has(t.Index):
		_, why := pr.GrantFor(t)
		if t.OptIn && !pr.Requested.Has(t.Index) {
			return Explanation{Filter: FilterProfile, Reason: why}
		}
		return Explanation{Filter: FilterGrant, Reason: why}
	case !r.Ceiling.Has(t.Index):
		return Explanation{Filter: FilterCeiling, Reason: s.ceilingReason(t)}
	case pr != nil && !pr.Requested.Has(t.Index):
		return Explanation{Filter: FilterProfile, Reason: fmt.Sprintf("profile %s does not ask for it", pr.ID)}
	case pr != nil:
		how = fmt.Sprintf("profile %s asks for it, within the ceiling of role %s", pr.ID, r.ID)
	default:
		how = fmt.Sprintf("in the ceiling of role %s", r.ID)
	}
	if s.remaining == 0 && s.pol.Delegating().Has(t.Index) {
		return Explanation{Filter: FilterProfile, Reason: "it hands work to another agent, and " + s.noDelegation()}
	}
	if s.env.EgressOpen() && s.pol.EgressCards().Has(t.Index) {
		st, _ := s.env.Switch(policy.SwitchSandboxEgress)
		// st.Describe() reads `SANDBOX_EGRESS is open ("open")`.
		return Explanation{Filter: FilterGate, Reason: st.Describe() + ": every public host is reachable, there is nothing to ask for"}
	}
	if g := t.Gate; g != nil && g.Approval {
		if !s.facts.ApprovalChannel && g.AbsentWithoutChannel {
			return Explanation{Filter: FilterGate, Reason: fmt.Sprintf(
				"it asks a person before each call and %s; it is declared absent rather than refusing", s.noChannel())}
		}
		if !s.env.ApprovalsOn() && g.AbsentWithoutApprovals {
			st, _ := s.env.Switch(policy.SwitchRequireApproval)
			return Explanation{Filter: FilterGate, Reason: fmt.Sprintf(
				"approvals are off (%s), and it is declared absent rather than run unasked", st.Describe())}
		}
	}
	if s.used != nil && !s.used.Has(t.Index) {
		return Explanation{Filter: FilterProfile, Reason: fmt.Sprintf(
			"attempt %d is narrowed to the tools the previous attempt ran with, and that attempt did not use it", s.attempt)}
	}
	return Explanation{Given: true, Reason: how}
}

// grantPath reports whether a grant is the way a tool reaches a session.
func grantPath(t *policy.Tool) bool {
	return t.Server.Kind == policy.KindConnector || t.Grantable || t.Skill != ""
}

func (s *Surface) grantOnlyReason(t *policy.Tool) Explanation {
	pr := s.profile
	switch {
	case pr == nil && t.OptIn:
		return Explanation{Filter: FilterProfile, Reason: "opt-in: given only to a profile that asks for it by name, and this session runs no profile"}
	case pr == nil:
		return Explanation{Filter: FilterGrant, Reason: fmt.Sprintf("rides on the skill %s: given only when a grant names it, and this session has no grant", t.Skill)}
	case !s.role.Grants:
		return Explanation{Filter: FilterGrant, Reason: fmt.Sprintf("given only through a grant, and role %s takes none", s.role.ID)}
	}
	_, why := pr.GrantFor(t)
	if t.OptIn && !pr.Requested.Has(t.Index) {
		return Explanation{Filter: FilterProfile, Reason: why}
	}
	return Explanation{Filter: FilterGrant, Reason: why}
}

func (s *Surface) ceilingReason(t *policy.Tool) string {
	r := s.role
	for _, sel := range r.CeilingSelectors {
		if sel.Negated && sel.Match(t) {
			return fmt.Sprintf("removed from the ceiling of role %s by %s", r.ID, sel)
		}
	}
	return fmt.Sprintf("not in the ceiling of role %s (%s)", r.ID, selectorList(r.CeilingSelectors))
}

func selectorList(sels []policy.Selector) string {
	if len(sels) == 0 {
		return "it is empty"
	}
	const show = 4
	var out []string
	for i, s := range sels {
		if i == show {
			out = append(out, fmt.Sprintf("and %d more", len(sels)-show))
			break
		}
		out = append(out, s.String())
	}
	return strings.Join(out, ", ")
}

func (s *Surface) registrationReason(t *policy.Tool) string {
	srv := s.pol.ServerAt(t.Server.Index)
	if !s.live.Has(srv.Index) {
		return s.serverReason(srv)
	}
	if t.Unavailable != "" {
		return t.Unavailable
	}
	if !t.When.Eval(&s.facts) {
		return fmt.Sprintf("it registers only when %s: %s", t.When, t.When.Why(&s.facts))
	}
	if missing := s.notLive(t.Needs); len(missing) > 0 {
		return fmt.Sprintf("a joint tool: it also reads %s, and %s not live in this session", names(t.Needs), isAre(missing))
	}
	return "not registered"
}

func (s *Surface) serverReason(srv *policy.Server) string {
	r := s.role
	if s.parent != nil && !s.parent.live.Has(srv.Index) {
		return fmt.Sprintf("the parent session does not build %s, and a child is handed nothing its parent was not", srv.ID)
	}
	switch srv.Kind {
	case policy.KindBuiltin:
		if !s.harness.Builtins {
			return fmt.Sprintf("the harness %s offers no built-in tools", s.harness.ID)
		}
	case policy.KindConnector:
		if ro := s.ro; ro != nil && r.MayHandle(srv, s.grant()) && !ro.MayHandle(srv, nil) {
			return fmt.Sprintf("the session runs the read-only route (%s), and role read_only is not handed credentials for %s, so it is never built", s.roWhy, srv.ID)
		}
		if !r.MayHandle(srv, s.grant()) {
			switch r.Credentials {
			case policy.CredentialsNone:
				return fmt.Sprintf("role %s is handed no connector credentials, so %s is never built", r.ID, srv.ID)
			case policy.CredentialsList:
				return fmt.Sprintf("role %s is handed credentials only for %s, so %s is never built", r.ID, names(r.CredentialList), srv.ID)
			default:
				if s.profile == nil || s.profile.Grant == nil {
					return fmt.Sprintf("the session is handed only its grant's credentials and has no grant, so %s is never built", srv.ID)
				}
				return fmt.Sprintf("the session is handed only its grant's credentials, and the grant of profile %s does not name %s", s.profile.ID, srv.ID)
			}
		}
		if !srv.When.Eval(&s.facts) {
			return fmt.Sprintf("connector %s is offered only when %s: %s", srv.ID, srv.When, srv.When.Why(&s.facts))
		}
		if s.tenant.Stored(srv) == nil {
			if !s.facts.Owner {
				return fmt.Sprintf("tenant %s has no enabled connection for %s and none is shared with it; the host environment serves only the owner's tenant", s.tenant.ID, srv.ID)
			}
			if len(srv.HostEnv) == 0 {
				return fmt.Sprintf("tenant %s has no enabled connection for %s, none is shared with it, and %s takes no credentials from the host environment", s.tenant.ID, srv.ID, srv.ID)
			}
			return fmt.Sprintf("tenant %s has no enabled connection for %s, none is shared with it, and the host environment does not set all of %s", s.tenant.ID, srv.ID, strings.Join(srv.HostEnv, ", "))
		}
	}
	if !srv.When.Eval(&s.facts) {
		return fmt.Sprintf("server %s registers only when %s: %s", srv.ID, srv.When, srv.When.Why(&s.facts))
	}
	if missing := s.notLive(srv.Needs); len(missing) > 0 {
		return fmt.Sprintf("server %s needs %s live, and %s not", srv.ID, names(srv.Needs), isAre(missing))
	}
	return fmt.Sprintf("server %s is not built for this session", srv.ID)
}

func (s *Surface) notLive(servers []*policy.Server) []*policy.Server {
	var out []*policy.Server
	for _, n := range servers {
		if !s.live.Has(n.Index) {
			out = append(out, n)
		}
	}
	return out
}

func names(servers []*policy.Server) string {
	ids := make([]string, len(servers))
	for i, s := range servers {
		ids[i] = s.ID
	}
	return strings.Join(slices.Clip(ids), ", ")
}

func isAre(servers []*policy.Server) string {
	if len(servers) == 1 {
		return servers[0].ID + " is"
	}
	return names(servers) + " are"
}

// noDelegation says why the session may not delegate.
func (s *Surface) noDelegation() string {
	switch {
	case s.parent != nil:
		return fmt.Sprintf("this session's delegation depth is used up (it is at depth %d)", s.depth)
	case s.profile != nil:
		return fmt.Sprintf("profile %s has maxDelegationDepth 0", s.profile.ID)
	case s.role.Limits != nil:
		return fmt.Sprintf("role %s allows no delegation (limits.maxDelegationDepth is 0)", s.role.ID)
	}
	return fmt.Sprintf("role %s declares no delegation depth (set limits.maxDelegationDepth on the role to allow it)", s.role.ID)
}
