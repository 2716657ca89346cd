package boundary

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/action"
)

const numOps = 5

var allOps = [numOps]action.Op{action.OpRead, action.OpWrite, action.OpDelete, action.OpExecute, action.OpDelegate}

// opSlot is op's place in allOps, or -1.
func opSlot(op action.Op) int {
	switch op {
	case action.OpRead:
		return 0
	case action.OpWrite:
		return 1
	case action.OpDelete:
		return 2
	case action.OpExecute:
		return 3
	case action.OpDelegate:
		return 4
	}
	return -1
}

// index holds the enabled rules of one type for one operation.
type index struct {
	exact map[string][]*Rule
	fwd   *radix                  // prefix rules; globs and regexes keyed by a literal prefix
	rev   *radix                  // globs keyed by a literal suffix
	seg   map[string][]*globEntry // globs keyed by a literal path segment
	// segLens and segFirst spare most map lookups: the lengths (63 for 63 and more) and
	// the first bytes of the keys of seg.
	segLens  uint64
	segFirst [4]uint64
	ac       *automaton    // contains rules; globs and regexes keyed by an inner literal
	globAny  []*globEntry  // globs with no usable literal
	reAny    []*regexEntry // regexes with no usable literal
	// tree answers recursive checks: exact and prefix rules, and every glob under its
	// literal prefix (paths only).
	tree *radix
}

// globEntry is one distinct glob pattern and the rules that use it.
type globEntry struct {
	pattern    string
	rules      []*Rule
	cmd        bool   // a command glob, not a doublestar one
	lead, tail string // literals every match starts and ends with: a cheap first test
	tree       *treeGlob
}

func (g *globEntry) match(s string) bool {
	if !strings.HasPrefix(s, g.lead) || !strings.HasSuffix(s, g.tail) {
		return false
	}
	if g.cmd {
		return cmdGlobMatch(g.pattern, s)
	}
	m, _ := doublestar.Match(g.pattern, s)
	return m
}

// regexEntry is one distinct regex and the rules that use it.
type regexEntry struct {
	re    *regexp.Regexp
	rules []*Rule
}

// buildIndex indexes the enabled rules of type typ that block op; nil when there are none.
func buildIndex(rules []prepared, typ string, op action.Op) *index {
	ix := &index{}
	fwd := map[string]*bucket{}
	rev := map[string]*bucket{}
	tree := map[string]*bucket{}
	ac := map[string]*bucket{}
	at := func(m map[string]*bucket, key string) *bucket {
		b := m[key]
		if b == nil {
			b = &bucket{}
			m[key] = b
		}
		return b
	}
	var globs []*globEntry
	globOf := map[string]*globEntry{}
	regexOf := map[string]*regexEntry{}
	var regexes []*regexEntry
	found := false
	for _, p := range rules {
		r := p.rule
		if !r.Enabled || r.Type != typ || !slices.Contains(r.Operations, string(op)) {
			continue
		}
		found = true
		switch r.Match {
		case MatchExact:
			if ix.exact == nil {
				ix.exact = map[string][]*Rule{}
			}
			ix.exact[p.pattern] = append(ix.exact[p.pattern], r)
			if typ == TypePath {
				b := at(tree, p.pattern)
				b.exactRules = append(b.exactRules, r)
			}
		case MatchPrefix:
			b := at(fwd, p.pattern)
			b.prefixRules = append(b.prefixRules, r)
			if typ == TypePath {
				b := at(tree, p.pattern)
				b.prefixRules = append(b.prefixRules, r)
			}
		case MatchContains:
			b := at(ac, p.pattern)
			b.contains = append(b.contains, r)
		case MatchGlob:
			g := globOf[p.pattern]
			if g == nil {
				g = &globEntry{pattern: p.pattern, cmd: typ == TypeCommand, tree: p.tree}
				globOf[p.pattern] = g
				globs = append(globs, g)
			}
			g.rules = append(g.rules, r)
		case MatchRegex:
			e := regexOf[p.pattern]
			if e == nil {
				e = &regexEntry{re: p.re}
				regexOf[p.pattern] = e
				regexes = append(regexes, e)
			}
			e.rules = append(e.rules, r)
		}
	}
	if !found {
		return nil
	}

	placeGlobs(ix, globs, func(key string) *bucket { return at(fwd, key) },
		func(key string) *bucket { return at(rev, reverse(key)) },
		func(key string) *bucket { return at(ac, key) })
	for _, g := range globs {
		if g.tree != nil {
			b := at(tree, g.tree.lead)
			b.globs = append(b.globs, g)
		}
	}
	for _, e := range regexes {
		prefix, inner := regexKeys(e.re.String())
		switch {
		case len(prefix) >= 3 || len(prefix) > 0 && len(inner) < 2:
			b := at(fwd, prefix)
			b.regexes = append(b.regexes, e)
		case len(inner) >= 2:
			b := at(ac, inner)
			b.regexes = append(b.regexes, e)
		default:
			ix.reAny = append(ix.reAny, e)
		}
	}
	ix.fwd = newRadix(fwd, false)
	ix.rev = newRadix(rev, true)
	ix.tree = newRadix(tree, false)
	ix.ac = newAutomaton(ac)
	return ix
}

// placeGlobs files each glob under the literal that the fewest globs share, so that a path
// meets few candidates: a whole segment (map), a prefix (radix tree), a suffix (reversed
// radix tree) or an inner literal (automaton). A glob with none goes to globAny.
func placeGlobs(ix *index, globs []*globEntry, fwd, rev, ac func(string) *bucket) {
	type cand struct {
		kind byte // in order of preference: 's' segment, 'p' prefix, 'x' suffix, 'c' contains
		key  string
	}
	cands := make([][]cand, len(globs))
	count := map[cand]int{}
	for i, g := range globs {
		var k globKeys
		if g.cmd {
			k = cmdGlobKeys(g.pattern)
		} else {
			k = pathGlobKeys(g.pattern)
			for _, s := range k.segs {
				cands[i] = append(cands[i], cand{'s', s})
			}
		}
		g.lead, g.tail = k.prefix, k.suffix
		if len(k.prefix) >= 2 {
			cands[i] = append(cands[i], cand{'p', k.prefix})
		}
		if len(k.suffix) >= 2 {
			cands[i] = append(cands[i], cand{'x', k.suffix})
		}
		for _, s := range k.subs {
			if len(s) >= 3 {
				cands[i] = append(cands[i], cand{'c', s})
			}
		}
		for _, c := range cands[i] {
			count[c]++
		}
	}
	rank := map[byte]int{'s': 0, 'p': 1, 'x': 2, 'c': 3}
	for i, g := range globs {
		if len(cands[i]) == 0 {
			ix.globAny = append(ix.globAny, g)
			continue
		}
		best := slices.MinFunc(cands[i], func(a, b cand) int {
			if d := count[a] - count[b]; d != 0 {
				return d
			}
			if d := rank[a.kind] - rank[b.kind]; d != 0 {
				return d
			}
			return len(b.key) - len(a.key)
		})
		switch best.kind {
		case 's':
			if ix.seg == nil {
				ix.seg = map[string][]*globEntry{}
			}
			ix.seg[best.key] = append(ix.seg[best.key], g)
			ix.segLens |= 1 << min(len(best.key), 63)
			ix.segFirst[best.key[0]>>6] |= 1 << (best.key[0] & 63)
		case 'p':
			b := fwd(best.key)
			b.globs = append(b.globs, g)
		case 'x':
			b := rev(best.key)
			b.globs = append(b.globs, g)
		case 'c':
			b := ac(best.key)
			b.globs = append(b.globs, g)
		}
	}
}

func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

// regexKeys finds literals every match of a regex holds: prefix, which the text starts with
// (the regex is anchored with ^ or \A and begins with it), and inner, the longest literal in
// the regex's top-level sequence, which the text contains. Case-folded literals and U+FFFD
// (which matches any invalid byte) are never used.
func regexKeys(expr string) (prefix, inner string) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", ""
	}
	re = re.Simplify()
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	anchored := len(subs) > 0 && subs[0].Op == syntax.OpBeginText
	var run strings.Builder
	flush := func() {
		if run.Len() > len(inner) {
			inner = run.String()
		}
		run.Reset()
	}
	inPrefix := anchored
	brk := func() {
		if inPrefix {
			prefix = run.String()
			inPrefix = false
		}
		flush()
	}
	for i, sub := range subs {
		if i == 0 && anchored {
			continue
		}
		if sub.Op != syntax.OpLiteral || sub.Flags&syntax.FoldCase != 0 {
			brk()
			continue
		}
		for _, r := range sub.Rune {
			if r == utf8.RuneError || !utf8.ValidRune(r) {
				brk()
				continue
			}
			run.WriteRune(r)
		}
	}
	if inPrefix {
		prefix = run.String()
	}
	flush()
	return prefix, inner
}
