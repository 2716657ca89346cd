package secret_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/secret"
)

var testScope = secret.Scope{Agent: "agent-1", Session: "session-1", Conversation: "conv-1"}

// decode parses a JSON text as the gateway does.
func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

// named replaces every handle of r in v by "<type:value>" (or "<managed:ref>"), so that a
// result can be compared with an expected one although handles are random.
func named(t *testing.T, r *secret.Registry, v any) any {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[named(t, r, k).(string)] = named(t, r, e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = named(t, r, e)
		}
		return out
	case string:
		return replaceHandles(t, r, x)
	}
	return v
}

func replaceHandles(t *testing.T, r *secret.Registry, s string) string {
	t.Helper()
	var b strings.Builder
	for {
		i := strings.Index(s, secret.HandlePrefix)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		// protected://<kind>/<8 characters>.<26 characters>
		kind, _, ok := strings.Cut(s[i+len(secret.HandlePrefix):], "/")
		end := i + len(secret.HandlePrefix) + len(kind) + 1 + 8 + 1 + 26
		if !ok || end > len(s) {
			t.Fatalf("a broken handle in %q", s)
		}
		h := s[i:end]
		if kind == "managed" {
			b.WriteString("<managed>")
		} else {
			got, err := r.Resolve(map[string]string{"V": h})
			if err != nil {
				t.Fatalf("a handle in the output does not resolve: %v", err)
			}
			b.WriteString("<" + kind + ":" + got["V"].Reveal() + ">")
		}
		s = s[end:]
	}
}

const managedJSON = `{"issuer": "vault-broker", "version": "1", "expires": "2026-12-01T00:00:00Z",
	"agent": "agent-1", "session": "session-1", "conversation": "conv-1",
	"provider": "vault", "ref": "kv/db#password"}`

func TestProtect(t *testing.T) {
	tests := []struct {
		name string
		give string
		want string
	}{
		{name: "no envelope", give: `{"a": [1, "x", true, null, {"b": 2.5}]}`, want: `{"a": [1, "x", true, null, {"b": 2.5}]}`},
		{name: "top level", give: `{"$wardenSensitive": {"type": "token", "value": "ghp_abcdef"}}`, want: `"<token:ghp_abcdef>"`},
		{name: "burrow key", give: `{"$burrowSensitive": {"type": "password", "value": "pa55word"}}`, want: `"<password:pa55word>"`},
		{
			name: "every depth and type",
			give: `{"user": "ann", "creds": {
				"key": {"$wardenSensitive": {"type": "private-key", "value": "-----BEGIN KEY-----\nAAAA\n-----END KEY-----"}},
				"list": [{"$wardenSensitive": {"type": "credential", "value": "cred-1111"}},
				         [[{"$burrowSensitive": {"type": "secret", "value": "deep-secret"}}]]],
				"t": {"u": {"v": {"$wardenSensitive": {"type": "token", "value": "tok-2222"}}}}}}`,
			want: `{"user": "ann", "creds": {
				"key": "<private-key:-----BEGIN KEY-----\nAAAA\n-----END KEY----->",
				"list": ["<credential:cred-1111>", [["<secret:deep-secret>"]]],
				"t": {"u": {"v": "<token:tok-2222>"}}}}`,
		},
		{
			name: "the value elsewhere in the result is redacted, keys and numbers too",
			give: `{"token": {"$wardenSensitive": {"type": "token", "value": "tok-3333"}},
				"echo": "Authorization: Bearer tok-3333", "tok-3333": 1, "b64": "dG9rLTMzMzM="}`,
			want: `{"token": "<token:tok-3333>", "echo": "Authorization: Bearer <token:tok-3333>",
				"<token:tok-3333>": 1, "b64": "<token:tok-3333>"}`,
		},
		{
			name: "a number that is a declared value",
			give: `{"pin": {"$wardenSensitive": {"type": "password", "value": "987654"}}, "n": 987654, "m": 19876543}`,
			want: `{"pin": "<password:987654>", "n": "<password:987654>", "m": "1<password:987654>3"}`,
		},
		{
			name: "same value twice, same handle; another type, another handle",
			give: `[{"$wardenSensitive": {"type": "token", "value": "same-value"}},
				{"$burrowSensitive": {"type": "token", "value": "same-value"}},
				{"$wardenSensitive": {"type": "secret", "value": "same-value"}}]`,
			want: `["<token:same-value>", "<token:same-value>", "<secret:same-value>"]`,
		},
		{
			name: "a short value is protected where declared, not searched elsewhere",
			give: `{"p": {"$wardenSensitive": {"type": "password", "value": "abc"}}, "s": "abc abc", "e": {"$wardenSensitive": {"type": "password", "value": ""}}}`,
			want: `{"p": "<password:abc>", "s": "abc abc", "e": "<password:>"}`,
		},
		{
			name: "text that mentions a declaration key is text",
			give: `{"doc": "wrap a value in {\"$wardenSensitive\": {...}}", "k": "$burrowManaged"}`,
			want: `{"doc": "wrap a value in {\"$wardenSensitive\": {...}}", "k": "$burrowManaged"}`,
		},
		{name: "managed", give: `{"db": {"$wardenManaged": ` + managedJSON + `}}`, want: `{"db": "<managed>"}`},
		{name: "managed, burrow key", give: `[{"$burrowManaged": ` + managedJSON + `}]`, want: `["<managed>"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := secret.NewRegistry(testScope)
			in := decode(t, tt.give)
			before := decode(t, tt.give)
			out, err := r.Protect(in)
			if err != nil {
				t.Fatalf("Protect: %v", err)
			}
			if diff := cmp.Diff(decode(t, tt.want), named(t, r, out)); diff != "" {
				t.Errorf("Protect (-want +got, handles named):\n%s", diff)
			}
			if diff := cmp.Diff(before, in); diff != "" {
				t.Errorf("Protect modified its input:\n%s", diff)
			}
		})
	}
}

func TestProtectHandles(t *testing.T) {
	r := secret.NewRegistry(testScope)
	values := []string{"ghp_" + strings.Repeat("Z", 36), "p@ss/word?", "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n", "c2VjcmV0"}
	for _, v := range values {
		env := map[string]any{"$wardenSensitive": map[string]any{"type": "password", "value": v}}
		out, err := r.Protect(env)
		if err != nil {
			t.Fatal(err)
		}
		h := out.(string)
		if !strings.HasPrefix(h, "protected://password/") {
			t.Errorf("handle %q; want protected://password/...", h)
		}
		if strings.Contains(h, v) || strings.Contains(strings.ToLower(h), strings.ToLower(v)) {
			t.Errorf("handle %q contains the value", h)
		}
		if r.Redact(h) != h {
			t.Errorf("Redact changes handle %q", h)
		}
	}
	if r.Len() != len(values) {
		t.Errorf("Len = %d; want %d", r.Len(), len(values))
	}
	// a password that is the word in its own handle still leaves the handle whole
	h, _ := r.Protect(map[string]any{"$wardenSensitive": map[string]any{"type": "password", "value": "password"}})
	text := "use " + h.(string) + " for the password"
	if got, want := r.Redact(text), "use "+h.(string)+" for the "+h.(string); got != want {
		t.Errorf("Redact(%q) = %q; want %q", text, got, want)
	}
}

const envValue = "S3cr3t-in-envelope"

func TestProtectMalformed(t *testing.T) {
	good := `{"$wardenSensitive": {"type": "token", "value": "` + envValue + `"}}`
	tests := []struct {
		name, give, path string
	}{
		{name: "declaration not an object", give: `{"$wardenSensitive": "` + envValue + `"}`, path: "/$wardenSensitive"},
		{name: "declaration null", give: `{"a": {"$burrowSensitive": null}}`, path: "/a/$burrowSensitive"},
		{name: "declaration an array", give: `{"$wardenSensitive": ["token", "` + envValue + `"]}`, path: "/$wardenSensitive"},
		{name: "empty declaration", give: `{"$wardenSensitive": {}}`, path: "/$wardenSensitive"},
		{name: "missing value", give: `{"$wardenSensitive": {"type": "token"}}`, path: "/$wardenSensitive"},
		{name: "missing type", give: `{"$wardenSensitive": {"value": "` + envValue + `"}}`, path: "/$wardenSensitive"},
		{name: "value a number", give: `{"$wardenSensitive": {"type": "token", "value": 12345678}}`, path: "/$wardenSensitive/value"},
		{name: "value null", give: `{"$wardenSensitive": {"type": "token", "value": null}}`, path: "/$wardenSensitive/value"},
		{name: "value an array", give: `{"$wardenSensitive": {"type": "token", "value": ["` + envValue + `"]}}`, path: "/$wardenSensitive/value"},
		{name: "type not a string", give: `{"$wardenSensitive": {"type": 1, "value": "` + envValue + `"}}`, path: "/$wardenSensitive/type"},
		{name: "unknown type", give: `{"$wardenSensitive": {"type": "api-key", "value": "` + envValue + `"}}`, path: "/$wardenSensitive/type"},
		{name: "type in capitals", give: `{"$wardenSensitive": {"type": "Token", "value": "` + envValue + `"}}`, path: "/$wardenSensitive/type"},
		{name: "value and type swapped", give: `{"$wardenSensitive": {"type": "` + envValue + `", "value": "token"}}`, path: "/$wardenSensitive/type"},
		{name: "a label", give: `{"$wardenSensitive": {"type": "token", "value": "` + envValue + `", "label": "GitHub"}}`, path: "/$wardenSensitive"},
		{name: "the value as an extra key", give: `{"$wardenSensitive": {"type": "token", "value": "x", "` + envValue + `": 1}}`, path: "/$wardenSensitive"},
		{name: "sibling member", give: `{"$wardenSensitive": {"type": "token", "value": "` + envValue + `"}, "note": "x"}`, path: ""},
		{name: "both keys", give: `{"x": [{"$wardenSensitive": {"type": "token", "value": "` + envValue + `"}, "$burrowSensitive": {"type": "token", "value": "` + envValue + `"}}]}`, path: "/x/0"},
		{name: "sensitive and managed", give: `{"$wardenSensitive": {"type": "token", "value": "` + envValue + `"}, "$wardenManaged": ` + managedJSON + `}`, path: ""},
		{name: "envelope nested in the value", give: `{"$wardenSensitive": {"type": "token", "value": ` + good + `}}`, path: "/$wardenSensitive/value"},
		{name: "key nested in the type", give: `{"$wardenSensitive": {"type": ` + good + `, "value": "x"}}`, path: "/$wardenSensitive/type"},
		{name: "envelope in a key position", give: `{"a": {` + jsonString(good) + `: 1}}`, path: "/a"},
		{name: "declaration key inside a key", give: `{"see $burrowSensitive": "` + envValue + `"}`, path: ""},
		{name: "deep in arrays, key escaped in the pointer", give: `[1, {"a/b~c": [0, {"$burrowSensitive": {"type": "nope", "value": "` + envValue + `"}}]}]`, path: "/1/a~1b~0c/1/$burrowSensitive/type"},
		{name: "managed missing ref", give: `{"$wardenManaged": {"issuer": "i", "version": "1", "expires": "2026-12-01T00:00:00Z", "agent": "a", "session": "s", "conversation": "c", "provider": "p"}}`, path: "/$wardenManaged"},
		{name: "managed empty agent", give: `{"$wardenManaged": {"issuer": "i", "version": "1", "expires": "2026-12-01T00:00:00Z", "agent": "", "session": "s", "conversation": "c", "provider": "p", "ref": "r"}}`, path: "/$wardenManaged/agent"},
		{name: "managed version a number", give: `{"$burrowManaged": {"issuer": "i", "version": 1, "expires": "2026-12-01T00:00:00Z", "agent": "a", "session": "s", "conversation": "c", "provider": "p", "ref": "r"}}`, path: "/$burrowManaged/version"},
		{name: "managed bad expiry", give: `{"$wardenManaged": {"issuer": "i", "version": "1", "expires": "tomorrow", "agent": "a", "session": "s", "conversation": "c", "provider": "p", "ref": "r"}}`, path: "/$wardenManaged/expires"},
		{name: "managed with a value", give: `{"$wardenManaged": {"issuer": "i", "version": "1", "expires": "2026-12-01T00:00:00Z", "agent": "a", "session": "s", "conversation": "c", "provider": "p", "ref": "r", "value": "` + envValue + `"}}`, path: "/$wardenManaged"},
		{name: "managed not an object", give: `{"$wardenManaged": "` + envValue + `"}`, path: "/$wardenManaged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := secret.NewRegistry(testScope)
			kept, err := r.Protect(decode(t, `{"$wardenSensitive": {"type": "secret", "value": "kept-from-before"}}`))
			if err != nil {
				t.Fatal(err)
			}
			// A good envelope beside the bad one: its handle must not survive either.
			give := `{"good": ` + good + `, "also": {"$burrowSensitive": {"type": "credential", "value": "another-new-one"}}, "bad": ` + tt.give + `}`
			out, err := r.Protect(decode(t, give))
			if !errors.Is(err, secret.ErrMalformed) {
				t.Fatalf("Protect = %v, %v; want ErrMalformed", out, err)
			}
			var me *secret.MalformedError
			if !errors.As(err, &me) || me.Path != "/bad"+tt.path {
				t.Errorf("error %q; want the path /bad%s", err, tt.path)
			}
			if out != nil {
				t.Errorf("Protect returned %v with its error", out)
			}
			if strings.Contains(err.Error(), envValue) {
				t.Errorf("the error holds the value: %v", err)
			}
			if r.Len() != 1 {
				t.Errorf("Len = %d after a malformed result; want 1, the handle from before", r.Len())
			}
			for _, v := range []string{envValue, "another-new-one"} {
				if got := r.Redact("x " + v); got != "x "+v {
					t.Errorf("a value of the withheld result is known: Redact = %q", got)
				}
			}
			if got, err := r.Resolve(map[string]string{"K": kept.(string)}); err != nil || got["K"].Reveal() != "kept-from-before" {
				t.Errorf("the handle from before no longer resolves: %v", err)
			}
		})
	}
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestProtectOther(t *testing.T) {
	r := secret.NewRegistry(testScope)
	if _, err := r.Protect(map[string]any{"a": []any{1}}); err == nil || errors.Is(err, secret.ErrMalformed) {
		t.Errorf("Protect of an int = %v; want a type error", err)
	}
	if out, err := r.Protect(map[string]any{"n": json.Number("12"), "b": false, "nil": nil}); err != nil || !cmp.Equal(out, map[string]any{"n": json.Number("12"), "b": false, "nil": nil}) {
		t.Errorf("Protect = %v, %v", out, err)
	}

	three := decode(t, `[{"$wardenSensitive": {"type": "token", "value": "one-1"}}, {"$wardenSensitive": {"type": "token", "value": "two-2"}}, {"$wardenSensitive": {"type": "token", "value": "three-3"}}]`)
	small := secret.NewRegistryWith(testScope, secret.Options{MaxValues: 2})
	if _, err := small.Protect(three); !errors.Is(err, secret.ErrLimit) || small.Len() != 0 {
		t.Errorf("Protect past MaxValues = %v, Len %d; want ErrLimit, 0", err, small.Len())
	}
	short := secret.NewRegistryWith(testScope, secret.Options{MaxBytes: 10})
	if _, err := short.Protect(three); !errors.Is(err, secret.ErrLimit) || short.Len() != 0 {
		t.Errorf("Protect past MaxBytes = %v, Len %d; want ErrLimit, 0", err, short.Len())
	}
}

func TestProtectText(t *testing.T) {
	r := secret.NewRegistry(testScope)
	r.Add(secret.TypeToken, secret.New("known-value"))
	tests := []struct {
		name, give, want string
	}{
		{name: "plain text", give: "plain known-value", want: "plain <token:known-value>"},
		{name: "not JSON, mentions the key", give: `say {"$wardenSensitive": ... known-value`, want: `say {"$wardenSensitive": ... <token:known-value>`},
		{
			name: "JSON with an envelope",
			give: `{"a": {"$wardenSensitive": {"type": "password", "value": "p<w>d&1"}}, "n": 12345678901234567890, "s": "known-value"}` + "\n",
			want: `{"a":"<password:p<w>d&1>","n":12345678901234567890,"s":"<token:known-value>"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.ProtectText(tt.give)
			if err != nil {
				t.Fatal(err)
			}
			if got := replaceHandles(t, r, got); got != tt.want {
				t.Errorf("ProtectText = %s; want %s", got, tt.want)
			}
		})
	}
	if _, err := r.ProtectText(`[{"$burrowSensitive": {"type": "token"}}]`); !errors.Is(err, secret.ErrMalformed) {
		t.Errorf("ProtectText of a malformed declaration = %v; want ErrMalformed", err)
	}
}
