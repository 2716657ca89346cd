package policy

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wardenhq/warden/egress"
)

// compileSearch reads who answers web searches.
func (c *compiler) compileSearch() {
	c.pol.search = SearchNone
	sc := c.cfg.Search
	if sc == nil || !sc.Has("provider") {
		return
	}
	if !slices.Contains(SearchProviders, sc.Provider) {
		c.errorf(sc.At("provider"), "search provider %q is not one Warden knows; it is one of %s", sc.Provider, strings.Join(SearchProviders, ", "))
		return
	}
	c.pol.search = sc.Provider
}

func (c *compiler) compileServers() {
	p := c.pol
	b := &Server{ID: BuiltinServer, Name: "Built-in tools", Kind: KindBuiltin,
		Description: "The host tools the model calls by bare name. The list is an exclusive allowlist."}
	c.addServer(b, nil)
	for i := range c.cfg.Builtins {
		c.addBuiltin(b, &c.cfg.Builtins[i])
	}
	for i := range c.cfg.Servers {
		c.declareServer(&c.cfg.Servers[i], KindPlatform)
	}
	for i := range c.cfg.Connectors {
		c.declareServer(&c.cfg.Connectors[i], KindConnector)
	}

	// Second pass: conditions and references, now that every tool and server exists.
	for _, s := range p.servers {
		if sc := c.serverCfg[s.Index]; sc != nil {
			s.When = compileCond(c.problems, sc.When, c.scope)
			s.Needs = c.connectorRefs(sc.Needs, s, "server "+s.ID)
			c.checkWithheld(s, sc)
			c.compilePins(s, sc)
		}
	}
	p.grantOnly = p.NewToolSet()
	p.absentWithoutChannel = p.NewToolSet()
	p.absentWithoutApprovals = p.NewToolSet()
	p.delegating = p.NewToolSet()
	p.egressCards = p.NewToolSet()
	p.unavailable = p.NewToolSet()
	for _, t := range p.tools {
		tc := c.toolCfg[t.Index]
		if tc != nil {
			c.finishTool(t, tc)
		}
		if t.GrantOnly() {
			p.grantOnly.Add(t.Index)
		}
		if t.Handoff || t.Kind == "spawn_subagent" {
			p.delegating.Add(t.Index)
		}
		if t.Kind == kindAllowHost {
			p.egressCards.Add(t.Index)
		}
		if t.Kind == "net_search" && p.search == SearchNone {
			t.Unavailable = "no search provider is configured (search.provider is none), and a search that always fails is not listed"
		}
		if t.Unavailable != "" {
			p.unavailable.Add(t.Index)
		}
		if g := t.Gate; g != nil && g.Approval {
			if g.AbsentWithoutChannel {
				p.absentWithoutChannel.Add(t.Index)
			}
			if g.AbsentWithoutApprovals {
				p.absentWithoutApprovals.Add(t.Index)
			}
		}
		if t.When != nil || len(t.Needs) > 0 {
			p.conditional = append(p.conditional, t)
		}
	}
	for _, s := range p.servers {
		s.Set = p.NewToolSet()
		for _, t := range s.Tools {
			s.Set.Add(t.Index)
		}
		if s.Kind == KindConnector {
			p.connectors++
		}
	}
}

// addServer registers a server under its id.
func (c *compiler) addServer(s *Server, sc *ServerConfig) {
	s.Index = len(c.pol.servers)
	c.pol.serverIndex[s.ID] = s.Index
	c.pol.servers = append(c.pol.servers, s)
	c.serverCfg = append(c.serverCfg, sc)
}

// addTool registers a tool under its name, reporting a name used twice.
func (c *compiler) addTool(s *Server, t *Tool, tc *ToolConfig) {
	if first, dup := c.firstTool[t.Name]; dup {
		c.errorf(tc.At("name"), "the tool %s is declared twice (first at line %d); a tool belongs to one server", t.Name, first.Line)
		return
	}
	c.firstTool[t.Name] = tc.Pos
	t.Index = len(c.pol.tools)
	t.Server = s
	c.pol.toolIndex[t.Name] = t.Index
	c.pol.tools = append(c.pol.tools, t)
	c.toolCfg = append(c.toolCfg, tc)
	s.Tools = append(s.Tools, t)
}

func (c *compiler) addBuiltin(b *Server, tc *ToolConfig) {
	if tc.Name == "" {
		c.errorf(tc.Pos, "a built-in tool has no name")
		return
	}
	if !builtinPattern.MatchString(tc.Name) || strings.HasPrefix(tc.Name, "mcp__") {
		c.errorf(tc.At("name"), "built-in %q must be a bare name (%s); server tools go under servers or connectors", tc.Name, builtinPattern)
		return
	}
	for _, k := range []string{"grantable", "optIn", "needs", "skill", "handoff"} {
		if tc.Has(k) {
			c.errorf(tc.At(k), "%s is a built-in: %s applies only to tools of servers and connectors", tc.Name, k)
		}
	}
	kind := tc.Kind
	if kind == "" {
		if _, native := NativeKinds[tc.Name]; !native {
			c.errorf(tc.Pos, "built-in %s needs a kind: the native action it maps to (%s)", tc.Name, kindList())
			return
		}
		kind = tc.Name
	}
	effect, ok := NativeKinds[kind]
	if !ok {
		c.errorf(tc.At("kind"), "built-in %s: unknown kind %q; the kinds are %s", tc.Name, kind, kindList())
		return
	}
	if tc.Effect != "" && tc.Effect != effect {
		c.errorf(tc.At("effect"), "built-in %s: its effect comes from its kind (%s is %s), not %s", tc.Name, kind, effect, tc.Effect)
	}
	if tc.Has("args") {
		c.errorf(tc.At("args"), "built-in %s: its arguments come from its kind and input", tc.Name)
	}
	t := &Tool{Name: tc.Name, Description: tc.Description, Kind: kind, Effect: effect, Pos: tc.Pos}
	t.Input = c.builtinInput(tc, kind)
	t.Args = map[string]string{}
	for role, field := range t.Input {
		t.Args[field] = inputArgTypes[role]
	}
	c.addTool(b, t, tc)
}

// builtinInput maps a built-in's input roles to its field names: the kind's own names, or a
// well-known built-in's (Read takes file_path), with input overriding either.
func (c *compiler) builtinInput(tc *ToolConfig, kind string) map[string]string {
	input := map[string]string{}
	if k, ok := knownInputs[tc.Name]; ok && k.kind == kind {
		for role, field := range k.fields {
			input[role] = field
		}
	} else {
		for _, role := range KindInputs[kind] {
			input[role] = role
		}
	}
	for _, role := range slices.Sorted(maps.Keys(tc.Input)) {
		field := tc.Input[role]
		switch {
		case !slices.Contains(KindInputs[kind], role):
			c.errorf(tc.At("input"), "built-in %s: %q is not an input of %s (its inputs are %s)", tc.Name, role, kind, strings.Join(KindInputs[kind], ", "))
		case !toolPartPattern.MatchString(field):
			c.errorf(tc.At("input"), "built-in %s: input %s must name a field, not %q", tc.Name, role, field)
		default:
			input[role] = field
		}
	}
	return input
}

func kindList() string {
	kinds := make([]string, 0, len(NativeKinds))
	for k := range NativeKinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ", ")
}

func (c *compiler) declareServer(sc *ServerConfig, kind ServerKind) {
	what := "a server"
	if kind == KindConnector {
		what = "a connector"
	}
	if sc.ID == "" {
		c.errorf(sc.Pos, "%s has no id", what)
		return
	}
	if !serverIDPattern.MatchString(sc.ID) || sc.ID == BuiltinServer {
		c.errorf(sc.At("id"), "%s id %q must be lower case letters and digits, words joined by single underscores, and not %q", what, sc.ID, BuiltinServer)
		return
	}
	if i, dup := c.pol.serverIndex[sc.ID]; dup {
		first := c.pol.servers[i]
		c.errorf(sc.At("id"), "%s %q is declared twice (first at line %d); platform servers and connectors share one namespace", what, sc.ID, first.Pos.Line)
		return
	}
	if kind == KindPlatform {
		for _, k := range []string{"hostEnv", "billing", "discover", "pins", "sandbox"} {
			if sc.Has(k) {
				c.errorf(sc.At(k), "server %s: %s applies only to connectors", sc.ID, k)
			}
		}
	}
	if kind == KindConnector && sc.Has("needs") {
		c.errorf(sc.At("needs"), "connector %s: needs applies to platform servers and to tools; put it on the joint tools", sc.ID)
	}
	s := &Server{ID: sc.ID, Name: sc.Name, Description: sc.Description, Kind: kind, Discover: sc.Discover, Pos: sc.Pos}
	if s.Name == "" {
		s.Name = s.ID
	}
	for _, v := range sc.HostEnv {
		if !envPattern.MatchString(v) {
			c.errorf(sc.At("hostEnv"), "connector %s: hostEnv %q is not an environment variable name", sc.ID, v)
		}
	}
	s.HostEnv = sc.HostEnv
	if b := sc.Billing; b != nil {
		if b.Unit != "usd" && b.Unit != "credits" {
			c.errorf(b.At("unit"), "connector %s: billing unit must be usd or credits, not %q", sc.ID, b.Unit)
		}
		if b.AskAbove < 0 {
			c.errorf(b.At("askAbove"), "connector %s: askAbove must not be negative", sc.ID)
		}
		s.Billing = &Billing{Unit: b.Unit, AskAbove: b.AskAbove}
		if b.Cost != nil {
			s.Billing.Cost = c.compileCost(b.Cost, "connector "+sc.ID, nil)
		}
	}
	if sc.Upstream != nil {
		if kind != KindConnector {
			c.errorf(sc.At("upstream"), "server %s: upstream applies only to connectors (platform servers are Warden's own)", sc.ID)
		} else {
			s.Upstream = c.compileUpstream(sc.ID, sc.Upstream)
		}
	}
	if sc.Managed != nil {
		switch {
		case kind != KindConnector:
			c.errorf(sc.At("managed"), "server %s: managed applies only to connectors", sc.ID)
		case sc.Upstream == nil:
			c.errorf(sc.At("managed"), "connector %s: managed references are resolved through its upstream, and it has no upstream", sc.ID)
		default:
			s.Managed = c.compileManaged(sc.ID, sc.Managed)
		}
	}
	if sc.Sandbox && kind == KindConnector {
		switch u := sc.Upstream; {
		case u == nil:
			c.errorf(sc.At("sandbox"), "connector %s: sandbox runs the connector's stdio command, and it has no upstream", sc.ID)
		case len(u.Command) == 0 && u.URL != "":
			c.errorf(sc.At("sandbox"), "connector %s: sandbox applies to a command (stdio) upstream; a url upstream runs elsewhere", sc.ID)
		default: // (an upstream that is neither or both is reported by compileUpstream)
			s.Sandbox = s.Upstream != nil
		}
	}
	c.compileSecrets(s, sc)
	c.addServer(s, sc)
	prefix := "mcp__" + sc.ID + "__"
	for i := range sc.Tools {
		tc := &sc.Tools[i]
		if tc.Name == "" {
			c.errorf(tc.Pos, "a tool of %s has no name", sc.ID)
			continue
		}
		rest, ok := strings.CutPrefix(tc.Name, prefix)
		if !ok {
			if other, _, found := strings.Cut(strings.TrimPrefix(tc.Name, "mcp__"), "__"); found && strings.HasPrefix(tc.Name, "mcp__") {
				c.errorf(tc.At("name"), "the tool %s is declared in %s, but its name says server %s: tools are named mcp__%s__<tool>", tc.Name, sc.ID, other, sc.ID)
			} else {
				c.errorf(tc.At("name"), "the tool %q of %s must be named %s<tool>", tc.Name, sc.ID, prefix)
			}
			continue
		}
		if !toolPartPattern.MatchString(rest) {
			c.errorf(tc.At("name"), "the tool %s: the part after %s must match %s", tc.Name, prefix, toolPartPattern)
			continue
		}
		if tc.Has("kind") {
			c.errorf(tc.At("kind"), "%s: kind applies only to built-ins", tc.Name)
		}
		t := &Tool{Name: tc.Name, Description: tc.Description, Effect: tc.Effect, Pos: tc.Pos}
		c.addTool(s, t, tc)
	}
	if sc.Discover {
		if sc.Effect == "" {
			c.errorf(sc.At("discover"), "connector %s discovers its tools, so it needs an effect for them", sc.ID)
		}
		tc := &ToolConfig{Node: Node{Pos: sc.At("discover")}, Name: prefix + "*"}
		c.addTool(s, &Tool{Name: tc.Name, Pattern: true, Pos: tc.Pos,
			Description: "Every tool the upstream server lists."}, tc)
	}
}

// finishTool resolves a tool's defaults, conditions and references.
func (c *compiler) finishTool(t *Tool, tc *ToolConfig) {
	s := t.Server
	if s.Kind == KindBuiltin {
		t.When = compileCond(c.problems, tc.When, c.scope)
		if t.Kind == kindAllowHost {
			t.Gate = c.egressCardGate(t, tc.Gate)
		} else {
			t.Gate = c.compileGate(t, tc.Gate)
		}
		t.Constraints = c.compileConstraints(t, tc.Constraints)
		return
	}
	if tc.Has("input") {
		c.errorf(tc.At("input"), "%s: input applies only to built-ins", t.Name)
	}
	if tc.Args != nil {
		t.Args = map[string]string{}
		for _, name := range slices.Sorted(maps.Keys(tc.Args)) {
			if typ := tc.Args[name]; !slices.Contains(argTypes, typ) {
				c.errorf(tc.At("args"), "%s: argument %s has the type %q; the types are %s", t.Name, name, typ, strings.Join(argTypes, ", "))
			} else {
				t.Args[name] = typ
			}
		}
	}
	sc := c.serverCfg[s.Index]
	if t.Effect == "" {
		t.Effect = sc.Effect
	}
	if t.Effect == "" {
		c.errorf(tc.Pos, "%s has no effect class: set effect on the tool or on server %s", t.Name, s.ID)
	}
	switch {
	case tc.Grantable != nil:
		t.Grantable = *tc.Grantable
	case sc.Grantable != nil:
		t.Grantable = *sc.Grantable
	}
	t.OptIn, t.Handoff = tc.OptIn, tc.Handoff
	t.When = compileCond(c.problems, tc.When, c.scope)
	t.Needs = c.connectorRefs(tc.Needs, s, t.Name)
	t.Gate = c.compileGate(t, tc.Gate)
	if tc.Skill != "" && tc.Skill != "*" {
		if _, ok := c.pol.skillIndex[tc.Skill]; !ok {
			c.errorf(tc.At("skill"), "%s rides on the skill %q, which is not a bundled skill (declare it under skills)", t.Name, tc.Skill)
		}
	}
	t.Skill = tc.Skill
	if s.Kind == KindPlatform && t.Grantable && t.Skill == "" && len(t.Needs) == 0 && len(s.Needs) == 0 {
		c.errorf(tc.At("grantable"), "%s: a platform tool is grantable only through the connectors it needs or a skill it rides on; add needs or skill", t.Name)
	}
	if t.OptIn && !t.Grantable && t.Skill == "" {
		c.errorf(tc.At("optIn"), "%s is opt-in but not grantable, so no profile could ever be given it", t.Name)
	}
	t.Constraints = c.compileConstraints(t, tc.Constraints)
	switch {
	case tc.Cost != nil && s.Billing == nil:
		c.errorf(tc.At("cost"), "%s: cost applies to tools of a connector that bills (give %s a billing)", t.Name, s.ID)
	case tc.Cost != nil:
		t.Cost = c.compileCost(tc.Cost, t.Name, t.Args)
	case s.Billing != nil:
		t.Cost = s.Billing.Cost
	}
}

// compileCost checks a cost: a number, or exactly one of fixed, arg and result, never negative.
func (c *compiler) compileCost(cc *CostConfig, what string, args map[string]string) *Cost {
	given := 0
	for _, k := range []string{"fixed", "arg", "result"} {
		if cc.Has(k) {
			given++
		}
	}
	if given != 1 {
		c.errorf(cc.Pos, "%s: a cost is a number, or exactly one of fixed, arg and result", what)
		return nil
	}
	cost := &Cost{Arg: cc.Arg, Result: cc.Result, Times: 1}
	nonNegative := func(key string, v *float64) bool {
		if v != nil && *v < 0 {
			c.errorf(cc.At(key), "%s: a cost cannot be negative (%s is %v)", what, key, *v)
			return false
		}
		return true
	}
	if !nonNegative("fixed", cc.Fixed) || !nonNegative("reserve", cc.Reserve) {
		return nil
	}
	if cc.Fixed != nil {
		f := *cc.Fixed
		cost.Fixed = &f
	}
	if cc.Reserve != nil {
		cost.Reserve = *cc.Reserve
	}
	if cc.Times != nil {
		if !(*cc.Times > 0) {
			c.errorf(cc.At("times"), "%s: times must be above zero", what)
			return nil
		}
		if cc.Arg == "" {
			c.errorf(cc.At("times"), "%s: times applies to a cost taken from an argument", what)
			return nil
		}
		cost.Times = *cc.Times
	}
	switch {
	case cc.Has("arg") && cc.Arg == "":
		c.errorf(cc.At("arg"), "%s: arg must name the argument the cost comes from", what)
		return nil
	case cc.Arg != "" && args != nil && args[cc.Arg] != "number" && args[cc.Arg] != "integer":
		c.errorf(cc.At("arg"), "%s: the cost comes from the argument %s, which the tool does not declare as a number", what, cc.Arg)
		return nil
	case cc.Has("result") && cc.Result == "":
		c.errorf(cc.At("result"), "%s: result must name the field of the result that says what the call cost", what)
		return nil
	case cc.Result != "" && cc.Reserve == nil:
		c.errorf(cc.Pos, "%s: a cost settled from the result needs reserve: what to hold before the call", what)
		return nil
	}
	return cost
}

func (c *compiler) compileGate(t *Tool, gc *GateConfig) *Gate {
	if gc == nil {
		return nil
	}
	g := &Gate{Approval: gc.Approval, Note: gc.Note}
	switch gc.WithoutChannel {
	case "", "refuse":
	case "absent":
		g.AbsentWithoutChannel = true
	default:
		c.errorf(gc.At("withoutChannel"), "%s: withoutChannel must be refuse or absent, not %q", t.Name, gc.WithoutChannel)
	}
	switch gc.WithoutApprovals {
	case "", "allow":
	case "absent":
		g.AbsentWithoutApprovals = true
	default:
		c.errorf(gc.At("withoutApprovals"), "%s: withoutApprovals must be allow or absent, not %q", t.Name, gc.WithoutApprovals)
	}
	if gc.Has("effects") {
		c.compileGateEffects(t, gc, g)
	}
	if !gc.Approval {
		for _, k := range []string{"withoutChannel", "withoutApprovals", "effects"} {
			if gc.Has(k) {
				c.errorf(gc.At(k), "%s: %s applies only to a gate with approval: true", t.Name, k)
			}
		}
	}
	if r := gc.Requires; r.Value != "" {
		sw, ok := c.scope.switches[r.Value]
		switch {
		case !ok:
			c.errorf(r.Pos, "%s: the gate requires the switch %s, which is not declared", t.Name, r.Value)
		case sw.Kind == RuleModes || sw.Kind == RuleInteger:
			c.errorf(r.Pos, "%s: the gate requires %s, which is not an on/off switch", t.Name, r.Value)
		default:
			g.Requires = sw
		}
	}
	if !g.Approval && gc.Requires.Value == "" { // (a switch that is not usable is reported above)
		c.errorf(gc.Pos, "%s: the gate neither asks for approval nor requires a switch", t.Name)
	}
	return g
}

// noPathKinds are the built-in kinds whose calls touch no path (docs/review.md).
var noPathKinds = []string{"net_fetch", "net_search", kindAllowHost}

// pathOps are the effects a call's review finds on paths: what a gate's effects may name.
var pathOps = []Effect{EffectRead, EffectWrite, EffectDelete, EffectExecute, EffectDelegate}

// compileGateEffects narrows a built-in's approval to calls with some effects. A connector
// call has no path effects, so there a narrowed gate would never ask: refused, never guessed.
func (c *compiler) compileGateEffects(t *Tool, gc *GateConfig, g *Gate) {
	at := gc.At("effects")
	if t.Server.Kind != KindBuiltin {
		c.errorf(at, "%s: gate effects applies only to built-ins (a connector call has no path effects to match)", t.Name)
		return
	}
	if slices.Contains(noPathKinds, t.Kind) {
		c.errorf(at, "%s: gate effects: a %s call has no path effects, so the gate would never ask", t.Name, t.Kind)
		return
	}
	if len(gc.Effects) == 0 {
		c.errorf(at, "%s: gate effects is empty: leave it out to ask before every call", t.Name)
		return
	}
	for _, e := range gc.Effects {
		if !slices.Contains(pathOps, e) {
			c.errorf(at, "%s: gate effects: a call's review never finds %s; it finds %s", t.Name, e, joinEffects(pathOps))
			return
		}
	}
	g.Effects = slices.Clone(gc.Effects)
}

// kindAllowHost is the native kind whose tools ask a person to let the sandbox reach a host
// that is not on its egress allowlist.
const kindAllowHost = "sandbox_allow_host"

// egressCardGate is the gate of a built-in of kind sandbox_allow_host, which is fixed: it asks a
// person before each call, and is absent in a session with nobody to ask and while approvals
// are off (a host is never let through unasked). A gate the policy leaves out, or leaves partly
// out, is filled in; a field that says otherwise is an error. requires and note are the
// policy's to add.
func (c *compiler) egressCardGate(t *Tool, gc *GateConfig) *Gate {
	if gc == nil {
		return &Gate{Approval: true, AbsentWithoutChannel: true, AbsentWithoutApprovals: true}
	}
	for _, f := range []struct {
		key, value string
		bad        bool
	}{
		{"approval", "false", gc.Has("approval") && !gc.Approval},
		{"withoutChannel", gc.WithoutChannel, gc.WithoutChannel == "refuse"},
		{"withoutApprovals", gc.WithoutApprovals, gc.WithoutApprovals == "allow"},
	} {
		if f.bad {
			c.errorf(gc.At(f.key), "%s: %s always asks a person and is absent where nobody can answer (no approval channel, or approvals off), so its gate cannot say %s: %s",
				t.Name, kindAllowHost, f.key, f.value)
		}
	}
	filled := *gc
	filled.Approval = true
	g := c.compileGate(t, &filled)
	g.Approval, g.AbsentWithoutChannel, g.AbsentWithoutApprovals = true, true, true
	return g
}

// connectorRefs resolves a needs list: ids of connectors other than the owner itself.
func (c *compiler) connectorRefs(names []Name, owner *Server, what string) []*Server {
	var out []*Server
	for _, n := range names {
		i, ok := c.pol.serverIndex[n.Value]
		if !ok {
			c.errorf(n.Pos, "%s needs the connector %q, which does not exist", what, n.Value)
			continue
		}
		s := c.pol.servers[i]
		switch {
		case s.Kind != KindConnector:
			c.errorf(n.Pos, "%s needs %q, which is not a connector", what, n.Value)
		case s == owner:
			c.errorf(n.Pos, "%s needs its own connector %q; needs lists the others it reads", what, n.Value)
		case slices.Contains(out, s):
			c.errorf(n.Pos, "%s names %q twice in needs", what, n.Value)
		default:
			out = append(out, s)
		}
	}
	return out
}

func (c *compiler) checkWithheld(s *Server, sc *ServerConfig) {
	prefix := "mcp__" + s.ID + "__"
	for i := range sc.Withheld {
		wc := &sc.Withheld[i]
		if strings.TrimSpace(wc.What) == "" {
			c.errorf(wc.Pos, "a withheld entry of %s must say what is withheld (what)", s.ID)
		}
		if strings.TrimSpace(wc.Reason) == "" {
			c.errorf(wc.Pos, "a withheld entry of %s must say why (reason)", s.ID)
		}
		w := Withheld{What: wc.What, Reason: wc.Reason}
		for _, n := range wc.Tools {
			if slices.Contains(w.Tools, n.Value) {
				c.warnf(n.Pos, "withheld tool %q of %s is listed twice", n.Value, s.ID)
				continue
			}
			if !strings.HasPrefix(n.Value, prefix) {
				c.errorf(n.Pos, "withheld tool %q of %s must be named %s<tool>", n.Value, s.ID, prefix)
				continue
			}
			for _, t := range s.Tools {
				if !t.Pattern && globMatch(n.Value, t.Name) {
					c.errorf(t.Pos, "%s is in the catalog of %s but also withheld (%s, line %d): a tool is one or the other", t.Name, s.ID, n.Value, n.Pos.Line)
				}
			}
			w.Tools = append(w.Tools, n.Value)
		}
		s.Withheld = append(s.Withheld, w)
	}
}

// pinDigest is the form of a pinned definition's digest.
var pinDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// compilePins checks a connector's pins: each names one of its tools (declared, or for a
// connector that discovers its catalog any name it does not withhold), once, with a digest of
// the exact form; and the connector has an upstream, the only place definitions come from.
func (c *compiler) compilePins(s *Server, sc *ServerConfig) {
	if len(sc.Pins) == 0 || s.Kind != KindConnector {
		return // (pins on a platform server are reported when it is declared)
	}
	if sc.Upstream == nil {
		c.errorf(sc.At("pins"), "connector %s: pins apply to the tool definitions its upstream lists, and it has no upstream", s.ID)
		return
	}
	prefix := "mcp__" + s.ID + "__"
	pins := map[string]string{}
	for _, pin := range sc.Pins {
		name := pin.Tool.Value
		t, ok := c.pol.Tool(name)
		switch {
		case !strings.HasPrefix(name, prefix):
			c.errorf(pin.Tool.Pos, "connector %s pins %q: a pin names one of its tools, %s<tool>", s.ID, name, prefix)
			continue
		case !ok || t.Server != s || t.Name == name && t.Pattern: // (the stand-in itself is no tool)
			if _, w, held := c.pol.WithheldFor(name); held {
				c.errorf(pin.Tool.Pos, "connector %s pins %s, which it withholds (%s)", s.ID, name, w)
			} else {
				c.errorf(pin.Tool.Pos, "connector %s pins %s, which is not one of its tools", s.ID, name)
			}
			continue
		}
		if !pinDigest.MatchString(pin.Digest.Value) {
			c.errorf(pin.Digest.Pos, "connector %s: the pin of %s must be sha256: and 64 lower-case hex digits, not %q", s.ID, name, pin.Digest.Value)
			continue
		}
		pins[name] = pin.Digest.Value
	}
	if len(pins) > 0 {
		s.Pins = pins
	}
}

// WithheldFor returns the withheld entry that names a tool, if any.
func (p *Policy) WithheldFor(name string) (*Server, *Withheld, bool) {
	for _, s := range p.servers {
		if !strings.HasPrefix(name, "mcp__"+s.ID+"__") {
			continue
		}
		for i := range s.Withheld {
			for _, pat := range s.Withheld[i].Tools {
				if globMatch(pat, name) {
					return s, &s.Withheld[i], true
				}
			}
		}
	}
	return nil, nil, false
}

// String describes a withheld entry: "what (reason)".
func (w *Withheld) String() string { return fmt.Sprintf("%s (%s)", w.What, w.Reason) }

// compileSecrets checks where a server's protected values may go (secrets:), each host as
// the egress proxy would read it; without hosts, a url connector's own host.
func (c *compiler) compileSecrets(s *Server, sc *ServerConfig) {
	sec := sc.Secrets
	listed := sec != nil && sec.Has("hosts")
	if sec != nil {
		s.ExposeSecrets = sec.ExposeToProcess
	}
	if !listed {
		if u := s.Upstream; u != nil && u.URL != "" {
			if parsed, err := url.Parse(u.URL); err == nil {
				// A host the allowlist refuses (loopback, say) is no place for a value: none.
				s.SecretHosts, _ = egress.NewAllowlist([]string{parsed.Host})
			}
		}
		return
	}
	if sec.ExposeToProcess && len(sec.Hosts) > 0 {
		c.errorf(sec.At("hosts"), "%s: secrets: a process given the values themselves (exposeToProcess) reaches any host it may; hosts would never be used", sc.ID)
		return
	}
	var entries []string
	for _, n := range sec.Hosts {
		if _, err := egress.NewAllowlist([]string{n.Value}); err != nil {
			msg := err.Error()
			if le, ok := errors.AsType[egress.ListError](err); ok && len(le) == 1 {
				msg = le[0].Err.Error()
			}
			c.errorf(n.Pos, "%s: secrets: host %q: %s", sc.ID, n.Value, msg)
			continue
		}
		if slices.Contains(entries, n.Value) {
			c.errorf(n.Pos, "%s: secrets: host %q is listed twice", sc.ID, n.Value)
			continue
		}
		entries = append(entries, n.Value)
	}
	if len(entries) > 0 {
		s.SecretHosts, _ = egress.NewAllowlist(entries)
	}
}

// compileManaged checks a connector's managed references: a named issuer that no other
// connector has, versions, and the upstream tool that resolves a reference.
func (c *compiler) compileManaged(id string, mc *ManagedConfig) *Managed {
	m := &Managed{Issuer: mc.Issuer, Versions: mc.Versions, Resolve: mc.Resolve}
	switch {
	case mc.Issuer == "":
		c.errorf(mc.Pos, "connector %s: managed needs the issuer its references name", id)
		return nil
	case !wordPattern.MatchString(mc.Issuer):
		c.errorf(mc.At("issuer"), "connector %s: the issuer %q may hold only letters, digits, '_', '.' and '-'", id, mc.Issuer)
		return nil
	}
	if other, ok := c.issuers[mc.Issuer]; ok {
		c.errorf(mc.At("issuer"), "connector %s: the issuer %s is connector %s's already", id, mc.Issuer, other)
		return nil
	}
	if c.issuers == nil {
		c.issuers = map[string]string{}
	}
	c.issuers[mc.Issuer] = id
	if len(m.Versions) == 0 {
		m.Versions = []string{"1"}
	}
	for _, v := range m.Versions {
		if v == "" {
			c.errorf(mc.At("versions"), "connector %s: a managed-reference version must not be empty", id)
			return nil
		}
	}
	if !toolPartPattern.MatchString(mc.Resolve) {
		c.errorf(mc.Pos, "connector %s: managed needs resolve, the upstream tool that fetches a reference's value (its own name, without mcp__%s__)", id, id)
		return nil
	}
	return m
}

// compileUpstream checks how a connector is reached: exactly one of command and url, and a
// credential injected into the right one.
func (c *compiler) compileUpstream(id string, uc *UpstreamConfig) *Upstream {
	u := &Upstream{Command: uc.Command, Env: uc.Env, URL: uc.URL, Timeout: 30 * time.Second}
	switch {
	case len(uc.Command) > 0 && uc.URL != "":
		c.errorf(uc.Pos, "connector %s: an upstream is a command or a url, not both", id)
		return nil
	case len(uc.Command) == 0 && uc.URL == "":
		c.errorf(uc.Pos, "connector %s: an upstream needs a command (stdio) or a url (streamable HTTP)", id)
		return nil
	case uc.URL != "":
		parsed, err := url.Parse(uc.URL)
		if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			c.errorf(uc.At("url"), "connector %s: upstream url %q must be an http or https URL", id, uc.URL)
			return nil
		}
		if len(uc.Env) > 0 {
			c.errorf(uc.At("env"), "connector %s: env applies to a command upstream", id)
		}
	case uc.Command[0] == "":
		c.errorf(uc.At("command"), "connector %s: the upstream command has no program", id)
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(uc.Env)) {
		if !envPattern.MatchString(k) {
			c.errorf(uc.At("env"), "connector %s: %q is not an environment variable name", id, k)
		}
	}
	if cr := uc.Credential; cr != nil {
		switch {
		case cr.Env != "" && cr.Header != "", cr.Env == "" && cr.Header == "":
			c.errorf(cr.Pos, "connector %s: a credential goes in an env variable (command) or a header (url), one of them", id)
		case cr.Env != "" && uc.URL != "":
			c.errorf(cr.At("env"), "connector %s: a url upstream takes its credential in a header", id)
		case cr.Header != "" && len(uc.Command) > 0:
			c.errorf(cr.At("header"), "connector %s: a command upstream takes its credential in an env variable", id)
		case cr.Env != "" && !envPattern.MatchString(cr.Env):
			c.errorf(cr.At("env"), "connector %s: %q is not an environment variable name", id, cr.Env)
		}
		u.CredentialEnv, u.CredentialHeader, u.CredentialPrefix = cr.Env, cr.Header, cr.Prefix
	}
	if uc.TimeoutMs < 0 {
		c.errorf(uc.At("timeoutMs"), "connector %s: timeoutMs cannot be negative", id)
	} else if uc.TimeoutMs > 0 {
		u.Timeout = time.Duration(uc.TimeoutMs) * time.Millisecond
	}
	return u
}
