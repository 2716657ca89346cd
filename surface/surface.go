// Package surface decides which tools a session holds.
//
// Open computes a session's surface from a policy, the host environment and a session spec,
// through the filters of docs/policy.md in order: registration (is the server built for this
// session: harness, conditions, credentials), the role's ceiling (and, for a child session, its
// parent's surface), the profile and grant, and the gate classes that make a tool absent rather
// than refusing. The result is an exclusive allowlist: a tool outside it is never described to
// the model, and a call to one is denied with permission_denied.
//
// A session that would break its role's invariants (a goal reviewer holding a tool, say) is
// refused with ErrRefused, never started narrower or wider. Explain says, for any tool, which
// filter removed it and why.
package surface

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/wardenhq/warden/policy"
)

// Spec describes the session to open.
type Spec struct {
	// Role is the role id; for a child session it defaults to the parent's.
	Role string
	// Tenant is the tenant id; a child session always has its parent's.
	Tenant string
	// Profile is the profile id; empty for the role's default profile, if any.
	Profile string
	// Harness is the harness id; empty for "default". A child runs on its parent's.
	Harness string
	// Model is the model the session runs on ("" when none is stated). Where the policy lists
	// models, one held back, unlisted or unstated puts a session outside the owner's tenant on
	// the read-only route. A child runs on its parent's.
	Model string
	// Owner treats the tenant as the deployment owner's even when the policy does not mark it so
	// (for what-if questions such as `warden surface --owner`). The policy's own owner mark
	// always counts.
	Owner bool
	// Parent makes this a child session: its surface is a subset of the parent's, and its
	// delegation depth is one more.
	Parent *Surface
	// Retry, when set, opens a retry narrowed to the tools the previous attempt ran with.
	Retry *Retry
}

// Retry describes a run's next attempt.
type Retry struct {
	// Attempt is the attempt number: 2 for the first retry.
	Attempt int
	// Used are the tools the previous attempt actually ran with.
	Used []string
}

// ErrRefused is matched by the error of every session that is refused rather than started.
var ErrRefused = errors.New("session refused")

// RefusedError says why a session was refused.
type RefusedError struct {
	Role   string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("session refused (role %s): %s", e.Role, e.Reason)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

func refuse(role, format string, args ...any) error {
	return &RefusedError{Role: role, Reason: fmt.Sprintf(format, args...)}
}

// ErrNotFound is matched by the error of a spec naming something the policy lacks.
var ErrNotFound = errors.New("not found")

func notFound(kind, id string, known []string) error {
	return fmt.Errorf("%w: %s %q (the policy has %s)", ErrNotFound, kind, id, strings.Join(known, ", "))
}

// Credential is where a live connector's credentials came from in this session.
type Credential struct {
	Connector  *policy.Server
	Source     policy.CredentialSource
	Connection *policy.Connection // nil for the host environment
}

// Surface is an open session's tool surface. It is immutable and safe for concurrent use.
type Surface struct {
	env     *policy.Env
	pol     *policy.Policy
	role    *policy.Role
	tenant  *policy.Tenant
	profile *policy.Profile
	harness *policy.Harness
	parent  *Surface
	facts   policy.Facts
	// ro is the read_only role when the session runs the read-only route though its role is
	// another: its ceiling, credentials and invariants apply on top of the role's. roWhy says
	// why the route is read-only ("" when it is not).
	ro    *policy.Role
	roWhy string

	depth, remaining, attempt int
	limits                    policy.Limits
	hasLimits                 bool

	live       policy.Bitset // servers registered for the session
	registered policy.Bitset // tools that survive registration
	tools      policy.Bitset // the surface
	used       policy.Bitset // a retry's previous tools (nil: not a retry)
	creds      []Credential

	gates sync.Map // tool name → GateResult, worked out once (see Gate)
}

// Open computes the surface of a new session.
func Open(env *policy.Env, spec Spec) (*Surface, error) {
	p := env.Policy()
	s := &Surface{env: env, pol: p, parent: spec.Parent}

	if par := spec.Parent; par != nil {
		if par.env != env {
			return nil, errors.New("a child session must use its parent's policy and environment")
		}
		if spec.Tenant != "" && spec.Tenant != par.tenant.ID {
			return nil, refuse(spec.Role, "a child session belongs to its parent's tenant %s, not %s", par.tenant.ID, spec.Tenant)
		}
		if spec.Harness != "" && spec.Harness != par.harness.ID {
			return nil, refuse(spec.Role, "a child session runs on its parent's harness %s, not %s", par.harness.ID, spec.Harness)
		}
		if spec.Role == "" {
			spec.Role = par.role.ID
			if spec.Profile == "" && par.profile != nil {
				spec.Profile = par.profile.ID
			}
		}
		if spec.Model != "" && spec.Model != par.facts.Model {
			return nil, refuse(spec.Role, "a child session runs on its parent's model %s, not %s", orNone(par.facts.Model), spec.Model)
		}
		spec.Tenant, spec.Harness, spec.Owner, spec.Model = par.tenant.ID, par.harness.ID, par.facts.Owner, par.facts.Model
	}

	var ok bool
	if s.role, ok = p.Role(spec.Role); !ok {
		return nil, notFound("role", spec.Role, roleIDs(p))
	}
	if s.tenant, ok = p.Tenant(spec.Tenant); !ok {
		return nil, notFound("tenant", spec.Tenant, tenantIDs(p))
	}
	hid := spec.Harness
	if hid == "" {
		hid = policy.DefaultHarness
	}
	if s.harness, ok = p.Harness(hid); !ok {
		return nil, notFound("harness", hid, harnessIDs(p))
	}
	if err := s.pickProfile(spec.Profile); err != nil {
		return nil, err
	}

	s.facts = policy.Facts{
		Env: env,
		// A child can ask a person only if its parent could: the parent's boundaries reach it.
		ApprovalChannel: s.role.ApprovalChannel && (s.parent == nil || s.parent.facts.ApprovalChannel),
		Owner:           spec.Owner || s.tenant.Owner,
		Coworkers:       len(s.tenant.Coworkers) > 0,
		Goals:           s.tenant.Goals,
		Harness:         s.harness,
		Model:           spec.Model,
	}
	if s.role.Grants && s.profile != nil {
		s.facts.Skills = s.profile.Grant != nil && len(s.profile.Grant.Skills) > 0
	} else {
		s.facts.Skills = len(s.tenant.Skills) > 0
	}

	// The role and harness must exist in this environment.
	r := s.role
	if !r.When.Eval(&s.facts) {
		return nil, refuse(r.ID, "role %s exists only when %s: %s", r.ID, r.When, r.When.Why(&s.facts))
	}
	if h := s.harness; !h.When.Eval(&s.facts) {
		return nil, refuse(r.ID, "harness %s exists only when %s: %s", h.ID, h.When, h.When.Why(&s.facts))
	}
	if !s.harness.Allows(r.ID) {
		return nil, refuse(r.ID, "role %s may not run on harness %s (it runs %s)", r.ID, s.harness.ID, strings.Join(s.harness.Roles, ", "))
	}

	if err := s.limitsAndDepth(spec); err != nil {
		return nil, err
	}
	if err := s.route(); err != nil {
		return nil, err
	}

	nt := p.NumTools()
	words := (nt + 63) / 64
	backing := make([]uint64, 2*words+(p.NumServers()+63)/64)
	s.registered = policy.Bitset(backing[0:words:words])
	s.tools = policy.Bitset(backing[words : 2*words : 2*words])
	s.live = policy.Bitset(backing[2*words:])

	s.creds = make([]Credential, 0, p.NumConnectors())
	s.register()
	s.narrow()
	if err := s.applyRetry(spec.Retry); err != nil {
		return nil, err
	}
	if err := s.checkInvariants(); err != nil {
		return nil, err
	}
	return s, nil
}

// route decides whether the session runs the read-only route: its model or its harness is not
// certified (policy.ReadOnlyRoute), or its parent's route is read-only. Such a session is
// assembled as the read_only role is, never fenced wide: only connectors that role is handed
// credentials for are built (none, as shipped), and its tools are those of the session's own
// role that the read_only role's ceiling also holds.
func (s *Surface) route() error {
	if par := s.parent; par != nil && par.roWhy != "" {
		s.roWhy = "its parent session runs the read-only route: " + par.roWhy
	} else {
		s.roWhy = s.pol.ReadOnlyRoute(s.harness, s.facts.Model, s.facts.Owner)
	}
	if s.roWhy == "" || s.role.ID == policy.RoleReadOnly {
		return nil
	}
	ro, ok := s.pol.Role(policy.RoleReadOnly)
	if !ok {
		return refuse(s.role.ID, "the session runs the read-only route (%s), and the policy has no role read_only", s.roWhy)
	}
	if !ro.When.Eval(&s.facts) {
		return refuse(s.role.ID, "the session runs the read-only route (%s), and role read_only exists only when %s: %s", s.roWhy, ro.When, ro.When.Why(&s.facts))
	}
	s.ro = ro
	return nil
}

func orNone(model string) string {
	if model == "" {
		return "(none stated)"
	}
	return model
}

func (s *Surface) pickProfile(id string) error {
	r := s.role
	if id == "" && r.DefaultProfile != nil {
		id = r.DefaultProfile.ID
	}
	switch {
	case id == "" && r.Profile == policy.ProfileRequired:
		return refuse(r.ID, "role %s runs a saved profile: name one (the policy has %s)", r.ID, strings.Join(profileIDs(s.pol, r), ", "))
	case id == "":
		return nil
	case r.Profile == policy.ProfileNone:
		return refuse(r.ID, "role %s runs no profile, but the session names %s", r.ID, id)
	}
	pr, ok := s.pol.Profile(id)
	if !ok {
		return notFound("profile", id, profileIDs(s.pol, nil))
	}
	if pr.Role != r {
		return refuse(r.ID, "profile %s runs as role %s, not %s", pr.ID, pr.Role.ID, r.ID)
	}
	s.profile = pr
	return nil
}

func (s *Surface) limitsAndDepth(spec Spec) error {
	r := s.role
	switch {
	case s.profile != nil:
		s.limits, s.hasLimits = s.profile.Limits, true
	case r.Limits != nil:
		s.limits, s.hasLimits = *r.Limits, true
	default:
		s.limits = policy.Limits{MaxAttempts: 1}
	}
	s.remaining = s.limits.MaxDelegationDepth
	if par := spec.Parent; par != nil {
		if par.remaining < 1 {
			return refuse(r.ID, "the parent session may not delegate: its delegation depth is used up (depth %d)", par.depth)
		}
		s.depth = par.depth + 1
		s.remaining = min(s.remaining, par.remaining-1)
	}
	return nil
}

// register applies the registration filter: which servers are built, and which of their
// tools register.
func (s *Surface) register() {
	p := s.pol
	for srv := range p.Servers() {
		if s.serverLive(srv) {
			s.live.Add(srv.Index)
		}
	}
	for srv := range p.Servers() {
		if s.live.Has(srv.Index) && !s.allLive(srv.Needs) {
			s.live.Del(srv.Index)
		}
	}
	for i := range s.live.All() {
		s.registered.Or(p.ServerAt(i).Set)
	}
	s.registered.AndNot(p.Unavailable())
	for _, t := range p.Conditional() {
		if s.registered.Has(t.Index) && (!t.When.Eval(&s.facts) || !s.allLive(t.Needs)) {
			s.registered.Del(t.Index)
		}
	}
}

// serverLive decides whether a server is built for the session, before needs.
func (s *Surface) serverLive(srv *policy.Server) bool {
	if s.parent != nil && !s.parent.live.Has(srv.Index) {
		// A child is handed nothing its parent was not (S5, S9): no tool of such a server can
		// be in its surface anyway, and building it would hand the child credentials.
		return false
	}
	switch srv.Kind {
	case policy.KindBuiltin:
		if !s.harness.Builtins {
			return false
		}
	case policy.KindConnector:
		if !s.role.MayHandle(srv, s.grant()) || s.ro != nil && !s.ro.MayHandle(srv, nil) {
			return false
		}
		if !srv.When.Eval(&s.facts) {
			return false
		}
		res := s.tenant.Stored(srv)
		switch {
		case res != nil:
			s.creds = append(s.creds, Credential{Connector: srv, Source: res.Source, Connection: res.Connection})
		case s.facts.Owner && s.env.HostCredentials(srv):
			s.creds = append(s.creds, Credential{Connector: srv, Source: policy.SourceHost})
		default:
			return false
		}
		return true
	}
	return srv.When.Eval(&s.facts)
}

func (s *Surface) allLive(servers []*policy.Server) bool {
	for _, n := range servers {
		if !s.live.Has(n.Index) {
			return false
		}
	}
	return true
}

func (s *Surface) grant() *policy.Grant {
	if s.profile == nil {
		return nil
	}
	return s.profile.Grant
}

// narrow applies the ceiling, the profile and grant, the parent, and the gate classes (among
// them the egress cards, absent while SANDBOX_EGRESS is open).
func (s *Surface) narrow() {
	p, r := s.pol, s.role
	t := s.tools
	t.Copy(r.Ceiling)
	if s.profile != nil {
		t.And(s.profile.Requested)
		if r.Grants {
			t.Or(s.profile.Granted)
		}
	}
	t.And(s.registered)
	if s.ro != nil {
		t.And(s.ro.Ceiling)
	}
	if s.parent != nil {
		t.And(s.parent.tools)
	}
	if !s.facts.ApprovalChannel {
		t.AndNot(p.AbsentWithoutChannel())
	}
	if !s.env.ApprovalsOn() {
		t.AndNot(p.AbsentWithoutApprovals())
	}
	if s.env.EgressOpen() {
		// Nothing to ask for: the sandbox already reaches every public host.
		t.AndNot(p.EgressCards())
	}
	if s.remaining == 0 {
		// Absent beats refusing: a session that may not delegate is not offered the tools that
		// would try.
		t.AndNot(p.Delegating())
	}
}

func (s *Surface) applyRetry(rt *Retry) error {
	if rt == nil {
		s.attempt = 1
		return nil
	}
	max := max(s.limits.MaxAttempts, 1)
	switch {
	case rt.Attempt < 2:
		return fmt.Errorf("a retry is attempt 2 or later, not %d", rt.Attempt)
	case rt.Attempt > max:
		return refuse(s.role.ID, "attempt %d exceeds maxAttempts %d", rt.Attempt, max)
	}
	s.attempt = rt.Attempt
	s.used = s.pol.NewToolSet()
	for _, name := range rt.Used {
		t, ok := s.pol.Tool(name)
		if !ok {
			return fmt.Errorf("%w: the previous attempt ran with %q, which is not a tool of this policy", ErrNotFound, name)
		}
		s.used.Add(t.Index)
	}
	s.tools.And(s.used)
	return nil
}

// checkInvariants refuses a session that would break its role's invariants.
func (s *Surface) checkInvariants() error {
	r, inv := s.role, s.role.Invariants
	if inv.NoTools && !s.tools.Empty() {
		return refuse(r.ID, "role %s may hold no tools, but this session would hold %s", r.ID, s.names(s.tools, 5))
	}
	if inv.NoGrant && s.profile != nil && s.profile.Grant != nil {
		return refuse(r.ID, "role %s may have no grant, but profile %s has one", r.ID, s.profile.ID)
	}
	if inv.NoDelegation && s.limits.MaxDelegationDepth > 0 {
		return refuse(r.ID, "role %s may not delegate, but its limits allow depth %d", r.ID, s.limits.MaxDelegationDepth)
	}
	if s.tools.Intersects(inv.Forbidden) {
		bad := s.tools.Clone()
		bad.And(inv.Forbidden)
		return refuse(r.ID, "role %s must never hold %s (its invariants forbid them)", r.ID, s.names(bad, 5))
	}
	if ro := s.ro; ro != nil && s.tools.Intersects(ro.Invariants.Forbidden) {
		bad := s.tools.Clone()
		bad.And(ro.Invariants.Forbidden)
		return refuse(r.ID, "the session runs the read-only route, and role read_only must never hold %s", s.names(bad, 5))
	}
	if s.parent != nil && !s.tools.SubsetOf(s.parent.tools) {
		// Unreachable by construction (the parent's surface is intersected in); kept so that a
		// future change to narrow() cannot widen a child silently.
		return refuse(r.ID, "a child session's surface must be a subset of its parent's")
	}
	return nil
}

func (s *Surface) names(set policy.Bitset, max int) string {
	var out []string
	n := 0
	for i := range set.All() {
		if n < max {
			out = append(out, s.pol.ToolAt(i).Name)
		}
		n++
	}
	if n > max {
		out = append(out, fmt.Sprintf("%d more", n-max))
	}
	return strings.Join(out, ", ")
}

// Child opens a child session: the same tenant, harness and environment, a surface that is a
// subset of this one, one level deeper. An empty role keeps this session's role and profile.
func (s *Surface) Child(role, profile string) (*Surface, error) {
	return Open(s.env, Spec{Role: role, Profile: profile, Parent: s})
}

// Policy is the policy the surface was computed under.
func (s *Surface) Policy() *policy.Policy { return s.pol }

// Env is the environment the surface was computed under.
func (s *Surface) Env() *policy.Env { return s.env }

// Role is the session's role.
func (s *Surface) Role() *policy.Role { return s.role }

// Tenant is the session's tenant.
func (s *Surface) Tenant() *policy.Tenant { return s.tenant }

// Profile is the session's profile, or nil.
func (s *Surface) Profile() *policy.Profile { return s.profile }

// Harness is the session's harness.
func (s *Surface) Harness() *policy.Harness { return s.harness }

// ApprovalChannel reports whether a person can answer this session's approval cards: its
// role has a channel and, for a child, so had its parent.
func (s *Surface) ApprovalChannel() bool { return s.facts.ApprovalChannel }

// ApprovalByElicitation reports whether the session may answer its own approval cards in its
// own MCP client, by elicitation: its role allows it, it has an approval channel, and it is
// not a child. A child's client is a process its parent's agent runs with the token
// spawn_subagent handed out, not a person's chat: asking it would let the agent approve
// itself. Whether the client can be asked at all is the gateway's to see.
func (s *Surface) ApprovalByElicitation() bool {
	return s.facts.ApprovalChannel && s.role.ApprovalByElicitation && s.parent == nil
}

// Model is the model the session runs on; "" when it stated none.
func (s *Surface) Model() string { return s.facts.Model }

// ReadOnly reports whether the session runs the read-only route, and why: its model or its
// harness is not certified (see policy.ReadOnlyRoute), or it is of role read_only itself.
func (s *Surface) ReadOnly() (bool, string) {
	switch {
	case s.roWhy != "":
		return true, s.roWhy
	case s.role.ID == policy.RoleReadOnly:
		return true, "the session's role is read_only"
	}
	return false, ""
}

// Owner reports whether the session's tenant counts as the deployment owner's.
func (s *Surface) Owner() bool { return s.facts.Owner }

// Depth is the session's delegation depth: 0 for a root session.
func (s *Surface) Depth() int { return s.depth }

// RemainingDepth is how many levels of children the session may still open: 0 when it may not
// delegate at all.
func (s *Surface) RemainingDepth() int { return s.remaining }

// Attempt is the attempt number: 1 unless the session is a retry.
func (s *Surface) Attempt() int { return s.attempt }

// Limits returns the session's run limits, and whether any are declared (a person's chat has
// none unless its role sets them).
func (s *Surface) Limits() (policy.Limits, bool) { return s.limits, s.hasLimits }

// Has reports whether the session holds the named tool.
func (s *Surface) Has(name string) bool {
	t, ok := s.pol.Tool(name)
	return ok && s.tools.Has(t.Index)
}

// Set returns the surface as a set of tool indexes. The caller must not modify it.
func (s *Surface) Set() policy.Bitset { return s.tools }

// Len is the number of tools the session holds.
func (s *Surface) Len() int { return s.tools.Len() }

// Tools returns the names of the tools the session holds, in policy order.
func (s *Surface) Tools() []string {
	out := make([]string, 0, s.tools.Len())
	for i := range s.tools.All() {
		out = append(out, s.pol.ToolAt(i).Name)
	}
	return out
}

// Credentials lists the live connectors and where their credentials came from.
func (s *Surface) Credentials() []Credential {
	out := make([]Credential, 0, len(s.creds))
	for _, c := range s.creds {
		if s.live.Has(c.Connector.Index) {
			out = append(out, c)
		}
	}
	return out
}

// Live reports whether a server is built for the session.
func (s *Surface) Live(srv *policy.Server) bool { return s.live.Has(srv.Index) }

func roleIDs(p *policy.Policy) []string {
	var out []string
	for r := range p.Roles() {
		out = append(out, r.ID)
	}
	return out
}

func tenantIDs(p *policy.Policy) []string {
	var out []string
	for t := range p.Tenants() {
		out = append(out, t.ID)
	}
	return out
}

func harnessIDs(p *policy.Policy) []string {
	var out []string
	for h := range p.Harnesses() {
		out = append(out, h.ID)
	}
	return out
}

func profileIDs(p *policy.Policy, r *policy.Role) []string {
	var out []string
	for pr := range p.Profiles() {
		if r == nil || pr.Role == r {
			out = append(out, pr.ID)
		}
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return slices.Clip(out)
}
