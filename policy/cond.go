package policy

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Conditions are the small boolean language of `when` fields:
//
//	expr  = and { "||" and }
//	and   = unary { "&&" unary }
//	unary = "!" unary | "(" expr ")" | atom
//	atom  = NAME [ ("==" | "!=") WORD ]
//
// Upper-case names are switches, lower-case names are facts of the session (Facts): harness
// and model are compared with an id (harness == loop, model != claude-haiku-5-5), the others
// are true or false. A condition
// is compiled once, with every name resolved, and evaluated per session without allocating.

// Facts are what a condition can ask about a session besides the switches.
type Facts struct {
	Env *Env
	// ApprovalChannel: a person can answer the session's approval cards.
	ApprovalChannel bool
	// Owner: the session's tenant is the deployment owner's.
	Owner bool
	// Skills: the session has at least one skill.
	Skills bool
	// Coworkers: the tenant has at least one coworker.
	Coworkers bool
	// Goals: the goals engine is on for the tenant.
	Goals bool
	// Harness is the session's harness.
	Harness *Harness
	// Model is the model the session states it runs on ("" when it states none).
	Model string
}

type fact uint8

const (
	factApprovalChannel fact = iota + 1
	factOwner
	factSkills
	factCoworkers
	factGoals
)

var factNames = map[string]fact{
	"approval_channel": factApprovalChannel,
	"owner":            factOwner,
	"skills":           factSkills,
	"coworkers":        factCoworkers,
	"goals":            factGoals,
}

// factList is every fact name, for messages.
const factList = "approval_channel, owner, skills, coworkers, goals, harness, model"

func (f *Facts) fact(k fact) bool {
	switch k {
	case factApprovalChannel:
		return f.ApprovalChannel
	case factOwner:
		return f.Owner
	case factSkills:
		return f.Skills
	case factCoworkers:
		return f.Coworkers
	case factGoals:
		return f.Goals
	}
	return false
}

func describeFact(k fact, v bool, f *Facts) string {
	var yes, no string
	switch k {
	case factApprovalChannel:
		yes, no = "the session has an approval channel", "the session has no approval channel"
	case factOwner:
		yes, no = "the tenant is the deployment owner's", "the tenant is not the deployment owner's"
	case factSkills:
		yes, no = "the session has skills", "the session has no skills"
	case factCoworkers:
		yes, no = "the tenant has coworkers", "the tenant has no coworkers"
	case factGoals:
		yes, no = "the goals engine is on for the tenant", "the goals engine is off for the tenant"
	}
	if v {
		return yes
	}
	return no
}

type condOp uint8

const (
	opSwitch  condOp = iota + 1 // a switch is on
	opMode                      // a mode switch is in mode `arg`
	opFact                      // a fact is true
	opHarness                   // the harness is `arg`
	opModel                     // the model is `name`
	opNot
	opAnd
	opOr
)

type condNode struct {
	op   condOp
	idx  int  // switch index, fact, or harness index
	arg  int  // mode index
	neg  bool // a != comparison
	a, b *condNode
	name string // the word compared against, for explanations
	sw   string // the switch's name
}

// Cond is a compiled condition. The nil *Cond is always true.
type Cond struct {
	src  string
	root *condNode
}

// String returns the condition's source.
func (c *Cond) String() string {
	if c == nil {
		return "always"
	}
	return c.src
}

// Switches lists the switches the condition reads, in order of first use.
func (c *Cond) Switches() []string {
	if c == nil {
		return nil
	}
	var out []string
	var walk func(n *condNode)
	walk = func(n *condNode) {
		if n == nil {
			return
		}
		if (n.op == opSwitch || n.op == opMode) && !slices.Contains(out, n.sw) {
			out = append(out, n.sw)
		}
		walk(n.a)
		walk(n.b)
	}
	walk(c.root)
	return out
}

// Eval reports whether the condition holds.
func (c *Cond) Eval(f *Facts) bool {
	if c == nil {
		return true
	}
	return c.root.eval(f)
}

func (n *condNode) eval(f *Facts) bool {
	switch n.op {
	case opSwitch:
		return f.Env.states[n.idx].On
	case opMode:
		return (f.Env.states[n.idx].mode == n.arg) != n.neg
	case opFact:
		return f.fact(fact(n.idx))
	case opHarness:
		return (f.Harness != nil && f.Harness.Index == n.idx) != n.neg
	case opModel:
		return (f.Model == n.name) != n.neg
	case opNot:
		return !n.a.eval(f)
	case opAnd:
		return n.a.eval(f) && n.b.eval(f)
	case opOr:
		return n.a.eval(f) || n.b.eval(f)
	}
	return false
}

// Why says which parts of the condition decided its value: for a false condition, the parts
// that made it false ("AGENTMAIL_ALLOW_SENDS is off ("yes"; ...)").
func (c *Cond) Why(f *Facts) string {
	if c == nil {
		return "always"
	}
	return strings.Join(slices.Compact(c.root.why(f)), "; ")
}

func (n *condNode) why(f *Facts) []string {
	switch n.op {
	case opSwitch, opMode:
		return []string{f.Env.states[n.idx].Describe()}
	case opFact:
		return []string{describeFact(fact(n.idx), n.eval(f), f)}
	case opHarness:
		cur := "none"
		if f.Harness != nil {
			cur = f.Harness.ID
		}
		return []string{fmt.Sprintf("the harness is %s", cur)}
	case opModel:
		if f.Model == "" {
			return []string{"the session states no model"}
		}
		return []string{fmt.Sprintf("the model is %s", f.Model)}
	case opNot:
		return n.a.why(f)
	case opAnd, opOr:
		v := n.eval(f)
		// The deciding children: those with the node's own value (false children of a false
		// "and", true children of a true "or"); otherwise every child decided it.
		decisive := (n.op == opAnd) != v
		var out []string
		for _, c := range []*condNode{n.a, n.b} {
			if !decisive || c.eval(f) == v {
				out = append(out, c.why(f)...)
			}
		}
		return out
	}
	return nil
}

// condScope resolves the names a condition may use.
type condScope struct {
	switches  map[string]*Switch
	harnesses map[string]*Harness
	models    map[string]int // declared model ids
}

// compileCond compiles e, reporting problems at their column. An empty source means "always"
// and compiles to nil.
func compileCond(p *problems, e Expr, scope condScope) *Cond {
	if strings.TrimSpace(e.Src) == "" {
		// An empty when (a templating slip, say) must not quietly mean "always".
		if e.Pos.IsValid() {
			p.errorf(e.Pos, "the condition is empty: write one, or leave out when to mean always")
		}
		return nil
	}
	cp := condParser{src: e.Src, pos: e.Pos, approx: e.approx, scope: scope, p: p}
	cp.next()
	root := cp.expr()
	if cp.failed {
		return nil
	}
	if cp.tok.kind != tokEOF {
		cp.fail(cp.tok.off, "unexpected %q in the condition", cp.tok.text)
		return nil
	}
	return &Cond{src: e.Src, root: root}
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokWord
	tokNot
	tokAnd
	tokOr
	tokEq
	tokNe
	tokLParen
	tokRParen
	tokBad
)

type token struct {
	kind tokKind
	text string
	off  int
}

type condParser struct {
	src    string
	off    int
	pos    Pos
	approx bool // pos is only where the value starts (see Expr)
	tok    token
	scope  condScope
	p      *problems
	failed bool
	depth  int
}

func (cp *condParser) fail(off int, format string, args ...any) {
	if cp.failed {
		return
	}
	cp.failed = true
	at := cp.pos
	if before := cp.src[:min(off, len(cp.src))]; at.IsValid() && !cp.approx && !strings.Contains(before, "\n") {
		at.Col += utf8.RuneCountInString(before) // columns count characters
	}
	cp.p.errorf(at, format, args...)
}

func isWordByte(c byte) bool {
	// '/', ':' and '@' are for model ids (google/gemini-3.8-flash).
	return c == '_' || c == '-' || c == '.' || c == '/' || c == ':' || c == '@' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func (cp *condParser) next() {
	for cp.off < len(cp.src) && strings.IndexByte(" \t\r\n", cp.src[cp.off]) >= 0 {
		cp.off++
	}
	start := cp.off
	if cp.off >= len(cp.src) {
		cp.tok = token{kind: tokEOF, off: start}
		return
	}
	two := ""
	if cp.off+1 < len(cp.src) {
		two = cp.src[cp.off : cp.off+2]
	}
	switch {
	case two == "&&":
		cp.tok, cp.off = token{tokAnd, two, start}, cp.off+2
	case two == "||":
		cp.tok, cp.off = token{tokOr, two, start}, cp.off+2
	case two == "==":
		cp.tok, cp.off = token{tokEq, two, start}, cp.off+2
	case two == "!=":
		cp.tok, cp.off = token{tokNe, two, start}, cp.off+2
	case cp.src[cp.off] == '!':
		cp.tok, cp.off = token{tokNot, "!", start}, cp.off+1
	case cp.src[cp.off] == '(':
		cp.tok, cp.off = token{tokLParen, "(", start}, cp.off+1
	case cp.src[cp.off] == ')':
		cp.tok, cp.off = token{tokRParen, ")", start}, cp.off+1
	case isWordByte(cp.src[cp.off]):
		for cp.off < len(cp.src) && isWordByte(cp.src[cp.off]) {
			cp.off++
		}
		cp.tok = token{tokWord, cp.src[start:cp.off], start}
	default:
		_, w := utf8.DecodeRuneInString(cp.src[start:]) // the whole character, for the message
		cp.tok, cp.off = token{tokBad, cp.src[start : start+w], start}, cp.off+w
	}
}

// maxCondDepth bounds nesting, so a hostile condition cannot exhaust the stack.
const maxCondDepth = 64

func (cp *condParser) expr() *condNode {
	n := cp.and()
	for !cp.failed && cp.tok.kind == tokOr {
		cp.next()
		n = &condNode{op: opOr, a: n, b: cp.and()}
	}
	return n
}

func (cp *condParser) and() *condNode {
	n := cp.unary()
	for !cp.failed && cp.tok.kind == tokAnd {
		cp.next()
		n = &condNode{op: opAnd, a: n, b: cp.unary()}
	}
	return n
}

func (cp *condParser) unary() *condNode {
	if cp.failed {
		return nil
	}
	cp.depth++
	defer func() { cp.depth-- }()
	if cp.depth > maxCondDepth {
		cp.fail(cp.tok.off, "the condition nests deeper than %d levels", maxCondDepth)
		return nil
	}
	switch cp.tok.kind {
	case tokNot:
		cp.next()
		return &condNode{op: opNot, a: cp.unary()}
	case tokLParen:
		open := cp.tok.off
		cp.next()
		n := cp.expr()
		if cp.tok.kind != tokRParen {
			cp.fail(open, "this ( is never closed")
			return nil
		}
		cp.next()
		return n
	case tokWord:
		return cp.atom()
	case tokEOF:
		cp.fail(cp.tok.off, "the condition ends where a switch or fact name is expected")
	default:
		cp.fail(cp.tok.off, "expected a switch or fact name, found %q", cp.tok.text)
	}
	return nil
}

func (cp *condParser) atom() *condNode {
	name, off := cp.tok.text, cp.tok.off
	cp.next()
	var cmp *token
	var word token
	if cp.tok.kind == tokEq || cp.tok.kind == tokNe {
		t := cp.tok
		cmp = &t
		cp.next()
		if cp.tok.kind != tokWord {
			cp.fail(cp.tok.off, "expected a value after %s", t.text)
			return nil
		}
		word = cp.tok
		cp.next()
	}
	if name[0] >= 'A' && name[0] <= 'Z' {
		return cp.switchAtom(name, off, cmp, word)
	}
	if name == "harness" {
		if cmp == nil {
			cp.fail(off, "harness must be compared with a harness id, as in harness == default")
			return nil
		}
		h, ok := cp.scope.harnesses[word.text]
		if !ok {
			cp.fail(word.off, "unknown harness %q", word.text)
			return nil
		}
		return &condNode{op: opHarness, idx: h.Index, neg: cmp.kind == tokNe, name: word.text}
	}
	if name == "model" {
		if cmp == nil {
			cp.fail(off, "model must be compared with a model id, as in model == claude-haiku-5-5")
			return nil
		}
		if _, ok := cp.scope.models[word.text]; !ok {
			cp.fail(word.off, "unknown model %q: declare it under models", word.text)
			return nil
		}
		return &condNode{op: opModel, neg: cmp.kind == tokNe, name: word.text}
	}
	k, ok := factNames[name]
	if !ok {
		cp.fail(off, "unknown fact %q: the facts are %s, and switches are written in upper case", name, factList)
		return nil
	}
	if cmp != nil {
		cp.fail(cmp.off, "the fact %s is true or false and cannot be compared", name)
		return nil
	}
	return &condNode{op: opFact, idx: int(k)}
}

func (cp *condParser) switchAtom(name string, off int, cmp *token, word token) *condNode {
	s, ok := cp.scope.switches[name]
	if !ok {
		cp.fail(off, "unknown switch %s: declare it under switches", name)
		return nil
	}
	switch s.Kind {
	case RuleModes:
		if cmp == nil {
			cp.fail(off, "%s is a mode switch: compare it, as in %s == %s", name, name, s.Modes[0])
			return nil
		}
		i := slices.IndexFunc(s.Modes, func(m string) bool { return strings.EqualFold(m, word.text) })
		if i < 0 {
			cp.fail(word.off, "%q is not a mode of %s (its modes are %s)", word.text, name, strings.Join(s.Modes, ", "))
			return nil
		}
		return &condNode{op: opMode, idx: s.Index, arg: i, neg: cmp.kind == tokNe, name: s.Modes[i], sw: name}
	case RuleInteger:
		cp.fail(off, "%s holds a number and cannot be a condition", name)
		return nil
	}
	if cmp != nil {
		cp.fail(cmp.off, "%s is on or off and cannot be compared; write %s or !%s", name, name, name)
		return nil
	}
	return &condNode{op: opSwitch, idx: s.Index, sw: name}
}
