package boundary

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/wardenhq/warden/action"
)

// CheckPath appends to hits every enabled path rule that blocks op on path, in document
// order, each once, and returns the extended slice. path is absolute and already resolved
// through symbolic links by the caller; it is cleaned lexically here once more, and the
// cleaned path is each hit's Target. With recursive, the effect covers the whole tree under
// path (see the package documentation).
//
// An op that is not one of the five is checked against the rules of every operation: what
// an action does that cannot be named is not let through. An invalid or uncompiled set
// appends one hit whose rule has the ID ConfigInvalidID. A check that matches nothing
// allocates nothing.
func (s *Set) CheckPath(op action.Op, path string, recursive bool, hits []Hit) []Hit {
	if s == nil || !s.built {
		return append(hits, Hit{&notCompiled, path})
	}
	if s.invalid != nil {
		return append(hits, Hit{&s.blockAll, path})
	}
	start := len(hits)
	return s.finish(s.collect(op, path, recursive, hits, false), start)
}

// MayBlock reports whether CheckPath would append a hit, without the hits' order: for a
// caller that looks closer when some rule could block (a recursive effect whose tree it
// walks), so that the common answer costs no sorting. The search stops at the first rule
// found, so that a tree that hundreds of "**/name" globs could match below costs one match,
// not hundreds. scratch is reused for the search and returned for the next call.
func (s *Set) MayBlock(op action.Op, path string, recursive bool, scratch []Hit) (bool, []Hit) {
	if s == nil || !s.built || s.invalid != nil {
		return true, scratch
	}
	scratch = s.collect(op, path, recursive, scratch[:0], true)
	found := len(scratch) > 0
	clear(scratch)
	return found, scratch[:0]
}

// collect appends the hits of a path check, unordered and perhaps repeated; with one, it may
// stop once it has appended a hit (MayBlock's question: whether there is any).
func (s *Set) collect(op action.Op, path string, recursive bool, hits []Hit, one bool) []Hit {
	if !isClean(path) {
		path = filepath.Clean(path)
	}
	slot := opSlot(op)
	for i, ix := range s.paths {
		if ix == nil || slot >= 0 && i != slot {
			continue
		}
		if recursive {
			hits = ix.checkTree(path, hits, one)
		} else {
			hits = ix.check(path, hits)
		}
		if one && len(hits) > 0 {
			return hits
		}
	}
	return hits
}

// CheckCommand appends to hits every enabled command rule that matches the raw command text
// or any of the normalised simple commands (see CommandText), in document order, each once
// with the first text it matched. An invalid or uncompiled set appends one hit whose rule has
// the ID ConfigInvalidID.
func (s *Set) CheckCommand(raw string, normalized []string, hits []Hit) []Hit {
	if s == nil || !s.built {
		return append(hits, Hit{&notCompiled, raw})
	}
	if s.invalid != nil {
		return append(hits, Hit{&s.blockAll, raw})
	}
	if s.cmd == nil {
		return hits
	}
	start := len(hits)
	hits = s.cmd.check(raw, hits)
	for _, text := range normalized {
		hits = s.cmd.check(text, hits)
	}
	return s.finish(hits, start)
}

// finish puts the hits from start on in document order and drops repeats (a rule can be met
// twice: a segment that occurs twice, a literal that occurs twice, a command in two forms).
func (s *Set) finish(hits []Hit, start int) []Hit {
	if len(hits)-start < 2 {
		return hits
	}
	tail := hits[start:]
	slices.SortStableFunc(tail, func(a, b Hit) int { return s.order[a.Rule] - s.order[b.Rule] })
	out := hits[:start+1]
	for _, h := range tail[1:] {
		if h.Rule != out[len(out)-1].Rule {
			out = append(out, h)
		}
	}
	clear(hits[len(out):])
	return out
}

// What a bucket is asked for.
const (
	wantRules   = 1 << iota // prefix and contains rules: being reached is matching
	wantGlobs               // globs: run on the text
	wantRegexes             // regexes: run on the text
	wantAll     = wantRules | wantGlobs | wantRegexes
)

func (b *bucket) check(s string, want int, hits []Hit) []Hit {
	if want&wantRules != 0 {
		hits = appendRules(hits, b.prefixRules, s)
		hits = appendRules(hits, b.contains, s)
	}
	if want&wantGlobs != 0 {
		for _, g := range b.globs {
			if g.match(s) {
				hits = appendRules(hits, g.rules, s)
			}
		}
	}
	if want&wantRegexes != 0 {
		for _, e := range b.regexes {
			if e.re.MatchString(s) {
				hits = appendRules(hits, e.rules, s)
			}
		}
	}
	return hits
}

func appendRules(hits []Hit, rules []*Rule, target string) []Hit {
	for _, r := range rules {
		hits = append(hits, Hit{r, target})
	}
	return hits
}

// check finds the rules that match the text s: a path, or a command text.
func (ix *index) check(s string, hits []Hit) []Hit {
	if rules, ok := ix.exact[s]; ok {
		hits = appendRules(hits, rules, s)
	}
	if t := ix.fwd; t != nil {
		for n, i := t.root, 0; n != nil; n, i = t.step(n, s, i) {
			if n.b != nil {
				hits = n.b.check(s, wantAll, hits)
			}
		}
	}
	if t := ix.rev; t != nil {
		for n, i := t.root, 0; n != nil; n, i = t.step(n, s, i) {
			if n.b != nil {
				hits = n.b.check(s, wantGlobs, hits)
			}
		}
	}
	if ix.seg != nil {
		for a := 0; a < len(s); {
			end := strings.IndexByte(s[a:], '/')
			if end < 0 {
				end = len(s)
			} else {
				end += a
			}
			if end > a && ix.segLens&(1<<min(end-a, 63)) != 0 && ix.segFirst[s[a]>>6]&(1<<(s[a]&63)) != 0 {
				for _, g := range ix.seg[s[a:end]] {
					if g.match(s) {
						hits = appendRules(hits, g.rules, s)
					}
				}
			}
			a = end + 1
		}
	}
	if ix.ac != nil {
		hits = ix.ac.scan(s, wantAll, hits)
	}
	for _, g := range ix.globAny {
		if g.match(s) {
			hits = appendRules(hits, g.rules, s)
		}
	}
	for _, e := range ix.reAny {
		if e.re.MatchString(s) {
			hits = appendRules(hits, e.rules, s)
		}
	}
	return hits
}

// checkTree finds the path rules that match path or anything below it. With one, it returns
// as soon as hits holds one more than it was given (MayBlock passes none).
func (ix *index) checkTree(path string, hits []Hit, one bool) []Hit {
	start := len(hits)
	dir := strings.TrimSuffix(path, "/") // the root is ""
	if rules, ok := ix.exact[path]; ok {
		hits = appendRules(hits, rules, path)
	}
	if t := ix.tree; t != nil {
		under := dir + "/"
		// Keys that under starts with: prefix rules the path starts with, globs whose
		// literal prefix the path starts with.
		for n, i := t.root, 0; n != nil; n, i = t.step(n, under, i) {
			if one && len(hits) > start {
				return hits
			}
			if n.b != nil {
				hits = appendRules(hits, n.b.prefixRules, path)
				hits = treeGlobs(n.b.globs, path, dir, hits, one && len(hits) == start)
			}
		}
		// Keys that start with under: everything below.
		if one && len(hits) > start {
			return hits
		}
		if n := t.below(under); n != nil {
			if hits = subtree(n, path, dir, hits, one); one && len(hits) > start {
				return hits
			}
		}
	}
	// Regex and contains rules see the path text only.
	if t := ix.fwd; t != nil {
		for n, i := t.root, 0; n != nil; n, i = t.step(n, path, i) {
			if n.b != nil {
				hits = n.b.check(path, wantRegexes, hits)
			}
		}
	}
	if ix.ac != nil {
		hits = ix.ac.scan(path, wantRules|wantRegexes, hits)
	}
	for _, e := range ix.reAny {
		if e.re.MatchString(path) {
			hits = appendRules(hits, e.rules, path)
		}
	}
	return hits
}

// subtree appends the rules of n and every node below it that could match below path; with
// one, it stops at the first node that adds any.
func subtree(n *rnode, path, dir string, hits []Hit, one bool) []Hit {
	start := len(hits)
	if b := n.b; b != nil {
		hits = appendRules(hits, b.exactRules, path)
		hits = appendRules(hits, b.prefixRules, path)
		hits = treeGlobs(b.globs, path, dir, hits, one && len(hits) == start)
		if one && len(hits) > start {
			return hits
		}
	}
	for _, k := range n.kids {
		if hits = subtree(k, path, dir, hits, one); one && len(hits) > start {
			return hits
		}
	}
	return hits
}

// treeGlobs appends the rules of the globs that could match below path; with one, it stops
// at the first such glob.
func treeGlobs(globs []*globEntry, path, dir string, hits []Hit, one bool) []Hit {
	for _, g := range globs {
		if g.tree.couldMatchUnder(g.pattern, path, dir) {
			hits = appendRules(hits, g.rules, path)
			if one && len(g.rules) > 0 {
				return hits
			}
		}
	}
	return hits
}

// isClean reports whether filepath.Clean would return p unchanged, for an absolute p; it is
// much cheaper than Clean.
func isClean(p string) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	if len(p) == 1 {
		return true
	}
	if p[len(p)-1] == '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		// p[i+1:] starts a segment: not empty, not "." and not "..".
		rest := p[i+1:]
		switch {
		case rest == "" || rest[0] == '/':
			return false
		case rest[0] == '.' && (len(rest) == 1 || rest[1] == '/'):
			return false
		case rest[0] == '.' && rest[1] == '.' && (len(rest) == 2 || rest[2] == '/'):
			return false
		}
	}
	return true
}
