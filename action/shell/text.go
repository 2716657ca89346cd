package shell

import (
	"strings"
)

// Text tools whose first operand is a program, script, pattern or filter rather than a file:
// awk, sed, grep and its kin, jq, yq.

func init() {
	register(&program{kind: kindReads, run: awk}, "awk", "gawk", "mawk", "nawk")
	register(&program{kind: kindReads, g: newGrammar("e:f:l:i::E",
		"expression= file= line-length= in-place=? null-data zero-terminated separate sandbox posix debug "+
			"follow-symlinks regexp-extended quiet silent unbuffered binary"), run: sed}, "sed", "gsed")
	grep := &program{kind: kindReads, g: newGrammar("e:f:m:A:B:C:d:D:",
		"regexp= file= max-count= after-context= before-context= context= directories= devices= include= "+
			"exclude= exclude-from= exclude-dir= label= binary-files= color=? colour=? recursive "+
			"dereference-recursive ignore-case invert-match word-regexp line-regexp count files-with-matches "+
			"files-without-match only-matching quiet silent no-messages byte-offset line-number null text"),
		run: func(c *call, p *parsed) {
			grepLike(c, p, p.has("r", "R", "recursive", "dereference-recursive") || dirsRecurse(p))
		}}
	register(grep, "grep", "egrep", "fgrep", "zgrep", "zegrep", "zfgrep")
	register(&program{kind: kindReads, g: newGrammar("e:f:m:A:B:C:g:t:T:j:M:r:E:d:",
		"regexp= file= max-count= after-context= before-context= context= glob= iglob= type= type-not= "+
			"threads= max-columns= replace= max-depth= encoding= type-add= type-clear= ignore-file= sort= "+
			"sortr= pre= pre-glob= max-filesize= path-separator= colors= color= context-separator= "+
			"field-match-separator= field-context-separator= engine= dfa-size-limit= regex-size-limit= "+
			"files type-list hidden no-ignore follow ignore-case smart-case fixed-strings count "+
			"files-with-matches json line-number"),
		run: func(c *call, p *parsed) {
			if p.has("pre") {
				c.unknown("rg runs a preprocessor command (--pre)")
			}
			grepLike(c, p, true)
		}}, "rg")
	register(&program{kind: kindReads, g: newGrammar("A:B:C:G:g:m:p:", "context= after= before= file-search-regex= "+
		"max-count= path-to-ignore= depth= ignore= ignore-dir= pager= type= literal"),
		run: func(c *call, p *parsed) { grepLike(c, p, true) }}, "ag", "ack")
	register(&program{kind: kindReads, run: jq}, "jq", "gojq", "jaq")
	register(&program{kind: kindChanges, g: newGrammar("o:p:I:e:s:", "output-format= input-format= indent= "+
		"expression= split-exp= from-file= front-matter= inplace null-input exit-status"),
		run: func(c *call, p *parsed) {
			ops := p.ops
			if len(ops) > 0 && ops[0].lit() && contains([]string{"eval", "e", "eval-all", "ea"}, ops[0].val) {
				ops = ops[1:]
			}
			if !p.has("e", "expression", "from-file") && len(ops) > 0 {
				ops = ops[1:]
			}
			for _, a := range p.vals("from-file") {
				c.read(a, "yq expression file", false)
			}
			inPlace := p.has("i", "inplace")
			for _, a := range ops {
				c.read(a, "yq operand", false)
				if inPlace {
					c.write(a, "yq -i", false)
				}
			}
		}}, "yq")
}

func dirsRecurse(p *parsed) bool {
	for _, v := range p.vals("d", "directories") {
		if strings.HasPrefix(v.val, "r") {
			return true
		}
	}
	return false
}

// grepLike: the pattern is the first operand unless -e or -f gives it; the other operands are
// read; recursive searches with no operand read the working directory.
func grepLike(c *call, p *parsed, rec bool) {
	for _, a := range p.vals("f", "file", "exclude-from", "ignore-file") {
		c.read(a, c.name+" pattern file", false)
	}
	files := p.ops
	if !p.has("e", "regexp", "f", "file", "files", "type-list") && len(files) > 0 {
		files = files[1:]
	}
	real := 0
	for _, a := range files {
		if !a.input {
			real++
		}
	}
	if rec && real == 0 && !hasInput(files) {
		c.readDir(c.name + " (working directory)")
	}
	for _, a := range files {
		c.read(a, c.name+" operand", rec)
	}
}

func hasInput(args []arg) bool {
	for _, a := range args {
		if a.input {
			return true
		}
	}
	return false
}

// jq cannot write files or run programs: its filter is data, its files are read.
func jq(c *call, _ *parsed) {
	args := c.args
	var files []arg
	haveFilter := false
	positional := false // after --args or --jsonargs, operands are values
	only := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.val
		if !only && a.lit() && len(v) > 1 && v[0] == '-' {
			switch v {
			case "--":
				only = true
			case "--arg", "--argjson":
				i += 2
			case "--slurpfile", "--rawfile":
				if i+2 < len(args) {
					c.read(args[i+2], "jq "+v, false)
				}
				i += 2
			case "-f", "--from-file":
				if i+1 < len(args) {
					c.read(args[i+1], "jq filter file", false)
				}
				haveFilter = true
				i++
			case "-L", "--indent":
				i++
			case "--args", "--jsonargs":
				positional = true
			}
			continue
		}
		if !haveFilter {
			haveFilter = true
			continue
		}
		if positional {
			continue
		}
		files = append(files, a)
	}
	for _, f := range files {
		c.read(f, c.name+" operand", false)
	}
}

// awk: the program (first operand, unless -f or -e gives it) is read for what can write files
// or run commands; the other operands are read, except VAR=value assignments.
func awk(c *call, _ *parsed) {
	args := c.args
	haveProg, inPlace := false, false
	i := 0
loop:
	for ; i < len(args); i++ {
		a := args[i]
		v := a.val
		if !a.lit() || len(v) < 2 || v[0] != '-' {
			break
		}
		name, val, hasVal := v, arg{}, false
		next := func() {
			if i+1 < len(args) {
				i++
				val, hasVal = args[i], true
			}
		}
		switch {
		case v == "--":
			i++
			break loop
		case strings.HasPrefix(v, "--"):
			n, _, eq := strings.Cut(v[2:], "=")
			name = n
			if eq {
				val, hasVal = a.suffix(strings.IndexByte(v, '=')+1), true
			} else if contains([]string{"file", "source", "include", "load", "assign", "field-separator", "exec"}, n) {
				next()
			}
		default:
			name = v[1:2]
			if len(v) > 2 {
				val, hasVal = a.suffix(2), true
			} else if strings.Contains("fvFeiEl", name) {
				next()
			}
		}
		switch name {
		case "f", "file", "E", "exec":
			if hasVal {
				c.script(val, "awk program file")
			}
			haveProg = true
			if name == "E" || name == "exec" {
				i++
				break loop
			}
		case "e", "source":
			haveProg = true
			c.awkProgram(val)
		case "i", "include":
			if hasVal && val.lit() && strings.TrimSuffix(val.val, ".awk") == "inplace" {
				inPlace = true
			} else if hasVal {
				c.script(val, "awk include file")
			}
		case "l", "load":
			c.unknown("awk loads an extension (-l)")
		}
	}
	ops := args[min(i, len(args)):]
	if !haveProg {
		if len(ops) == 0 {
			return
		}
		c.awkProgram(ops[0])
		ops = ops[1:]
	}
	for _, a := range ops {
		if isAssign(a) {
			continue
		}
		c.read(a, "awk operand", false)
		if inPlace {
			c.write(a, "awk -i inplace", false)
		}
	}
}

func (c *call) awkProgram(a arg) {
	switch {
	case a.input:
	case !a.lit():
		c.w.unknown("awk's program comes from an expansion", a.src, a.pos)
	case awkRisky(a.val):
		// what it writes or runs is computed by the program: ask, never allow
		c.w.unknown("awk's program can write files or run commands", a.src, a.pos)
	}
}

// awkRisky reports an awk program that can write files or run commands: system(), output
// redirection in print and printf, pipes (print | "cmd", "cmd" | getline), getline < file,
// and gawk's @load and @include.
func awkRisky(prog string) bool {
	operand := false // the last token ends an operand: a "/" is division, not a regexp
	inPrint, printDepth, depth := false, 0, 0
	for i := 0; i < len(prog); i++ {
		ch := prog[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r':
		case ch == '\\' && i+1 < len(prog) && prog[i+1] == '\n':
			i++
		case ch == '"':
			for i++; i < len(prog) && prog[i] != '"'; i++ {
				if prog[i] == '\\' {
					i++
				}
			}
			operand = true
		case ch == '#':
			for i < len(prog) && prog[i] != '\n' {
				i++
			}
			i--
		case ch == '/' && !operand:
			inBracket := false
			for i++; i < len(prog); i++ {
				c := prog[i]
				if c == '\\' {
					i++
					continue
				}
				if c == '[' {
					inBracket = true
				} else if c == ']' {
					inBracket = false
				} else if c == '/' && !inBracket || c == '\n' {
					break
				}
			}
			operand = true
		case ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z':
			j := i
			for j < len(prog) && (prog[j] == '_' || prog[j] >= 'a' && prog[j] <= 'z' || prog[j] >= 'A' && prog[j] <= 'Z' || prog[j] >= '0' && prog[j] <= '9') {
				j++
			}
			word := prog[i:j]
			i = j - 1
			operand = true
			switch word {
			case "system":
				return true
			case "print", "printf":
				inPrint, printDepth, operand = true, depth, false
			case "getline":
				k := j
				for k < len(prog) && (prog[k] == ' ' || prog[k] == '\t') {
					k++
				}
				for k < len(prog) && (prog[k] == '$' || prog[k] == '_' || prog[k] >= 'a' && prog[k] <= 'z' ||
					prog[k] >= 'A' && prog[k] <= 'Z' || prog[k] >= '0' && prog[k] <= '9') {
					k++
				}
				for k < len(prog) && (prog[k] == ' ' || prog[k] == '\t') {
					k++
				}
				if k < len(prog) && prog[k] == '<' {
					return true
				}
			case "return", "in", "do", "else", "case", "if", "while", "for", "delete", "exit":
				operand = false
			}
		case ch >= '0' && ch <= '9' || ch == '.':
			operand = true
		case ch == '@':
			return true // @load, @include: code from elsewhere
		case ch == '|':
			if i+1 < len(prog) && prog[i+1] == '|' {
				i++
				operand = false
				continue
			}
			return true
		case ch == '>':
			if inPrint && depth == printDepth {
				return true
			}
			operand = false
		case ch == '(' || ch == '[':
			depth++
			operand = false
		case ch == ')' || ch == ']':
			depth--
			operand = true
		case ch == ';' || ch == '\n' || ch == '{' || ch == '}':
			inPrint, operand = false, false
		default:
			operand = false
		}
	}
	return false
}

// sed: the script (-e, or the first operand) is read for the commands that write files (w,
// s///w), read them (r, R) or run programs (e, s///e); -i rewrites every operand.
func sed(c *call, p *parsed) {
	scripts := p.vals("e", "expression")
	ops := p.ops
	for _, f := range p.vals("f", "file") {
		c.script(f, "sed script file")
	}
	if len(scripts) == 0 && !p.has("f", "file") && len(ops) > 0 {
		scripts, ops = ops[:1], ops[1:]
	}
	sandbox := p.has("sandbox")
	for _, s := range scripts {
		switch {
		case s.input:
		case !s.lit():
			c.w.unknown("sed's script comes from an expansion", s.src, s.pos)
		default:
			use := scanSed(s.val)
			if use.bad {
				c.w.unknown("sed's script could not be read", s.src, s.pos)
			}
			if sandbox {
				continue
			}
			if use.exec {
				c.w.unknown("sed's script runs commands (e)", s.src, s.pos)
			}
			for _, f := range use.writes {
				c.write(litArg(f, s.src, s.pos), "sed w", false)
			}
			for _, f := range use.reads {
				c.read(litArg(f, s.src, s.pos), "sed r", false)
			}
		}
	}
	inPlace := p.has("i", "in-place")
	for _, a := range ops {
		c.read(a, "sed operand", false)
		if inPlace {
			c.write(a, "sed -i", false)
		}
	}
}

type sedUse struct {
	writes, reads []string
	exec, bad     bool
}

// scanSed reads a GNU sed script far enough to find its file and command uses.
func scanSed(s string) sedUse {
	var u sedUse
	i := 0
	restOfLine := func() string {
		j := i
		for j < len(s) && s[j] != '\n' {
			j++
		}
		r := strings.TrimLeft(s[i:j], " \t")
		i = j
		return r
	}
	// delimited reads up to the unescaped delimiter d.
	delimited := func(d byte) bool {
		for ; i < len(s); i++ {
			if s[i] == '\\' {
				i++
				continue
			}
			if s[i] == d {
				i++
				return true
			}
		}
		return false
	}
	address := func() bool {
		switch {
		case i < len(s) && s[i] >= '0' && s[i] <= '9':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < len(s) && s[i] == '$':
			i++
		case i < len(s) && s[i] == '/':
			i++
			if !delimited('/') {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < len(s) && s[i] == '\\':
			d := s[i+1]
			i += 2
			if !delimited(d) {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		}
		return true
	}
	for i < len(s) {
		for i < len(s) && strings.IndexByte(" \t\n;", s[i]) >= 0 {
			i++
		}
		if i >= len(s) {
			break
		}
		if s[i] == '#' {
			restOfLine()
			continue
		}
		if !address() {
			u.bad = true
			return u
		}
		if i < len(s) && s[i] == ',' {
			i++
			if i < len(s) && (s[i] == '+' || s[i] == '~') {
				i++
			}
			if !address() {
				u.bad = true
				return u
			}
		}
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '!') {
			i++
		}
		if i >= len(s) {
			u.bad = true
			return u
		}
		cmd := s[i]
		i++
		switch cmd {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'q', 'Q', 'L':
			for i < len(s) && (s[i] == ' ' || s[i] >= '0' && s[i] <= '9') {
				i++
			}
		case ':', 'b', 't', 'T', 'v':
			for i < len(s) && s[i] != '\n' && s[i] != ';' && s[i] != '}' {
				i++
			}
		case 'a', 'i', 'c':
			// text to the end of the line; a trailing backslash continues it
			for i < len(s) {
				if s[i] == '\\' && i+1 < len(s) {
					i += 2
					continue
				}
				if s[i] == '\n' {
					break
				}
				i++
			}
		case 'r', 'R':
			u.reads = appendFile(u.reads, restOfLine())
		case 'w', 'W':
			u.writes = appendFile(u.writes, restOfLine())
		case 'e':
			u.exec = true
			restOfLine()
		case 's', 'y':
			if i >= len(s) || s[i] == '\n' || s[i] == '\\' {
				u.bad = true
				return u
			}
			d := s[i]
			i++
			// Two delimited parts follow: the pattern, then the replacement (each call scans one).
			pattern := delimited(d)
			replacement := pattern && delimited(d)
			if !replacement {
				u.bad = true
				return u
			}
			if cmd == 'y' {
				break
			}
		flags:
			for i < len(s) {
				switch f := s[i]; {
				case f == 'e':
					u.exec = true
					i++
				case f == 'w':
					i++
					u.writes = appendFile(u.writes, restOfLine())
					break flags
				case strings.IndexByte("gpiImM0123456789", f) >= 0:
					i++
				default:
					break flags
				}
			}
		default:
			u.bad = true
			return u
		}
	}
	return u
}

func appendFile(list []string, f string) []string {
	switch f {
	case "", "/dev/stdout", "/dev/stderr":
		return list
	}
	return append(list, f)
}
