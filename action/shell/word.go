package shell

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// seg is a run of a word with one quoting: literal text (quotes and escapes removed) or an
// expansion (text is its source).
type seg struct {
	text   string
	quoted bool // quoted or escaped: not subject to globbing or ~
	dyn    bool // an expansion whose value is not known
	ext    bool // an extended glob: @(a|b), !(x)
}

// arg is one argument as the program would see it, as far as it can be known.
type arg struct {
	segs []seg
	val  string // the text of the segments joined: the value when !dyn
	dyn  bool   // contains an expansion: the value is not known
	// pipe: the whole word is a process substitution, a /dev/fd path (no file effect).
	pipe bool
	// input: an argument xargs reads from its input; covered by xargs's own Unknown.
	input bool
	// roots: find's {}, each path under these roots.
	roots []root
	// noTilde: the part after an option's = or letter, where bash does not expand ~
	noTilde bool
	src     string // source text, for Unknown.Text
	pos     string // "line:col"
}

// root is one of find's starting points, with find's working directory.
type root struct {
	arg     arg
	rootDir string
}

func (a arg) lit() bool { return !a.dyn && !a.pipe && !a.input && a.roots == nil }

// glob reports whether an unquoted part holds a glob character.
func (a arg) glob() bool {
	for i, s := range a.segs {
		if s.ext {
			return true
		}
		if s.quoted || s.dyn {
			continue
		}
		if strings.ContainsAny(s.text, "*?") {
			return true
		}
		// [ is a bracket expression only when a ] follows it
		if j := strings.IndexByte(s.text, '['); j >= 0 {
			if strings.IndexByte(s.text[j+1:], ']') >= 0 {
				return true
			}
			for _, t := range a.segs[i+1:] {
				if !t.dyn && strings.IndexByte(t.text, ']') >= 0 {
					return true
				}
			}
		}
	}
	return false
}

// tilde reports whether the argument starts with an unquoted ~.
func (a arg) tilde() bool {
	return !a.noTilde && len(a.segs) > 0 && !a.segs[0].quoted && !a.segs[0].dyn && strings.HasPrefix(a.segs[0].text, "~")
}

// litPrefix is the length of the value before the first expansion.
func (a arg) litPrefix() int {
	n := 0
	for _, s := range a.segs {
		if s.dyn {
			break
		}
		n += len(s.text)
	}
	return n
}

// suffix is the argument from byte i of its value on: the value of an option (--output=F)
// or of an operand (of=F). A cut inside an expansion leaves an expansion.
func (a arg) suffix(i int) arg {
	out := arg{src: a.src, pos: a.pos, noTilde: i > 0}
	for _, s := range a.segs {
		if i >= len(s.text) && (!s.dyn || i > len(s.text)) {
			i -= len(s.text)
			continue
		}
		if i > 0 {
			s.text = s.text[i:]
			i = 0
		}
		out.segs = append(out.segs, s)
	}
	out.finish()
	return out
}

// assignSuffix is the value of a NAME=value operand; bash expands a ~ right after the = of
// such a word, as in an assignment.
func (a arg) assignSuffix(i int) arg {
	out := a.suffix(i)
	out.noTilde = false
	return out
}

// finish computes val and dyn from segs.
func (a *arg) finish() {
	a.dyn = false
	switch len(a.segs) {
	case 0:
		a.val = ""
	case 1:
		a.val = a.segs[0].text
		a.dyn = a.segs[0].dyn
	default:
		var b strings.Builder
		for _, s := range a.segs {
			b.WriteString(s.text)
			a.dyn = a.dyn || s.dyn
		}
		a.val = b.String()
	}
}

// litArg is an argument with a known literal value.
func litArg(v, src, pos string) arg {
	return arg{segs: []seg{{text: v, quoted: true}}, val: v, src: src, pos: pos}
}

// maxBraceWords bounds a brace expansion; a larger one is treated as an expansion whose value
// is not known.
const maxBraceWords = 256

// words converts a command's words to arguments: quotes removed, brace expansions expanded.
func (w *walker) words(ws []*syntax.Word) []arg {
	out, spare := wordSpace(len(ws)) // the segments of the words share one allocation
	for _, word := range ws {
		out = w.appendWordIn(out, word, &spare)
	}
	return out
}

// wordSpace returns empty arguments and segments with room for n words (and a few segments
// more), in one allocation for the short command lines most are: every simple command's words
// took two.
func wordSpace(n int) ([]arg, []seg) {
	switch n {
	case 1:
		b := new(struct {
			args [1]arg
			segs [5]seg
		})
		return b.args[:0], b.segs[:0]
	case 2:
		b := new(struct {
			args [2]arg
			segs [6]seg
		})
		return b.args[:0], b.segs[:0]
	case 3:
		b := new(struct {
			args [3]arg
			segs [7]seg
		})
		return b.args[:0], b.segs[:0]
	case 4:
		b := new(struct {
			args [4]arg
			segs [8]seg
		})
		return b.args[:0], b.segs[:0]
	case 5:
		b := new(struct {
			args [5]arg
			segs [9]seg
		})
		return b.args[:0], b.segs[:0]
	case 6:
		b := new(struct {
			args [6]arg
			segs [10]seg
		})
		return b.args[:0], b.segs[:0]
	}
	return make([]arg, 0, n), make([]seg, 0, n+4)
}

// appendWord appends the arguments one word expands to.
func (w *walker) appendWord(out []arg, word *syntax.Word) []arg {
	return w.appendWordIn(out, word, nil)
}

// appendWordIn is appendWord, taking the arguments' segments from spare where they fit (see
// argIn).
func (w *walker) appendWordIn(out []arg, word *syntax.Word, spare *[]seg) []arg {
	src, pos := w.text(word), w.pos(word.Pos())
	if hasBrace(word) {
		cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), word.Parts...)}
		if syntax.SplitBraces(cp) {
			alts, ok := expandBraces(cp.Parts)
			if !ok {
				a := arg{segs: []seg{{text: src, dyn: true}}, src: src, pos: pos}
				a.finish()
				return append(out, a)
			}
			for _, parts := range alts {
				out = append(out, w.argIn(parts, src, pos, spare))
			}
			return out
		}
	}
	return append(out, w.argIn(word.Parts, src, pos, spare))
}

func hasBrace(word *syntax.Word) bool {
	for _, p := range word.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "{") {
			return true
		}
	}
	return false
}

// word converts one word to one argument, without brace expansion (redirect targets,
// assignment values).
func (w *walker) word(word *syntax.Word) arg {
	return w.arg(word.Parts, w.text(word), w.pos(word.Pos()))
}

func (w *walker) arg(parts []syntax.WordPart, src, pos string) arg {
	return w.argIn(parts, src, pos, nil)
}

// argIn is arg, with the segments written into the free capacity of *spare when they fit
// there, which then grows by them: the words of one command then share one allocation. The
// argument's segments are capped at their length, so that appending to them copies rather
// than writes over the next argument's.
func (w *walker) argIn(parts []syntax.WordPart, src, pos string, spare *[]seg) arg {
	a := arg{src: src, pos: pos}
	if len(parts) == 1 {
		if _, ok := parts[0].(*syntax.ProcSubst); ok {
			a.pipe = true
		}
	}
	var free int
	if spare != nil {
		n := len(*spare)
		a.segs, free = (*spare)[n:n], cap(*spare)-n
	}
	for _, p := range parts {
		a.segs = w.appendPart(a.segs, p, false)
	}
	// append reallocates only to a larger capacity: an unchanged one means the segments are
	// still in spare
	if spare != nil && cap(a.segs) == free {
		*spare = (*spare)[:len(*spare)+len(a.segs)]
		a.segs = a.segs[:len(a.segs):len(a.segs)]
		if len(a.segs) == 0 {
			a.segs = nil // as without spare
		}
	}
	a.finish()
	return a
}

// appendPart appends the segments of one word part.
func (w *walker) appendPart(segs []seg, p syntax.WordPart, inDbl bool) []seg {
	switch p := p.(type) {
	case *syntax.Lit:
		if inDbl {
			return append(segs, seg{text: unescapeDbl(p.Value), quoted: true})
		}
		return appendUnquoted(segs, p.Value)
	case *syntax.SglQuoted:
		if p.Dollar {
			return append(segs, seg{text: ansiC(p.Value), quoted: true})
		}
		return append(segs, seg{text: p.Value, quoted: true})
	case *syntax.DblQuoted:
		if len(p.Parts) == 0 {
			return append(segs, seg{quoted: true})
		}
		for _, q := range p.Parts {
			segs = w.appendPart(segs, q, true)
		}
		return segs
	case *syntax.ExtGlob:
		return append(segs, seg{text: w.text(p), ext: true})
	default: // parameter, command, arithmetic and process substitutions
		return append(segs, seg{text: w.text(p), dyn: true})
	}
}

// appendUnquoted appends an unquoted literal, turning each backslash-escaped character into a
// quoted segment so that \* is not a glob and \~ not a home directory.
func appendUnquoted(segs []seg, s string) []seg {
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 {
			if s != "" {
				segs = append(segs, seg{text: s})
			}
			return segs
		}
		if i > 0 {
			segs = append(segs, seg{text: s[:i]})
		}
		s = s[i+1:]
		if s == "" {
			return segs
		}
		if s[0] == '\n' { // line continuation
			s = s[1:]
			continue
		}
		_, n := utf8.DecodeRuneInString(s)
		segs = append(segs, seg{text: s[:n], quoted: true})
		s = s[n:]
	}
}

// unescapeDbl removes the backslashes that are escapes inside double quotes.
func unescapeDbl(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				b.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeHdoc removes the escapes of an unquoted here-document body.
func unescapeHdoc(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '\\':
				b.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ansiC decodes the body of a $'...' string.
func ansiC(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(c)
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		case 'x', 'u', 'U':
			digits := 2
			switch c {
			case 'u':
				digits = 4
			case 'U':
				digits = 8
			}
			j := i + 1
			for j < len(s) && j-i-1 < digits && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if c == 'x' {
				b.WriteByte(byte(n))
			} else {
				b.WriteRune(rune(n))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(n))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// expandBraces expands the brace expressions of a word split by syntax.SplitBraces into the
// part lists of its words. It fails when there would be more than maxBraceWords.
func expandBraces(parts []syntax.WordPart) ([][]syntax.WordPart, bool) {
	alts := [][]syntax.WordPart{nil}
	for _, p := range parts {
		br, ok := p.(*syntax.BraceExp)
		if !ok {
			for i := range alts {
				alts[i] = append(alts[i], p)
			}
			continue
		}
		var elems [][]syntax.WordPart
		if br.Sequence {
			var ok bool
			if elems, ok = braceSequence(br); !ok {
				return nil, false
			}
		} else {
			for _, e := range br.Elems {
				sub, ok := expandBraces(e.Parts)
				if !ok {
					return nil, false
				}
				elems = append(elems, sub...)
			}
		}
		if len(alts)*len(elems) > maxBraceWords {
			return nil, false
		}
		next := make([][]syntax.WordPart, 0, len(alts)*len(elems))
		for _, a := range alts {
			for _, e := range elems {
				n := make([]syntax.WordPart, 0, len(a)+len(e))
				n = append(append(n, a...), e...)
				next = append(next, n)
			}
		}
		alts = next
	}
	return alts, true
}

// braceSequence expands {x..y[..incr]}, numbers or single letters.
func braceSequence(br *syntax.BraceExp) ([][]syntax.WordPart, bool) {
	from, to := br.Elems[0].Lit(), br.Elems[1].Lit()
	step := int64(1)
	if len(br.Elems) == 3 {
		s, err := strconv.ParseInt(br.Elems[2].Lit(), 10, 64)
		if err != nil {
			return nil, false
		}
		if s < 0 {
			s = -s
		}
		if s != 0 {
			step = s
		}
	}
	lit := func(v string) []syntax.WordPart { return []syntax.WordPart{&syntax.Lit{Value: v}} }
	x, err1 := strconv.ParseInt(from, 10, 64)
	y, err2 := strconv.ParseInt(to, 10, 64)
	chars := err1 != nil || err2 != nil
	if chars {
		if len(from) != 1 || len(to) != 1 {
			return nil, false
		}
		x, y = int64(from[0]), int64(to[0])
	}
	lo, hi := x, y
	if lo > hi {
		lo, hi = hi, lo
	}
	count := (uint64(hi)-uint64(lo))/uint64(step) + 1
	if count > maxBraceWords {
		return nil, false
	}
	width := 0
	if !chars && (len(from) > 1 && (from[0] == '0' || strings.HasPrefix(from, "-0")) ||
		len(to) > 1 && (to[0] == '0' || strings.HasPrefix(to, "-0"))) {
		width = max(len(from), len(to))
	}
	out := make([][]syntax.WordPart, 0, count)
	for k := uint64(0); k < count; k++ {
		var i int64
		if x <= y {
			i = int64(uint64(x) + k*uint64(step))
		} else {
			i = int64(uint64(x) - k*uint64(step))
		}
		switch {
		case chars:
			out = append(out, lit(string(rune(i))))
		case width > 0:
			s := strconv.FormatInt(i, 10)
			neg := strings.HasPrefix(s, "-")
			s = strings.TrimPrefix(s, "-")
			pad := width - len(s)
			if neg {
				pad--
			}
			if pad > 0 {
				s = strings.Repeat("0", pad) + s
			}
			if neg {
				s = "-" + s
			}
			out = append(out, lit(s))
		default:
			out = append(out, lit(strconv.FormatInt(i, 10)))
		}
	}
	return out, true
}
