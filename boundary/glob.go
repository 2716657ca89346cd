package boundary

import (
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// This file reads doublestar patterns for the index: which literals every matching path must
// hold, and whether a pattern could match something below a directory. Everything here must
// be a necessary condition of doublestar.Match, never a guess: a literal wrongly required
// would let a blocked path through. Three traps shape it (doublestar v4.10.4):
//
//   - a class can match "/" ("a[^x]b" matches "a/b"), and "{a,**}/x" matches "x";
//   - a "/" next to "**" may match nothing ("**/x" matches "x"; "/x/**" matches "/x");
//   - runes are compared decoded, so two different invalid UTF-8 bytes match each other.
//
// So literals are taken only from plain ASCII bytes outside classes and alternatives, and a
// "/" beside a star or an alternative is dropped from them.

// globTok is one token of a pattern at the top level: alternatives and classes are one token.
type globTok struct {
	kind       byte // 'l' plain ASCII literal, '*', '?', '[' class, '{' alternatives, 'o' other
	start, end int
}

// tokenize splits a valid doublestar pattern into top-level tokens.
func tokenize(p string) []globTok {
	var toks []globTok
	for i := 0; i < len(p); {
		c := p[i]
		t := globTok{start: i, end: i + 1}
		switch {
		case c == '\\':
			t.kind, t.end = 'o', min(i+2, len(p))
		case c == '*' || c == '?':
			t.kind = c
		case c == '[':
			t.kind, t.end = '[', classEnd(p, i)
		case c == '{':
			t.kind, t.end = '{', altEnd(p, i)
		case c >= utf8.RuneSelf || c == '}':
			t.kind = 'o'
		default:
			t.kind = 'l'
		}
		toks = append(toks, t)
		i = t.end
	}
	return toks
}

// classEnd is the index just past the class that opens at p[i] == '['.
func classEnd(p string, i int) int {
	for j := i + 1; j < len(p); j++ {
		switch p[j] {
		case '\\':
			j++
		case ']':
			return j + 1
		}
	}
	return len(p)
}

// altEnd is the index just past the alternatives that open at p[i] == '{', nesting included.
func altEnd(p string, i int) int {
	depth := 0
	for j := i; j < len(p); j++ {
		switch p[j] {
		case '\\':
			j++
		case '[':
			j = classEnd(p, j) - 1
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return j + 1
			}
		}
	}
	return len(p)
}

// maxAlternatives bounds brace expansion; a pattern with more is analysed conservatively.
const maxAlternatives = 64

// expandBraces writes out every alternative of p, as doublestar reads them (textually, left
// to right). ok is false when there would be more than maxAlternatives.
func expandBraces(p string) (alts []string, ok bool) {
	var walk func(p string) bool
	walk = func(p string) bool {
		open := -1
		for _, t := range tokenize(p) {
			if t.kind == '{' {
				open = t.start
				break
			}
		}
		if open < 0 {
			if len(alts) == maxAlternatives {
				return false
			}
			alts = append(alts, p)
			return true
		}
		end := altEnd(p, open)
		inner := p[open+1 : end-1]
		for {
			comma := nextAlt(inner)
			part := inner
			if comma >= 0 {
				part = inner[:comma]
			}
			if !walk(p[:open] + part + p[end:]) {
				return false
			}
			if comma < 0 {
				return true
			}
			inner = inner[comma+1:]
		}
	}
	ok = walk(p)
	return alts, ok
}

// nextAlt is the index of the first comma of s at depth zero, or -1.
func nextAlt(s string) int {
	depth := 0
	for j := 0; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '[':
			j = classEnd(s, j) - 1
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// globKeys are the literals a path must hold to match a glob.
type globKeys struct {
	prefix string   // the path starts with it
	suffix string   // the path ends with it
	segs   []string // each is a whole segment of the path
	subs   []string // the path contains each
}

// pathGlobKeys finds the required literals of a valid doublestar pattern.
func pathGlobKeys(p string) globKeys {
	var k globKeys
	toks := tokenize(p)
	for i := 0; i < len(toks); {
		if toks[i].kind != 'l' {
			i++
			continue
		}
		j := i
		for j < len(toks) && toks[j].kind == 'l' {
			j++
		}
		start, end := toks[i].start, toks[j-1].end
		run := p[start:end]
		// A "/" beside a star or alternatives may match nothing.
		loose := func(t int) bool { return t >= 0 && t < len(toks) && (toks[t].kind == '*' || toks[t].kind == '{') }
		trimmed := run
		if loose(i - 1) {
			trimmed = strings.TrimPrefix(trimmed, "/")
		}
		if loose(j) {
			trimmed = strings.TrimSuffix(trimmed, "/")
		}
		if i == 0 {
			k.prefix = run
			if j < len(toks) {
				k.prefix = strings.TrimSuffix(run, "/")
			}
		}
		if j == len(toks) {
			k.suffix = run
			if i > 0 && loose(i-1) {
				k.suffix = strings.TrimPrefix(run, "/")
			}
		}
		if trimmed != "" {
			k.subs = append(k.subs, trimmed)
		}
		// Whole segments: bounded by the pattern's ends or by a "/" in the same run. A "/"
		// in the pattern text matches a "/" or belongs to a "**/" that stops at one, so the
		// literal between two of them is a whole segment of the path.
		for a := start; a < end; {
			b := strings.IndexByte(p[a:end], '/')
			if b < 0 {
				b = end
			} else {
				b += a
			}
			leftOK := a == 0 || (a > start && p[a-1] == '/')
			rightOK := b == len(p) || (b < end && p[b] == '/')
			if b > a && leftOK && rightOK {
				k.segs = append(k.segs, p[a:b])
			}
			a = b + 1
		}
		i = j
	}
	return k
}

// lead is the literal prefix of every path a glob matches.
func lead(p string) string { return pathGlobKeys(p).prefix }

// treeGlob is what a glob needs for recursive checks: its literal prefix and its
// alternatives with the places a path may be cut between segments.
type treeGlob struct {
	lead string
	// structured is false when some alternative has a class that matches "/", an escaped
	// "/", or there are too many alternatives: then any glob whose lead fits is taken to
	// match (fail closed).
	structured bool
	alts       []cutAlt
	// anywhere is set when an alternative starts with "**/" (or is "**"): its part before the
	// first cut, "**", matches every directory, so the glob could match below any path whose
	// lead fits. Found once here, it spares the matching on every recursive check.
	anywhere bool
}

type cutAlt struct {
	s    string
	cuts []int // indexes of the top-level "/" of s
}

func newTreeGlob(p string) *treeGlob {
	tg := &treeGlob{lead: lead(p)}
	alts, ok := expandBraces(p)
	if !ok {
		return tg
	}
	for _, a := range alts {
		ca := cutAlt{s: a}
		for _, t := range tokenize(a) {
			switch t.kind {
			case 'l':
				if a[t.start] == '/' {
					ca.cuts = append(ca.cuts, t.start)
				}
			case 'o':
				if a[t.start] == '\\' && t.end > t.start+1 && a[t.start+1] == '/' {
					return tg
				}
			case '[':
				if m, _ := doublestar.Match(a[t.start:t.end], "/"); m {
					return tg
				}
			}
		}
		tg.alts = append(tg.alts, ca)
		if a == "**" || len(ca.cuts) > 0 && ca.cuts[0] == 2 && a[:2] == "**" {
			tg.anywhere = true
		}
	}
	tg.structured = true
	return tg
}

// couldMatchUnder reports whether glob pattern p could match path or a path below it. dir is
// path without a trailing slash ("" for the root). The answer may be true where nothing
// below actually matches (a glob too irregular to analyse), never false where something does.
func (tg *treeGlob) couldMatchUnder(p, path, dir string) bool {
	if !strings.HasPrefix(dir, tg.lead) && !hasPrefixSlash(tg.lead, dir) {
		return false
	}
	if tg.anywhere || !tg.structured {
		return true
	}
	if m, _ := doublestar.Match(p, path); m {
		return true
	}
	// A path dir/rest matches an alternative only if the part before some top-level "/"
	// matches dir (that "/" meets the one after dir), or a "**" spans it (then the part up
	// to and including "**" matches dir, as doublestar lets "x/**" match anything below x).
	for _, a := range tg.alts {
		for _, c := range a.cuts {
			if m, _ := doublestar.Match(a.s[:c], dir); m {
				return true
			}
		}
		if strings.HasSuffix(a.s, "/**") || a.s == "**" {
			if m, _ := doublestar.Match(a.s, dir); m {
				return true
			}
		}
	}
	return false
}

// hasPrefixSlash reports whether s starts with dir+"/".
func hasPrefixSlash(s, dir string) bool {
	return len(s) > len(dir) && s[len(dir)] == '/' && s[:len(dir)] == dir
}

// globCanMatchAbsolute reports whether a valid doublestar pattern can match some path that
// starts with "/".
func globCanMatchAbsolute(p string) bool {
	alts, ok := expandBraces(p)
	if !ok {
		return true
	}
	for _, a := range alts {
		if a == "**" || strings.HasPrefix(a, "**/") {
			return true
		}
		a = strings.TrimLeft(a, "*") // stars match nothing as well
		switch {
		case a == "":
		case a[0] == '/', strings.HasPrefix(a, `\/`):
			return true
		case a[0] == '[':
			if m, _ := doublestar.Match(a[:classEnd(a, 0)], "/"); m {
				return true
			}
		}
	}
	return false
}

// globProblem says why doublestar.ValidatePattern refused p.
func globProblem(p string) string {
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 >= len(p) {
				return `it ends with an unescaped "\"`
			}
			i++
		case '[':
			j := i + 1
			if j < len(p) && (p[j] == '^' || p[j] == '!') {
				j++
			}
			if j < len(p) && p[j] == ']' {
				return `empty character class at byte ` + itoa(i)
			}
			closed := false
			for ; j < len(p) && !closed; j++ {
				switch p[j] {
				case '\\':
					j++
				case ']':
					closed = true
				}
			}
			if !closed {
				return `unclosed "[" at byte ` + itoa(i)
			}
			i = j - 1
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return `"}" without "{" at byte ` + itoa(i)
			}
			depth--
		}
	}
	if depth > 0 {
		return `unclosed "{"`
	}
	return "not doublestar syntax"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}

// Command globs: "*" any run of characters ("/" and spaces included), "?" one character, "\"
// makes the next byte literal.

// cmdGlobValid reports whether p has no dangling escape.
func cmdGlobValid(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' {
			if i+1 == len(p) {
				return false
			}
			i++
		}
	}
	return true
}

// cmdGlobMatch reports whether text matches the command glob p. It keeps one backtrack point,
// which is exact for patterns whose only wildcard that spans is "*".
func cmdGlobMatch(p, text string) bool {
	pi, ti := 0, 0
	starP, starT := -1, 0
	for ti < len(text) {
		if pi < len(p) {
			switch c := p[pi]; c {
			case '*':
				starP, starT = pi+1, ti
				pi++
				continue
			case '?':
				_, n := utf8.DecodeRuneInString(text[ti:])
				pi++
				ti += n
				continue
			case '\\':
				if pi+1 < len(p) && p[pi+1] == text[ti] {
					pi += 2
					ti++
					continue
				}
			default:
				if c == text[ti] {
					pi++
					ti++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		_, n := utf8.DecodeRuneInString(text[starT:])
		starT += n
		pi, ti = starP, starT
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// cmdGlobKeys finds the literals a command text must hold to match p.
func cmdGlobKeys(p string) globKeys {
	var k globKeys
	i := 0
	for i < len(p) {
		if c := p[i]; c == '*' || c == '?' || c == '\\' {
			if c == '\\' {
				i++
			}
			i++
			continue
		}
		j := i
		for j < len(p) && p[j] != '*' && p[j] != '?' && p[j] != '\\' {
			j++
		}
		if i == 0 {
			k.prefix = p[:j]
		}
		if j == len(p) {
			k.suffix = p[i:]
		}
		k.subs = append(k.subs, p[i:j])
		i = j
	}
	return k
}
