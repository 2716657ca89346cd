package secret_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/secret"
)

func TestRedactEncodings(t *testing.T) {
	// + / ? = & space, a quote and a non-ASCII letter, so that every encoding differs from
	// the others
	const v = "s3cr+t/v?l=ue&x yö>\"q"
	r := secret.NewRegistry(testScope)
	h := r.Add(secret.TypeToken, secret.New(v))
	jsonOf := func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }
	tests := []struct {
		name, encoded string
	}{
		{"exact", v},
		{"base64", base64.StdEncoding.EncodeToString([]byte(v))},
		{"base64 raw", base64.RawStdEncoding.EncodeToString([]byte(v))},
		{"base64 URL", base64.URLEncoding.EncodeToString([]byte(v))},
		{"base64 URL raw", base64.RawURLEncoding.EncodeToString([]byte(v))},
		{"query escaped", url.QueryEscape(v)},
		{"path escaped", url.PathEscape(v)},
		{"hex", hex.EncodeToString([]byte(v))},
		{"HEX", strings.ToUpper(hex.EncodeToString([]byte(v)))},
		{"JSON, as Go writes it", jsonOf(v)},
		{"JSON, ASCII only", `s3cr+t/v?l=ue&x y\u00f6>\"q`},
		{"JSON, without HTML escapes", `s3cr+t/v?l=ue&x yö>\"q`},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name != "exact" && tt.encoded == v || seen[tt.encoded] {
				t.Fatalf("the test value does not tell %s apart", tt.name)
			}
			seen[tt.encoded] = true
			give := "before " + tt.encoded + " after"
			if got, want := r.Redact(give), "before "+h+" after"; got != want {
				t.Errorf("Redact(%q) = %q; want %q", give, got, want)
			}
		})
	}
}

func TestRedactPartialBase64(t *testing.T) {
	const v = "tok-abcdefghij" // 14 bytes: the raw encoding's last character depends on what follows
	r := secret.NewRegistry(testScope)
	h := r.Add(secret.TypeToken, secret.New(v))
	for _, give := range []string{
		base64.StdEncoding.EncodeToString([]byte(v + "\n")),    // echo $TOKEN | base64
		base64.StdEncoding.EncodeToString([]byte("user:" + v)), // basic auth
		base64.StdEncoding.EncodeToString([]byte("ab:" + v + "!")),
		base64.RawURLEncoding.EncodeToString([]byte("x" + v + "xyz")),
	} {
		got := r.Redact(give)
		if !strings.Contains(got, h) {
			t.Errorf("Redact(%q) = %q; want the handle in it", give, got)
		}
		rest := strings.ReplaceAll(got, h, "")
		if len(rest) > 12 {
			t.Errorf("Redact(%q) leaves %q besides the handle", give, rest)
		}
	}
}

func TestRedact(t *testing.T) {
	r := secret.NewRegistry(testScope)
	hs := map[string]string{}
	for _, v := range []string{"abcd", "abcdefgh", "efghijkl", "p\"a\\s\ns", "1234", "xyz"} {
		hs[v] = r.Add(secret.TypeSecret, secret.New(v))
	}
	H := func(v string) string { return hs[v] }
	tests := []struct {
		name, give, want string
	}{
		{name: "nothing known", give: "nothing to see", want: "nothing to see"},
		{name: "exact", give: "[abcd]", want: "[" + H("abcd") + "]"},
		{name: "repeated", give: "abcd abcd", want: H("abcd") + " " + H("abcd")},
		{name: "the longer wins", give: "abcdefgh", want: H("abcdefgh")},
		{name: "the leftmost wins, the rest of the other goes too", give: "abcdefghijkl", want: H("abcdefgh") + H("efghijkl")},
		{name: "overlap, the leftmost wins", give: "xabcdefghijklx", want: "x" + H("abcdefgh") + H("efghijkl") + "x"},
		{name: "later overlap", give: "abcdefghijkl efghijkl", want: H("abcdefgh") + H("efghijkl") + " " + H("efghijkl")},
		{name: "adjacent occurrences keep their handles", give: "abcdefghabcdefgh", want: H("abcdefgh") + H("abcdefgh")},
		{name: "four bytes are redacted", give: "pin 1234!", want: "pin " + H("1234") + "!"},
		{name: "three bytes are not", give: "xyz and xyz", want: "xyz and xyz"},
		{name: "three bytes not by encoding either", give: "eHl6 78797a", want: "eHl6 78797a"},
		{name: "inside a JSON string with escapes", give: `{"k": "p\"a\\s\ns"}`, want: `{"k": "` + H("p\"a\\s\ns") + `"}`},
		{name: "raw, with the escapes' bytes", give: "p\"a\\s\ns", want: H("p\"a\\s\ns")},
		{name: "a known handle stays whole", give: "see " + H("abcd"), want: "see " + H("abcd")},
		{name: "a made-up handle is no hiding place", give: secret.HandlePrefix + "token/abcd", want: secret.HandlePrefix + "token/" + H("abcd")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Redact(tt.give); got != tt.want {
				t.Errorf("Redact(%q) = %q; want %q", tt.give, got, tt.want)
			}
		})
	}

	empty := secret.NewRegistry(testScope)
	if got := empty.Redact("abcd"); got != "abcd" {
		t.Errorf("an empty registry redacts: %q", got)
	}
	r.Forget()
	if got := r.Redact("abcd abcdefgh"); got != "abcd abcdefgh" {
		t.Errorf("Redact after Forget = %q", got)
	}
	if r.Len() != 0 {
		t.Errorf("Len after Forget = %d", r.Len())
	}
}

func TestRedactJSONDocument(t *testing.T) {
	// A value with characters that JSON escapes, in a serialised document: after Redact the
	// document still parses, and holds the handle where the value was.
	const v = "line1\nline2\t\"quoted\" <&> \\ é 😀"
	r := secret.NewRegistry(testScope)
	h := r.Add(secret.TypePrivateKey, secret.New(v))
	doc := map[string]any{"out": "key: " + v + " end", "list": []any{v}}
	b, _ := json.Marshal(doc)
	var got map[string]any
	if err := json.Unmarshal([]byte(r.Redact(string(b))), &got); err != nil {
		t.Fatalf("the redacted document does not parse: %v", err)
	}
	want := map[string]any{"out": "key: " + h + " end", "list": []any{h}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("redacted document (-want +got):\n%s", diff)
	}
}

func TestRedactValue(t *testing.T) {
	r := secret.NewRegistry(testScope)
	h := r.Add(secret.TypeToken, secret.New("tok-5555"))
	pin := r.Add(secret.TypePassword, secret.New("424242"))
	give := map[string]any{
		"a":        "Bearer tok-5555",
		"tok-5555": []any{"x", map[string]any{"tok-5555!": 1.5}},
		"n":        424242.0,
		"big":      4.24242e30,
		"num":      json.Number("14242420"),
		"same":     []any{"unchanged", 1.0, true, nil},
	}
	want := map[string]any{
		"a":    "Bearer " + h,
		h:      []any{"x", map[string]any{h + "!": 1.5}},
		"n":    pin,
		"big":  4.24242e30, // printed 4.24242e+30: not the value
		"num":  "1" + pin + "0",
		"same": []any{"unchanged", 1.0, true, nil},
	}
	before := map[string]any{}
	for k, v := range give {
		before[k] = v
	}
	got := r.RedactValue(give)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RedactValue (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, give); diff != "" {
		t.Errorf("RedactValue modified its input:\n%s", diff)
	}
	same := []any{"unchanged", 1.0}
	if got := r.RedactValue(same).([]any); &got[0] != &same[0] {
		t.Error("an unchanged slice was copied")
	}

	// Two keys that redact to the same key: the unchanged one keeps its place.
	collide := map[string]any{h: "kept", "tok-5555": "dropped", "dG9rLTU1NTU=": "dropped too"}
	if got := r.RedactValue(collide); !cmp.Equal(got, map[string]any{h: "kept"}) {
		t.Errorf("RedactValue(colliding keys) = %v", got)
	}
}

func TestAdd(t *testing.T) {
	r := secret.NewRegistry(testScope)
	h1 := r.Add(secret.TypeCredential, secret.New("upstream-cred"))
	h2 := r.Add(secret.TypeCredential, secret.New("upstream-cred"))
	h3 := r.Add(secret.TypeToken, secret.New("upstream-cred"))
	if h1 != h2 || h1 == h3 {
		t.Errorf("Add handles %q %q %q; want the first two equal, the third apart", h1, h2, h3)
	}
	if got := r.Redact("echo upstream-cred"); got != "echo "+h1 {
		t.Errorf("Redact = %q; want the first handle", got)
	}
	got, err := r.Resolve(map[string]string{"A": h1, "B": h3})
	if err != nil || got["A"].Reveal() != "upstream-cred" || got["B"].Reveal() != "upstream-cred" {
		t.Errorf("Resolve = %v, %v", got, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Add of an unknown type does not panic")
		}
	}()
	r.Add("api-key", secret.New("x"))
}
