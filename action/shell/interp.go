package shell

import (
	"fmt"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// interp describes an interpreter's command line: which options carry inline code, which
// take a value, and where its script is.
type interp struct {
	inline     string   // short options whose value is inline code: python -c, node -e
	inlineLong []string // long options whose value is inline code: node --eval
	valued     string   // short options that take a value, attached or next
	attached   string   // short options whose value is only attached, the rest of the cluster (perl -Mstrict)
	digits     string   // short options followed by optional digits (perl -l, -0777)
	valuedLong []string // long options that take a value when not given with =
	module     byte     // runs a module instead of a script (python -m)
	scriptOpt  byte     // an option whose value is the script (php -f)
}

var interps = map[string]*interp{
	"python":    {inline: "c", valued: "WXQ", module: 'm', valuedLong: []string{"check-hash-based-pycs"}},
	"pypy":      {inline: "c", valued: "WXQ", module: 'm'},
	"node":      {inline: "ep", inlineLong: []string{"eval", "print"}, valued: "rC", valuedLong: []string{"require", "import", "loader", "experimental-loader", "conditions", "input-type", "env-file", "title", "inspect-port"}},
	"tsx":       {inline: "ep", inlineLong: []string{"eval", "print"}, valued: "r", valuedLong: []string{"require", "import", "tsconfig", "env-file"}},
	"ts-node":   {inline: "ep", inlineLong: []string{"eval", "print"}, valued: "rOP", valuedLong: []string{"require", "compiler", "project", "compiler-options", "cwd"}},
	"perl":      {inline: "eE", valued: "I", attached: "MmxFCdDi", digits: "l0"},
	"ruby":      {inline: "e", valued: "rICE", attached: "Fxi", valuedLong: []string{"encoding", "external-encoding", "internal-encoding", "enable", "disable"}},
	"php":       {inline: "rBRE", valued: "cdzStn", scriptOpt: 'f'},
	"lua":       {inline: "e", valued: "l"},
	"luajit":    {inline: "e", valued: "lbj"},
	"Rscript":   {inline: "e"},
	"tclsh":     {},
	"wish":      {},
	"osascript": {inline: "e", valued: "ls"},
	"expect":    {inline: "c", valued: "D", scriptOpt: 'f'},
}

// interpreterAliases maps versioned names (python3.12, perl5.36) to their family.
func interpreterFamily(name string) string {
	if _, ok := interps[name]; ok {
		return name
	}
	t := strings.TrimRight(name, "0123456789.")
	switch t {
	case "nodejs":
		return "node"
	case "python", "pypy", "perl", "ruby", "php", "lua", "luajit", "tclsh", "wish":
		return t
	}
	return ""
}

// shells parsed with the bash parser; fish, csh and tcsh are not.
var shellNames = []string{"bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash"}
var foreignShells = []string{"fish", "csh", "tcsh", "nu", "xonsh", "elvish"}

func init() {
	sh := &program{kind: kindCode, run: shell}
	register(sh, shellNames...)
	register(sh, foreignShells...)
	ip := &program{kind: kindCode, run: interpreter}
	for name := range interps {
		register(ip, name)
	}
	for _, v := range []string{"python2", "python3", "pypy3", "nodejs", "perl5", "ruby3", "php8", "lua5.1", "lua5.3", "lua5.4"} {
		register(ip, v)
	}
	register(&program{kind: kindCode, run: pwsh}, "pwsh", "powershell", "pwsh-preview")
	register(&program{kind: kindCode, run: deno}, "deno")
	register(&program{kind: kindCode, run: bun}, "bun")
}

// lookup finds a program's entry, allowing versioned interpreter names.
func lookup(name string) *program {
	if p := programs[name]; p != nil {
		return p
	}
	if f := interpreterFamily(name); f != "" {
		return programs[f]
	}
	return nil
}

// shell: bash -c CODE is analysed as code; bash FILE runs a script; bash alone, bash -s and
// bash - read code from their input.
func shell(c *call, _ *parsed) {
	args := c.args
	if versionOnly(args, "") {
		return
	}
	codeMode, stdin := false, false
	i := 0
loop:
	for ; i < len(args); i++ {
		a := args[i]
		if !a.lit() {
			break
		}
		v := a.val
		switch {
		case v == "--" || v == "-":
			stdin = stdin || v == "-"
			i++
			break loop
		case strings.HasPrefix(v, "--"):
			if v == "--rcfile" || v == "--init-file" {
				i++
			}
		case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
			for j := 1; j < len(v); j++ {
				switch v[j] {
				case 'c':
					codeMode = true
				case 's':
					stdin = true
				case 'o', 'O':
					i++
				}
			}
		default:
			break loop
		}
	}
	foreign := contains(foreignShells, c.name)
	var ops []arg
	if i < len(args) {
		ops = args[i:]
	}
	switch {
	case codeMode && len(ops) == 0:
	case codeMode && foreign:
		c.unknown(fmt.Sprintf("%s runs inline code (-c), which is not analysed", c.name))
	case codeMode:
		c.code(ops[0], c.name+" -c")
	case stdin || len(ops) == 0:
		c.stdinCode(!foreign)
	default:
		c.script(ops[0], "script run")
	}
}

// script is a file of code a program reads and runs (bash FILE, python FILE, source FILE): a
// read of the file and an execute of it. Code from a pipe or an open descriptor (source
// /dev/stdin, bash <(...)) cannot be read here: it is an Unknown.
func (c *call) script(a arg, why string) {
	if a.pipe || a.lit() && special(cleanPath(a.val)) && a.val != "/dev/null" {
		c.w.unknown(fmt.Sprintf("%s runs code read from a pipe or a descriptor", c.name), a.src, a.pos)
		return
	}
	c.eff(Read, a, why, false)
	c.eff(Execute, a, why, false)
}

// cleanPath cleans an absolute path; a relative one is returned as it is.
func cleanPath(v string) string {
	if strings.HasPrefix(v, "/") {
		return filepath.Clean(v)
	}
	return v
}

// versionOnly reports a command line that only asks a program for its version or its help:
// python3 --version, node -v.
func versionOnly(args []arg, short string) bool {
	if len(args) != 1 || !args[0].lit() {
		return false
	}
	switch v := args[0].val; v {
	case "--version", "--help", "-version", "-help", "-h", "-VV":
		return true
	default:
		return len(v) == 2 && v[0] == '-' && strings.IndexByte(short, v[1]) >= 0
	}
}

// stdinCode is a program that runs the code on its standard input: a file redirected there
// is executed, a literal here-document to a shell is analysed, anything else is Unknown.
func (c *call) stdinCode(parseable bool) {
	var in *syntax.Redirect
	for _, r := range c.redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			in = r
		}
	}
	if in == nil {
		c.unknown(c.name + " runs code read from its input")
		return
	}
	switch in.Op {
	case syntax.RdrIn, syntax.RdrInOut:
		a := c.w.word(in.Word)
		c.w.target(c.idx, c.st.dir, Read, a, "script read from input", false)
		c.w.target(c.idx, c.st.dir, Execute, a, "script read from input", false)
		return
	}
	if !parseable {
		c.unknown(c.name + " runs code from a here-document")
		return
	}
	var body arg
	if in.Op == syntax.WordHdoc {
		body = c.w.word(in.Word)
	} else if in.Hdoc != nil {
		body = c.w.word(in.Hdoc)
		if body.lit() && !quotedDelim(in.Word) {
			body.val = unescapeHdoc(rawLits(in.Hdoc))
		}
	}
	c.code(body, c.name+" <<")
}

// quotedDelim reports a here-document delimiter with quotes: its body is not expanded.
func quotedDelim(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		case *syntax.Lit:
			if strings.Contains(p.Value, "\\") {
				return true
			}
		}
	}
	return false
}

// rawLits is the source of a word made of literals, escapes kept.
func rawLits(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		}
	}
	return b.String()
}

// interpreter: inline code is Unknown (it cannot be read), a script file is executed, no
// script means code from the input.
func interpreter(c *call, _ *parsed) {
	spec := interps[interpreterFamily(c.name)]
	if spec == nil {
		return
	}
	args := c.args
	short := "v"
	if f := interpreterFamily(c.name); f == "python" || f == "pypy" {
		short = "V"
	}
	if versionOnly(args, short) {
		return
	}
	i := 0
loop:
	for ; i < len(args); i++ {
		a := args[i]
		if !a.lit() {
			break
		}
		v := a.val
		switch {
		case v == "--":
			i++
			break loop
		case v == "-":
			c.stdinCode(false)
			return
		case strings.HasPrefix(v, "--"):
			name, _, hasEq := strings.Cut(v[2:], "=")
			if contains(spec.inlineLong, name) {
				c.unknown(fmt.Sprintf("%s runs inline code (--%s)", c.name, name))
				return
			}
			if name == "env-file" || name == "env-file-if-exists" {
				if hasEq {
					c.read(a.suffix(len(name)+3), c.name+" --"+name, false)
				} else if i+1 < len(args) {
					c.read(args[i+1], c.name+" --"+name, false)
				}
			}
			if contains(spec.valuedLong, name) && !hasEq {
				i++
			}
		case len(v) > 1 && v[0] == '-':
			for j := 1; j < len(v); j++ {
				ch := v[j]
				switch {
				case strings.IndexByte(spec.inline, ch) >= 0:
					c.unknown(fmt.Sprintf("%s runs inline code (-%c)", c.name, ch))
					return
				case spec.module != 0 && ch == spec.module:
					// a module from the installed packages: what it does with its operands
					// is not known, so they are what an unknown program's are. The module
					// is looked for in the working directory first, which is listed.
					c.read(litArg(".", c.text, c.pos), c.name+" -m (working directory)", false)
					rest := args[i+1:]
					if j+1 == len(v) && len(rest) > 0 {
						rest = rest[1:]
					}
					c.unknownProgram(rest)
					return
				case spec.scriptOpt != 0 && ch == spec.scriptOpt:
					if j+1 < len(v) {
						c.script(a.suffix(j+1), "script run")
					} else if i+1 < len(args) {
						c.script(args[i+1], "script run")
					}
					return
				case strings.IndexByte(spec.valued, ch) >= 0:
					if j+1 == len(v) {
						i++
					}
					j = len(v)
				case strings.IndexByte(spec.attached, ch) >= 0:
					j = len(v)
				case strings.IndexByte(spec.digits, ch) >= 0:
					for j+1 < len(v) && (v[j+1] >= '0' && v[j+1] <= '9' || v[j+1] == 'x' || isHex(v[j+1]) && v[j] != ch) {
						j++
					}
				}
			}
		default:
			break loop
		}
	}
	if i >= len(args) {
		c.stdinCode(false)
		return
	}
	c.script(args[i], "script run")
}

// pwsh: -Command and -EncodedCommand are inline code; -File and a .ps1 operand are scripts.
func pwsh(c *call, _ *parsed) {
	args := c.args
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := strings.ToLower(a.val)
		if !a.lit() {
			c.unknown(c.name + " runs code from an expansion")
			return
		}
		switch v {
		case "-c", "-command", "-encodedcommand", "-e", "-ec", "-commandwithargs", "-cwa", "/c", "/command":
			c.unknown(fmt.Sprintf("%s runs inline code (%s)", c.name, a.val))
			return
		case "-f", "-file", "/file":
			if i+1 < len(args) {
				c.script(args[i+1], "script run")
			}
			return
		case "-executionpolicy", "-ep", "-workingdirectory", "-wd", "-configurationname", "-settingsfile",
			"-outputformat", "-of", "-inputformat", "-if", "-windowstyle", "-custompipename", "-version":
			i++
			continue
		}
		if strings.HasPrefix(v, "-") {
			continue
		}
		if strings.HasSuffix(v, ".ps1") {
			c.script(a, "script run")
		} else {
			c.unknown(fmt.Sprintf("%s runs inline code", c.name))
		}
		return
	}
	c.stdinCode(false)
}

// deno: eval is inline code; run (or a bare file) executes a script.
func deno(c *call, _ *parsed) {
	args := c.args
	if len(args) == 0 {
		c.stdinCode(false)
		return
	}
	switch args[0].val {
	case "eval":
		c.unknown("deno runs inline code (eval)")
		return
	case "run", "test", "bench", "serve", "compile", "check", "info", "cache", "install":
		args = args[1:]
	default:
		if strings.HasPrefix(args[0].val, "-") || !looksLikeFile(args[0].val) {
			return
		}
	}
	for i := 0; i < len(args); i++ {
		v := args[i].val
		if strings.HasPrefix(v, "-") {
			if strings.HasPrefix(v, "--env-file=") {
				c.read(args[i].suffix(len("--env-file=")), "deno --env-file", false)
			}
			switch v {
			case "--env-file":
				if i+1 < len(args) {
					c.read(args[i+1], "deno --env-file", false)
				}
				i++
			case "-c", "--config", "--import-map", "--lock", "--cert", "--location", "--seed":
				i++
			}
			continue
		}
		// the first operand is the module run: a file, or a URL (read as a path that is not
		// there)
		c.script(args[i], "script run")
		return
	}
}

// bun: -e and --print are inline code; a file (bun x.ts, bun run x.ts) is a script; bun run
// NAME runs a package script, which is not known here.
func bun(c *call, _ *parsed) {
	args := c.args
	for i := 0; i < len(args); i++ {
		v := args[i].val
		switch v {
		case "-e", "--eval", "-p", "--print":
			c.unknown(fmt.Sprintf("bun runs inline code (%s)", v))
			return
		case "run":
			continue
		}
		if strings.HasPrefix(v, "-") {
			if strings.HasPrefix(v, "--env-file=") {
				c.read(args[i].suffix(len("--env-file=")), "bun --env-file", false)
			}
			continue
		}
		// a file is a script; a package script's name is read as a path that is not there
		c.script(args[i], "script run")
		return
	}
}

func looksLikeFile(v string) bool {
	if strings.Contains(v, "/") {
		return true
	}
	for _, ext := range []string{".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx"} {
		if strings.HasSuffix(v, ext) {
			return true
		}
	}
	return false
}
