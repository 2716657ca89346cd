package policy

import (
	"strings"
)

func (c *compiler) compileRoles() {
	for i := range c.cfg.Roles {
		rc := &c.cfg.Roles[i]
		if !c.checkID(rc.Node, "a role", rc.ID, idPattern) {
			continue
		}
		if _, dup := c.roleCfg[rc.ID]; dup {
			c.errorf(rc.At("id"), "role %q is configured twice", rc.ID)
			continue
		}
		c.roleCfg[rc.ID] = rc
	}
	for _, std := range standardRoles {
		c.addRole(c.standardRole(std, c.roleCfg[std.id]))
	}
	for i := range c.cfg.Roles {
		rc := &c.cfg.Roles[i]
		if c.roleCfg[rc.ID] != rc || isStandardRole(rc.ID) {
			continue
		}
		c.warnTypo(rc)
		c.addRole(c.newRole(rc))
	}
}

// warnTypo warns of a new role whose id is one edit from a standard role's and that no
// profile runs as: most likely the standard role misspelt, which would otherwise be taken as
// an eighth role with none of the standard one's settings.
func (c *compiler) warnTypo(rc *RoleConfig) {
	for _, pc := range c.cfg.Profiles {
		if pc.Role.Value == rc.ID {
			return
		}
	}
	for _, std := range standardRoles {
		if oneEdit(rc.ID, std.id) {
			c.warnf(rc.At("id"), "role %q is a new role that no profile runs as; did you mean the standard role %q?", rc.ID, std.id)
			return
		}
	}
}

// oneEdit reports whether b is a with one character inserted, deleted, replaced, or two
// neighbours swapped.
func oneEdit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if a == b || len(b)-len(a) > 1 {
		return false
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if len(a) < len(b) {
		return a[i:] == b[i+1:] // one inserted
	}
	if a[i+1:] == b[i+1:] {
		return true // one replaced
	}
	return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:] // swapped
}

func isStandardRole(id string) bool {
	for _, s := range standardRoles {
		if s.id == id {
			return true
		}
	}
	return false
}

func (c *compiler) addRole(r *Role) {
	r.Index = len(c.pol.roles)
	c.pol.roleIndex[r.ID] = r.Index
	c.pol.roles = append(c.pol.roles, r)
}

// standardRole builds a standard role, with what the policy may set applied.
func (c *compiler) standardRole(std standardRole, rc *RoleConfig) *Role {
	r := &Role{
		ID: std.id, Description: std.description, Standard: true,
		ApprovalChannel: std.approvalChannel, ApprovalByElicitation: std.approvalByElicitation,
		Credentials: std.credentials, Profile: std.profile, Grants: std.grants,
		Invariants: Invariants{NoTools: std.noTools, NoGrant: std.noGrant, NoDelegation: std.noDelegation},
	}
	what := "the ceiling of role " + std.id
	defaults := make([]Name, len(std.ceiling))
	for i, s := range std.ceiling {
		defaults[i] = Name{Value: s}
	}
	forbid := make([]Name, len(std.forbid))
	for i, s := range std.forbid {
		forbid[i] = Name{Value: s}
	}
	if rc == nil {
		r.CeilingSelectors, r.Ceiling = c.compileSelectors(defaults, selectorUse{what: what, lenient: true})
		r.Invariants.Forbid, r.Invariants.Forbidden = c.compileSelectors(forbid, selectorUse{what: "the invariants of role " + std.id, lenient: true, grantOnly: true})
		return r
	}
	r.Pos = rc.Pos
	if rc.Description != "" {
		r.Description = rc.Description
	}
	fixed := func(key string, written, is bool) {
		if rc.Has(key) && written != is {
			c.errorf(rc.At(key), "role %s is standard: %s is fixed at %v for it", std.id, key, is)
		}
	}
	if rc.ApprovalChannel != nil {
		fixed("approvalChannel", *rc.ApprovalChannel, std.approvalChannel)
	}
	if rc.Grants != nil {
		fixed("grants", *rc.Grants, std.grants)
	}
	if rc.Has("profile") && rc.Profile != std.profile.String() {
		c.errorf(rc.At("profile"), "role %s is standard: its profile mode is fixed at %s", std.id, std.profile)
	}
	r.When = compileCond(c.problems, rc.When, c.scope)
	c.applyElicitation(r, rc)
	c.applyCredentials(r, rc)
	if rc.Ceiling != nil {
		r.CeilingSelectors, r.Ceiling = c.compileSelectors(rc.Ceiling, selectorUse{what: what})
	} else {
		r.CeilingSelectors, r.Ceiling = c.compileSelectors(defaults, selectorUse{what: what, lenient: true})
	}
	var added []Name
	if inv := rc.Invariants; inv != nil {
		r.Invariants.NoTools = r.Invariants.NoTools || inv.NoTools
		r.Invariants.NoGrant = r.Invariants.NoGrant || inv.NoGrant
		r.Invariants.NoDelegation = r.Invariants.NoDelegation || inv.NoDelegation
		added = inv.Forbid
	}
	std1, set1 := c.compileSelectors(forbid, selectorUse{what: "the invariants of role " + std.id, lenient: true, grantOnly: true})
	std2, set2 := c.compileSelectors(added, selectorUse{what: "the invariants of role " + std.id, grantOnly: true})
	set1.Or(set2)
	r.Invariants.Forbid, r.Invariants.Forbidden = append(std1, std2...), set1
	r.Limits = c.roleLimits(rc, r.Invariants)
	r.Sessions = c.roleSessions(rc)
	c.checkCeilingInvariants(r, rc)
	return r
}

// newRole builds a role the policy declares.
func (c *compiler) newRole(rc *RoleConfig) *Role {
	r := &Role{ID: rc.ID, Description: rc.Description, Pos: rc.Pos}
	if rc.ApprovalChannel != nil {
		r.ApprovalChannel = *rc.ApprovalChannel
	}
	if rc.Grants != nil {
		r.Grants = *rc.Grants
	}
	switch rc.Profile {
	case "", "none":
	case "optional":
		r.Profile = ProfileOptional
	case "required":
		r.Profile = ProfileRequired
	default:
		c.errorf(rc.At("profile"), "role %s: profile must be none, optional or required, not %q", rc.ID, rc.Profile)
	}
	if r.Grants && r.Profile == ProfileNone {
		c.errorf(rc.At("grants"), "role %s takes grants but runs no profile: a grant belongs to a profile", rc.ID)
	}
	r.When = compileCond(c.problems, rc.When, c.scope)
	c.applyElicitation(r, rc)
	c.applyCredentials(r, rc)
	what := "the ceiling of role " + rc.ID
	r.CeilingSelectors, r.Ceiling = c.compileSelectors(rc.Ceiling, selectorUse{what: what})
	if inv := rc.Invariants; inv != nil {
		r.Invariants.NoTools, r.Invariants.NoGrant, r.Invariants.NoDelegation = inv.NoTools, inv.NoGrant, inv.NoDelegation
		r.Invariants.Forbid, r.Invariants.Forbidden = c.compileSelectors(inv.Forbid, selectorUse{what: "the invariants of role " + rc.ID, grantOnly: true})
	} else {
		r.Invariants.Forbidden = c.pol.NewToolSet()
	}
	r.Limits = c.roleLimits(rc, r.Invariants)
	r.Sessions = c.roleSessions(rc)
	c.checkCeilingInvariants(r, rc)
	return r
}

// applyElicitation sets whether the role's sessions may answer their own cards by elicitation.
// A role nobody may ask has no cards to answer: on there would make the session its own
// approver where the role says nobody approves.
func (c *compiler) applyElicitation(r *Role, rc *RoleConfig) {
	if rc.ApprovalByElicitation == nil {
		return
	}
	r.ApprovalByElicitation = *rc.ApprovalByElicitation
	if r.ApprovalByElicitation && !r.ApprovalChannel {
		c.errorf(rc.At("approvalByElicitation"), "role %s has no approval channel, so approvalByElicitation cannot be on: its sessions may not answer their own cards", r.ID)
	}
}

func (c *compiler) applyCredentials(r *Role, rc *RoleConfig) {
	cr := rc.Credentials
	switch cr.Mode {
	case "":
		return
	case "all":
		r.Credentials = CredentialsAll
	case "none":
		r.Credentials = CredentialsNone
	case "grant":
		r.Credentials = CredentialsGrant
	case "list":
		r.Credentials = CredentialsList
		r.credSet = NewBitset(len(c.pol.servers))
		for _, n := range cr.Connectors {
			s, ok := c.pol.Server(n.Value)
			switch {
			case !ok:
				c.errorf(n.Pos, "role %s is handed credentials for %q, which is not a connector of this policy", r.ID, n.Value)
			case s.Kind != KindConnector:
				c.errorf(n.Pos, "role %s: %q is a platform server, not a connector; credentials name connectors", r.ID, n.Value)
			case r.credSet.Has(s.Index):
				c.errorf(n.Pos, "role %s names the connector %q twice in credentials", r.ID, n.Value)
			default:
				r.credSet.Add(s.Index)
				r.CredentialList = append(r.CredentialList, s)
			}
		}
	}
	if r.Credentials == CredentialsGrant && !r.Grants {
		c.errorf(cr.Pos, "role %s is handed its grant's credentials but takes no grant", r.ID)
	}
}

// roleLimits compiles the limits of sessions that run no profile. Unlike a profile's, a
// role's limits may leave fields out: what is not written is not limited here.
func (c *compiler) roleLimits(rc *RoleConfig, inv Invariants) *Limits {
	if rc.Limits == nil {
		return nil
	}
	c.checkLimits(rc.Limits, "role "+rc.ID)
	l := mergeLimits(Limits{MaxAttempts: 1}, rc.Limits)
	if inv.NoDelegation && l.MaxDelegationDepth > 0 {
		c.errorf(rc.Limits.At("maxDelegationDepth"), "role %s may not delegate, but its limits allow maxDelegationDepth %d", rc.ID, l.MaxDelegationDepth)
	}
	return &l
}

// roleSessions compiles a role's caps on its sessions per tenant.
func (c *compiler) roleSessions(rc *RoleConfig) RoleSessions {
	var rs RoleSessions
	sc := rc.Sessions
	if sc == nil {
		return rs
	}
	for _, f := range []struct {
		key string
		v   *int
		to  *int
	}{{"maxLive", sc.MaxLive, &rs.MaxLive}, {"perMinute", sc.PerMinute, &rs.PerMinute}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 {
			c.errorf(sc.At(f.key), "role %s: sessions.%s must be 0 (no cap) or more, not %d", rc.ID, f.key, *f.v)
			continue
		}
		*f.to = *f.v
	}
	return rs
}

// checkCeilingInvariants reports a ceiling that its own role's invariants forbid: the session
// check would refuse every such session, so say it when the policy is loaded.
func (c *compiler) checkCeilingInvariants(r *Role, rc *RoleConfig) {
	at := rc.At("ceiling")
	if r.Invariants.NoTools && !r.Ceiling.Empty() {
		c.errorf(at, "role %s may hold no tools, but its ceiling selects %s", r.ID, c.toolNames(r.Ceiling, 5))
		return
	}
	bad := r.Ceiling.Clone()
	bad.And(r.Invariants.Forbidden)
	if !bad.Empty() {
		c.errorf(at, "the ceiling of role %s selects %s, which its invariants forbid", r.ID, c.toolNames(bad, 5))
	}
}

// toolNames lists up to max names of a set, for messages.
func (c *compiler) toolNames(set Bitset, max int) string {
	var names []string
	n := 0
	for i := range set.All() {
		if n < max {
			names = append(names, c.pol.tools[i].Name)
		}
		n++
	}
	if n > max {
		names = append(names, plural(n-max, "1 more", "%d more"))
	}
	return strings.Join(names, ", ")
}

// resolveRoleProfiles resolves each role's defaultProfile once profiles exist.
func (c *compiler) resolveRoleProfiles() {
	for _, r := range c.pol.roles {
		rc := c.roleCfg[r.ID]
		if rc == nil || rc.DefaultProfile.Value == "" {
			continue
		}
		n := rc.DefaultProfile
		pr, ok := c.pol.Profile(n.Value)
		switch {
		case r.Profile == ProfileNone:
			c.errorf(n.Pos, "role %s runs no profile, so it can have no defaultProfile", r.ID)
		case !ok:
			c.errorf(n.Pos, "role %s: defaultProfile %q does not exist", r.ID, n.Value)
		case pr.Role != r:
			c.errorf(n.Pos, "role %s: defaultProfile %s runs as role %s", r.ID, pr.ID, pr.Role.ID)
		default:
			r.DefaultProfile = pr
		}
	}
}
