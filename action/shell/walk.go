package shell

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxSteps bounds the work of one analysis: statements and commands visited, nested code
// included. Functions calling functions, loops re-walked with an unknown directory and nested
// strings could otherwise multiply; past the bound the rest is an Unknown.
const maxSteps = 20000

// analyzer holds one analysis.
type analyzer struct {
	opt      Options
	srcLen   int // the command's length, to size the results
	maxDepth int
	res      *Analysis
	effects  map[Effect]struct{}
	unknowns map[Unknown]struct{}
	funcs    map[string][]*function
	order    []*function // definitions in the order they were met
	steps    int
	stopped  bool
	// aliases are programs copied or linked to a path by the command (ln -s /bin/rm r), by
	// that path; "" when what was copied is not known.
	aliases map[string]string
	// links are the symbolic links ln -s makes, by where they are, each with the absolute
	// path it leads to ("" when that is not known): a later path through one is followed.
	links map[string]string
	// vars is how inert the values given to each variable are, anywhere in the command;
	// uses are the places bash evaluates a variable's value as code (arith.go); anyName is
	// set when a variable named by an expansion is assigned, so any could hold anything.
	vars     map[string]level
	uses     []varUse
	anyName  bool
	integers map[string]bool  // declared -i: every value given is arithmetic
	refs     map[string]bool  // declared -n: every value given is a name
	loopVars map[string][]arg // for-loop variables being followed, with their words
	ifs      bool             // IFS is set somewhere
}

// function is a function definition met while walking.
type function struct {
	name   string
	decl   *syntax.FuncDecl
	w      *walker // where it was defined: source and positions
	dir    string  // the working directory at the definition
	called bool
	active bool
}

// walker walks one piece of source: the command given to Analyze, or code nested in it.
type walker struct {
	a     *analyzer
	src   string // the source positions refer to
	fixed string // when set, the position of everything in src (code parsed from a string)
	via   string
	depth int
}

// state is what the shell knows while running: the working directory and the directory
// stack. Walking a subshell works on a copy, so a cd inside it does not leak out.
type state struct {
	dir   string   // "" when not known
	old   string   // OLDPWD, for cd -
	stack []string // pushd's stack, top last
	lost  bool     // the stack is not known
	dead  bool     // the shell has exited (exit, return, exec): this path goes no further
}

// merge is the state after one of two paths ran.
func merge(x, y state) state {
	if x.dead {
		return y
	}
	if y.dead {
		return x
	}
	if x.dir != y.dir {
		x.dir = ""
	}
	if x.old != y.old {
		x.old = ""
	}
	if x.lost || y.lost || !slices.Equal(x.stack, y.stack) {
		x.stack, x.lost = nil, true
	}
	return x
}

func sameState(x, y state) bool {
	return x.dir == y.dir && x.old == y.old && x.lost == y.lost && slices.Equal(x.stack, y.stack)
}

func newWalker(src string, opt Options) *walker {
	a := &analyzer{
		opt:      opt,
		srcLen:   len(src),
		maxDepth: opt.MaxNesting,
		res:      &Analysis{},
	}
	if a.maxDepth <= 0 {
		a.maxDepth = 8
	}
	if !filepath.IsAbs(a.opt.Dir) {
		a.opt.Dir = ""
	} else {
		a.opt.Dir = filepath.Clean(a.opt.Dir)
	}
	if !filepath.IsAbs(a.opt.Home) {
		a.opt.Home = ""
	} else {
		a.opt.Home = filepath.Clean(a.opt.Home)
	}
	return &walker{a: a, src: src}
}

// file walks a parsed file, then the functions it defined but never called.
func (w *walker) file(f *syntax.File) {
	st := &state{dir: w.a.opt.Dir}
	w.stmts(st, f.Stmts)
	// A function that is never called is analysed once anyway, from where it was defined: it
	// may be called in a way the analysis did not follow.
	for i := 0; i < len(w.a.order) && !w.a.stopped; i++ {
		fn := w.a.order[i]
		if fn.called {
			continue
		}
		fn.called = true
		fw := fn.w.enter("function "+fn.name, false)
		fs := &state{dir: fn.dir}
		fn.active = true
		fw.stmt(fs, fn.decl.Body)
		fn.active = false
	}
}

// result accessors

func (w *walker) record(c Command) int {
	if w.a.res.Commands == nil {
		// room for the commands a line of this length usually holds, in one allocation
		w.a.res.Commands = make([]Command, 0, min(1+w.a.srcLen/24, 64))
	}
	w.a.res.Commands = append(w.a.res.Commands, c)
	return len(w.a.res.Commands) - 1
}

// linearDedup is how many effects or unknowns are checked for duplicates one by one before a
// set is built: most commands have a handful.
const linearDedup = 16

func (a *analyzer) addEffect(e Effect) {
	if a.res.Effects == nil {
		a.res.Effects = make([]Effect, 0, min(2+a.srcLen/12, 128)) // as record
	}
	addNew(&a.res.Effects, &a.effects, e)
}

func (w *walker) unknown(what, text, pos string) {
	addNew(&w.a.res.Unknowns, &w.a.unknowns, Unknown{What: what, Text: text, Pos: pos})
}

// addNew appends x to list unless it is there already; set takes over the check once the
// list is long.
func addNew[T comparable](list *[]T, set *map[T]struct{}, x T) bool {
	if *set == nil {
		if slices.Contains(*list, x) {
			return false
		}
		if len(*list) >= linearDedup {
			*set = make(map[T]struct{}, 2*linearDedup)
			for _, y := range *list {
				(*set)[y] = struct{}{}
			}
			(*set)[x] = struct{}{}
		}
	} else {
		if _, ok := (*set)[x]; ok {
			return false
		}
		(*set)[x] = struct{}{}
	}
	*list = append(*list, x)
	return true
}

// step counts work; it reports false once the analysis is over its bound.
func (w *walker) step(n syntax.Node) bool {
	a := w.a
	if a.stopped {
		return false
	}
	a.steps++
	if a.steps > maxSteps {
		a.stopped = true
		w.unknown("the command is too complex to analyse fully", w.text(n), w.pos(n.Pos()))
		return false
	}
	return true
}

// text is the source of a node.
func (w *walker) text(n syntax.Node) string {
	s, e := n.Pos(), n.End()
	if !s.IsValid() || !e.IsValid() {
		return ""
	}
	i, j := int(s.Offset()), int(e.Offset())
	if i < 0 || j > len(w.src) || i > j {
		return ""
	}
	return w.src[i:j]
}

// pos is "line:col" of p, or the fixed position of nested code.
func (w *walker) pos(p syntax.Pos) string {
	if w.fixed != "" {
		return w.fixed
	}
	if line, col := p.Line(), p.Col(); line == 1 && col < uint(len(firstLine)) {
		return firstLine[col]
	}
	return strconv.FormatUint(uint64(p.Line()), 10) + ":" + strconv.FormatUint(uint64(p.Col()), 10)
}

// firstLine holds "1:col" for the columns of a command's first line up to 512 (most commands
// are one line of some hundreds of characters), so that pos needs no allocation there.
var firstLine = func() []string {
	out := make([]string, 512)
	for col := range out {
		out[col] = "1:" + strconv.Itoa(col)
	}
	return out
}()

// enter is a walker for code reached through via. nested says the code is a new nesting
// level (a substitution or a string of code), which counts towards Options.MaxNesting.
func (w *walker) enter(via string, nested bool) *walker {
	n := *w
	if n.via == "" {
		n.via = via
	} else {
		n.via = w.via + " > " + via
	}
	if nested {
		n.depth++
	}
	return &n
}

// tooDeep reports, as an Unknown, code nested deeper than allowed.
func (w *walker) tooDeep(text, pos string) bool {
	if w.depth+1 <= w.a.maxDepth {
		return false
	}
	w.unknown(fmt.Sprintf("code is nested deeper than %d levels", w.a.maxDepth), text, pos)
	return true
}

// statements

func (w *walker) stmts(st *state, list []*syntax.Stmt) {
	for _, s := range list {
		w.stmt(st, s)
	}
}

func (w *walker) stmt(st *state, s *syntax.Stmt) {
	if s == nil || !w.step(s) {
		return
	}
	if s.Background || s.Coprocess || s.Disown {
		// an asynchronous command runs in a subshell: its cd does not leak out
		cp := *st
		w.command(&cp, s.Cmd, s.Redirs)
		return
	}
	w.command(st, s.Cmd, s.Redirs)
}

func (w *walker) command(st *state, cmd syntax.Command, redirs []*syntax.Redirect) {
	if c, ok := cmd.(*syntax.CallExpr); ok {
		w.call(st, c, redirs)
		return
	}
	if cmd == nil || len(redirs) > 0 {
		w.compoundRedirects(st, cmd, redirs)
	}
	switch c := cmd.(type) {
	case *syntax.Block:
		w.stmts(st, c.Stmts)
	case *syntax.Subshell:
		cp := *st
		w.enter("subshell", false).stmts(&cp, c.Stmts)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt, syntax.OrStmt:
			// the right side may not run: what follows sees either state
			ok, failed := w.list(st, c)
			*st = merge(ok, failed)
		default: // pipes: each side runs in a subshell
			x, y := *st, *st
			w.stmt(&x, c.X)
			w.stmt(&y, c.Y)
		}
	case *syntax.IfClause:
		w.ifClause(st, c)
	case *syntax.WhileClause:
		w.loop(st, func(st *state) {
			w.stmts(st, c.Cond)
			w.stmts(st, c.Do)
		})
	case *syntax.ForClause:
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			lv := levelNumber
			if !l.InPos.IsValid() {
				lv = levelAny // the positional parameters
			}
			var globs []arg
			for _, word := range l.Items {
				w.substs(st, word)
				a := w.word(word)
				if !a.lit() || a.glob() {
					lv = levelAny
				} else {
					lv = max(lv, classify(a.val))
				}
				if a.glob() {
					globs = append(globs, a)
				}
			}
			if len(globs) > 0 {
				// bash lists the directories of the loop's globs (for f in ~/.ssh/*)
				idx := w.record(Command{Dir: st.dir, Pos: w.pos(c.Pos()), Via: w.via})
				for _, a := range globs {
					w.globListing(idx, st.dir, a)
				}
			}
			if l.Name != nil {
				w.a.assigned(l.Name.Value, lv)
			}
		case *syntax.CStyleLoop:
			for _, x := range []syntax.ArithmExpr{l.Init, l.Cond, l.Post} {
				if x != nil {
					w.substs(st, x)
					w.arith(st, x)
				}
			}
		}
		var words []arg
		if it, ok := c.Loop.(*syntax.WordIter); ok {
			words = w.loopWords(c, it)
		}
		if words == nil {
			w.loop(st, func(st *state) { w.stmts(st, c.Do) })
			break
		}
		name := c.Loop.(*syntax.WordIter).Name.Value
		old, had := w.a.loopVars[name]
		if w.a.loopVars == nil {
			w.a.loopVars = map[string][]arg{}
		}
		w.a.loopVars[name] = words
		w.loop(st, func(st *state) { w.stmts(st, c.Do) })
		if had {
			w.a.loopVars[name] = old
		} else {
			delete(w.a.loopVars, name)
		}
	case *syntax.CaseClause:
		w.substs(st, c.Word)
		entry := *st
		out := state{dead: true}
		catchAll := false
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				w.substs(&entry, p)
				catchAll = catchAll || p.Lit() == "*"
			}
			branch := entry
			w.stmts(&branch, item.Stmts)
			out = merge(out, branch)
		}
		if !catchAll {
			out = merge(out, entry)
		}
		*st = out
	case *syntax.FuncDecl:
		w.define(st, c)
	case *syntax.ArithmCmd:
		w.substs(st, c.X)
		w.arith(st, c.X)
	case *syntax.TestClause:
		w.substs(st, c.X)
		w.test(st, c.X)
	case *syntax.LetClause:
		args := make([]string, 0, len(c.Exprs))
		for _, x := range c.Exprs {
			w.substs(st, x)
			w.arith(st, x)
			args = append(args, w.text(x))
		}
		w.record(Command{Name: "let", Args: args, Dir: st.dir, Pos: w.pos(c.Pos()), Via: w.via})
	case *syntax.DeclClause:
		w.decl(st, c)
	case *syntax.TimeClause:
		w.stmt(st, c.Stmt)
	case *syntax.CoprocClause:
		cp := *st
		w.stmt(&cp, c.Stmt)
	case *syntax.TestDecl:
		w.substs(st, c.Description)
		w.stmt(st, c.Body)
	}
}

// cond walks a list joined by && and ||, and returns the state after it succeeded and the
// state after it failed. In a && b && c, c runs only where b ran and succeeded, so a cd in b is
// known to c (mkdir -p x && cd x && touch f); what follows the whole list sees either state.
// A command is assumed to leave the same state whether it succeeds or fails (a cd is assumed
// to succeed).
func (w *walker) cond(st *state, s *syntax.Stmt) (ok, failed state) {
	b, isList := s.Cmd.(*syntax.BinaryCmd)
	if !isList || len(s.Redirs) > 0 || s.Background || s.Coprocess || s.Disown || s.Negated ||
		b.Op != syntax.AndStmt && b.Op != syntax.OrStmt {
		w.stmt(st, s)
		return *st, *st
	}
	if !w.step(s) {
		return *st, *st
	}
	return w.list(st, b)
}

// list is cond for a && or || list. st is walked in place (a state whose address is taken
// escapes to the heap, and lists are common).
func (w *walker) list(st *state, b *syntax.BinaryCmd) (ok, failed state) {
	xok, xfailed := w.cond(st, b.X)
	if b.Op == syntax.AndStmt {
		*st = xok
		yok, yfailed := w.cond(st, b.Y)
		return yok, merge(xfailed, yfailed)
	}
	*st = xfailed
	yok, yfailed := w.cond(st, b.Y)
	return merge(xok, yok), yfailed
}

// compoundRedirects records the redirections of a compound command, or of a statement with
// no command, as a Command with an empty Name.
func (w *walker) compoundRedirects(st *state, cmd syntax.Command, redirs []*syntax.Redirect) {
	for _, r := range redirs {
		w.redirectSubsts(st, r)
	}
	var args []string
	var pos syntax.Pos
	if cmd != nil {
		args = []string{keyword(cmd)}
		pos = cmd.Pos()
	} else if len(redirs) > 0 {
		pos = redirs[0].Pos()
	}
	idx := w.record(Command{Args: args, Dir: st.dir, Pos: w.pos(pos), Via: w.via})
	w.redirects(idx, st, redirs)
}

func keyword(cmd syntax.Command) string {
	switch c := cmd.(type) {
	case *syntax.Block:
		return "{"
	case *syntax.Subshell:
		return "("
	case *syntax.IfClause:
		return "if"
	case *syntax.WhileClause:
		if c.Until {
			return "until"
		}
		return "while"
	case *syntax.ForClause:
		if c.Select {
			return "select"
		}
		return "for"
	case *syntax.CaseClause:
		return "case"
	case *syntax.ArithmCmd:
		return "(("
	case *syntax.TestClause:
		return "[["
	case *syntax.FuncDecl:
		return "function"
	case *syntax.TimeClause:
		return "time"
	case *syntax.CoprocClause:
		return "coproc"
	case *syntax.DeclClause:
		return c.Variant.Value
	case *syntax.LetClause:
		return "let"
	}
	return ""
}

func (w *walker) ifClause(st *state, c *syntax.IfClause) {
	w.stmts(st, c.Cond)
	entry := *st
	w.stmts(st, c.Then)
	if c.Else == nil {
		*st = merge(*st, entry)
		return
	}
	other := entry
	if c.Else.ThenPos.IsValid() { // elif
		w.ifClause(&other, c.Else)
	} else {
		w.stmts(&other, c.Else.Then)
	}
	*st = merge(*st, other)
}

// loop walks a loop body, which may run any number of times. When one pass changes the
// directory, later passes start somewhere else: the body is walked again from a state that
// does not know the directory, so relative paths in it become Unknowns.
func (w *walker) loop(st *state, body func(*state)) {
	before := *st
	body(st)
	if sameState(before, *st) || st.dead {
		*st = merge(before, *st)
		return
	}
	again := merge(before, *st)
	body(&again)
	*st = merge(merge(before, *st), again)
}

// define records a function definition; its body is analysed where it is called.
func (w *walker) define(st *state, c *syntax.FuncDecl) {
	names := c.Names
	if c.Name != nil {
		names = append([]*syntax.Lit{c.Name}, names...)
	}
	for _, n := range names {
		known := false
		for _, fn := range w.a.funcs[n.Value] {
			// a definition met again (a loop, a function defining one) is the same function
			known = known || fn.decl == c
		}
		if known {
			continue
		}
		fn := &function{name: n.Value, decl: c, w: w, dir: st.dir}
		if w.a.funcs == nil {
			w.a.funcs = map[string][]*function{}
		}
		w.a.funcs[n.Value] = append(w.a.funcs[n.Value], fn)
		w.a.order = append(w.a.order, fn)
	}
}

// callFunctions analyses the bodies of the functions called name, in the caller's shell.
func (w *walker) callFunctions(st *state, name string) {
	for _, fn := range w.a.funcs[name] {
		if w.a.stopped {
			return
		}
		fn.called = true
		if fn.active { // a recursive call adds nothing the first pass did not see
			continue
		}
		fw := *fn.w
		fw.via, fw.depth = w.via, w.depth
		fn.active = true
		fw.enter("function "+name, false).stmt(st, fn.decl.Body)
		fn.active = false
		// return ends the function, not the caller
		st.dead = false
	}
}

// decl walks a declaration (export, local, declare, readonly, typeset, nameref).
func (w *walker) decl(st *state, c *syntax.DeclClause) {
	args := make([]string, 0, len(c.Args))
	w.declFlags(st, c)
	for _, as := range c.Args {
		w.substs(st, as)
		if as.Name != nil && !as.Naked {
			w.assignVar(as.Name.Value, assignValue(w, as), w.text(as), w.pos(as.Pos()))
			w.a.assigned(as.Name.Value, w.valueLevel(as))
		}
		if as.Naked && as.Value != nil {
			if v := w.word(as.Value); !v.lit() || !strings.HasPrefix(v.val, "-") {
				w.assignArg(st, v, c.Variant.Value)
			}
		}
		switch {
		case as.Naked && as.Name != nil:
			args = append(args, as.Name.Value)
		case as.Naked && as.Value != nil:
			args = append(args, w.word(as.Value).val)
		default:
			args = append(args, w.assignText(as))
		}
	}
	w.record(Command{Name: c.Variant.Value, Args: args, Dir: st.dir, Pos: w.pos(c.Pos()), Via: w.via})
}

// assignText is NAME=value with quotes removed from the value.
func (w *walker) assignText(as *syntax.Assign) string {
	var b strings.Builder
	if as.Name != nil {
		b.WriteString(as.Name.Value)
	}
	if as.Index != nil {
		b.WriteString("[" + w.text(as.Index) + "]")
	}
	if as.Append {
		b.WriteByte('+')
	}
	b.WriteByte('=')
	switch {
	case as.Value != nil:
		b.WriteString(w.word(as.Value).val)
	case as.Array != nil:
		b.WriteString(w.text(as.Array))
	}
	return b.String()
}

// substs analyses the command and process substitutions inside a word, an assignment, an
// arithmetic or a test expression. Each runs in a subshell.
func (w *walker) substs(st *state, n syntax.Node) {
	if n == nil || w.a.stopped {
		return
	}
	if word, ok := n.(*syntax.Word); ok && !mayRun(word.Parts) {
		return
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ArithmExp:
			w.arith(st, n.X)
		case *syntax.ParamExp:
			w.param(st, n, false)
		case *syntax.Assign:
			if n.Index != nil {
				w.arith(st, n.Index)
			}
		case *syntax.CmdSubst:
			w.nested(st, "$(...)", n, n.Stmts)
			return false
		case *syntax.ProcSubst:
			via := "<(...)"
			if n.Op == syntax.CmdOut {
				via = ">(...)"
			}
			w.nested(st, via, n, n.Stmts)
			return false
		}
		return true
	})
}

// mayRun reports word parts that may hold a command or process substitution: anything but
// literals and quoted literals. Most words are plain; this spares walking them.
func mayRun(parts []syntax.WordPart) bool {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			if mayRun(p.Parts) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func (w *walker) nested(st *state, via string, n syntax.Node, list []*syntax.Stmt) {
	if w.tooDeep(w.text(n), w.pos(n.Pos())) {
		return
	}
	cp := *st
	w.enter(via, true).stmts(&cp, list)
}

// code analyses a string of shell code run by a command at pos (bash -c, eval, trap, ...).
// With shared the code runs in the same shell (eval): its cd is seen by what follows.
func (w *walker) code(st *state, src, via, text, pos string, shared bool) {
	if w.tooDeep(text, pos) {
		return
	}
	f, err := parse(src)
	if err != nil {
		w.unknown(fmt.Sprintf("%s runs code that does not parse: %s", via, err.(*ParseError).Msg), text, pos)
		return
	}
	n := w.enter(via, true)
	n.src, n.fixed = src, pos
	if shared {
		n.stmts(st, f.Stmts)
		return
	}
	cp := *st
	n.stmts(&cp, f.Stmts)
}
