package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// compiler validates a decoded document and builds the Policy, collecting every problem.
type compiler struct {
	*problems
	cfg   *Config
	pol   *Policy
	scope condScope

	// written configs of the servers and tools, by index, for the second pass.
	serverCfg []*ServerConfig
	toolCfg   []*ToolConfig
	roleCfg   map[string]*RoleConfig
	firstTool map[string]Pos
	issuers   map[string]string // managed-reference issuer → the connector that has it
}

func newCompiler(p *problems, cfg *Config) *compiler {
	return &compiler{
		problems: p,
		cfg:      cfg,
		pol: &Policy{
			Name:        cfg.Name,
			Description: cfg.Description,
			toolIndex:   map[string]int{},
			serverIndex: map[string]int{},
			switchIndex: map[string]int{},
			harnessIdx:  map[string]int{},
			modelIdx:    map[string]int{},
			skillIndex:  map[string]int{},
			roleIndex:   map[string]int{},
			profileIdx:  map[string]int{},
			tenantIdx:   map[string]int{},
		},
		roleCfg:   map[string]*RoleConfig{},
		firstTool: map[string]Pos{},
	}
}

func (c *compiler) compile() {
	cfg := c.cfg
	switch {
	case !cfg.Has("version"):
		c.errorf(cfg.Pos, "version is missing: add version: 1 at the top")
	case cfg.Version != 1:
		c.errorf(cfg.At("version"), "version %d is not supported; this Warden reads version 1", cfg.Version)
	}
	c.compileSwitches()
	c.compileHarnesses()
	c.compileModels()
	c.scope = condScope{switches: map[string]*Switch{}, harnesses: map[string]*Harness{}, models: c.pol.modelIdx}
	for _, s := range c.pol.switches {
		c.scope.switches[s.Name] = s
	}
	for _, h := range c.pol.harnesses {
		c.scope.harnesses[h.ID] = h
	}
	for i := range cfg.Harnesses {
		hc := &cfg.Harnesses[i]
		if h, ok := c.pol.Harness(hc.ID); ok && hc.ID != DefaultHarness && h.Pos == hc.Pos {
			h.When = compileCond(c.problems, hc.When, c.scope)
		}
	}
	c.compileSkills()
	c.compileSearch()
	c.compileServers()
	c.compileRoles()
	c.compileDefaultLimits()
	c.compileSessions()
	c.compileProfiles()
	c.resolveRoleProfiles()
	c.resolveHarnessRoles()
	c.compileTenants()
}

// ---- switches

func (c *compiler) compileSwitches() {
	p := c.pol
	for _, sc := range builtinSwitches() {
		s := c.buildSwitch(&sc)
		s.Builtin = true
		s.Index = len(p.switches)
		p.switchIndex[s.Name] = s.Index
		p.switches = append(p.switches, s)
	}
	p.approvalSwitch = p.switchIndex[SwitchRequireApproval]
	p.timeoutSwitch = p.switchIndex[SwitchApprovalTimeout]
	p.egressSwitch = p.switchIndex[SwitchSandboxEgress]
	written := map[string]Pos{}
	for i := range c.cfg.Switches {
		sc := &c.cfg.Switches[i]
		if sc.Name == "" {
			c.errorf(sc.Pos, "a switch has no name")
			continue
		}
		if !switchPattern.MatchString(sc.Name) {
			c.errorf(sc.At("name"), "switch name %q must be an environment variable name in upper case (%s)", sc.Name, switchPattern)
			continue
		}
		if first, dup := written[sc.Name]; dup {
			c.errorf(sc.At("name"), "switch %s is declared twice (first at line %d)", sc.Name, first.Line)
			continue
		}
		written[sc.Name] = sc.Pos
		s := c.buildSwitch(sc)
		if s == nil {
			continue
		}
		s.Pos = sc.Pos
		if idx, exists := p.switchIndex[sc.Name]; exists {
			old := p.switches[idx]
			if !sameRule(old, s) {
				c.errorf(sc.Pos, "%s is built into Warden with the rule %s; a policy may describe it but not change its rule", sc.Name, old.Rule())
				continue
			}
			if s.Description != "" {
				old.Description = s.Description
			}
			old.Pos = sc.Pos
			continue
		}
		s.Index = len(p.switches)
		p.switchIndex[s.Name] = s.Index
		p.switches = append(p.switches, s)
	}
}

func (c *compiler) buildSwitch(sc *SwitchConfig) *Switch {
	s := &Switch{Name: sc.Name, Description: sc.Description, RuleName: sc.Rule, Default: sc.Default}
	given := 0
	for _, k := range []string{"rule", "on", "off", "modes"} {
		if sc.Has(k) {
			given++
		}
	}
	if (sc.Rule != "" && !sc.Has("rule")) || (len(sc.Modes) > 0 && !sc.Has("modes")) {
		given++ // built-in switches are written in code
	}
	if given != 1 {
		c.errorf(sc.Pos, "switch %s needs exactly one truth rule: rule (%s), on, off or modes", sc.Name, strings.Join(ruleNames(), ", "))
		return nil
	}
	switch {
	case sc.Has("rule") || sc.Rule != "": // rule: "" is an unknown rule, not no rule
		r, ok := namedRules[sc.Rule]
		if !ok {
			c.errorf(sc.At("rule"), "switch %s: unknown rule %q; the rules are %s", sc.Name, sc.Rule, strings.Join(ruleNames(), ", "))
			return nil
		}
		s.Kind, s.Values = r.kind, r.values
		if s.Kind == RuleInteger {
			n, err := strconv.Atoi(sc.Default)
			if err != nil || n < 0 {
				c.errorf(sc.At("default"), "switch %s is an integer switch: its default must be a whole number, not %q", sc.Name, sc.Default)
				return nil
			}
			s.defaultInt = n
			return s
		}
	case sc.Has("on") || sc.Has("off"):
		s.Kind, s.Values = RuleOn, sc.On
		key := "on"
		if sc.Has("off") {
			s.Kind, s.Values, key = RuleOff, sc.Off, "off"
		}
		if len(s.Values) == 0 {
			c.errorf(sc.At(key), "switch %s: %s must list at least one value", sc.Name, key)
			return nil
		}
		if dup := firstDuplicate(s.Values); dup != "" {
			c.errorf(sc.At(key), "switch %s lists %q twice", sc.Name, dup)
		}
	case sc.Has("modes") || len(sc.Modes) > 0:
		s.Kind, s.Modes = RuleModes, sc.Modes
		if len(s.Modes) < 2 {
			c.errorf(sc.At("modes"), "switch %s: a mode switch needs at least two modes", sc.Name)
			return nil
		}
		for _, m := range s.Modes {
			if !wordPattern.MatchString(m) {
				c.errorf(sc.At("modes"), "switch %s: mode %q must be a single word (%s)", sc.Name, m, wordPattern)
				return nil
			}
		}
		if dup := firstDuplicate(lower(s.Modes)); dup != "" {
			c.errorf(sc.At("modes"), "switch %s lists the mode %q twice (modes compare in any case)", sc.Name, dup)
			return nil
		}
		i := slices.IndexFunc(s.Modes, func(m string) bool { return strings.EqualFold(m, sc.Default) })
		if i < 0 {
			c.errorf(sc.At("default"), "switch %s: default %q must be one of its modes (%s)", sc.Name, sc.Default, strings.Join(s.Modes, ", "))
			return nil
		}
		s.defaultMode, s.Default = i, s.Modes[i]
		return s
	}
	if sc.Has("default") {
		c.errorf(sc.At("default"), "switch %s: default applies only to mode and integer switches", sc.Name)
	}
	return s
}

func firstDuplicate(vals []string) string {
	seen := map[string]bool{}
	for _, v := range vals {
		if seen[v] {
			return v
		}
		seen[v] = true
	}
	return ""
}

func lower(vals []string) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = strings.ToLower(v)
	}
	return out
}

// ---- harnesses and skills

// harnessLimits checks a harness's caps on each session.
func (c *compiler) harnessLimits(hc *HarnessConfig) (budget float64, calls int) {
	l := hc.Limits
	if l == nil {
		return 0, 0
	}
	if v := l.SessionBudgetUsd; v != nil {
		if !(*v > 0) {
			c.errorf(l.At("sessionBudgetUsd"), "harness %s: limits.sessionBudgetUsd must be above zero (leave it out for no cap), not %v", hc.ID, *v)
		} else {
			budget = *v
		}
	}
	if v := l.MaxModelCalls; v != nil {
		if *v < 1 {
			c.errorf(l.At("maxModelCalls"), "harness %s: limits.maxModelCalls must be at least 1 (leave it out for no cap), not %d", hc.ID, *v)
		} else {
			calls = *v
		}
	}
	return budget, calls
}

func (c *compiler) compileHarnesses() {
	p := c.pol
	def := &Harness{ID: DefaultHarness, Builtins: true, Certified: true,
		Description: "The standard harness: built-in tools and every MCP server."}
	p.harnessIdx[def.ID] = 0
	p.harnesses = append(p.harnesses, def)
	for i := range c.cfg.Harnesses {
		hc := &c.cfg.Harnesses[i]
		if !c.checkID(hc.Node, "a harness", hc.ID, idPattern) {
			continue
		}
		builtins := hc.Builtins == nil || *hc.Builtins
		budget, calls := c.harnessLimits(hc)
		if hc.ID == DefaultHarness {
			if hc.Has("when") || hc.Has("roles") {
				c.errorf(hc.Pos, "the default harness always exists for every role: it takes no when or roles")
			}
			if hc.Description != "" {
				def.Description = hc.Description
			}
			def.Builtins, def.Pos = builtins, hc.Pos
			def.SessionBudgetUsd, def.MaxModelCalls = budget, calls
			def.Certified = hc.Certified == nil || *hc.Certified
			continue
		}
		if _, dup := p.harnessIdx[hc.ID]; dup {
			c.errorf(hc.At("id"), "harness %q is declared twice", hc.ID)
			continue
		}
		h := &Harness{ID: hc.ID, Description: hc.Description, Index: len(p.harnesses), Builtins: builtins, Pos: hc.Pos,
			SessionBudgetUsd: budget, MaxModelCalls: calls, Certified: hc.Certified == nil || *hc.Certified}
		p.harnessIdx[h.ID] = h.Index
		p.harnesses = append(p.harnesses, h)
	}
}

func (c *compiler) resolveHarnessRoles() {
	for i := range c.cfg.Harnesses {
		hc := &c.cfg.Harnesses[i]
		h, ok := c.pol.Harness(hc.ID)
		if !ok || hc.ID == DefaultHarness || !hc.Has("roles") {
			continue
		}
		h.Roles = []string{}
		for _, r := range hc.Roles {
			if _, ok := c.pol.roleIndex[r.Value]; !ok {
				c.errorf(r.Pos, "harness %s names the role %q, which does not exist", h.ID, r.Value)
				continue
			}
			h.Roles = append(h.Roles, r.Value)
		}
	}
}

func (c *compiler) compileSkills() {
	p := c.pol
	for i := range c.cfg.Skills {
		sc := &c.cfg.Skills[i]
		if !c.checkID(sc.Node, "a skill", sc.ID, idPattern) {
			continue
		}
		if _, dup := p.skillIndex[sc.ID]; dup {
			c.errorf(sc.At("id"), "skill %q is declared twice", sc.ID)
			continue
		}
		p.skillIndex[sc.ID] = len(p.skills)
		p.skills = append(p.skills, &Skill{ID: sc.ID, Description: sc.Description, Pos: sc.Pos})
	}
}

// ---- sessions

// compileSessions checks the sessions block; what it leaves unset stays unset (Sessions).
func (c *compiler) compileSessions() {
	s := Sessions{MaxPerToken: -1, MaxPerTenant: -1}
	c.pol.sessions = s
	sc := c.cfg.Sessions
	if sc == nil {
		return
	}
	if sc.IdleTimeout != "" {
		d, err := time.ParseDuration(sc.IdleTimeout)
		switch {
		case err != nil:
			c.errorf(sc.At("idleTimeout"), "sessions: idleTimeout %q is not a duration (write it as 30m, 2h or 0)", sc.IdleTimeout)
		case d < 0:
			c.errorf(sc.At("idleTimeout"), "sessions: idleTimeout must not be negative, not %s", sc.IdleTimeout)
		case d > 0 && d < time.Second:
			c.errorf(sc.At("idleTimeout"), "sessions: idleTimeout %s is shorter than a second; clients could not keep a session", sc.IdleTimeout)
		default:
			s.IdleTimeout, s.IdleSet = d, true
		}
	}
	for _, f := range []struct {
		key string
		v   *int
		to  *int
	}{{"maxPerToken", sc.MaxPerToken, &s.MaxPerToken}, {"maxPerTenant", sc.MaxPerTenant, &s.MaxPerTenant}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 {
			c.errorf(sc.At(f.key), "sessions: %s must be 0 (no cap) or more, not %d", f.key, *f.v)
			continue
		}
		*f.to = *f.v
	}
	c.pol.sessions = s
}

// ---- limits

func (c *compiler) compileDefaultLimits() {
	l := Limits{MaxAttempts: 1}
	if lc := c.cfg.Limits; lc != nil {
		c.checkLimits(lc, "the default limits")
		l = mergeLimits(l, lc)
	}
	c.pol.defaultLimits = l
}

func mergeLimits(l Limits, lc *LimitsConfig) Limits {
	if lc == nil {
		return l
	}
	if lc.RunBudgetUsd != nil {
		l.RunBudgetUsd = *lc.RunBudgetUsd
	}
	if lc.DailyBudgetUsd != nil {
		l.DailyBudgetUsd = *lc.DailyBudgetUsd
	}
	if lc.MaxTurns != nil {
		l.MaxTurns = *lc.MaxTurns
	}
	if lc.MaxConcurrentRuns != nil {
		l.MaxConcurrentRuns = *lc.MaxConcurrentRuns
	}
	if lc.MaxDelegationDepth != nil {
		l.MaxDelegationDepth = *lc.MaxDelegationDepth
	}
	if lc.MaxAttempts != nil {
		l.MaxAttempts = *lc.MaxAttempts
	}
	return l
}

// checkLimits reports written limits that are out of range.
func (c *compiler) checkLimits(lc *LimitsConfig, what string) {
	if lc.RunBudgetUsd != nil && !(*lc.RunBudgetUsd > 0) {
		c.errorf(lc.At("runBudgetUsd"), "%s: runBudgetUsd must be above zero, not %v", what, *lc.RunBudgetUsd)
	}
	if lc.DailyBudgetUsd != nil && !(*lc.DailyBudgetUsd > 0) {
		c.errorf(lc.At("dailyBudgetUsd"), "%s: dailyBudgetUsd must be above zero (leave it out for no daily cap), not %v", what, *lc.DailyBudgetUsd)
	}
	for _, f := range []struct {
		key string
		v   *int
		min int
	}{
		{"maxTurns", lc.MaxTurns, 1},
		{"maxConcurrentRuns", lc.MaxConcurrentRuns, 1},
		{"maxDelegationDepth", lc.MaxDelegationDepth, 0},
		{"maxAttempts", lc.MaxAttempts, 1},
	} {
		if f.v != nil && *f.v < f.min {
			c.errorf(lc.At(f.key), "%s: %s must be at least %d, not %d", what, f.key, f.min, *f.v)
		}
	}
}

// completeLimits reports a profile's limits that neither it nor the defaults set. A limit that
// is set but out of range is reported by checkLimits, not here.
func (c *compiler) completeLimits(pc *ProfileConfig, at Pos, what string) {
	unset := func(f func(*LimitsConfig) bool) bool {
		return (pc.Limits == nil || !f(pc.Limits)) && (c.cfg.Limits == nil || !f(c.cfg.Limits))
	}
	var missing []string
	if unset(func(l *LimitsConfig) bool { return l.RunBudgetUsd != nil }) {
		missing = append(missing, "runBudgetUsd")
	}
	if unset(func(l *LimitsConfig) bool { return l.MaxTurns != nil }) {
		missing = append(missing, "maxTurns")
	}
	if unset(func(l *LimitsConfig) bool { return l.MaxConcurrentRuns != nil }) {
		missing = append(missing, "maxConcurrentRuns")
	}
	if len(missing) > 0 {
		c.errorf(at, "%s has no %s: set it on the profile or under the top-level limits", what, strings.Join(missing, ", "))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprintf(many, n)
}
