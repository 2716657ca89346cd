package secret_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

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
	})
}
