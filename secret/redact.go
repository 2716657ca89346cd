package secret

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MinRedactLen is the shortest value, in bytes, that Redact looks for. A shorter value is
// still protected where it was declared (the envelope becomes a handle and Resolve gives it
// back), but Redact does not search other text for it, neither the value nor its encodings:
// a three-byte value ("abc", "123", "yes") occurs by chance in most texts, and replacing all of
// them would make results unreadable while a value that short protects little anyway.
const MinRedactLen = 4

// MaxEncodedLen is the longest value, in bytes, whose base64 Redact looks for (its hex, up
// to 1 KiB). A longer value (a certificate bundle, a whole file) is redacted as itself, and
// reversed, in every decoded view (escapes, base32, base64 of base64): its encodings would
// grow the index by some twenty bytes a byte, for a value that is rarely re-encoded whole. A
// PEM private key, RSA 8192 included, is under it.
const MaxEncodedLen = 8 << 10

// minPartialBase64 is the shortest partial base64 form of a short value looked for (see
// forms): 48 bits, so that chance matches inside unrelated base64 are negligible.
const minPartialBase64 = 8

// Redact returns s with every known value of its Shared replaced, and every run of one that
// stands for enough of it, plain or encoded (P3): by the value's handle if this registry holds
// the value, by Redacted if only another registry of the Shared does. What is found, and what
// is not, is in the package documentation. The registry's own handles in s are left whole,
// even where a value occurs inside one; of overlapping finds the leftmost wins, then the
// longest, and what is left of the other is replaced too.
//
// The index is built when the values change, never here. Redact takes time linear in len(s);
// a text with no known value costs one pass (and a look at each escape) and is returned
// without a copy. Redact is safe for concurrent use.
func (r *Registry) Redact(s string) string {
	m := r.st.shared.m.Load()
	if m == nil {
		return s
	}
	return r.redact(m, s)
}

// RedactTexts redacts texts that are read one after another, such as the text blocks of one
// result, as one text: a value split across two of them is found, and each part is replaced
// by the handle. Separators may be put between the parts as Redact skips them (a value
// wrapped across lines is found). It returns the texts redacted, in a new slice.
func (r *Registry) RedactTexts(texts []string) []string {
	out := slices.Clone(texts)
	m := r.st.shared.m.Load()
	if m == nil || len(texts) == 0 {
		return out
	}
	if len(texts) == 1 {
		out[0] = r.redact(m, texts[0])
		return out
	}
	joined := strings.Join(texts, "\n")
	sc := r.scan(m, joined)
	defer scanners.Put(sc)
	at := 0
	for i, t := range texts {
		var part []match
		for _, mt := range sc.matches {
			if mt.end > at && mt.start < at+len(t) {
				part = append(part, match{start: max(mt.start, at) - at, end: min(mt.end, at+len(t)) - at, id: mt.id})
			}
		}
		if len(part) > 0 {
			out[i] = r.render(t, part)
		}
		at += len(t) + 1
	}
	return out
}

// redact is Redact with the matcher loaded.
func (r *Registry) redact(m *matcher, s string) string {
	if len(s) < MinRedactLen {
		return s
	}
	sc := r.scan(m, s)
	defer scanners.Put(sc)
	if len(sc.matches) == 0 {
		return s
	}
	return r.render(s, sc.matches)
}

// scan returns a pooled scanner holding the matches of m's values in s.
func (r *Registry) scan(m *matcher, s string) *scanner {
	sc := scanners.Get().(*scanner)
	sc.m = m
	sc.matches = sc.matches[:0]
	sc.find(s)
	return sc
}

// render replaces the matches in s, leaving the registry's handles whole.
func (r *Registry) render(s string, ms []match) string {
	v := r.st.view.Load()
	keep := v.handleSpans(s)
	slices.SortFunc(ms, func(a, b match) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	var b strings.Builder
	b.Grow(len(s) + 64)
	cur := 0            // s[:cur] is written or replaced
	lastID := int32(-1) // the value of the replacement that ends at cur
	ki := 0
	emit := func(start, end int, id int32, merge bool) {
		if merge && start == cur && id == lastID {
			cur = end // the same value found twice, overlapping: one replacement
			return
		}
		b.WriteString(s[cur:start])
		if h, ok := v.redact[id]; ok {
			b.WriteString(h)
		} else {
			b.WriteString(Redacted)
		}
		cur, lastID = end, id
	}
	for _, mt := range ms {
		merge := mt.start < cur
		start, end := max(mt.start, cur), mt.end
		for start < end {
			for ki < len(keep) && keep[ki].end <= start {
				ki++
			}
			if ki < len(keep) && keep[ki].start < end {
				if k := keep[ki]; k.start > start {
					emit(start, k.start, mt.id, merge)
				}
				start = keep[ki].end
				lastID = -1
				continue
			}
			emit(start, end, mt.id, merge)
			start = end
		}
	}
	b.WriteString(s[cur:])
	return b.String()
}

// span is a part [start, end) of a text.
type span struct{ start, end int }

// handleSpans returns where the registry's handles are in s.
func (v *view) handleSpans(s string) []span {
	if len(v.handles) == 0 {
		return nil
	}
	var out []span
	for i := 0; ; {
		j := strings.Index(s[i:], HandlePrefix)
		if j < 0 {
			return out
		}
		i += j
		end := i + len(HandlePrefix)
		for end < len(s) && (isHandleByte(s[end])) {
			end++
		}
		// A handle is followed by anything but its own characters; try its exact length.
		if h := s[i:end]; v.handles[h] {
			out = append(out, span{i, end})
		} else if k := strings.IndexByte(h, '.'); k >= 0 && k+27 <= len(h) && v.handles[h[:k+27]] {
			out = append(out, span{i, i + k + 27})
		}
		i += len(HandlePrefix)
	}
}

func isHandleByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '2' <= c && c <= '7' || c == '/' || c == '.' || c == '-'
}

// RedactValue returns a decoded JSON value (map[string]any, []any, string, float64,
// json.Number, bool, nil) with every string in it redacted, object keys too. Numbers are
// redacted as JSON would print them; a number that held a known value becomes a string with
// the handle in it. Maps and slices are copied where something changed, never modified; an
// unchanged value is returned as it is. If two keys of one object redact to the same key,
// a key that was unchanged keeps its place, then keys in sorted order, and the rest are
// dropped. Values of other Go types are returned unchanged.
func (r *Registry) RedactValue(v any) any {
	m := r.st.shared.m.Load()
	if m == nil {
		return v
	}
	out, _ := r.redactValue(m, v)
	return out
}

// redactValue redacts v and says whether anything changed.
func (r *Registry) redactValue(m *matcher, v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if s := r.redact(m, x); s != x {
			return s, true
		}
	case float64:
		if m.numeric {
			n := formatJSONFloat(x)
			if s := r.redact(m, n); s != n {
				return s, true
			}
		}
	case json.Number:
		if m.numeric {
			if s := r.redact(m, string(x)); s != string(x) {
				return s, true
			}
		}
	case []any:
		var out []any
		for i, e := range x {
			ne, changed := r.redactValue(m, e)
			if changed && out == nil {
				out = slices.Clone(x)
			}
			if out != nil {
				out[i] = ne
			}
		}
		if out != nil {
			return out, true
		}
	case map[string]any:
		var out map[string]any
		var moved []string // keys that redaction changes
		for k, e := range x {
			if nk := r.redact(m, k); nk != k {
				moved = append(moved, k)
				continue
			}
			ne, changed := r.redactValue(m, e)
			if changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = ne
			}
		}
		if len(moved) > 0 {
			if out == nil {
				out = maps.Clone(x)
			}
			for _, k := range moved {
				delete(out, k)
			}
			slices.Sort(moved)
			for _, k := range moved {
				nk := r.redact(m, k)
				if _, taken := out[nk]; taken {
					continue
				}
				out[nk], _ = r.redactValue(m, x[k])
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}

// formatJSONFloat formats f as encoding/json does, so that a number is searched in the form
// the model will read.
func formatJSONFloat(f float64) string {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return string(b)
}

// forms returns the strings the automaton looks for in place of a value too short to be
// indexed by its runs (see buildMatcher): v itself and its common encodings, without repeats.
// It returns nothing for a value shorter than MinRedactLen.
func forms(v string) []string {
	if len(v) < MinRedactLen {
		return nil
	}
	out := []string{v}
	add := func(f string) {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	// Inside a JSON text: as Go escapes (with <, >, & as \u003c...), as most encoders do, and
	// with everything outside ASCII escaped, as Python's json.dumps does by default.
	add(jsonEscape(v, true))
	add(jsonEscape(v, false))
	add(jsonEscapeASCII(v))
	if len(v) > MaxEncodedLen {
		return out
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		// Padded too, although the padding says nothing: a handle with "==" stuck to it
		// would not resolve when the model passes it back.
		add(enc.EncodeToString([]byte(v)))
		raw := enc.WithPadding(base64.NoPadding)
		add(raw.EncodeToString([]byte(v)))
		// The value encoded as part of a longer text (echo adds a newline; a credential sits
		// in "user:password"): only the characters made of the value's bits alone are
		// fixed, for each of the three alignments the value can have.
		for off := range 3 {
			if p := partialBase64(raw, v, off); len(p) >= minPartialBase64 {
				add(p)
			}
		}
	}
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	add(hex.EncodeToString([]byte(v)))
	add(strings.ToUpper(hex.EncodeToString([]byte(v))))
	return out
}

// partialBase64 returns the characters of the raw base64 encoding of off arbitrary bytes
// followed by v whose six bits all come from v.
func partialBase64(enc *base64.Encoding, v string, off int) string {
	buf := make([]byte, off+len(v))
	copy(buf[off:], v)
	s := enc.EncodeToString(buf)
	first := (8*off + 5) / 6         // first character starting at or after v's first bit
	last := (8 * (off + len(v))) / 6 // characters before this one end by v's last bit
	if last <= first {
		return ""
	}
	return s[first:last]
}

// jsonEscape returns v as encoding/json writes it inside a string, without the quotes.
func jsonEscape(v string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(v) // a string always encodes
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return string(out[1 : len(out)-1])
}

// jsonEscapeASCII returns v inside a JSON string with every non-ASCII character as \uXXXX.
func jsonEscapeASCII(v string) string {
	const hexDigits = "0123456789abcdef"
	var b strings.Builder
	u := func(r rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hexDigits[(r>>shift)&0xf])
		}
	}
	for _, r := range v {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			u(r)
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			u(0xd800 + (r>>10)&0x3ff)
			u(0xdc00 + r&0x3ff)
		default:
			u(r) // invalid UTF-8 decodes as U+FFFD, which is what an encoder writes for it
		}
	}
	return b.String()
}
