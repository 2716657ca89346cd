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

// MaxEncodedLen is the longest value, in bytes, whose encodings Redact looks for. A longer
// value (a certificate bundle, a whole file) is redacted as itself and JSON-escaped only:
// its other encodings would multiply the automaton by ten, for a value that is rarely
// re-encoded whole. A PEM private key, RSA 8192 included, is well under it.
const MaxEncodedLen = 8 << 10

// minPartialBase64 is the shortest partial base64 form looked for (see forms): 48 bits, so
// that chance matches inside unrelated base64 are negligible.
const minPartialBase64 = 8

// Redact returns s with every known value of MinRedactLen bytes or more, and each of its
// encodings, replaced by the value's handle (P3). The encodings are: JSON string escaping
// (as Go, most encoders, and Python with ASCII output write it), and for values up to
// MaxEncodedLen base64 (standard and URL-safe alphabets, padded and raw, and the part of the
// encoding that does not depend on what surrounds the value, for a value encoded inside a
// longer text), URL query and path escaping, and lower and upper hex. The registry's own handles in s are left as they are, even where a
// value happens to occur inside one. Where occurrences overlap, the leftmost wins, and of
// those starting at the same place the longest.
//
// Redact is exact-match replacement, not data-loss prevention: a value split across lines,
// re-encoded in other ways, or transformed by a program is not found.
//
// The matcher is built when the set of values changes, never here. Redact takes time linear
// in len(s) whatever the values; a text with no known value costs one pass and is returned
// without a copy. Redact is safe for concurrent use.
func (r *Registry) Redact(s string) string {
	m := r.st.m.Load()
	if m == nil {
		return s
	}
	return m.replace(s)
}

// RedactValue returns a decoded JSON value (map[string]any, []any, string, float64,
// json.Number, bool, nil) with every string in it redacted, object keys too. Numbers are
// redacted as JSON would print them; a number that held a known value becomes a string with
// the handle in it. Maps and slices are copied where something changed, never modified; an
// unchanged value is returned as it is. If two keys of one object redact to the same key,
// a key that was unchanged keeps its place, then keys in sorted order, and the rest are
// dropped. Values of other Go types are returned unchanged.
func (r *Registry) RedactValue(v any) any {
	m := r.st.m.Load()
	if m == nil {
		return v
	}
	out, _ := m.redactValue(v)
	return out
}

// redactValue redacts v and says whether anything changed.
func (m *matcher) redactValue(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if s := m.replace(x); s != x {
			return s, true
		}
	case float64:
		if m.numeric {
			n := formatJSONFloat(x)
			if s := m.replace(n); s != n {
				return s, true
			}
		}
	case json.Number:
		if m.numeric {
			if s := m.replace(string(x)); s != string(x) {
				return s, true
			}
		}
	case []any:
		var out []any
		for i, e := range x {
			ne, changed := m.redactValue(e)
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
			if nk := m.replace(k); nk != k {
				moved = append(moved, k)
				continue
			}
			ne, changed := m.redactValue(e)
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
				nk := m.replace(k)
				if _, taken := out[nk]; taken {
					continue
				}
				out[nk], _ = m.redactValue(x[k])
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

// forms returns the strings Redact looks for in place of value v: v itself and its common
// encodings, without repeats. It returns nothing for a value shorter than MinRedactLen, and
// only the value and its JSON escapes for one longer than MaxEncodedLen.
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
