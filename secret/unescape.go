package secret

import (
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The escape view of a text is the text with its escapes decoded: percent escapes (%73),
// backslash escapes (\u0073, \x73, and JSON's \" \\ \/ \n \t \r \b \f), HTML character
// references (&#115; &#x73; and the named references of ASCII punctuation, &amp; &quot; ...),
// fullwidth forms of ASCII (U+FF01..U+FF5E) turned back into ASCII, and zero-width characters
// (U+200B..U+200D, U+2060, U+FEFF) removed. A text is scanned a second time, as its escape view,
// only when it has an escape that stands for a byte of some indexed value, or a zero-width
// character: most texts have none that matters (JSON's \n and \", a URL's %20 or %2F, &amp; in
// code stand for bytes that random keys do not hold), and cost one look at each '%', '\\',
// '&' and 0xE2 or 0xEF byte.

// escapesMatter reports whether the text just classified needs its escape view scanned,
// and whether with a '+' as a space too (a query: there is a percent escape and a '+'). It
// looks at each escape that stands for a byte of some indexed value (or a zero-width
// character), in a small decoded window around it: a run of a value that holds the escape
// holds a gram that starts within 7 bytes before it to 3 after, so three probes of the main
// index, at one position in four, tell whether such a run may be there. Only then is the
// whole view scanned.
func (sc *scanner) escapesMatter(text string) (scan, plusSpace bool) {
	c := &sc.cls
	if sc.m.ix5 == nil {
		return false, false
	}
	plus := -1 // whether the text holds a '+', once asked
	for k := 0; k*masksPerBlock < len(c.masks); k++ {
		for s := c.masks[k*masksPerBlock+maskSpecial]; s != 0; s &= s - 1 {
			i := k*64 + bits.TrailingZeros64(s)
			if text[i] == '\\' && i+1 < len(text) {
				if e := text[i+1]; controlEscape[e] || quoteEscape[e] && !sc.m.valueByte[e] {
					continue // \n, \t...: a separator, which no run holds; \" or \/ of a byte no value holds
				}
			}
			out, n, size := decodeEscape(text, i)
			if size == 0 || n == 0 && i == 0 || n > 0 && !sc.m.valueByte[out[0]] {
				continue // not an escape; a byte order mark that starts the text; a byte no value holds
			}
			percent := false
			if text[i] == '%' {
				if plus < 0 {
					plus = 0
					if strings.IndexByte(text, '+') >= 0 {
						plus = 1
					}
				}
				percent = plus == 1
			}
			for _, plus := range []bool{false, true} {
				if plus && !percent {
					break
				}
				if escapeWindowMayMatch(sc.m, c, text, i, plus) {
					return true, percent
				}
			}
		}
	}
	return false, false
}

// controlEscape marks the letters of the backslash escapes of control characters.
var controlEscape = [256]bool{'n': true, 't': true, 'r': true, 'b': true, 'f': true}

// quoteEscape marks the bytes that a backslash before them stands for (see decodeEscape).
var quoteEscape = [256]bool{'"': true, '\\': true, '/': true, '\'': true}

// escapeWindowMayMatch decodes and compacts text around the escape at i and probes the main
// index's filters where a run holding the escape has a gram (see escapesMatter). The window
// of raw bytes starts small and doubles until it holds the 7 bytes before the escape and the
// 11 after that the probes need (escapes and separators around may take many raw bytes for
// few), or the text's ends.
//
// c is the classification of text: a window whose only special byte is the escape's is
// taken from the compacted text, with the escape decoded, rather than decoded a byte at a
// time.
func escapeWindowMayMatch(m *matcher, c *classification, text string, i int, plusSpace bool) bool {
	var small [64]byte
	for before, after := 12, 20; ; before, after = 2*before, 2*after {
		buf, w, q, from, to, ok := []byte(nil), 0, 0, 0, 0, false
		if !plusSpace {
			buf, w, q, from, to, ok = escapeWindowCompacted(small[:0], c, text, i, before, after)
		}
		if !ok {
			buf, w, q, from, to = escapeWindow(small[:0], text, i, plusSpace, before, after)
		}
		if (q >= 7 || from == 0) && (w-q >= 11 || to == len(text)) {
			for p := q - 7; p <= q+3; p += 4 {
				if p >= 0 && p+5 <= w && m.mayStart(buf, p, w) {
					return true
				}
			}
			return false
		}
	}
}

// escapeWindow decodes and compacts raw bytes [i-before, i+after) of text, clipped to
// [from, to), into buf: w bytes, the escape's first at q. The buffer has 8 bytes of room past
// w.
func escapeWindow(buf []byte, text string, i int, plusSpace bool, before, after int) (_ []byte, w, q, from, to int) {
	from, to = max(0, i-before), min(len(text), i+after)
	q = -1
	for j := from; j < to; {
		if j >= i && q < 0 {
			q = len(buf)
		}
		c := text[j]
		if byteClass[c]&clsSpecial != 0 {
			if out, n, size := decodeEscape(text, j); size > 0 {
				for _, b := range out[:n] {
					if !isSeparator(b) {
						buf = append(buf, b)
					}
				}
				j += size
				continue
			}
		}
		if c == '+' && plusSpace {
			c = ' '
		}
		if !isSeparator(c) {
			buf = append(buf, c)
		}
		j++
	}
	if q < 0 {
		q = len(buf)
	}
	w = len(buf)
	return append(buf, make([]byte, 8)...), w, q, from, to
}

// escapeWindowCompacted is escapeWindow without a query's plus, for a window whose only
// special byte is the escape at i: it copies the compacted text on either side of the
// escape. ok is false, and nothing done, if the window has another special byte.
func escapeWindowCompacted(buf []byte, c *classification, text string, i, before, after int) (_ []byte, w, q, from, to int, ok bool) {
	from, to = max(0, i-before), min(len(text), i+after)
	for k := from / 64; k*64 < to; k++ {
		lo, hi := max(from-k*64, 0), min(to-k*64, 64)
		s := c.masks[k*masksPerBlock+maskSpecial] & (^uint64(0) << lo) & (^uint64(0) >> (64 - hi))
		if k == i/64 {
			s &^= 1 << (i % 64)
		}
		if s != 0 {
			return buf, 0, 0, from, to, false
		}
	}
	out, n, size := decodeEscape(text, i)
	buf = append(buf, c.compacted[c.rank(from):c.rank(i)]...)
	q = len(buf)
	for _, b := range out[:n] {
		if !isSeparator(b) {
			buf = append(buf, b)
		}
	}
	if i+size < to {
		buf = append(buf, c.compacted[c.rank(i+size):c.rank(to)]...)
	}
	w = len(buf)
	return append(buf, make([]byte, 8)...), w, q, from, to, true
}

// escapeView decodes text into sc.view, with each decoded byte's raw positions. With
// plusSpace a '+' stands for a space, as in a URL's query.
func (sc *scanner) escapeView(text string, plusSpace bool) {
	sc.view, sc.viewStart, sc.viewEnd = sc.view[:0], sc.viewStart[:0], sc.viewEnd[:0]
	for i := 0; i < len(text); {
		if byteClass[text[i]]&clsSpecial != 0 {
			if out, n, size := decodeEscape(text, i); size > 0 {
				for _, b := range out[:n] {
					sc.view = append(sc.view, b)
					sc.viewStart = append(sc.viewStart, int32(i))
					sc.viewEnd = append(sc.viewEnd, int32(i+size))
				}
				i += size
				continue
			}
		}
		c := text[i]
		if c == '+' && plusSpace {
			c = ' '
		}
		sc.view = append(sc.view, c)
		sc.viewStart = append(sc.viewStart, int32(i))
		sc.viewEnd = append(sc.viewEnd, int32(i+1))
		i++
	}
}

// decodeEscape decodes the escape at s[i], which is a special byte: it returns the n bytes
// the escape stands for and its size in s, or size 0 if there is no escape there.
func decodeEscape(s string, i int) (out [4]byte, n, size int) {
	rest := s[i:]
	put := func(r rune, size int) ([4]byte, int, int) {
		var b [4]byte
		if r < 0 || r > utf8.MaxRune || utf16.IsSurrogate(r) {
			return b, 0, 0
		}
		return b, utf8.EncodeRune(b[:], r), size
	}
	switch rest[0] {
	case '%':
		if v, ok := hexValue(rest, 1, 2); ok {
			return [4]byte{byte(v)}, 1, 3
		}
	case '\\':
		if len(rest) < 2 {
			break
		}
		switch rest[1] {
		case 'u':
			v, ok := hexValue(rest, 2, 4)
			if !ok {
				break
			}
			r := rune(v)
			if utf16.IsSurrogate(r) {
				if len(rest) >= 12 && rest[6] == '\\' && rest[7] == 'u' {
					if lo, ok := hexValue(rest, 8, 4); ok {
						if d := utf16.DecodeRune(r, rune(lo)); d != utf8.RuneError {
							return put(d, 12)
						}
					}
				}
				break
			}
			return put(r, 6)
		case 'x':
			if v, ok := hexValue(rest, 2, 2); ok {
				return [4]byte{byte(v)}, 1, 4
			}
		case '"', '\\', '/', '\'':
			return [4]byte{rest[1]}, 1, 2
		case 'n':
			return [4]byte{'\n'}, 1, 2
		case 't':
			return [4]byte{'\t'}, 1, 2
		case 'r':
			return [4]byte{'\r'}, 1, 2
		case 'b':
			return [4]byte{'\b'}, 1, 2
		case 'f':
			return [4]byte{'\f'}, 1, 2
		}
	case '&':
		return decodeReference(rest)
	case 0xE2:
		// U+200B..U+200D: E2 80 8B..8D; U+2060: E2 81 A0
		if len(rest) >= 3 && (rest[1] == 0x80 && 0x8B <= rest[2] && rest[2] <= 0x8D || rest[1] == 0x81 && rest[2] == 0xA0) {
			return out, 0, 3
		}
	case 0xEF:
		if len(rest) < 3 {
			break
		}
		switch {
		case rest[1] == 0xBB && rest[2] == 0xBF: // U+FEFF
			return out, 0, 3
		case rest[1] == 0xBC && 0x81 <= rest[2] && rest[2] <= 0xBF: // U+FF01..U+FF3F
			return [4]byte{rest[2] - 0x81 + 0x21}, 1, 3
		case rest[1] == 0xBD && 0x80 <= rest[2] && rest[2] <= 0x9E: // U+FF40..U+FF5E
			return [4]byte{rest[2] - 0x80 + 0x60}, 1, 3
		}
	}
	return out, 0, 0
}

// hexValue decodes n hex digits at s[at:].
func hexValue(s string, at, n int) (uint32, bool) {
	if len(s) < at+n {
		return 0, false
	}
	var v uint32
	for _, c := range []byte(s[at : at+n]) {
		d := hexDigit(c)
		if d < 0 {
			return 0, false
		}
		v = v<<4 | uint32(d)
	}
	return v, true
}

func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// decodeReference decodes an HTML character reference at the start of s: numeric, decimal or
// hex (the closing ';' may be left out, as browsers allow), or named, for ASCII punctuation.
func decodeReference(s string) (out [4]byte, n, size int) {
	if len(s) < 3 {
		return out, 0, 0
	}
	if s[1] == '#' {
		i, base := 2, 10
		if s[2] == 'x' || s[2] == 'X' {
			i, base = 3, 16
		}
		start := i
		v := 0
		for i < len(s) && i-start < 8 {
			d := hexDigit(s[i])
			if d < 0 || d >= base {
				break
			}
			v = v*base + d
			i++
		}
		if i == start {
			return out, 0, 0
		}
		if i < len(s) && s[i] == ';' {
			i++
		}
		r := rune(v)
		if r < 0 || r > utf8.MaxRune || utf16.IsSurrogate(r) {
			return out, 0, 0
		}
		return out, utf8.EncodeRune(out[:], r), i
	}
	end := strings.IndexByte(s[:min(len(s), 20)], ';')
	if end < 2 {
		return out, 0, 0
	}
	if c, ok := namedReferences[s[1:end]]; ok {
		return [4]byte{c}, 1, end + 1
	}
	return out, 0, 0
}

// namedReferences are the HTML named character references of ASCII punctuation.
var namedReferences = map[string]byte{
	"excl": '!', "quot": '"', "QUOT": '"', "num": '#', "dollar": '$', "percnt": '%', "amp": '&',
	"AMP": '&', "apos": '\'', "lpar": '(', "rpar": ')', "ast": '*', "midast": '*', "plus": '+',
	"comma": ',', "period": '.', "sol": '/', "colon": ':', "semi": ';', "lt": '<', "LT": '<',
	"equals": '=', "gt": '>', "GT": '>', "quest": '?', "commat": '@', "lsqb": '[', "lbrack": '[',
	"bsol": '\\', "rsqb": ']', "rbrack": ']', "Hat": '^', "lowbar": '_', "UnderBar": '_',
	"grave": '`', "DiacriticalGrave": '`', "lcub": '{', "lbrace": '{', "verbar": '|', "vert": '|',
	"VerticalLine": '|', "rcub": '}', "rbrace": '}', "tilde": '~', "Tab": '\t', "NewLine": '\n',
	"nbsp": ' ',
}
