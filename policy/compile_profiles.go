package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

func (c *compiler) compileProfiles() {
	p := c.pol
	for i := range c.cfg.Profiles {
		pc := &c.cfg.Profiles[i]
		if !c.checkID(pc.Node, "a profile", pc.ID, idPattern) {
			continue
		}
		if j, dup := p.profileIdx[pc.ID]; dup {
			c.errorf(pc.At("id"), "profile %q is declared twice (first at line %d)", pc.ID, p.profiles[j].Pos.Line)
			continue
		}
		pr := c.buildProfile(pc)
		if pr == nil {
			continue
		}
		pr.Index = len(p.profiles)
		p.profileIdx[pr.ID] = pr.Index
		p.profiles = append(p.profiles, pr)
	}
}

func (c *compiler) buildProfile(pc *ProfileConfig) *Profile {
	p := c.pol
	pr := &Profile{ID: pc.ID, Name: pc.Name, Description: pc.Description, Pos: pc.Pos}
	if pr.Name == "" {
		pr.Name = pr.ID
	}
	what := "profile " + pc.ID

	// The role it runs as.
	roleID, rolePos := pc.Role.Value, pc.Role.Pos
	if roleID == "" {
		roleID, rolePos = RoleCoworker, pc.Pos
		if pc.Grant != nil {
			roleID = RoleSpecialist
		}
	}
	r, ok := p.Role(roleID)
	if !ok {
		c.errorf(rolePos, "%s runs as role %q, which does not exist", what, roleID)
		return nil
	}
	if r.Profile == ProfileNone {
		c.errorf(rolePos, "%s runs as role %s, which runs no profile", what, roleID)
		return nil
	}
	pr.Role = r

	// Limits.
	if pc.Limits != nil {
		c.checkLimits(pc.Limits, what)
	}
	pr.Limits = mergeLimits(p.defaultLimits, pc.Limits)
	c.completeLimits(pc, pc.Pos, what)

	// Requested tools.
	pr.Requested = p.NewToolSet()
	for _, n := range pc.Tools {
		t, ok := p.Tool(n.Value)
		if !ok {
			if s, w, withheld := p.WithheldFor(n.Value); withheld {
				c.errorf(n.Pos, "%s asks for %s, which %s withholds: %s", what, n.Value, s.ID, w)
			} else {
				c.errorf(n.Pos, "%s asks for the tool %q, which does not exist%s", what, n.Value, c.toolHint(n.Value))
			}
			continue
		}
		if pr.Requested.Has(t.Index) {
			c.warnf(n.Pos, "%s asks for %s twice", what, t.Name)
			continue
		}
		pr.Requested.Add(t.Index)
		pr.Tools = append(pr.Tools, t)
	}

	// The grant and what it gives.
	if pc.Grant != nil {
		if !r.Grants {
			c.errorf(pc.At("grant"), "%s has a grant, but its role %s takes none (a grant needs a role such as specialist or goal_agent)", what, r.ID)
		} else {
			pr.Grant = c.compileGrant(pc, what)
		}
	}
	pr.Granted = p.NewToolSet()
	if pr.Grant != nil {
		for _, t := range p.tools {
			if ok, _ := pr.GrantFor(t); ok {
				pr.Granted.Add(t.Index)
			}
		}
	}

	// What it asks for must be something its grant and role can give (S7).
	for i, t := range pr.Tools {
		c.checkRequested(pr, t, pc.Tools[slices.IndexFunc(pc.Tools[i:], func(n Name) bool { return n.Value == t.Name })+i].Pos, what)
	}
	reach := r.Ceiling.Clone()
	reach.Or(pr.Granted)
	switch {
	case r.Invariants.NoTools:
		if !pr.Requested.Empty() || !pr.Granted.Empty() {
			set := pr.Requested.Clone()
			set.Or(pr.Granted)
			c.errorf(pc.At("tools"), "role %s holds no tools at all, but %s asks for %s", r.ID, what, c.toolNames(set, 5))
		}
	case len(pr.Tools) > 0 && !pr.Requested.Intersects(reach):
		c.errorf(pc.At("tools"), "every tool %s asks for is outside the ceiling of role %s: it would start with none", what, r.ID)
	case len(pc.Tools) == 0 && pr.Granted.Empty():
		// (tools that do not exist are reported one by one above)
		c.errorf(pc.Pos, "%s asks for no tools and its grant gives none", what)
	}
	if r.Invariants.NoDelegation && pr.Limits.MaxDelegationDepth > 0 {
		// The depth may come from the top-level limits, and pc.Limits may be nil.
		at, from := pc.Pos, " (from the top-level limits)"
		if pc.Limits != nil && pc.Limits.Has("maxDelegationDepth") {
			at, from = pc.Limits.At("maxDelegationDepth"), ""
		}
		c.errorf(at, "role %s may not delegate, but %s has maxDelegationDepth %d%s", r.ID, what, pr.Limits.MaxDelegationDepth, from)
	}
	if r.Invariants.NoGrant && pc.Grant != nil {
		c.errorf(pc.At("grant"), "role %s may have no grant, but %s has one", r.ID, what)
	}
	held := pr.Requested.Clone()
	held.And(r.Ceiling)
	held.Or(pr.Granted)
	held.And(r.Invariants.Forbidden)
	if !held.Empty() {
		c.errorf(pc.Pos, "%s would hold %s, which the invariants of role %s forbid", what, c.toolNames(held, 5), r.ID)
	}
	return pr
}

// checkRequested applies the S7 rules to one requested tool.
func (c *compiler) checkRequested(pr *Profile, t *Tool, at Pos, what string) {
	g, r := pr.Grant, pr.Role
	needs := slices.Concat(t.Server.Needs, t.Needs)
	switch {
	case t.Server.Kind == KindConnector && !r.Grants:
		c.errorf(at, "%s asks for the connector tool %s, but role %s takes no grant, so no grant can cover it", what, t.Name, r.ID)
		return
	case t.Server.Kind == KindConnector && !t.Grantable:
		c.errorf(at, "%s asks for %s, which is outside the read table: a specialist reads and proposes; it never commits", what, t.Name)
		return
	case t.Server.Kind == KindConnector && (g == nil || !g.Connectors.Has(t.Server.Index)):
		c.errorf(at, "%s asks for %s, but its grant does not cover the connector %s", what, t.Name, t.Server.ID)
		return
	case t.Grantable && len(needs) > 0:
		var missing []string
		for _, n := range needs {
			if g == nil || !g.Connectors.Has(n.Index) {
				missing = append(missing, n.ID)
			}
		}
		if len(missing) > 0 {
			c.errorf(at, "%s asks for %s, which also reads %s: its grant does not cover %s", what, t.Name,
				strings.Join(missing, ", "), plural(len(missing), "it", "them"))
			return
		}
	}
	switch {
	case t.Skill == "*" && (g == nil || len(g.Skills) == 0):
		c.errorf(at, "%s asks for the skill tool %s without granting a skill", what, t.Name)
	case t.Skill != "" && t.Skill != "*" && !g.NamesSkill(t.Skill):
		c.errorf(at, "%s asks for %s, which rides on the skill %s, but its grant does not name %s", what, t.Name, t.Skill, t.Skill)
	case t.Handoff && pr.Limits.MaxDelegationDepth == 0:
		c.errorf(at, "%s asks for the hand-off tool %s at maxDelegationDepth 0: it could never hand anything off", what, t.Name)
	}
}

func (c *compiler) compileGrant(pc *ProfileConfig, what string) *Grant {
	p, gc := c.pol, pc.Grant
	g := &Grant{Connectors: NewBitset(len(p.servers)), Allowances: map[string]Allowance{}}
	for _, n := range gc.Connectors {
		s, ok := p.Server(n.Value)
		switch {
		case !ok:
			c.errorf(n.Pos, "%s grants the connector %q, which does not exist", what, n.Value)
		case s.Kind != KindConnector:
			c.errorf(n.Pos, "%s grants %q, which is a platform server, not a connector", what, n.Value)
		case g.Connectors.Has(s.Index):
			c.errorf(n.Pos, "%s grants %s twice", what, n.Value)
		default:
			g.Connectors.Add(s.Index)
			g.ConnectorList = append(g.ConnectorList, s)
		}
	}
	for _, n := range gc.Skills {
		sk, ok := p.Skill(n.Value)
		switch {
		case !ok:
			c.errorf(n.Pos, "%s's grant names the skill %q, which is not bundled", what, n.Value)
		case slices.Contains(g.Skills, sk):
			c.errorf(n.Pos, "%s's grant names the skill %s twice", what, n.Value)
		default:
			g.Skills = append(g.Skills, sk)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(gc.Allowance)) {
		ac := gc.Allowance[id]
		s, ok := p.Server(id)
		switch {
		case !ok || s.Kind != KindConnector:
			c.errorf(ac.Pos, "%s sets an allowance for %q, which is not a connector", what, id)
			continue
		case !g.Connectors.Has(s.Index):
			c.errorf(ac.Pos, "%s sets an allowance for %s, which its grant does not name", what, id)
			continue
		case s.Billing == nil:
			c.errorf(ac.Pos, "%s sets an allowance for %s, which does not bill: there is nothing to limit", what, id)
			continue
		}
		a := Allowance{Unit: s.Billing.Unit}
		valid := true
		for _, f := range []struct {
			key string
			v   *float64
			out *float64
		}{{"perRun", ac.PerRun, &a.PerRun}, {"perDay", ac.PerDay, &a.PerDay}} {
			switch {
			case f.v == nil:
				c.errorf(ac.Pos, "%s: the allowance for %s needs %s (in %s)", what, id, f.key, s.Billing.Unit)
				valid = false
			case !(*f.v > 0):
				c.errorf(ac.At(f.key), "%s: the allowance for %s must have %s above zero, not %v", what, id, f.key, *f.v)
				valid = false
			default:
				*f.out = *f.v
			}
		}
		if valid && a.PerRun > a.PerDay {
			c.errorf(ac.At("perRun"), "%s: the allowance for %s has perRun %v above perDay %v; a run could spend more than a day may", what, id, a.PerRun, a.PerDay)
		}
		g.Allowances[id] = a
	}
	for _, s := range g.ConnectorList {
		if s.Billing != nil && gc.Allowance[s.ID].Pos == (Pos{}) {
			if _, set := gc.Allowance[s.ID]; !set {
				c.errorf(gc.Pos, "%s grants %s, which bills in %s, without an allowance: add allowance: {%s: {perRun: ..., perDay: ...}} to the grant",
					what, s.ID, s.Billing.Unit, s.ID)
			}
		}
	}
	return g
}

// GrantFor reports whether the profile's grant gives the tool, and if not, why.
func (pr *Profile) GrantFor(t *Tool) (bool, string) {
	g := pr.Grant
	if g == nil {
		return false, fmt.Sprintf("profile %s has no grant", pr.ID)
	}
	switch {
	case t.Skill == "*":
		if len(g.Skills) == 0 {
			return false, fmt.Sprintf("a skill tool: the grant of profile %s names no skill", pr.ID)
		}
	case t.Skill != "":
		if !g.NamesSkill(t.Skill) {
			return false, fmt.Sprintf("rides on the skill %s, which the grant of profile %s does not name", t.Skill, pr.ID)
		}
	case !t.Grantable:
		if t.Server.Kind == KindConnector {
			return false, fmt.Sprintf("not in the read table: a grant never gives %s", t.Name)
		}
		return false, "not a grantable tool"
	}
	if t.Server.Kind == KindConnector && !g.Connectors.Has(t.Server.Index) {
		return false, fmt.Sprintf("the grant of profile %s does not name %s", pr.ID, t.Server.ID)
	}
	for _, n := range slices.Concat(t.Server.Needs, t.Needs) {
		if !g.Connectors.Has(n.Index) {
			return false, fmt.Sprintf("it also reads %s, which the grant of profile %s does not name", n.ID, pr.ID)
		}
	}
	if t.OptIn && !pr.Requested.Has(t.Index) {
		return false, fmt.Sprintf("opt-in: profile %s does not ask for it by name", pr.ID)
	}
	if t.Handoff && pr.Limits.MaxDelegationDepth == 0 {
		return false, fmt.Sprintf("a hand-off tool: profile %s has maxDelegationDepth 0", pr.ID)
	}
	return true, fmt.Sprintf("given by the grant of profile %s", pr.ID)
}
