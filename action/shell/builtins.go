package shell

import (
	"strings"
)

// The builtins that act on the shell itself: cd, pushd, popd and dirs move it; exit and
// return end it; eval, source and trap run code in it.

func init() {
	register(&program{kind: kindNone, run: cd}, "cd", "chdir")
	register(&program{kind: kindNone, run: pushd}, "pushd")
	register(&program{kind: kindNone, run: popd}, "popd")
	register(&program{kind: kindNone, run: func(c *call, _ *parsed) {
		if c.shell && len(c.args) > 0 && c.args[0].val == "-c" {
			c.st.stack, c.st.lost = nil, false
		}
	}}, "dirs")
	register(&program{kind: kindNone, run: func(c *call, _ *parsed) {
		if c.shell {
			c.st.dead = true
		}
	}}, "exit", "return", "logout")
	register(&program{kind: kindCode, run: eval}, "eval")
	register(&program{kind: kindChanges, run: source}, "source", ".")
	register(&program{kind: kindCode, run: trap}, "trap")
}

// cd changes the shell's directory. A target from an expansion makes it unknown.
func cd(c *call, _ *parsed) {
	var target *arg
	for i := range c.args {
		a := c.args[i]
		if a.lit() && len(a.val) > 1 && a.val[0] == '-' && target == nil {
			if a.val == "--" {
				if i+1 < len(c.args) {
					target = &c.args[i+1]
				}
				break
			}
			continue // -L -P -e -@
		}
		target = &c.args[i]
		break
	}
	st := c.st
	if !c.shell {
		// cd in a new process (sudo cd, find -exec cd) changes nothing
		local := *st
		st = &local
	}
	switch {
	case target == nil:
		st.old, st.dir = st.dir, c.w.a.opt.Home
	case target.lit() && target.val == "-":
		st.old, st.dir = st.dir, st.old
	default:
		st.old = st.dir
		st.dir = c.w.dirTarget(st.dir, *target, "cd")
	}
}

// dirTarget is the directory a cd-like command changes to, or "" with an Unknown when it is
// not known.
func (w *walker) dirTarget(dir string, a arg, who string) string {
	switch {
	case a.input:
		return ""
	case !a.lit():
		w.unknown(who+" to a directory from an expansion", a.src, a.pos)
		return ""
	case a.glob():
		w.unknown(who+" to a directory from a glob", a.src, a.pos)
		return ""
	case !strings.HasPrefix(a.val, "/") && !a.tilde() && dir == "":
		return "" // relative to a directory that is already not known
	}
	p, _, ok := w.path(dir, a, who+" target")
	if !ok {
		return ""
	}
	return p
}

// pushd pushes the directory and changes to its operand; with none it swaps the top two.
func pushd(c *call, _ *parsed) {
	st := c.st
	if !c.shell {
		local := *st
		st = &local
	}
	var target *arg
	noCd := false
	for i := range c.args {
		a := c.args[i]
		if a.lit() && a.val == "-n" {
			noCd = true
			continue
		}
		target = &c.args[i]
		break
	}
	push := func(d string) {
		st.stack = append(st.stack[:len(st.stack):len(st.stack)], d)
	}
	switch {
	case target == nil:
		if len(st.stack) == 0 {
			if st.lost {
				st.dir = ""
			}
			return
		}
		top := st.stack[len(st.stack)-1]
		st.stack = append(st.stack[:len(st.stack)-1:len(st.stack)-1], st.dir)
		st.dir = top
	case target.lit() && (strings.HasPrefix(target.val, "+") || strings.HasPrefix(target.val, "-")) && isNumber(target.val[1:]):
		st.dir, st.stack, st.lost = "", nil, true // rotation: not followed
	default:
		d := c.w.dirTarget(st.dir, *target, "pushd")
		if noCd {
			push(d)
			return
		}
		push(st.dir)
		st.old, st.dir = st.dir, d
	}
}

// popd changes to the directory on top of the stack.
func popd(c *call, _ *parsed) {
	st := c.st
	if !c.shell {
		local := *st
		st = &local
	}
	for _, a := range c.args {
		if a.lit() && a.val != "+0" && a.val != "-n" {
			st.stack, st.lost = nil, true // removing another entry: not followed
			return
		}
	}
	if len(st.stack) == 0 {
		if st.lost {
			st.old, st.dir = st.dir, ""
		}
		return
	}
	st.old, st.dir = st.dir, st.stack[len(st.stack)-1]
	st.stack = st.stack[: len(st.stack)-1 : len(st.stack)-1]
}

// eval runs its arguments, joined by spaces, as code in the same shell.
func eval(c *call, _ *parsed) {
	args := c.args
	if len(args) > 0 && args[0].lit() && args[0].val == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return
	}
	code := joinArgs(args)
	if !code.lit() {
		if code.input {
			c.unknown("eval runs code read from input")
			return
		}
		c.w.unknown("eval runs code from an expansion", c.text, c.pos)
		return
	}
	if !c.shell {
		c.code(code, "eval")
		return
	}
	c.w.code(c.st, code.val, "eval", c.text, c.pos, true)
}

// source reads a script and runs it in the shell: its code is not known, but its path is.
func source(c *call, _ *parsed) {
	if len(c.args) == 0 {
		return
	}
	a := c.args[0]
	if a.lit() && a.val == "--" && len(c.args) > 1 {
		a = c.args[1]
	}
	c.script(a, "sourced script")
}

// trap CODE SIGNAL... runs CODE later, in the shell.
func trap(c *call, _ *parsed) {
	args := c.args
	for len(args) > 0 && args[0].lit() && strings.HasPrefix(args[0].val, "-") && args[0].val != "-" {
		if args[0].val == "--" {
			args = args[1:]
			break
		}
		if strings.ContainsAny(args[0].val, "lp") {
			return // listing
		}
		args = args[1:]
	}
	if len(args) < 2 {
		return
	}
	code := args[0]
	if code.lit() && (code.val == "" || code.val == "-") {
		return
	}
	c.code(code, "trap")
}
