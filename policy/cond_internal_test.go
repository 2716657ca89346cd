package policy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// condPolicy gives the conditions below their switches and harnesses.
const condPolicy = `version: 1
switches:
  - {name: A, rule: exactly-true}
  - {name: B, rule: exactly-true}
  - {name: C, rule: exactly-true}
  - {name: EGRESS, modes: [open, allowlist], default: allowlist}
  - {name: COUNT, rule: integer, default: "1"}
harnesses:
  - id: loop
`

func condScopeFor(t *testing.T) (*Policy, condScope) {
	t.Helper()
	p, err := Parse("cond.yaml", []byte(condPolicy))
	if err != nil {
		t.Fatal(err)
	}
	scope := condScope{switches: map[string]*Switch{}, harnesses: map[string]*Harness{}}
	for _, s := range p.switches {
		scope.switches[s.Name] = s
	}
	for _, h := range p.harnesses {
		scope.harnesses[h.ID] = h
	}
	return p, scope
}

// condAt is where the test conditions are written: column 10 of line 5.
var condAt = Pos{Line: 5, Col: 10}

func mustCond(t *testing.T, scope condScope, src string) *Cond {
	t.Helper()
	probs := &problems{file: "cond.yaml"}
	c := compileCond(probs, Expr{Src: src, Pos: condAt}, scope)
	if len(probs.errs) > 0 {
		t.Fatalf("compile %q: %v", src, probs.errs)
	}
	return c
}

// session is the part of a session a condition reads.
type session struct {
	env     map[string]string
	harness string
	owner   bool
	channel bool
}

func (s session) facts(t *testing.T, p *Policy) *Facts {
	t.Helper()
	h, ok := p.Harness(s.harness)
	if s.harness == "" {
		h, ok = p.Harness(DefaultHarness)
	}
	if !ok {
		t.Fatalf("no harness %q", s.harness)
	}
	return &Facts{Env: p.Env(MapLookup(s.env)), Owner: s.owner, ApprovalChannel: s.channel, Harness: h}
}

var on = "true"

func TestCondEval(t *testing.T) {
	p, scope := condScopeFor(t)
	tests := []struct {
		give string
		env  session
		want bool
	}{
		// && binds tighter than ||.
		{"A || B && C", session{env: map[string]string{"A": on}}, true},
		{"A || B && C", session{env: map[string]string{"B": on}}, false},
		{"A && B || C", session{env: map[string]string{"C": on}}, true},
		{"A && B || C", session{env: map[string]string{"A": on}}, false},
		// Parentheses group.
		{"(A || B) && C", session{env: map[string]string{"A": on}}, false},
		{"(A || B) && C", session{env: map[string]string{"B": on, "C": on}}, true},
		{"A && (B || C)", session{env: map[string]string{"A": on, "C": on}}, true},
		{"((A))", session{env: map[string]string{"A": on}}, true},
		// ! binds tighter than && and ||.
		{"!A", session{}, true},
		{"!A", session{env: map[string]string{"A": on}}, false},
		{"!A && B", session{env: map[string]string{"B": on}}, true},
		{"!A && B", session{env: map[string]string{"A": on, "B": on}}, false},
		{"!(A && B)", session{env: map[string]string{"A": on}}, true},
		{"!!A", session{env: map[string]string{"A": on}}, true},
		{"! A", session{env: map[string]string{"A": on}}, false},
		// A switch follows its truth rule: exactly-true.
		{"A", session{env: map[string]string{"A": "True"}}, false},
		// Modes compare in any case, on either side.
		{"EGRESS == open", session{env: map[string]string{"EGRESS": "OPEN"}}, true},
		{"EGRESS == OPEN", session{env: map[string]string{"EGRESS": "open"}}, true},
		{"EGRESS == Open", session{env: map[string]string{"EGRESS": "opne"}}, false},
		{"EGRESS == allowlist", session{env: map[string]string{"EGRESS": "opne"}}, true},
		{"EGRESS == allowlist", session{}, true},
		{"EGRESS != open", session{}, true},
		{"EGRESS != open", session{env: map[string]string{"EGRESS": "Open"}}, false},
		{"EGRESS==open&&A", session{env: map[string]string{"EGRESS": "open", "A": on}}, true},
		// The harness.
		{"harness == default", session{}, true},
		{"harness == loop", session{}, false},
		{"harness == loop", session{harness: "loop"}, true},
		{"harness != loop", session{harness: "loop"}, false},
		{"harness != default", session{harness: "loop"}, true},
		// Facts.
		{"owner", session{owner: true}, true},
		{"owner", session{}, false},
		{"!approval_channel", session{}, true},
		{"owner && approval_channel", session{owner: true}, false},
		{"skills || coworkers || goals", session{}, false},
		{"A && owner || harness == loop && !B", session{harness: "loop"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			c := mustCond(t, scope, tt.give)
			if got := c.Eval(tt.env.facts(t, p)); got != tt.want {
				t.Errorf("Eval = %v, want %v (env %v)", got, tt.want, tt.env)
			}
			if c.String() != tt.give {
				t.Errorf("String() = %q", c.String())
			}
		})
	}
}

func TestCondEmptyIsAlways(t *testing.T) {
	p, scope := condScopeFor(t)
	// A when that is not written at all (no position) means always.
	probs := &problems{file: "cond.yaml"}
	c := compileCond(probs, Expr{}, scope)
	if c != nil || len(probs.errs) > 0 {
		t.Fatalf("compileCond of an unwritten condition = %v, %v; want nil and no error", c, probs.errs)
	}
	// One that is written empty is an error: it must not quietly mean always.
	if c := compileCond(probs, Expr{Src: "", Pos: condAt}, scope); c != nil || len(probs.errs) != 1 ||
		!strings.Contains(probs.errs[0].Error(), "cond.yaml:5:10: the condition is empty") {
		t.Fatalf("compileCond(\"\") = %v, %v; want nil and the empty-condition error", c, probs.errs)
	}
	f := session{}.facts(t, p)
	if !c.Eval(f) || c.String() != "always" || c.Why(f) != "always" {
		t.Errorf("the nil condition: Eval %v, String %q, Why %q", c.Eval(f), c.String(), c.Why(f))
	}
}

func TestCondErrors(t *testing.T) {
	_, scope := condScopeFor(t)
	deep := strings.Repeat("(", maxCondDepth+1) + "A" + strings.Repeat(")", maxCondDepth+1)
	tests := []struct {
		give string
		want string // "line:col: message"; the condition starts at 5:10
	}{
		{"   ", "5:10: the condition is empty"},
		{"A && D", "5:15: unknown switch D: declare it under switches"},
		{"A || (B && Cc)", "5:21: unknown switch Cc: declare it under switches"},
		{"ownr", `5:10: unknown fact "ownr": the facts are approval_channel, owner, skills, coworkers, goals, harness, model, and switches are written in upper case`},
		{"!A && tenant", `5:16: unknown fact "tenant"`},
		{"EGRESS", "5:10: EGRESS is a mode switch: compare it, as in EGRESS == open"},
		{"A && !EGRESS", "5:16: EGRESS is a mode switch: compare it"},
		{"EGRESS == opne", `5:20: "opne" is not a mode of EGRESS (its modes are open, allowlist)`},
		{"EGRESS ==", "5:19: expected a value after =="},
		{"EGRESS != &&", "5:20: expected a value after !="},
		{"owner == true", "5:16: the fact owner is true or false and cannot be compared"},
		{"A != yes", "5:12: A is on or off and cannot be compared; write A or !A"},
		{"COUNT", "5:10: COUNT holds a number and cannot be a condition"},
		{"COUNT == 1", "5:10: COUNT holds a number and cannot be a condition"},
		{"harness", "5:10: harness must be compared with a harness id, as in harness == default"},
		{"harness == hermes", `5:21: unknown harness "hermes"`},
		{"(A || B", "5:10: this ( is never closed"},
		{"A && ((B)", "5:15: this ( is never closed"},
		{"A B", `5:12: unexpected "B" in the condition`},
		{"A && B)", `5:16: unexpected ")" in the condition`},
		{"A &", `5:12: unexpected "&" in the condition`},
		{"A && ", "5:15: the condition ends where a switch or fact name is expected"},
		{"!", "5:11: the condition ends where a switch or fact name is expected"},
		{"&& A", `5:10: expected a switch or fact name, found "&&"`},
		{"A || = B", `5:15: expected a switch or fact name, found "="`},
		{"A && ✓", `5:15: expected a switch or fact name, found "✓"`},
		{"A ==", "5:14: expected a value after =="},
		{deep, "5:74: the condition nests deeper than 64 levels"},
		{strings.Repeat("!", maxCondDepth+1) + "A", "5:74: the condition nests deeper than 64 levels"},
		// Only the first problem of a condition is reported.
		{"D && E", "5:10: unknown switch D"},
		// A condition over several lines: a problem after the first line is placed at its start.
		{"A &&\n  D", "5:10: unknown switch D"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			probs := &problems{file: "cond.yaml"}
			c := compileCond(probs, Expr{Src: tt.give, Pos: condAt}, scope)
			if c != nil {
				t.Errorf("compileCond returned a condition with an error")
			}
			if len(probs.errs) != 1 {
				t.Fatalf("%d errors (%v), want 1", len(probs.errs), probs.errs)
			}
			e := probs.errs[0]
			got := strings.TrimPrefix(e.Error(), "cond.yaml:")
			if place, msg, _ := strings.Cut(tt.want, ": "); !strings.HasPrefix(got, place+": ") || !strings.Contains(got, msg) {
				t.Errorf("error %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCondErrorAtApproximatePlace(t *testing.T) {
	// A condition whose text is not written verbatim (an escape, folded lines) is placed at its
	// start, never at a column computed from the decoded text.
	_, scope := condScopeFor(t)
	probs := &problems{file: "cond.yaml"}
	compileCond(probs, Expr{Src: "A && D", Pos: condAt, approx: true}, scope)
	if len(probs.errs) != 1 || probs.errs[0].Pos != condAt {
		t.Errorf("errors %v, want one at %v", probs.errs, condAt)
	}
}

func TestCondWhy(t *testing.T) {
	p, scope := condScopeFor(t)
	const (
		aOff  = `A is off (unset; on only when exactly "true")`
		aOn   = `A is on ("true"; on only when exactly "true")`
		bOff  = `B is off (unset; on only when exactly "true")`
		bOn   = `B is on ("true"; on only when exactly "true")`
		notMe = "the tenant is not the deployment owner's"
	)
	tests := []struct {
		give string
		env  session
		want string
	}{
		// A false "and": only the parts that are false.
		{"A && owner", session{}, aOff + "; " + notMe},
		{"A && owner", session{env: map[string]string{"A": on}}, notMe},
		{"A && B && owner", session{env: map[string]string{"B": on}, owner: true}, aOff},
		// A true "and": every part.
		{"A && B", session{env: map[string]string{"A": on, "B": on}}, aOn + "; " + bOn},
		// A true "or": only the parts that are true.
		{"A || B", session{env: map[string]string{"B": on}}, bOn},
		{"A || owner", session{owner: true}, "the tenant is the deployment owner's"},
		// A false "or": every part.
		{"A || B", session{}, aOff + "; " + bOff},
		// A negation explains its operand.
		{"!A", session{env: map[string]string{"A": on}}, aOn},
		{"!(A || B)", session{env: map[string]string{"A": on}}, aOn},
		// Modes, the harness and the other facts.
		{"EGRESS == open", session{env: map[string]string{"EGRESS": "opne"}}, `EGRESS is allowlist ("opne")`},
		{"EGRESS != open", session{env: map[string]string{"EGRESS": "OPEN"}}, `EGRESS is open ("OPEN")`},
		{"harness == loop", session{}, "the harness is default"},
		{"approval_channel && owner", session{channel: true}, notMe},
		{"approval_channel", session{}, "the session has no approval channel"},
		{"skills", session{}, "the session has no skills"},
		{"coworkers", session{}, "the tenant has no coworkers"},
		{"goals", session{}, "the goals engine is off for the tenant"},
		// A part named twice in a row is said once.
		{"A && A", session{}, aOff},
		// Precedence decides what is explained: B && C is false as a whole.
		{"A || B && C", session{env: map[string]string{"B": on}}, aOff + "; " + `C is off (unset; on only when exactly "true")`},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			c := mustCond(t, scope, tt.give)
			if got := c.Why(tt.env.facts(t, p)); got != tt.want {
				t.Errorf("Why =\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

func TestCondSwitches(t *testing.T) {
	_, scope := condScopeFor(t)
	c := mustCond(t, scope, "B && (EGRESS == open || !A) && owner || B")
	if diff := cmp.Diff([]string{"B", "EGRESS", "A"}, c.Switches()); diff != "" {
		t.Errorf("Switches (-want +got):\n%s", diff)
	}
	if (*Cond)(nil).Switches() != nil {
		t.Errorf("the nil condition reads switches")
	}
}

func TestCondPlacedInTheDocument(t *testing.T) {
	// Through Parse, the column of a problem is where its word is written, whatever the style
	// of the YAML scalar; when the text is not written verbatim, the condition's start.
	tests := []struct {
		name string
		when string // the line after "    when:"
		want Pos
	}{
		{"plain", " A && D", Pos{Line: 4, Col: 16}},
		{"double quoted", ` "A && D"`, Pos{Line: 4, Col: 17}},
		{"single quoted", ` 'A && D'`, Pos{Line: 4, Col: 17}},
		{"single quoted with an escape before", ` 'A''s && D'`, Pos{Line: 4, Col: 12}},
		{"tagged", ` !!str A && D`, Pos{Line: 4, Col: 22}},
		{"anchored", ` &c A && D`, Pos{Line: 4, Col: 19}},
		{"literal block", " |\n      A && D", Pos{Line: 5, Col: 12}},
		{"folded block", " >-\n      A && D", Pos{Line: 5, Col: 12}},
		{"folded block after a blank line", " >-\n\n      A && D", Pos{Line: 4, Col: 11}},
		{"folded over two lines", " >-\n      A &&\n      D", Pos{Line: 4, Col: 11}},
		{"double quoted with an escape", ` "A\t&& D"`, Pos{Line: 4, Col: 12}},
		{"double quoted over two lines", " \"A &&\n      D\"", Pos{Line: 4, Col: 12}},
		{"after a character that is not ASCII", ` "A && D" # é`, Pos{Line: 4, Col: 17}},
		{"with a character that is not ASCII", ` "A && é"`, Pos{Line: 4, Col: 17}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\nservers:\n  - id: memory\n    when:" + tt.when + "\n    effect: read\nswitches: [{name: A, rule: exactly-true}]\n"
			_, err := Parse("cond.yaml", []byte(src))
			var list ErrorList
			if err == nil || !asErrorList(err, &list) || len(list) != 1 {
				t.Fatalf("Parse = %v, want one error", err)
			}
			if list[0].Pos != tt.want {
				t.Errorf("error at %v, want %v: %v\n%s", list[0].Pos, tt.want, list[0], src)
			}
		})
	}
}

func asErrorList(err error, list *ErrorList) bool {
	l, ok := err.(ErrorList)
	*list = l
	return ok
}
