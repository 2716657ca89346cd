package shell

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// What review cannot know is never "touches nothing". This file holds the answers for the
// programs the table does not know, programs run by a path, variables that make programs run
// code, and the builtins that change what a name means (alias, hash, enable).

// unknownProgram is the entry for a program the table does not know: every operand that
// names a path is read, every value of an output-like option (-o, -out, --out*, --output*,
// of=) is written, and the value of any other --name=value option is read. An operand from an
// expansion is an Unknown. The first operand that names a known program is also analysed as
// the command the unknown program may run (unshare cmd, fakeroot cmd, nsenter -t 1 cmd).
func (c *call) unknownProgram(args []arg) {
	out := false // the next word is an output option's value
	wrapped := false
	for i, a := range args {
		if a.input {
			c.unknown(fmt.Sprintf("%s is given names read from its input, which are not known", c.name))
			continue
		}
		if out {
			out = false
			c.write(a, c.name+" output", false)
			continue
		}
		if a.lit() && len(a.val) > 1 && a.val[0] == '-' {
			name, _, hasEq := strings.Cut(a.val, "=")
			eq := len(name) + 1
			switch {
			case outputOption(name) && hasEq:
				c.write(a.suffix(eq), c.name+" "+name, false)
			case outputOption(name):
				out = true
			case strings.HasPrefix(name, "-o") && !strings.HasPrefix(name, "--") && len(a.val) > 2:
				c.write(a.suffix(2), c.name+" -o", false) // -ofile
			case hasEq && a.litPrefix() >= eq:
				c.read(a.suffix(eq), c.name+" "+name, false)
			}
			continue
		}
		if a.litPrefix() >= 3 && strings.HasPrefix(a.val, "of=") {
			c.write(a.assignSuffix(3), c.name+" of=", false)
			continue
		}
		if a.litPrefix() >= 3 && strings.HasPrefix(a.val, "if=") {
			c.read(a.assignSuffix(3), c.name+" if=", false)
			continue
		}
		if a.dyn && !a.input && c.w.bound(a) == nil {
			c.w.unknown(fmt.Sprintf("%s is a program review does not know, and its operand comes from an expansion", c.name), a.src, a.pos)
			continue
		}
		c.read(a, c.name+" operand", false)
		c.namedInside(a)
		if !wrapped && a.lit() && !strings.Contains(a.val, "/") {
			if p := lookup(a.val); p != nil && p.kind != kindNone || wrapperTable[a.val] != nil {
				wrapped = true
				st := *c.st
				c.w.run(&st, invocation{args: args[i:], dir: c.dir, pos: c.pos, text: c.text, via: c.name})
			}
		}
	}
}

// outputOption reports an option whose value is a file or directory the program writes, by
// its name: -o, -out, -output, --out, --output, --output-file, --out-dir, and the long options
// that name where a program puts what it makes (--target-dir, --prefix, --dest, --outdir).
func outputOption(name string) bool {
	switch {
	case name == "-o", name == "-out", name == "-output", name == "-outfile":
		return true
	case strings.HasPrefix(name, "--"):
		n := name[2:]
		return strings.HasPrefix(n, "out") || strings.Contains(n, "dir") || strings.Contains(n, "dest") ||
			strings.Contains(n, "prefix") || strings.Contains(n, "target")
	}
	return false
}

// namedInside reads the paths an operand names inside it: @file (curl, httpie and many
// others read a file so named), name=@file, and file://path.
func (c *call) namedInside(a arg) {
	if !a.lit() {
		return
	}
	switch v := a.val; {
	case strings.HasPrefix(v, "@") && len(v) > 1:
		c.read(a.suffix(1), c.name+" @file", false)
	case strings.Contains(v, "=@"):
		c.read(a.suffix(strings.Index(v, "=@")+2), c.name+" =@file", false)
	default:
		c.fileURL(a)
	}
}

// fileURL reads the path of a file:// URL. A URL from an expansion whose scheme is not seen
// may be one: that is an Unknown.
func (c *call) fileURL(a arg) {
	if a.input {
		return
	}
	if !a.lit() {
		lit := strings.ToLower(a.val[:a.litPrefix()])
		if i := strings.Index(lit, "://"); i < 0 || lit[:i] == "file" {
			c.w.unknown(c.name+"'s URL comes from an expansion and may name a local file (file://)", a.src, a.pos)
		}
		return
	}
	if len(a.val) < 7 || !strings.EqualFold(a.val[:7], "file://") {
		return
	}
	rest := a.val[7:]
	if i := strings.IndexByte(rest, '/'); i > 0 {
		rest = rest[i:] // file://host/path
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	if rest == "" {
		return
	}
	c.read(litArg(rest, a.src, a.pos), c.name+" file:// URL", false)
}

// programAt is the program a path runs (./r, /usr/bin/rm, bin/x), as far as it can be seen: a
// link or copy made earlier in the same command, or a path that resolves to a program the
// table knows. "" when it is not known.
func (w *walker) programAt(dir string, prog arg) string {
	if !prog.lit() || prog.glob() || prog.tilde() || dir == "" && !strings.HasPrefix(prog.val, "/") {
		return ""
	}
	lex := prog.val
	if !strings.HasPrefix(lex, "/") {
		lex = dir + "/" + lex
	}
	real, err := w.a.resolve(dir, prog.val)
	if err != nil {
		return ""
	}
	for _, p := range []string{real, cleanPath(lex)} {
		if name, ok := w.a.aliases[p]; ok {
			if name == "" {
				w.unknown("the program run is a copy made by the command of a program named by an expansion", prog.src, prog.pos)
			}
			return name
		}
	}
	if name := baseName(real); lookup(name) != nil || wrapperTable[name] != nil {
		return name
	}
	return ""
}

// noteAlias records that cp, ln or install made dst a copy of, or a link to, the program
// src: running dst later runs that program.
func (c *call) noteAlias(src, dst arg) {
	if !dst.lit() || dst.glob() || c.dir == "" && !strings.HasPrefix(dst.val, "/") {
		return
	}
	if !src.lit() || src.glob() {
		// a copy of a program named by an expansion (cp $(which rm) r): what dst runs is
		// not known, and it is an Unknown where it is run
		if p, err := c.w.a.resolve(c.dir, dst.val); err == nil {
			if c.w.a.aliases == nil {
				c.w.a.aliases = map[string]string{}
			}
			c.w.a.aliases[p] = ""
		}
		return
	}
	// only a copy of a program known by its name is remembered (resolving the source to see
	// whether a link leads to one would cost system calls on every copy): a copy of anything
	// else is, where it is run, a program review does not know
	prog := baseName(src.val)
	if lookup(prog) == nil && wrapperTable[prog] == nil {
		return
	}
	p, err := c.w.a.resolve(c.dir, dst.val)
	if err != nil {
		return
	}
	if c.w.a.aliases == nil {
		c.w.a.aliases = map[string]string{}
	}
	c.w.a.aliases[p] = prog
	c.w.a.aliases[p+"/"+prog] = prog
}

// codeVars are variables whose value makes a program run code, load code, or changes what a
// name or a path means to the shell. Setting one is an Unknown.
var codeVars = map[string]bool{
	"LESSOPEN": true, "LESSCLOSE": true, "LESSKEY": true, "LESSKEYIN": true,
	"GIT_SSH": true, "GIT_SSH_COMMAND": true, "GIT_EXTERNAL_DIFF": true, "GIT_EDITOR": true,
	"GIT_SEQUENCE_EDITOR": true, "GIT_PAGER": true, "GIT_ASKPASS": true, "GIT_PROXY_COMMAND": true,
	"GIT_EXEC_PATH": true, "GIT_TEMPLATE_DIR": true, "GIT_DIR": true, "GIT_WORK_TREE": true,
	"GIT_INDEX_FILE": true, "GIT_CONFIG": true, "GIT_ALTERNATE_OBJECT_DIRECTORIES": true,
	"SSH_ASKPASS": true, "SUDO_ASKPASS": true, "EDITOR": true, "VISUAL": true, "PAGER": true,
	"MANPAGER": true, "MANOPT": true, "SYSTEMD_PAGER": true, "BROWSER": true,
	"BASH_ENV": true, "ENV": true, "PROMPT_COMMAND": true, "PS0": true, "PS1": true, "PS2": true,
	"PS3": true, "PS4": true, "PATH": true, "CDPATH": true, "HOME": true, "BASH_CMDS": true,
	"BASH_ALIASES": true, "SHELLOPTS": true, "BASHOPTS": true, "BASH_LOADABLES_PATH": true,
	"EXECIGNORE": true, "HISTFILE": true, "FPATH": true, "ZDOTDIR": true,
	"PYTHONSTARTUP": true, "PYTHONPATH": true, "PYTHONHOME": true, "PYTHONUSERBASE": true,
	"NODE_OPTIONS": true, "NODE_PATH": true, "PERL5OPT": true, "PERL5LIB": true, "PERLLIB": true,
	"PERL5DB": true, "RUBYOPT": true, "RUBYLIB": true, "GCONV_PATH": true, "CC": true, "CXX": true,
	"CPP": true,
}

// codeVarPrefixes are families of such variables: GIT_CONFIG_KEY_0, LD_PRELOAD, DYLD_...
var codeVarPrefixes = []string{"GIT_CONFIG_", "LD_", "DYLD_"}

// isCodeVar reports a variable in codeVars or one of its families. An array element
// (BASH_CMDS[ls]) is its array.
func isCodeVar(name string) bool {
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	if codeVars[name] {
		return true
	}
	for _, p := range codeVarPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// assignVar checks one variable the command sets, to value (its source text): a variable
// that runs code or changes what names mean is an Unknown. PATH=$PATH:dir only adds places
// to look for programs that are not found already, which are unknown programs wherever they
// are found.
func (w *walker) assignVar(name, value, text, pos string) {
	if name == "IFS" {
		w.a.ifs = true // unquoted expansions are split another way (loopvar.go)
	}
	if name == "PATH" && (strings.HasPrefix(value, "$PATH:") || strings.HasPrefix(value, "${PATH}:") ||
		strings.HasPrefix(value, `"$PATH:`) || strings.HasPrefix(value, `"${PATH}:`)) {
		return
	}
	if isCodeVar(name) {
		w.unknown(fmt.Sprintf("setting %s can make programs run code, or change what names and paths mean", name), text, pos)
	}
}

func init() {
	register(&program{kind: kindCode, run: func(c *call, _ *parsed) {
		// alias NAME=VALUE: VALUE is code, run wherever NAME is used as a command
		for _, a := range c.args {
			eq := strings.IndexByte(a.val, '=')
			if eq < 0 || strings.HasPrefix(a.val, "-") {
				if !a.lit() {
					c.w.unknown("alias is given a definition from an expansion", a.src, a.pos)
				}
				continue
			}
			if a.litPrefix() <= eq {
				c.w.unknown("alias is given a definition from an expansion", a.src, a.pos)
				continue
			}
			c.code(a.suffix(eq+1), "alias "+a.val[:eq])
		}
	}}, "alias")
	register(&program{kind: kindCode, run: func(c *call, _ *parsed) {
		for _, a := range c.args {
			if !a.lit() || strings.HasPrefix(a.val, "-") && strings.ContainsAny(a.val, "p") {
				c.unknown("hash -p makes a name run another program")
				return
			}
		}
	}}, "hash")
	register(&program{kind: kindCode, run: func(c *call, _ *parsed) {
		for _, a := range c.args {
			if !a.lit() || strings.HasPrefix(a.val, "-") && strings.ContainsAny(a.val, "fd") {
				c.unknown("enable -f loads a builtin from a shared object")
				return
			}
		}
	}}, "enable")
	register(&program{kind: kindCode, run: func(c *call, _ *parsed) {
		c.unknown(c.name + " binds code to keys or completions")
	}}, "bind", "complete", "compgen")
	register(&program{kind: kindNone, run: mapfile}, "mapfile", "readarray")
	register(&program{kind: kindCode, run: func(c *call, _ *parsed) {
		c.unknown(c.name + " runs commands, and programs, given to it")
	}}, "gdb", "lldb", "cgdb", "socat")
	register(&program{kind: kindCode, g: newGrammar("C:E:f:I:j:l::o:O::W:", "directory= eval= file= makefile= include-dir= "+
		"jobs=? load-average=? old-file= assume-old= output-sync=? what-if= new-file= assume-new= debug=? "+
		"always-make environment-overrides ignore-errors keep-going dry-run just-print recon print-data-base "+
		"question no-builtin-rules no-builtin-variables silent quiet stop touch trace version help"),
		run: makeProgram}, "make", "gmake")
	register(none, "set", "shopt", "jobs", "fg", "bg", "shift", "ulimit", "umask", "unalias", "times",
		"disown", "caller", "help", "logname", "tty", "nproc", "arch", "groups", "users", "who", "uptime",
		"free", "clear", "tput", "stty", "locale", "getconf", "ps", "df", "cal", "factor", "numfmt")
}

// makeProgram: make reads its makefile and runs the recipes in it, like a script; --eval
// and a makefile read from a pipe are code review cannot read.
func makeProgram(c *call, p *parsed) {
	if p.has("version", "v", "help", "h") {
		return
	}
	if d, ok := p.val("C", "directory"); ok {
		s := strip{w: c.w, dir: c.dir}
		s.chdir(d, "make -C")
		c.dir = s.dir
	}
	if p.has("E", "eval") {
		c.unknown("make runs code given with --eval")
	}
	// make lists its directory, for makefiles and the files its implicit rules look for
	c.read(litArg(".", c.text, c.pos), "make (working directory)", false)
	files := p.vals("f", "file", "makefile")
	for _, f := range files {
		if stdio(f) {
			c.unknown("make runs a makefile read from its input")
			continue
		}
		c.script(f, "makefile")
	}
	if len(files) == 0 {
		c.script(litArg("Makefile", c.text, c.pos), "makefile")
	}
	for _, a := range p.vals("o", "old-file", "assume-old", "W", "what-if", "new-file", "assume-new") {
		c.read(a, "make "+a.val, false)
	}
}

// assignValue is the source text of an assignment's value.
func assignValue(w *walker, as *syntax.Assign) string {
	switch {
	case as.Value != nil:
		return w.text(as.Value)
	case as.Array != nil:
		return w.text(as.Array)
	}
	return ""
}

// mapfile -C runs its callback with each line read, as code review cannot follow.
// Its array name is a variable name, whose subscript bash evaluates.
func mapfile(c *call, _ *parsed) {
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case !a.lit() && i == len(c.args)-1:
			c.w.nameArg(c.st, a, c.name)
		case !a.lit() || strings.HasPrefix(a.val, "-") && strings.Contains(a.val, "C"):
			c.unknown(c.name + " -C runs code with the lines it reads")
			return
		case strings.HasPrefix(a.val, "-"):
			if strings.ContainsAny(a.val[len(a.val)-1:], "dnOsuc") {
				i++
			}
		default:
			c.w.nameArg(c.st, a, c.name)
			c.w.a.assigned(a.val, levelAny)
			c.w.assignVar(a.val, "", c.text, c.pos)
		}
	}
}
