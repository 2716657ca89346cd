package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, give string
		want          bool
	}{
		{"", "", true},
		{"", "a", false},
		{"a", "", false},
		{"*", "", true},
		{"*", "anything", true},
		{"**", "x", true},
		{"Bash", "Bash", true},
		{"Bash", "bash", false},
		{"Bash", "Bash2", false},
		{"Bash*", "Bash", true},
		{"*Bash", "Bash", true},
		{"*ash", "Bash", true},
		{"B*h", "Bash", true},
		{"B*h", "Bashes", false},
		{"mcp__*__read", "mcp__memory__read", true},
		{"mcp__*__read", "mcp__memory__reader", false},
		{"mcp__*__read", "mcp__a__b__read", true},
		{"mcp__shop__*", "mcp__shop__", true},
		{"mcp__shop__*", "mcp__shopify__list", false},
		// Several stars.
		{"a*b*c", "abc", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"a*b*c", "acb", false},
		{"*a*b", "xaxb", true},
		{"*a*b", "xbxa", false},
		{"*a*b*", "ab", true},
		{"*ab*ab", "aabab", true},
		{"*ab*ab", "abab", true},
		{"*ab*ab", "aba", false},
		{"a*a*a*a*b", strings.Repeat("a", 40), false},
		{"*_*_*", "files_read", false},
		{"*_*_*", "files_read_all", true},
		// No other character is special.
		{"files_?", "files_?", true},
		{"files_?", "files_x", false},
		{"[a]", "a", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.give, func(t *testing.T) {
			if got := globMatch(tt.pattern, tt.give); got != tt.want {
				t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.give, got, tt.want)
			}
		})
	}
}

func TestGlobMatchIsNotExponential(t *testing.T) {
	pattern := strings.Repeat("*a", 30) + "b"
	give := strings.Repeat("a", 2000)
	start := time.Now()
	if globMatch(pattern, give) {
		t.Fatal("matched")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("globMatch took %v", d)
	}
}

func TestParseSelector(t *testing.T) {
	tests := []struct {
		give        string
		wantNegated bool
		wantScope   selectorScope
		wantPattern string
		wantEffects []Effect
	}{
		{"*", false, scopeName, "*", nil},
		{"Bash", false, scopeName, "Bash", nil},
		{"!*#delete", true, scopeName, "*", []Effect{EffectDelete}},
		{"#read", false, scopeName, "*", []Effect{EffectRead}},
		{"!#send,spend", true, scopeName, "*", []Effect{EffectSend, EffectSpend}},
		{"  builtin:*#read  ", false, scopeBuiltin, "*", []Effect{EffectRead}},
		{"builtin:files_*", false, scopeBuiltin, "files_*", nil},
		{"server:memory", false, scopeServer, "memory", nil},
		{"platform:*", false, scopePlatform, "*", nil},
		{"connector:*#read, write", false, scopeConnector, "*", []Effect{EffectRead, EffectWrite}},
		{"!connector:shop", true, scopeConnector, "shop", nil},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			probs := &problems{file: "s.yaml"}
			s, ok := parseSelector(probs, Name{Value: tt.give, Pos: Pos{Line: 2, Col: 3}})
			if !ok || len(probs.errs) > 0 {
				t.Fatalf("parseSelector: %v", probs.errs)
			}
			if s.Negated != tt.wantNegated || s.scope != tt.wantScope || s.pattern != tt.wantPattern {
				t.Errorf("got negated %v scope %d pattern %q; want %v %d %q", s.Negated, s.scope, s.pattern, tt.wantNegated, tt.wantScope, tt.wantPattern)
			}
			if diff := cmp.Diff(tt.wantEffects, s.effects); diff != "" {
				t.Errorf("effects (-want +got):\n%s", diff)
			}
			if s.String() != tt.give || s.Pos != (Pos{Line: 2, Col: 3}) {
				t.Errorf("String %q at %v", s.String(), s.Pos)
			}
		})
	}
}

func TestParseSelectorErrors(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{"*#reed", `s.yaml:2:3: selector "*#reed": unknown effect class "reed"; it must be one of read, write, delete, send, spend, execute, delegate`},
		{"*#", `s.yaml:2:3: selector "*#": unknown effect class ""`},
		{"*#read,", `s.yaml:2:3: selector "*#read,": unknown effect class ""`},
		{"*#Read", `s.yaml:2:3: selector "*#Read": unknown effect class "Read"`},
		{"tool:Bash", `s.yaml:2:3: selector "tool:Bash": unknown scope "tool"; use builtin:, server:, platform: or connector:`},
		{"Builtin:*", `s.yaml:2:3: selector "Builtin:*": unknown scope "Builtin"`},
		{"", `s.yaml:2:3: selector "" names nothing`},
		{"!", `s.yaml:2:3: selector "!" names nothing`},
		{"builtin:", `s.yaml:2:3: selector "builtin:" names nothing`},
		{"connector:#read", `s.yaml:2:3: selector "connector:#read" names nothing`},
		{"server:*", `s.yaml:2:3: selector "server:*": server: takes one server id; use platform: or connector: for patterns`},
		{"server:mem*", `s.yaml:2:3: selector "server:mem*": server: takes one server id`},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			probs := &problems{file: "s.yaml"}
			if _, ok := parseSelector(probs, Name{Value: tt.give, Pos: Pos{Line: 2, Col: 3}}); ok {
				t.Errorf("parseSelector accepted %q", tt.give)
			}
			if len(probs.errs) != 1 || !strings.HasPrefix(probs.errs[0].Error(), tt.want) {
				t.Errorf("errors %v, want %s...", probs.errs, tt.want)
			}
		})
	}
}

// selectorPolicy has a tool of every kind a selector can tell apart.
const selectorPolicy = `version: 1
builtins:
  - name: files_read
  - name: files_delete
  - {name: Bash, kind: shell_exec}
skills:
  - id: method
servers:
  - id: memory
    effect: read
    tools:
      - name: mcp__memory__read
      - {name: mcp__memory__write, effect: write}
  - id: seo
    effect: write
    tools:
      - {name: mcp__seo__save, skill: method, grantable: true}
      - {name: mcp__seo__load, effect: read, skill: "*"}
connectors:
  - id: shop
    effect: read
    grantable: true
    tools:
      - name: mcp__shop__list
      - {name: mcp__shop__refund, effect: spend, grantable: false}
      - {name: mcp__shop__notes, optIn: true}
  - id: shopify
    effect: read
    tools:
      - name: mcp__shopify__orders
      - {name: mcp__shopify__delete, effect: delete}
`

// ceilingOf compiles ceiling (a YAML flow list) as the ceiling of a new role and returns the
// names of the tools it selects, in declaration order.
func ceilingOf(t *testing.T, ceiling string) []string {
	t.Helper()
	p, err := Parse("s.yaml", []byte(selectorPolicy+"roles:\n  - {id: probe, ceiling: "+ceiling+"}\n"))
	if err != nil {
		t.Fatalf("ceiling %s: %v", ceiling, err)
	}
	r, _ := p.Role("probe")
	return names(p, r.Ceiling)
}

func names(p *Policy, set Bitset) []string {
	out := []string{}
	for i := range set.All() {
		out = append(out, p.ToolAt(i).Name)
	}
	return out
}

func TestCompileSelectors(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		// Opt-in tools (mcp__shop__notes) and tools riding on one skill (mcp__seo__save) are
		// never selected, not even by *; a skill tool (mcp__seo__load) is.
		{`['*']`, []string{"files_read", "files_delete", "Bash", "mcp__memory__read", "mcp__memory__write", "mcp__seo__load", "mcp__shop__list", "mcp__shop__refund", "mcp__shopify__orders", "mcp__shopify__delete"}},
		{`[mcp__shop__notes, mcp__seo__save]`, []string{}},
		{`['server:seo', 'server:shop']`, []string{"mcp__seo__load", "mcp__shop__list", "mcp__shop__refund"}},
		// Scopes.
		{`['builtin:*']`, []string{"files_read", "files_delete", "Bash"}},
		{`['builtin:files_*']`, []string{"files_read", "files_delete"}},
		{`['server:memory']`, []string{"mcp__memory__read", "mcp__memory__write"}},
		{`['platform:*']`, []string{"mcp__memory__read", "mcp__memory__write", "mcp__seo__load"}},
		{`['connector:shop']`, []string{"mcp__shop__list", "mcp__shop__refund"}},
		{`['connector:shop*']`, []string{"mcp__shop__list", "mcp__shop__refund", "mcp__shopify__orders", "mcp__shopify__delete"}},
		{`['mcp__shop__*']`, []string{"mcp__shop__list", "mcp__shop__refund"}},
		{`['mcp__*__read']`, []string{"mcp__memory__read"}},
		{`['*__*__*e*']`, []string{"mcp__memory__read", "mcp__memory__write", "mcp__shop__refund", "mcp__shopify__orders", "mcp__shopify__delete"}},
		// Effect filters.
		{`['*#read']`, []string{"files_read", "mcp__memory__read", "mcp__seo__load", "mcp__shop__list", "mcp__shopify__orders"}},
		{`['*#delete,spend']`, []string{"files_delete", "mcp__shop__refund", "mcp__shopify__delete"}},
		{`['#execute']`, []string{"Bash"}},
		{`['connector:*#read']`, []string{"mcp__shop__list", "mcp__shopify__orders"}},
		// Negation: the union of the positive selectors minus the union of the negated ones,
		// whatever the order they are written in.
		{`['*', '!*#delete']`, []string{"files_read", "Bash", "mcp__memory__read", "mcp__memory__write", "mcp__seo__load", "mcp__shop__list", "mcp__shop__refund", "mcp__shopify__orders"}},
		{`['!*#delete', 'builtin:*']`, []string{"files_read", "Bash"}},
		{`['builtin:*', '!Bash', 'Bash']`, []string{"files_read", "files_delete"}},
		{`['connector:*', '!connector:shopify', '!*#spend']`, []string{"mcp__shop__list"}},
		{`['!*']`, []string{}},
		{`[]`, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ceilingOf(t, tt.give)); diff != "" {
				t.Errorf("ceiling %s (-want +got):\n%s", tt.give, diff)
			}
		})
	}
}

func TestInvariantsSeeGrantOnlyTools(t *testing.T) {
	// A ceiling never selects an opt-in tool or a tool riding on a skill, but an invariant must
	// see them: a grant can give them.
	p, err := Parse("s.yaml", []byte(selectorPolicy+"roles:\n  - {id: specialist, invariants: {forbid: ['mcp__shop__*', 'server:seo']}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := p.Role(RoleSpecialist)
	got := names(p, r.Invariants.Forbidden)
	want := []string{"mcp__seo__save", "mcp__seo__load", "mcp__shop__list", "mcp__shop__refund", "mcp__shop__notes"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("forbidden (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"mcp__seo__save", "mcp__shop__notes"}, names(p, p.GrantOnly())); diff != "" {
		t.Errorf("GrantOnly (-want +got):\n%s", diff)
	}
	person, _ := p.Role(RolePerson)
	if person.Ceiling.Intersects(p.GrantOnly()) {
		t.Errorf("the person ceiling holds %v", names(p, p.GrantOnly()))
	}
}

func TestSelectorMatchesNothing(t *testing.T) {
	tests := []struct {
		give        string
		wantErr     string
		wantWarning string
	}{
		{give: `['files_raed']`, wantErr: `names the tool "files_raed", which does not exist (did you mean "files_read"?)`},
		{give: `['nosuch#read']`, wantErr: `names the tool "nosuch", which does not exist`},
		{give: `['!mcp__shop__lists']`, wantErr: `names the tool "mcp__shop__lists", which does not exist (did you mean "mcp__shop__list"?)`},
		{give: `['builtin:mcp__shop__list']`, wantErr: `selector "builtin:mcp__shop__list" names the built-in "mcp__shop__list", which does not exist`},
		{give: `['platform:shop']`, wantErr: `selector "platform:shop" names platform server "shop", which does not exist`},
		{give: `['connector:memory#read']`, wantErr: `selector "connector:memory#read" names connector "memory", which does not exist`},
		{give: `['server:nosuch']`, wantErr: `selector "server:nosuch" names server "nosuch", which does not exist`},
		// Patterns, and names whose effect filter leaves nothing, are warnings.
		{give: `['mcp__mail__*']`, wantWarning: `selector "mcp__mail__*" matches no tool`},
		{give: `['files_read#write']`, wantWarning: `selector "files_read#write" matches no tool`},
		{give: `['connector:mail*']`, wantWarning: `selector "connector:mail*" matches no tool`},
		{give: `['platform:memory#spend']`, wantWarning: `selector "platform:memory#spend" matches no tool`},
		{give: `['server:shop#delete']`, wantWarning: `selector "server:shop#delete" matches no tool`},
		// An opt-in tool exists: naming it is no error, though the ceiling never holds it.
		{give: `['mcp__shop__notes']`},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			p, err := Parse("s.yaml", []byte(selectorPolicy+"roles:\n  - {id: probe, ceiling: "+tt.give+"}\n"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Errorf("Parse = %v, want the one error ...%s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := fmt.Sprint(p.Warnings())
			if tt.wantWarning == "" && got != "" || !strings.Contains(got, tt.wantWarning) {
				t.Errorf("warnings %q, want %q", got, tt.wantWarning)
			}
		})
	}
}

func TestStandardDefaultsNameMissingServersQuietly(t *testing.T) {
	// The standard roles' default ceilings and invariants name servers (memory, project,
	// transcripts, ...) a policy need not have: neither an error nor a warning.
	p, err := Parse("s.yaml", []byte("version: 1\nbuiltins: [{name: files_read}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Warnings(); len(w) > 0 {
		t.Errorf("warnings: %v", w)
	}
	r, _ := p.Role(RoleCoworker)
	if diff := cmp.Diff([]string{"files_read"}, names(p, r.Ceiling)); diff != "" {
		t.Errorf("coworker ceiling (-want +got):\n%s", diff)
	}
}
