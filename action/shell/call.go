package shell

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// invocation is a command line to run: a simple command, or the command that xargs or find
// -exec runs.
type invocation struct {
	args   []arg
	redirs []*syntax.Redirect
	dir    string // the command's working directory
	pos    string
	text   string
	via    string // how it is reached beyond the walker's via ("find -exec")
	shell  bool   // it runs in the shell itself, so cd, eval and exit act on the shell
}

// call is one program run, after wrappers are stripped: what a program's entry in the table
// sees.
type call struct {
	w      *walker
	st     *state // the shell's state: only builtins that run in the shell change it
	idx    int    // index of the Command
	name   string // base name
	args   []arg  // after the name; xargs' input, when there is some, last
	dir    string
	redirs []*syntax.Redirect // nil when stdin is not the shell's (xargs)
	shell  bool
	input  string // "xargs" or "parallel" when arguments come from input
	pos    string
	text   string
	// ps is the program's options and operands, parsed by its grammar (program.invoke): kept
	// here, as the call is already on the heap, rather than in an allocation of its own.
	ps parsed
}

// eff adds the effect of op on the path a names.
func (c *call) eff(op Op, a arg, why string, rec bool) {
	c.w.target(c.idx, c.dir, op, a, why, rec)
}

// unknown reports something about the whole command that cannot be known.
func (c *call) unknown(what string) { c.w.unknown(what, c.text, c.pos) }

// code analyses a string of shell code the command runs in a new shell.
func (c *call) code(a arg, via string) {
	if !a.lit() {
		if a.input {
			c.unknown(fmt.Sprintf("%s runs code read from input", via))
			return
		}
		c.w.unknown(fmt.Sprintf("%s runs code from an expansion", via), a.src, a.pos)
		return
	}
	st := *c.st
	st.dir = c.dir
	c.w.code(&st, a.val, via, c.text, c.pos, false)
}

// call walks a simple command: its substitutions first, then the program it runs.
func (w *walker) call(st *state, c *syntax.CallExpr, redirs []*syntax.Redirect) {
	for _, as := range c.Assigns {
		w.substs(st, as)
		if as.Name != nil {
			w.assignVar(as.Name.Value, assignValue(w, as), w.text(as), w.pos(as.Pos()))
			w.a.assigned(as.Name.Value, w.valueLevel(as))
			w.integerAssign(st, as)
		}
	}
	for _, word := range c.Args {
		w.substs(st, word)
	}
	for _, r := range redirs {
		w.redirectSubsts(st, r)
	}
	if w.a.stopped {
		return
	}
	if len(c.Args) == 0 {
		if len(redirs) > 0 { // X=1 > file
			idx := w.record(Command{Dir: st.dir, Pos: w.pos(c.Pos()), Via: w.via})
			w.redirects(idx, st, redirs)
		}
		return
	}
	w.run(st, invocation{
		args:   w.words(c.Args),
		redirs: redirs,
		dir:    st.dir,
		pos:    w.pos(c.Pos()),
		text:   w.text(c),
		shell:  true,
	})
}

// strip collects what wrappers say about the command they run.
type strip struct {
	w        *walker
	dir      string // the command's working directory (env -C, sudo -D)
	pend     []pending
	codes    []codeRun
	unknowns []string
	input    string // "xargs" or "parallel"
	replace  string // xargs -I's replacement string
	end      int    // when set, the wrapped command ends before this index (parallel's :::)
	exec     bool   // exec: the shell is replaced
}

type pending struct {
	op   Op
	a    arg
	why  string
	rec  bool
	dir  string
	what string // for an Unknown instead of an effect
}

type codeRun struct {
	a   arg
	via string
}

// chdir changes the command's working directory to the value of a wrapper's option.
func (s *strip) chdir(a arg, who string) {
	switch {
	case !a.lit():
		s.w.unknown(who+" changes to a directory from an expansion", a.src, a.pos)
		s.dir = ""
	case a.tilde() || a.glob():
		s.dir = ""
		s.w.unknown(who+" changes to a directory that is not known", a.src, a.pos)
	default:
		if p, _, ok := s.w.path(s.dir, a, who+" directory"); ok {
			s.dir = p
		} else {
			s.dir = ""
		}
	}
}

// run runs one command line: wrappers are stripped, the Command recorded, then its effects
// found.
func (w *walker) run(st *state, inv invocation) {
	args := inv.args
	// The wrappers' state and the call escape (through the tables of functions): one
	// allocation holds both.
	f := &struct {
		s strip
		c call
	}{s: strip{w: w, dir: inv.dir}}
	s := &f.s
	shell := inv.shell
	first := args[0]
	isFunc := shell && first.lit() && !strings.Contains(first.val, "/") && len(w.a.funcs[first.val]) > 0
	var wrappers []string
	for !isFunc && args[0].lit() {
		name := args[0].val
		base := baseName(name)
		wr := wrapperTable[base]
		if wr == nil {
			break
		}
		before := *s
		n := wr.apply(s, base, args[1:])
		if n < 0 { // the wrapper runs no command: it is the command
			break
		}
		if strings.Contains(name, "/") {
			s.pend = append(s.pend, pending{op: Read, a: args[0], why: "program run", dir: before.dir},
				pending{op: Execute, a: args[0], why: "script run", dir: before.dir})
		}
		wrappers = append(wrappers, normalize(base, args[1:1+n]))
		if base != "builtin" && base != "command" {
			shell = false // a new process: cd and exit act on it, not on the shell
		}
		if s.end > 1+n && s.end <= len(args) {
			args = args[:s.end]
		}
		s.end = 0
		args = args[1+n:]
	}
	prog := args[0]
	name := prog.val
	if prog.lit() {
		name = baseName(prog.val)
	}
	rest := args[1:]
	cmdArgs := make([]string, 0, len(rest))
	for _, a := range rest {
		cmdArgs = append(cmdArgs, a.val)
	}
	if s.input != "" {
		if s.replace != "" {
			marked := make([]arg, len(rest))
			for i, a := range rest {
				if strings.Contains(a.val, s.replace) {
					a.input = true
				}
				marked[i] = a
			}
			rest = marked
		} else {
			rest = append(rest[:len(rest):len(rest)], arg{input: true, val: "", src: inv.text, pos: inv.pos})
		}
	}
	via := w.via
	for _, v := range []string{inv.via, s.input} {
		if v != "" {
			if via != "" {
				via += " > "
			}
			via += v
		}
	}
	w.a.steps += len(inv.text) / 256 // long command lines cost more: the bound is on work
	idx := w.record(Command{Name: name, Args: cmdArgs, Dir: s.dir, Pos: inv.pos, Via: via, Wrappers: wrappers})
	for _, p := range s.pend {
		if p.what != "" {
			w.unknown(p.what, inv.text, inv.pos)
			continue
		}
		w.target(idx, p.dir, p.op, p.a, p.why, p.rec)
	}
	for _, u := range s.unknowns {
		w.unknown(u, inv.text, inv.pos)
	}
	w.redirects(idx, st, inv.redirs)
	if inv.shell {
		for _, a := range inv.args {
			w.globListing(idx, inv.dir, a)
		}
	}
	c := &f.c
	*c = call{w: w, st: st, idx: idx, name: name, args: rest, dir: s.dir, redirs: inv.redirs,
		shell: shell, input: s.input, pos: inv.pos, text: inv.text}
	if s.input != "" {
		c.redirs = nil
	}
	for _, cr := range s.codes {
		c.code(cr.a, cr.via)
	}
	if !prog.lit() {
		if prog.input {
			return // xargs with no command, or a command read from input: reported by xargs
		}
		w.unknown("the program name comes from an expansion", prog.src, prog.pos)
		return
	}
	if s.replace != "" && strings.Contains(prog.val, s.replace) {
		c.unknown(s.input + " runs a program named by its input")
		return
	}
	if prog.glob() {
		// /???/r? is /bin/rm: which program runs is not known
		w.unknown("the program name is a glob pattern", prog.src, prog.pos)
		return
	}
	if strings.Contains(prog.val, "/") {
		// a program run by its path is read as well as run: a script is read by its
		// interpreter, whose errors show what it read (./.env)
		w.target(idx, s.dir, Read, prog, "program run", false)
		w.target(idx, s.dir, Execute, prog, "script run", false)
		// a program run by a path is what it is: a link to rm is rm
		if real := w.programAt(s.dir, prog); real != "" && real != name {
			name, c.name = real, real
			w.a.res.Commands[idx].Name = real
		}
	}
	if isFunc {
		w.callFunctions(st, prog.val)
	}
	p := lookup(name)
	if p == nil {
		if !isFunc && wrapperTable[name] == nil {
			c.unknownProgram(rest)
		}
		return
	}
	if s.input != "" && p.kind >= kindReads {
		// the names xargs reads from its input are paths review cannot know
		c.unknown(fmt.Sprintf("%s runs %s on arguments read from input", s.input, name))
	}
	p.invoke(c)
	switch name {
	case "cp", "ln", "link", "install":
		if ps := p.g.parse(rest); len(ps.ops) >= 2 {
			c.noteAlias(ps.ops[0], ps.ops[len(ps.ops)-1])
		}
	}
	if s.exec && inv.shell {
		st.dead = true
	}
}

// baseName is the program's name without its directory.
func baseName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 && i < len(name)-1 {
		return name[i+1:]
	}
	if strings.HasSuffix(name, "/") {
		return path.Base(name)
	}
	return name
}

// normalize is a wrapper in normalised form: its name and arguments joined by spaces.
func normalize(name string, args []arg) string {
	var b strings.Builder
	b.WriteString(name)
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(a.val)
	}
	return b.String()
}
