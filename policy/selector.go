package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Selectors name sets of tools in role ceilings and invariants:
//
//	selector = [ "!" ] target [ "#" effect { "," effect } ]
//	target   = GLOB | "builtin:" GLOB | "server:" ID | "platform:" GLOB | "connector:" GLOB
//
// GLOB matches tool names (or, after platform: and connector:, server ids); * matches any run
// of characters.

type selectorScope uint8

const (
	scopeName selectorScope = iota
	scopeBuiltin
	scopeServer
	scopePlatform
	scopeConnector
)

var scopePrefixes = map[string]selectorScope{
	"builtin":   scopeBuiltin,
	"server":    scopeServer,
	"platform":  scopePlatform,
	"connector": scopeConnector,
}

// Selector is one compiled selector.
type Selector struct {
	// Src is the selector as written.
	Src string
	// Negated selectors remove tools from what the others select.
	Negated bool
	Pos     Pos

	scope   selectorScope
	pattern string
	effects []Effect // nil: any
}

func (s Selector) String() string { return s.Src }

// Match reports whether the selector's target and effects match t, ignoring negation.
func (s Selector) Match(t *Tool) bool {
	if s.effects != nil && !slices.Contains(s.effects, t.Effect) {
		return false
	}
	switch s.scope {
	case scopeName:
		return globMatch(s.pattern, t.Name)
	case scopeBuiltin:
		return t.Server.Kind == KindBuiltin && globMatch(s.pattern, t.Name)
	case scopeServer:
		return t.Server.ID == s.pattern
	case scopePlatform:
		return t.Server.Kind == KindPlatform && globMatch(s.pattern, t.Server.ID)
	case scopeConnector:
		return t.Server.Kind == KindConnector && globMatch(s.pattern, t.Server.ID)
	}
	return false
}

// globMatch matches s against a pattern in which * stands for any run of characters.
func globMatch(pattern, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, 0
	for sx < len(s) {
		switch {
		case px < len(pattern) && pattern[px] == '*':
			starP, starS = px, sx
			px++
		case px < len(pattern) && pattern[px] == s[sx]:
			px++
			sx++
		case starP >= 0:
			px = starP + 1
			starS++
			sx = starS
		default:
			return false
		}
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}

// parseSelector parses one selector, reporting problems.
func parseSelector(p *problems, n Name) (Selector, bool) {
	s := Selector{Src: n.Value, Pos: n.Pos}
	src := strings.TrimSpace(n.Value)
	if rest, ok := strings.CutPrefix(src, "!"); ok {
		s.Negated, src = true, rest
	}
	if target, effects, ok := strings.Cut(src, "#"); ok {
		src = target
		for e := range strings.SplitSeq(effects, ",") {
			e = strings.TrimSpace(e)
			if !slices.Contains(Effects, Effect(e)) {
				p.errorf(n.Pos, "selector %q: unknown effect class %q; it must be one of %s", n.Value, e, joinEffects(Effects))
				return s, false
			}
			s.effects = append(s.effects, Effect(e))
		}
		if target == "" {
			src = "*"
		}
	}
	if prefix, rest, ok := strings.Cut(src, ":"); ok {
		scope, known := scopePrefixes[prefix]
		if !known {
			p.errorf(n.Pos, "selector %q: unknown scope %q; use builtin:, server:, platform: or connector:", n.Value, prefix)
			return s, false
		}
		s.scope, src = scope, rest
	}
	if src == "" {
		p.errorf(n.Pos, "selector %q names nothing", n.Value)
		return s, false
	}
	if s.scope == scopeServer && strings.Contains(src, "*") {
		p.errorf(n.Pos, "selector %q: server: takes one server id; use platform: or connector: for patterns", n.Value)
		return s, false
	}
	s.pattern = src
	return s, true
}

// selectorUse says how a list of selectors is compiled.
type selectorUse struct {
	// what names the list in messages ("the ceiling of role coworker").
	what string
	// lenient lists (the standard roles' defaults) may name servers the policy lacks.
	lenient bool
	// grantOnly: include tools that only a profile or grant gives (invariants must see them).
	grantOnly bool
}

// compileSelectors compiles a selector list into the set it selects: the union of its positive
// selectors minus the union of its negated ones.
func (c *compiler) compileSelectors(list []Name, use selectorUse) ([]Selector, Bitset) {
	p := c.pol
	sels := make([]Selector, 0, len(list))
	plus, minus := p.NewToolSet(), p.NewToolSet()
	for _, n := range list {
		s, ok := parseSelector(c.problems, n)
		if !ok {
			continue
		}
		if s.scope == scopeServer {
			if _, known := p.serverIndex[s.pattern]; !known {
				if !use.lenient {
					c.errorf(n.Pos, "%s: selector %q names server %q, which does not exist", use.what, n.Value, s.pattern)
				}
				continue
			}
		}
		matched := false
		for _, t := range p.tools {
			if !s.Match(t) {
				continue
			}
			matched = true
			if s.Negated {
				minus.Add(t.Index)
			} else {
				plus.Add(t.Index)
			}
		}
		if !matched && !use.lenient {
			// Naming a tool or server that does not exist is an error; a pattern, or an effect
			// filter that leaves nothing, is a warning.
			exact := !strings.Contains(s.pattern, "*")
			t, isTool := p.Tool(s.pattern)
			srv, isServer := p.Server(s.pattern)
			switch {
			case exact && s.scope == scopeName && !isTool:
				c.errorf(n.Pos, "%s names the tool %q, which does not exist%s", use.what, s.pattern, c.toolHint(s.pattern))
			case exact && s.scope == scopeBuiltin && (!isTool || t.Server.Kind != KindBuiltin):
				c.errorf(n.Pos, "%s: selector %q names the built-in %q, which does not exist", use.what, n.Value, s.pattern)
			case exact && s.scope == scopePlatform && (!isServer || srv.Kind != KindPlatform):
				c.errorf(n.Pos, "%s: selector %q names platform server %q, which does not exist", use.what, n.Value, s.pattern)
			case exact && s.scope == scopeConnector && (!isServer || srv.Kind != KindConnector):
				c.errorf(n.Pos, "%s: selector %q names connector %q, which does not exist", use.what, n.Value, s.pattern)
			default:
				c.warnf(n.Pos, "%s: selector %q matches no tool", use.what, n.Value)
			}
		}
		sels = append(sels, s)
	}
	plus.AndNot(minus)
	if !use.grantOnly {
		plus.AndNot(p.grantOnly)
	}
	return sels, plus
}

// toolHint suggests the tool a misspelt name probably meant.
func (c *compiler) toolHint(name string) string {
	best, bestD := "", 4
	for _, t := range c.pol.tools {
		if d := editDistance(name, t.Name); d < bestD {
			best, bestD = t.Name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
