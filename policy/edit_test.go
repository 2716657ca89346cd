package policy_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/policy"
)

func TestSetPinsEditsInPlace(t *testing.T) {
	a, b := "sha256:"+digestA, "sha256:"+digestB
	tests := []struct {
		name string
		give string
		pins map[string]map[string]string
		want string
	}{
		{
			name: "a connector without pins, followed by another",
			give: `version: 1
# The connectors.
connectors:
  - id: up   # the first
    effect: read
    upstream:
      url: http://x/mcp
    tools:
      - name: mcp__up__list
      - name: mcp__up__get

  # The second.
  - id: other
    effect: read
`,
			pins: map[string]map[string]string{"up": {"mcp__up__list": a, "mcp__up__get": b}},
			want: `version: 1
# The connectors.
connectors:
  - id: up   # the first
    effect: read
    upstream:
      url: http://x/mcp
    tools:
      - name: mcp__up__list
      - name: mcp__up__get
    pins:
      mcp__up__get: ` + b + `
      mcp__up__list: ` + a + `

  # The second.
  - id: other
    effect: read
`,
		},
		{
			name: "the last connector, before another section, four-space indents",
			give: `version: 1
connectors:
    -   id: up
        description: >
            Folded text
            over two lines.
        discover: true
        upstream:
            command: [up-mcp]

# Who uses them.
tenants:
    - id: main
`,
			pins: map[string]map[string]string{"up": {"mcp__up__x": a}},
			want: `version: 1
connectors:
    -   id: up
        description: >
            Folded text
            over two lines.
        discover: true
        upstream:
            command: [up-mcp]
        pins:
            mcp__up__x: ` + a + `

# Who uses them.
tenants:
    - id: main
`,
		},
		{
			name: "the end of a document without a final newline",
			give: "version: 1\nconnectors:\n  - id: up\n    discover: true",
			pins: map[string]map[string]string{"up": {"mcp__up__x": a}},
			want: "version: 1\nconnectors:\n  - id: up\n    discover: true\n    pins:\n      mcp__up__x: " + a + "\n",
		},
		{
			name: "pins already there: one replaced, keeping its quotes, one added",
			give: `connectors:
  - id: up
    pins:
      mcp__up__a: "` + a + `"   # approved by ana
      mcp__up__b: ` + a + `
    tools: []
`,
			pins: map[string]map[string]string{"up": {"mcp__up__a": b, "mcp__up__c": b}},
			want: `connectors:
  - id: up
    pins:
      mcp__up__a: "` + b + `"   # approved by ana
      mcp__up__b: ` + a + `
      mcp__up__c: ` + b + `
    tools: []
`,
		},
		{
			name: "flow mappings",
			give: `connectors:
  - {id: up, what: it's fine, upstream: {url: "http://x/{y}"} }  # flow
  - id: two
    pins: {mcp__two__a: ` + a + `}
  - id: three
    pins: {}
`,
			pins: map[string]map[string]string{"up": {"mcp__up__a": a}, "two": {"mcp__two__b": b}, "three": {"mcp__three__c": a}},
			want: `connectors:
  - {id: up, what: it's fine, upstream: {url: "http://x/{y}"}, pins: {mcp__up__a: ` + a + `} }  # flow
  - id: two
    pins: {mcp__two__a: ` + a + `, mcp__two__b: ` + b + `}
  - id: three
    pins: {mcp__three__c: ` + a + `}
`,
		},
		{
			name: "pins written with nothing in them",
			give: "connectors:\n  - id: up\n    pins:   # none yet\n    effect: read\n  - id: two\n    pins: ~\n",
			pins: map[string]map[string]string{"up": {"mcp__up__a": a}, "two": {"mcp__two__a": b}},
			want: "connectors:\n  - id: up\n    pins:   # none yet\n      mcp__up__a: " + a + "\n    effect: read\n  - id: two\n    pins: {mcp__two__a: " + b + "}\n",
		},
		{
			name: "Windows line endings",
			give: "connectors:\r\n  - id: up\r\n    effect: read\r\n",
			pins: map[string]map[string]string{"up": {"mcp__up__a": a}},
			want: "connectors:\r\n  - id: up\r\n    effect: read\r\n    pins:\r\n      mcp__up__a: " + a + "\r\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reencoded, err := policy.SetPins([]byte(tt.give), tt.pins)
			if err != nil {
				t.Fatal(err)
			}
			if reencoded {
				t.Errorf("the document was encoded again")
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetPinsEncodesAgainWhereItCannotEditInPlace(t *testing.T) {
	// A kept final line break belongs to the text above the place pins would go.
	give := `version: 1
connectors:
  # Reached over HTTP.
  - id: up
    description: |+
      Kept.

  - id: other
`
	got, reencoded, err := policy.SetPins([]byte(give), map[string]map[string]string{"up": {"mcp__up__a": "sha256:" + digestA}})
	if err != nil {
		t.Fatal(err)
	}
	if !reencoded {
		t.Errorf("want the document encoded again; got\n%s", got)
	}
	for _, want := range []string{"# Reached over HTTP.", "mcp__up__a: sha256:" + digestA, "- id: other"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("%q is missing from\n%s", want, got)
		}
	}
}

func TestSetPinsRefuses(t *testing.T) {
	tests := []struct{ name, give, want string }{
		{"no such connector", "connectors:\n  - id: up\n", "no connector down"},
		{"not YAML", "connectors: [\n", "cannot be read as YAML"},
		{"not a mapping", "- a\n", "not a YAML mapping"},
		{"a connector written through an alias", "servers:\n  - &c {id: down, effect: read}\nconnectors:\n  - *c\n", "add it by hand"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := policy.SetPins([]byte(tt.give), map[string]map[string]string{"down": {"mcp__down__a": "sha256:" + digestA}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want one saying %q", err, tt.want)
			}
		})
	}
}
