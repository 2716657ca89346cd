package secret_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wardenhq/warden/secret"
)

var handleRE = regexp.MustCompile(`protected://[a-z-]+/[a-z2-7]{8}\.[a-z2-7]{26}`)

// knownHandles returns the handles of r that occur in s.
func knownHandles(r *secret.Registry, s string) []string {
	var out []string
	for _, h := range handleRE.FindAllString(s, -1) {
		if _, err := r.Resolve(map[string]string{"H": h}); err == nil || errors.Is(err, secret.ErrManagedHandle) {
			out = append(out, h)
		}
	}
	return out
}

// leaked returns the first of values (of MinRedactLen bytes or more) that occurs in s outside
// the handles given.
func leaked(s string, handles, values []string) (string, bool) {
	pieces := []string{s}
	for _, h := range handles {
		var next []string
		for _, p := range pieces {
			next = append(next, strings.Split(p, h)...)
		}
		pieces = next
	}
	for _, v := range values {
		if len(v) < secret.MinRedactLen {
			continue
		}
		for _, p := range pieces {
			if strings.Contains(p, v) {
				return v, true
			}
		}
	}
	return "", false
}

// declaredValues returns the values of the well-formed value envelopes in v, and of any
// object that looks like one: a superset is fine for the check.
func declaredValues(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == secret.KeySensitive || k == secret.KeySensitiveBurrow {
				if inner, ok := e.(map[string]any); ok {
					if s, ok := inner["value"].(string); ok {
						*out = append(*out, s)
					}
				}
			}
			declaredValues(e, out)
		}
	case []any:
		for _, e := range x {
			declaredValues(e, out)
		}
	}
}

// visibleStrings returns every string the model would read in v: keys, strings and numbers
// as JSON prints them.
func visibleStrings(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			*out = append(*out, k)
			visibleStrings(e, out)
		}
	case []any:
		for _, e := range x {
			visibleStrings(e, out)
		}
	case string:
		*out = append(*out, x)
	case float64, json.Number:
		b, _ := json.Marshal(x)
		*out = append(*out, string(b))
	}
}

func FuzzProtect(f *testing.F) {
	for _, s := range []string{
		`{"a": {"$wardenSensitive": {"type": "token", "value": "tok-1234"}}, "b": "echo tok-1234"}`,
		`[{"$burrowSensitive": {"type": "password", "value": "p\"w\\d\n"}}, "cFwiZA==", 1234]`,
		`{"$wardenSensitive": {"type": "secret", "value": "1234567"}, "x": 1}`,
		`{"k": {"$wardenManaged": ` + managedJSON + `}}`,
		`{"tok-5678": [{"$wardenSensitive": {"type": "credential", "value": "tok-5678"}}]}`,
		`{"n": 12345678, "v": {"$wardenSensitive": {"type": "token", "value": "12345678"}}}`,
		`{"$wardenSensitive": {"type": "token", "value": {"$wardenSensitive": {"type": "token", "value": "x"}}}}`,
		`{"{\"$wardenSensitive\":{\"type\":\"token\",\"value\":\"abcd\"}}": 1}`,
		`"plain"`, `null`, `[]`, `{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var in any
		if err := json.Unmarshal([]byte(text), &in); err != nil {
			return
		}
		r := secret.NewRegistry(testScope)
		out, err := r.Protect(in)
		if err != nil {
			if r.Len() != 0 {
				t.Fatalf("Protect failed (%v) but kept %d handles", err, r.Len())
			}
			return
		}
		var values, visible []string
		declaredValues(in, &values)
		visibleStrings(out, &visible)
		for _, s := range visible {
			if v, ok := leaked(s, knownHandles(r, s), values); ok {
				t.Fatalf("the declared value %q is visible in %q", v, s)
			}
		}
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("the protected result does not encode: %v", err)
		}
	})
}

func FuzzRedact(f *testing.F) {
	f.Add("abcd", "tok-1234", "p\"w\\d\n!", "x abcd tok-1234 dG9rLTEyMzQ= 746f6b2d31323334 p\\\"w\\\\d\\n!")
	f.Add("aaaa", "aaaaaaaa", "aab", "aaaaaaaaaaaaaaaaaaab")
	f.Add("protected", "token", "://", "protected://token/abcd")
	f.Add("1234", "234567", "34", "123456789")
	f.Add("sk-Ab3dE5gH7jK9mN2pQ4sT6vW8yZ0bC1dF", "eyJhbGciOi.J9xT4kQ-p_Zr8Lw2.mVb5Nc", "P@ss_w0rd+Rh7#Kq!9z$Mx=Lv", "log: ok")
	f.Add("deadbeefcafe0123456789ab", "correct horse battery staple", "Zm9vYmFyYmF6", "")
	f.Fuzz(func(t *testing.T, v1, v2, v3, text string) {
		r := secret.NewRegistry(testScope)
		values := []string{v1, v2, v3}
		// One Protect, so one build of the matcher, for the three values.
		var list []any
		for i, v := range values {
			typ := []string{"token", "password", "token"}[i]
			list = append(list, map[string]any{"$wardenSensitive": map[string]any{"type": typ, "value": v}})
		}
		out, err := r.Protect(list)
		if errors.Is(err, secret.ErrLimit) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var handles []string
		for _, h := range out.([]any) {
			handles = append(handles, h.(string))
		}
		// The text as given, and with the values and an encoding of each spliced in.
		texts := []string{text}
		spliced := text
		for _, v := range values {
			spliced += " " + v + " " + base64.StdEncoding.EncodeToString([]byte(v)) + " " + strconv.Quote(v)
		}
		texts = append(texts, spliced)
		for _, s := range texts {
			got := r.Redact(s)
			if v, ok := leaked(got, handles, values); ok {
				t.Fatalf("Redact(%q) = %q: %q is still there", s, got, v)
			}
		}
		// Every encoding of issue 11, of each value long enough to be found by its runs, and of
		// a run of 8 characters of it that is random enough (see accept): none may be left.
		for _, v := range values {
			if !indexed(v) {
				continue
			}
			leaks := []string{v}
			if run, ok := randomRun(v); ok {
				leaks = append(leaks, run)
			}
			for _, leak := range leaks {
				for _, e := range encodings {
					if !utf8.ValidString(v) && runeEncoding(e.name) {
						continue // no such encoding stands for invalid UTF-8
					}
					if len(v) > 1<<10 && indexedForm(e.name) || len(v) > secret.MaxEncodedLen && e.name != "plain" && e.name != "reversed" {
						continue // a long value's forms are indexed up to these lengths (see MaxEncodedLen)
					}
					enc := e.enc(leak)
					if strings.Count(enc, " ") > len(enc)/3 {
						continue // an encoding mostly of spaces is compared without them below
					}
					got := r.Redact(text + "<" + enc + ">" + text)
					if strings.Contains(got, "<"+enc+">") {
						t.Fatalf("%s of %q: Redact(%q) = %q", e.name, leak, text+"<"+enc+">"+text, got)
					}
				}
			}
		}
	})
}

// indexed reports whether Redact finds runs of v (not only v whole): 8 bytes without
// separators, 11 if they are all hex digits, and not only whitespace-like bytes.
func indexed(v string) bool {
	var b strings.Builder
	hexOnly := true
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= 0x20 || c == ':' || c == ',' || c == '-' {
			continue
		}
		b.WriteByte(c)
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
			hexOnly = false
		}
	}
	n := b.Len()
	return n >= 8 && !(hexOnly && n < 11)
}

// indexedForm reports whether an encoding is found by an indexed form other than base64, which
// Redact indexes for values up to 1 KB.
func indexedForm(name string) bool {
	return strings.Contains(name, "hex") || strings.Contains(name, "HEX") || strings.Contains(name, "UTF-16")
}

// runeEncoding reports whether an encoding of the encodings table writes characters rather
// than bytes.
func runeEncoding(name string) bool {
	for _, s := range []string{"UTF-16", `\u`, "HTML", "fullwidth", "zero-width", "joiners", "spaced"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// randomRun returns a run of 8 bytes of v with upper and lower case letters, digits and 8
// different bytes, none a separator, which Redact must find in every encoding.
func randomRun(v string) (string, bool) {
	for i := 0; i+8 <= len(v); i++ {
		run := v[i : i+8]
		if strings.ContainsAny(run, ":,-") || strings.IndexFunc(run, func(r rune) bool { return r <= 0x20 }) >= 0 {
			continue
		}
		var upper, lower, digit bool
		distinct := map[byte]bool{}
		for j := 0; j < 8; j++ {
			c := run[j]
			distinct[c] = true
			upper = upper || 'A' <= c && c <= 'Z'
			lower = lower || 'a' <= c && c <= 'z'
			digit = digit || '0' <= c && c <= '9'
		}
		if upper && lower && digit && len(distinct) == 8 {
			return run, true
		}
	}
	return "", false
}
