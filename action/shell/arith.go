package shell

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bash evaluates some text as code that does not look like code: an arithmetic expression
// evaluates the value of every variable it names, recursively, and a subscript inside it
// runs its command substitutions ($((x)) where x holds a[$(cmd)]); so do the operands of
// [[ -eq ]], the names given to test -v, printf -v, read, unset and declare, a nameref's
// target, ${!x}, and ${p@P}, which expands p's value as a prompt. This file finds that code.
//
// Literal text in such a place is parsed and analysed as the arithmetic it is. A variable
// named in such a place must have a value review knows is inert: every assignment to it in
// the command (anywhere, nested code included) a number for arithmetic, a plain name for
// ${!x} and a nameref, text without $, ` or \ for a prompt. Anything else is an Unknown.

// level is how inert a variable's value is; a value fits a use when its level is at most the
// use's.
type level uint8

const (
	levelNumber level = iota // 42, -1, 0x1f, 2#101, or the result of arithmetic
	levelName                // a name without a subscript
	levelText                // text without $, ` or \
	levelAny                 // not known, or code
)

// a use of a variable whose value bash evaluates
type varUse struct {
	name, text, pos string
	need            level
	why             string
}

// specialNumbers are variables whose value is always a number bash sets itself.
var specialNumbers = map[string]bool{
	"#": true, "?": true, "$": true, "!": true, "RANDOM": true, "SRANDOM": true, "LINENO": true,
	"SECONDS": true, "EPOCHSECONDS": true, "BASHPID": true, "PPID": true, "UID": true, "EUID": true,
	"OPTIND": true, "BASH_SUBSHELL": true, "HISTCMD": true,
}

// classify is the level of a literal value.
func classify(v string) level {
	t := strings.TrimSpace(v)
	if t == "" || isNumeric(t) {
		return levelNumber
	}
	if isName(t) {
		return levelName
	}
	if !strings.ContainsAny(v, "$`\\") {
		return levelText
	}
	return levelAny
}

func isNumeric(s string) bool {
	s = strings.TrimLeft(s, "+-")
	if s == "" {
		return false
	}
	if b, digits, ok := strings.Cut(s, "#"); ok {
		if !isNumber(b) || digits == "" {
			return false
		}
		for i := 0; i < len(digits); i++ {
			c := digits[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '@' || c == '_') {
				return false
			}
		}
		return true
	}
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		for i := 2; i < len(s); i++ {
			if !isHex(s[i]) {
				return false
			}
		}
		return true
	}
	return isNumber(s)
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// assigned records that name is given a value of level l.
func (a *analyzer) assigned(name string, l level) {
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	if a.vars == nil {
		a.vars = map[string]level{}
	}
	if old, ok := a.vars[name]; !ok || l > old {
		a.vars[name] = l
	}
}

// use records a variable whose value bash evaluates as code of the kind need allows.
func (w *walker) use(name string, need level, why, text, pos string) {
	w.a.uses = append(w.a.uses, varUse{name: name, need: need, why: why, text: text, pos: pos})
}

// checkUses reports, once the whole command has been walked, every use of a variable whose
// value may not be inert.
func (w *walker) checkUses() {
	for _, u := range w.a.uses {
		if specialNumbers[u.name] {
			continue
		}
		l, ok := w.a.vars[u.name]
		if w.a.anyName || !ok || l > u.need {
			w.unknown(fmt.Sprintf("bash evaluates the value of %s as code (%s), and that value is not known to be inert", u.name, u.why), u.text, u.pos)
		}
	}
}

// valueLevel is the level of an assignment's value.
func (w *walker) valueLevel(as *syntax.Assign) level {
	switch {
	case as.Array != nil:
		l := levelNumber
		for _, e := range as.Array.Elems {
			if e.Value != nil {
				l = max(l, w.wordLevel(e.Value))
			}
		}
		return l
	case as.Value != nil:
		return w.wordLevel(as.Value)
	}
	return levelNumber
}

// wordLevel is the level of a word's value: a literal is classified, $((...)) alone is a
// number, anything else is not known.
func (w *walker) wordLevel(word *syntax.Word) level {
	if len(word.Parts) == 1 {
		switch p := word.Parts[0].(type) {
		case *syntax.ArithmExp:
			return levelNumber
		case *syntax.CmdSubst:
			if numericOutput(p) {
				return levelNumber
			}
		case *syntax.DblQuoted:
			if len(p.Parts) == 1 {
				if cs, ok := p.Parts[0].(*syntax.CmdSubst); ok && numericOutput(cs) {
					return levelNumber
				}
			}
		}
	}
	a := w.word(word)
	if !a.lit() {
		return levelAny
	}
	return classify(a.val)
}

// arith finds the code in an arithmetic expression: every variable it names is a use, every
// quoted literal is parsed as the arithmetic it is, and a command substitution's output is
// evaluated too, which is not known.
func (w *walker) arith(st *state, x syntax.ArithmExpr) {
	if x == nil {
		return
	}
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryArithm:
			switch n.Op {
			case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
				syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn,
				syntax.ShrAssgn, syntax.AndBoolAssgn, syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
				if name, ok := arithName(n.X); ok {
					w.a.assigned(name, levelNumber)
				}
			}
		case *syntax.UnaryArithm:
			if n.Op == syntax.Inc || n.Op == syntax.Dec {
				if name, ok := arithName(n.X); ok {
					w.a.assigned(name, levelNumber)
				}
			}
		case *syntax.Word:
			w.arithWord(st, n)
			return false
		}
		return true
	})
}

// arithName is the variable an arithmetic assignment sets.
func arithName(x syntax.ArithmExpr) (string, bool) {
	word, ok := x.(*syntax.Word)
	if !ok || len(word.Parts) != 1 {
		return "", false
	}
	switch p := word.Parts[0].(type) {
	case *syntax.Lit:
		return p.Value, isName(p.Value)
	case *syntax.ParamExp:
		if p.Param != nil {
			return p.Param.Value, true
		}
	}
	return "", false
}

// arithWord is one operand of arithmetic, whose value bash evaluates as arithmetic.
func (w *walker) arithWord(st *state, word *syntax.Word) {
	text, pos := w.text(word), w.pos(word.Pos())
	if len(word.Parts) == 1 {
		switch p := word.Parts[0].(type) {
		case *syntax.Lit:
			w.arithText(st, p.Value, text, pos)
			return
		case *syntax.ParamExp:
			w.param(st, p, true)
			return
		}
	}
	a := w.word(word)
	if a.lit() {
		w.arithText(st, a.val, text, pos)
		return
	}
	for _, part := range word.Parts {
		switch p := part.(type) {
		case *syntax.ParamExp:
			w.param(st, p, true)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if pe, ok := q.(*syntax.ParamExp); ok {
					w.param(st, pe, true)
				} else if cs, ok := q.(*syntax.CmdSubst); ok && numericOutput(cs) {
				} else if _, ok := q.(*syntax.Lit); !ok {
					w.unknown("bash evaluates the output of a substitution as arithmetic, which is not known", text, pos)
				}
			}
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.ArithmExp:
		case *syntax.CmdSubst:
			if !numericOutput(p) {
				w.unknown("bash evaluates the output of a substitution as arithmetic, which is not known", text, pos)
			}
		default:
			w.unknown("bash evaluates the output of a substitution as arithmetic, which is not known", text, pos)
		}
	}
}

// arithText is literal text bash evaluates as arithmetic: a name is a use; anything else
// that is not a number is parsed and analysed as (( text )).
func (w *walker) arithText(st *state, v, text, pos string) {
	t := strings.TrimSpace(v)
	switch {
	case t == "" || isNumeric(t):
	case isName(t):
		w.use(t, levelNumber, "arithmetic", text, pos)
	default:
		w.codeArith(st, v, text, pos)
	}
}

// codeArith analyses text as the arithmetic command (( text )).
func (w *walker) codeArith(st *state, v, text, pos string) {
	if strings.Contains(v, "))") || strings.Contains(v, "\n") {
		w.unknown("bash evaluates this text as arithmetic, and it could not be analysed", text, pos)
		return
	}
	w.code(st, "(( "+v+" ))", "arithmetic", text, pos, true)
}

// param finds the code in a parameter expansion: its subscript and slice are arithmetic,
// ${!x} evaluates x's value as a name and ${p@P} p's as a prompt; inArith says the
// expansion's own value is evaluated as arithmetic.
func (w *walker) param(st *state, p *syntax.ParamExp, inArith bool) {
	if p.Param == nil {
		return
	}
	text, pos := w.text(p), w.pos(p.Pos())
	name := p.Param.Value
	if p.Index != nil {
		if word, ok := p.Index.(*syntax.Word); !ok || word.Lit() != "@" && word.Lit() != "*" {
			w.arith(st, p.Index)
		}
	}
	if p.Slice != nil {
		w.arith(st, p.Slice.Offset)
		w.arith(st, p.Slice.Length)
	}
	switch {
	case p.Excl && p.Index == nil && !p.Length && p.Names == 0:
		w.use(name, levelName, "${!"+name+"} names a variable by the value", text, pos)
	case p.Exp != nil && p.Exp.Op == syntax.OtherParamOps && p.Exp.Word != nil && p.Exp.Word.Lit() == "P":
		w.use(name, levelText, "${"+name+"@P} expands the value as a prompt", text, pos)
	}
	if inArith && !p.Length {
		w.use(name, levelNumber, "arithmetic", text, pos)
	}
}

// test finds the code in [[ ]]: the operands of -eq and its kin are arithmetic, and -v's
// operand is a name whose subscript is.
func (w *walker) test(st *state, x syntax.TestExpr) {
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryTest:
			switch n.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				for _, y := range []syntax.TestExpr{n.X, n.Y} {
					if word, ok := y.(*syntax.Word); ok {
						w.arithWord(st, word)
					}
				}
			}
		case *syntax.UnaryTest:
			if n.Op == syntax.TsVarSet {
				if word, ok := n.X.(*syntax.Word); ok {
					w.nameArg(st, w.word(word), "[[ -v ]]")
				}
			}
		}
		return true
	})
}

// nameArg is a word bash takes as a variable name (test -v, printf -v, read, unset): a name
// with a subscript has the subscript evaluated as arithmetic; a name from an expansion is
// not known.
func (w *walker) nameArg(st *state, a arg, who string) {
	if a.input {
		return
	}
	if !a.lit() {
		w.unknown(who+" is given a variable name from an expansion, whose subscript bash would evaluate", a.src, a.pos)
		return
	}
	i := strings.IndexByte(a.val, '[')
	if i < 0 {
		return
	}
	sub := a.val[i+1:]
	if j := strings.LastIndexByte(sub, ']'); j >= 0 {
		sub = sub[:j]
	}
	if sub == "@" || sub == "*" {
		return
	}
	w.arithText(st, sub, a.src, a.pos)
}

// assignArg is a NAME=VALUE or NAME word bash parses as an assignment (declare 'a[x]=1',
// export NAME): the name is a nameArg, and it is assigned a value of the level of VALUE.
func (w *walker) assignArg(st *state, a arg, who string) {
	if !a.lit() {
		eq := strings.IndexByte(a.val, '=')
		if eq < 0 || eq >= a.litPrefix() {
			w.unknown(who+" is given a variable name from an expansion", a.src, a.pos)
			w.a.anyName = true
			return
		}
		w.nameArg(st, litArg(a.val[:eq], a.src, a.pos), who)
		w.a.assigned(a.val[:eq], levelAny)
		return
	}
	name, value, hasEq := strings.Cut(a.val, "=")
	name = strings.TrimSuffix(name, "+")
	w.nameArg(st, litArg(name, a.src, a.pos), who)
	if hasEq {
		w.a.assigned(name, classify(value))
	}
}

// The builtins that take variable names, with the options whose value is one.
func init() {
	names := func(optsWithName string, all bool) func(c *call, _ *parsed) {
		return func(c *call, _ *parsed) {
			for i := 0; i < len(c.args); i++ {
				a := c.args[i]
				if a.lit() && len(a.val) > 1 && a.val[0] == '-' {
					if last := a.val[len(a.val)-1]; strings.IndexByte(optsWithName, last) >= 0 && i+1 < len(c.args) {
						i++
						c.w.nameArg(c.st, c.args[i], c.name+" -"+string(last))
						c.w.a.assigned(c.args[i].val, levelAny)
						c.w.assignVar(c.args[i].val, "", c.text, c.pos)
					} else if strings.ContainsAny(a.val[len(a.val)-1:], "dnNptu") && c.name == "read" && i+1 < len(c.args) {
						i++ // read -d DELIM, -n COUNT, -p PROMPT, -t TIMEOUT, -u FD
					}
					continue
				}
				if all {
					c.w.nameArg(c.st, a, c.name)
					c.w.a.assigned(a.val, levelAny)
					if c.name != "unset" {
						c.w.assignVar(a.val, "", c.text, c.pos)
					}
				}
			}
		}
	}
	register(&program{kind: kindNone, run: names("v", false)}, "printf")
	register(&program{kind: kindNone, run: names("a", true)}, "read")
	register(&program{kind: kindNone, run: names("p", false)}, "wait")
	register(&program{kind: kindNone, run: names("", true)}, "unset")
	register(&program{kind: kindNone, run: func(c *call, _ *parsed) {
		if len(c.args) >= 2 {
			c.w.nameArg(c.st, c.args[1], "getopts")
			c.w.a.assigned(c.args[1].val, levelName)
		}
	}}, "getopts")
	register(&program{kind: kindNone, run: func(c *call, _ *parsed) {
		for i, a := range c.args {
			if a.lit() && a.val == "-v" && i+1 < len(c.args) {
				c.w.nameArg(c.st, c.args[i+1], c.name+" -v")
			}
		}
	}}, "test", "[")
}

// declFlags applies a declaration's attributes to the names it declares: -i makes bash
// evaluate every value given to the name as arithmetic, -n makes the value a name that is
// evaluated wherever the variable is used.
func (w *walker) declFlags(st *state, c *syntax.DeclClause) {
	integer, ref := false, false
	for _, as := range c.Args {
		if as.Naked && as.Value != nil {
			if v := w.word(as.Value); v.lit() && strings.HasPrefix(v.val, "-") {
				integer = integer || strings.Contains(v.val, "i")
				ref = ref || strings.Contains(v.val, "n")
				continue
			}
		}
	}
	for _, as := range c.Args {
		if as.Name == nil {
			continue
		}
		name := as.Name.Value
		if integer {
			if w.a.integers == nil {
				w.a.integers = map[string]bool{}
			}
			w.a.integers[name] = true
			if as.Value != nil {
				w.arithWord(st, as.Value)
			}
		}
		if ref {
			if w.a.refs == nil {
				w.a.refs = map[string]bool{}
			}
			w.a.refs[name] = true
			// the value the variable already has, if any, becomes what it refers to
			w.use(name, levelName, "a nameref's value names the variable it refers to", w.text(as), w.pos(as.Pos()))
		}
		if ref && as.Value != nil {
			w.refTarget(st, w.word(as.Value), c.Variant.Value+" -n", w.text(as), w.pos(as.Pos()))
		}
	}
}

// refTarget is the value given to a nameref: the name of the variable it refers to, whose
// subscript bash evaluates wherever the reference is used; a reference to LESSOPEN sets
// LESSOPEN.
func (w *walker) refTarget(st *state, target arg, who, text, pos string) {
	w.nameArg(st, target, who)
	if target.lit() {
		w.assignVar(target.val, "", text, pos)
	}
}

// integerAssign is an assignment to a variable with the integer attribute, whose value is
// evaluated as arithmetic, or to a nameref declared without a value, whose value becomes the
// name it refers to.
func (w *walker) integerAssign(st *state, as *syntax.Assign) {
	if as.Name == nil || as.Value == nil {
		return
	}
	if w.a.integers[as.Name.Value] {
		w.arithWord(st, as.Value)
	}
	if w.a.refs[as.Name.Value] {
		w.refTarget(st, w.word(as.Value), as.Name.Value+" (a nameref)", w.text(as), w.pos(as.Pos()))
	}
}

// numericOutput reports a command substitution whose output is only a number, whatever the
// files it reads hold: it ends in wc counting its standard input (wc -l, ... | wc -c), nproc,
// id -u or id -g, or date +%s.
func numericOutput(cs *syntax.CmdSubst) bool {
	if len(cs.Stmts) != 1 {
		return false
	}
	cmd := cs.Stmts[0].Cmd
	for {
		b, ok := cmd.(*syntax.BinaryCmd)
		if !ok || b.Op != syntax.Pipe && b.Op != syntax.PipeAll {
			break
		}
		cmd = b.Y.Cmd
	}
	call, ok := cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 || len(call.Assigns) > 0 {
		return false
	}
	var args []string
	for _, a := range call.Args {
		v, ok := plainLit(a)
		if !ok {
			return false
		}
		args = append(args, v)
	}
	switch args[0] {
	case "wc":
		// with no file operand wc prints the count alone
		for _, a := range args[1:] {
			if len(a) != 2 || a[0] != '-' || !strings.ContainsRune("lcwmL", rune(a[1])) {
				return false
			}
		}
		return len(args) == 2
	case "nproc":
		return len(args) == 1
	case "id":
		return len(args) == 2 && (args[1] == "-u" || args[1] == "-g")
	case "date":
		return len(args) == 2 && args[1] == "+%s"
	}
	return false
}

// plainLit is the value of a word made of literal text and quotes only.
func plainLit(word *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range word.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "\\*?[") {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		default:
			return "", false
		}
	}
	return b.String(), true
}
