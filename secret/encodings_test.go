package secret_test

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/wardenhq/warden/secret"
)

// encodings are the ways issue 11 found a value leaking, each a function of the bytes leaked.
// Redact must replace every one of them, for the whole value and for a run of 8 of its
// characters.
var encodings = []struct {
	name string
	enc  func(string) string
}{
	{"plain", func(s string) string { return s }},
	{"reversed", reverse},
	{"base64", str(base64.StdEncoding)},
	{"base64 raw", str(base64.RawStdEncoding)},
	{"base64 URL", str(base64.URLEncoding)},
	{"base64 after 1 byte", func(s string) string { return base64.StdEncoding.EncodeToString([]byte("x" + s)) }},
	{"base64 after 2 bytes", func(s string) string { return base64.StdEncoding.EncodeToString([]byte("xy" + s + "!")) }},
	{"base64 URL after 1 byte", func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte("u" + s)) }},
	{"base64 wrapped every 4 with spaces", func(s string) string { return wrap(base64.StdEncoding.EncodeToString([]byte(s)), 4, " ") }},
	{"base64 wrapped every 3 with newlines", func(s string) string { return wrap(base64.StdEncoding.EncodeToString([]byte(s)), 3, "\n") }},
	{"base64 wrapped every 7 with CRLF", func(s string) string { return wrap(base64.StdEncoding.EncodeToString([]byte(s)), 7, "\r\n") }},
	{"base64 wrapped every 1", func(s string) string { return wrap(base64.StdEncoding.EncodeToString([]byte(s)), 1, " ") }},
	{"base64 after 2 bytes wrapped every 5", func(s string) string { return wrap(base64.StdEncoding.EncodeToString([]byte("ab"+s)), 5, "\n") }},
	{"base64 of base64", func(s string) string { return b64(b64(s)) }},
	{"base64 of base64 after bytes", func(s string) string { return b64(b64("key: " + s)) }},
	{"base64 of base64 URL", func(s string) string { return b64(base64.RawURLEncoding.EncodeToString([]byte("\x01" + s))) }},
	{"base32", str(base32.StdEncoding)},
	{"base32 raw", str(base32.StdEncoding.WithPadding(base32.NoPadding))},
	{"base32 hex alphabet", str(base32.HexEncoding)},
	{"base32 hex alphabet raw", str(base32.HexEncoding.WithPadding(base32.NoPadding))},
	{"base32 after 3 bytes", func(s string) string { return base32.StdEncoding.EncodeToString([]byte("abc" + s)) }},
	{"base32 hex after 1 byte", func(s string) string { return base32.HexEncoding.EncodeToString([]byte("a" + s)) }},
	{"base32 lower case", func(s string) string { return strings.ToLower(base32.StdEncoding.EncodeToString([]byte("ab" + s))) }},
	{"every byte %XX", func(s string) string { return eachByte(s, "%%%02X", "") }},
	{"every byte %xx", func(s string) string { return eachByte(s, "%%%02x", "") }},
	{`\u escapes`, func(s string) string { return eachRune(s, `\u%04x`) }},
	{`\u escapes upper`, func(s string) string { return eachRune(s, `\u%04X`) }},
	{`\x escapes`, func(s string) string { return eachByte(s, `\x%02x`, "") }},
	{"HTML decimal references", func(s string) string { return eachRune(s, "&#%d;") }},
	{"HTML hex references", func(s string) string { return eachRune(s, "&#x%x;") }},
	{"HTML references, named punctuation", htmlNamed},
	{"hex", func(s string) string { return hex.EncodeToString([]byte(s)) }},
	{"HEX", func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) }},
	{"hex with spaces", func(s string) string { return eachByte(s, "%02x", " ") }},
	{"hex with colons", func(s string) string { return eachByte(s, "%02x", ":") }},
	{"HEX with dashes", func(s string) string { return eachByte(s, "%02X", "-") }},
	{"hex with commas", func(s string) string { return eachByte(s, "%02x", ",") }},
	{"hex 0x, comma space", func(s string) string { return eachByte(s, "0x%02x", ", ") }},
	{"hex 0X, space", func(s string) string { return eachByte(s, "0X%02X", " ") }},
	{`hex \x`, func(s string) string { return eachByte(s, `\x%02X`, "") }},
	{"hex in groups of 4 bytes", func(s string) string { return wrap(hex.EncodeToString([]byte(s)), 8, " ") }},
	{"fullwidth", fullwidth},
	{"zero-width spaces between", func(s string) string { return joinRunes(s, "\u200b") }},
	{"zero-width joiners between", func(s string) string { return joinRunes(s, "\u200d") }},
	{"word joiners between", func(s string) string { return joinRunes(s, "\u2060") }},
	{"zero-width no-break spaces between", func(s string) string { return joinRunes(s, "\ufeff") }},
	{"fullwidth with zero-width non-joiners", func(s string) string { return joinRunes(fullwidth(s), "\u200c") }},
	{"UTF-16 hex BE", func(s string) string { return utf16Hex(s, false) }},
	{"UTF-16 hex LE", func(s string) string { return utf16Hex(s, true) }},
	{"UTF-16 HEX BE spaced", func(s string) string { return wrap(strings.ToUpper(utf16Hex(s, false)), 4, " ") }},
	{"spaced out", func(s string) string { return joinRunes(s, " ") }},
	{"JSON escaped", func(s string) string { return strings.NewReplacer(`"`, `\"`, `\`, `\\`).Replace(s) }},
}

// str adapts an encoder to strings.
func str(enc interface{ EncodeToString([]byte) string }) func(string) string {
	return func(s string) string { return enc.EncodeToString([]byte(s)) }
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func wrap(s string, every int, sep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i += every {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(s[i:min(i+every, len(s))])
	}
	return b.String()
}

func eachByte(s, format, sep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if i > 0 {
			b.WriteString(sep)
		}
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

// eachRune writes every rune of s in a format; \u formats write runes past U+FFFF as
// surrogate pairs, as JSON does. Invalid UTF-8 is left as it is: no escape stands for it.
func eachRune(s, format string) string {
	if !utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.HasPrefix(format, `\u`) && r > 0xffff {
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, format, u)
			}
			continue
		}
		fmt.Fprintf(&b, format, r)
	}
	return b.String()
}

// runes splits s into its characters, a byte of invalid UTF-8 standing alone.
func runes(s string) []string {
	var out []string
	for len(s) > 0 {
		_, n := utf8.DecodeRuneInString(s)
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func joinRunes(s, sep string) string { return strings.Join(runes(s), sep) }

func fullwidth(s string) string {
	var b strings.Builder
	for _, c := range runes(s) {
		if len(c) == 1 && 0x21 <= c[0] && c[0] <= 0x7e {
			b.WriteRune(rune(c[0]) + 0xff01 - 0x21)
		} else {
			b.WriteString(c)
		}
	}
	return b.String()
}

// htmlNamed writes punctuation as named references and the rest as decimal ones, every other
// character left plain.
func htmlNamed(s string) string {
	if !utf8.ValidString(s) {
		return s
	}
	named := map[byte]string{'-': "&#45;", '_': "&lowbar;", '.': "&period;", '/': "&sol;", '+': "&plus;",
		'=': "&equals;", '!': "&excl;", '&': "&amp;", '<': "&lt;", '"': "&quot;", '#': "&num;", '$': "&dollar;"}
	var b strings.Builder
	i := 0
	for _, r := range s {
		if n, ok := named[byte(r)]; ok && r < 0x80 {
			b.WriteString(n)
		} else if i%2 == 0 {
			fmt.Fprintf(&b, "&#%d;", r)
		} else {
			b.WriteRune(r)
		}
		i++
	}
	return b.String()
}

func utf16Hex(s string, little bool) string {
	if !utf8.ValidString(s) {
		return s // no UTF-16 stands for invalid UTF-8
	}
	var b strings.Builder
	for _, u := range utf16.Encode([]rune(s)) {
		hi, lo := byte(u>>8), byte(u)
		if little {
			hi, lo = lo, hi
		}
		fmt.Fprintf(&b, "%02x%02x", hi, lo)
	}
	return b.String()
}

// testValues are realistic secrets: an API key, a JWT-like token, punctuation.
var testValues = []string{
	"sk-Ab3dE5gH7jK9mN2pQ4sT6vW8yZ0bC1dF",
	"eyJhbGciOi.J9xT4kQ-p_Zr8Lw2.mVb5Nc",
	"P@ss_w0rd+Rh7#Kq!9z$Mx=Lv",
}

// eightRun returns a run of 8 characters of v with mixed case and digits, as Redact requires
// of a part of a value.
func eightRun(t *testing.T, v string) string {
	t.Helper()
	for i := 0; i+8 <= len(v); i++ {
		run := v[i : i+8]
		var upper, lower, digit bool
		distinct := map[rune]bool{}
		for _, r := range run {
			distinct[r] = true
			upper = upper || 'A' <= r && r <= 'Z'
			lower = lower || 'a' <= r && r <= 'z'
			digit = digit || '0' <= r && r <= '9'
		}
		if upper && lower && digit && len(distinct) == 8 && !strings.ContainsAny(run, " \t\n:,-") {
			return run
		}
	}
	t.Fatalf("no run of 8 in %q", v)
	return ""
}

func TestRedactEveryEncoding(t *testing.T) {
	r := secret.NewRegistry(testScope)
	handles := map[string]string{}
	for _, v := range testValues {
		handles[v] = r.Add(secret.TypeToken, secret.New(v))
	}
	for _, tt := range encodings {
		for _, v := range testValues {
			for _, part := range []string{"whole", "8 characters"} {
				leak := v
				if part != "whole" {
					leak = eightRun(t, v)
				}
				encoded := tt.enc(leak)
				t.Run(tt.name+"/"+part+"/"+v[:4], func(t *testing.T) {
					give := "Result: {" + encoded + "} done."
					got := r.Redact(give)
					if !strings.Contains(got, handles[v]) {
						t.Fatalf("Redact(%q) = %q: no handle", give, got)
					}
					if strings.Contains(got, encoded) {
						t.Fatalf("Redact(%q) = %q: the encoded run is still there", give, got)
					}
					// What is left besides handles: the edges of a block encoding at most.
					rest := strings.TrimSuffix(strings.TrimPrefix(strings.ReplaceAll(got, handles[v], ""), "Result: {"), "} done.")
					// a prefix that is not the value stays: "key: " in base64 of base64
					if left := 8 + 8*strings.Count(tt.name, "after bytes"); len(rest) > left {
						t.Errorf("Redact(%q) = %q: %q left", give, got, rest)
					}
				})
			}
		}
	}
}
