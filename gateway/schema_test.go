package gateway

import (
	"strings"
	"testing"
)

// TestCompileSchema: the dialects MCP servers write are checked (2020-12, named or not, and
// draft-07); another draft, or a schema the validator cannot resolve, is left to the tool.
func TestCompileSchema(t *testing.T) {
	str := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string", "maxLength": 3}}, "required": []any{"path"}}
	with := func(dialect string) map[string]any {
		m := map[string]any{}
		for k, v := range str {
			m[k] = v
		}
		m["$schema"] = dialect
		return m
	}
	for _, tt := range []struct {
		what   string
		schema map[string]any
		judged bool
	}{
		{"no dialect named (2020-12)", str, true},
		{"2020-12", with("https://json-schema.org/draft/2020-12/schema"), true},
		{"draft-07, as zod writes it", with("http://json-schema.org/draft-07/schema#"), true},
		{"draft-04", with("http://json-schema.org/draft-04/schema#"), false},
		{"2019-09", with("https://json-schema.org/draft/2019-09/schema"), false},
		{"a remote reference", map[string]any{"$ref": "https://example.com/schema.json"}, false},
	} {
		r := compileSchema(tt.schema)
		if (r != nil) != tt.judged {
			t.Errorf("%s: compiled %v, want %v", tt.what, r != nil, tt.judged)
			continue
		}
		if r == nil {
			continue
		}
		if err := r.Validate(map[string]any{"path": "abc"}); err != nil {
			t.Errorf("%s: valid arguments refused: %v", tt.what, err)
		}
		for _, bad := range []map[string]any{{"path": 5.0}, {}, {"path": "abcd"}, {"path": strings.Repeat("é", 4)}} {
			if err := r.Validate(bad); err == nil {
				t.Errorf("%s: %v accepted", tt.what, bad)
			}
		}
	}
}
