package shell

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Op is what a command does to a path. The strings are those of action.Op.
type Op string

// The operations a command can perform on a path.
const (
	Read    Op = "read"
	Write   Op = "write"
	Delete  Op = "delete"
	Execute Op = "execute"
)

// Effect is one path a command touches.
type Effect struct {
	Op Op
	// Path is absolute and clean, resolved through Options.Resolve. A glob operand (rm *.log)
	// is reported as written, joined to the working directory; Why then ends in "(glob)".
	Path string
	// Recursive means the whole tree under Path (rm -r, cp -r, chmod -R, find -delete, mv
	// sources, tar -x into a directory).
	Recursive bool
	// Listing is set on a recursive read that lists the tree (find, ls -R, du, tree): it reads
	// the directories below Path, which names what is in them, not the files.
	Listing bool
	// From is set on a recursive write whose tree is a copy of another one (cp -r, mv) or the
	// tree already at Path, changed in place (chmod -R): the real path of the tree whose names
	// appear below Path, so that a reviewer can look at what is really written. "" means the
	// names written below Path are not known.
	From string
	// Cmd is the index into Analysis.Commands of the command that causes the effect.
	Cmd int
	// Why says briefly what causes it: "redirect >", "rm operand", "dd of=", "script run", ...
	Why string
}

// Command is one simple command, after wrappers are stripped.
//
// A Command with an empty Name stands for redirections that belong to no simple command: a
// statement made only of redirections (> file) or the redirections of a compound command
// ({ ...; } > file); its Args then hold the compound's keyword, if any.
type Command struct {
	// Name is the program's base name with quotes and escapes removed: /bin/rm, "r""m", \rm and
	// 'rm' are all rm. When the name comes from an expansion, Name is its source text ($CMD).
	Name string
	// Args are the arguments with quotes removed; a word with expansions keeps their source
	// text ($HOME, $(date)). A brace expansion ({a,b}.txt) is expanded.
	Args []string
	// Dir is the working directory the command runs in (cd, pushd, popd, env -C, sudo -D and
	// git -C are tracked); "" when it could not be known.
	Dir string
	// Pos is "line:col" of the command in the source given to Analyze. Code parsed from a
	// string (bash -c, eval, trap, a here-document fed to a shell) has the position of the
	// outer command that runs it.
	Pos string
	// Via says how the command is reached: "" at the top level, otherwise a chain such as
	// "subshell", "$(...)", "bash -c", "eval", "xargs", "find -exec", "function f" or
	// "function f > bash -c" (outermost first).
	Via string
	// Wrappers are the wrappers stripped to find the program, outermost first, each in
	// normalised form ("sudo -u root", "timeout 5"), so a command rule can match them too.
	Wrappers []string
}

// Normalized returns Name then Args, joined by single spaces: the form command rules match.
func (c Command) Normalized() string {
	n := len(c.Name)
	for _, a := range c.Args {
		n += 1 + len(a)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(c.Name)
	for _, a := range c.Args {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a)
	}
	return b.String()
}

// Unknown is something that cannot be known statically. Each one makes the reviewer ask a
// person, or deny where nobody can answer: it is never silently allowed.
type Unknown struct {
	// What says what could not be known: "the program name comes from an expansion",
	// "python runs inline code (-c)", "rm's operand comes from an expansion", ...
	What string
	// Text is the source text concerned.
	Text string
	// Pos is "line:col", as for Command.Pos.
	Pos string
}

// Analysis is what a command would do. Its slices are in the order the shell would reach
// them; an Effect's Cmd indexes Commands.
type Analysis struct {
	Commands []Command
	Effects  []Effect
	Unknowns []Unknown
}

// Options are the facts Analyze needs about where the command runs. The zero value knows
// neither the working directory nor the home directory: relative paths and ~ are Unknowns.
type Options struct {
	// Dir is the absolute working directory at the start. A relative or empty Dir is not
	// known.
	Dir string
	// Home is the absolute home directory for ~ and ~/x. $HOME is an expansion and is not
	// replaced.
	Home string
	// Resolve makes an absolute, lexically joined path real (symbolic links). Nil means
	// filepath.Clean. An error, or a result that is not absolute, is reported as an Unknown
	// ("path could not be resolved: ...") and the lexical path is kept.
	Resolve func(path string) (string, error)
	// MaxNesting bounds nested code: bash -c, eval, $(...), <(...), trap and the like. 0 means
	// 8. Code nested deeper is an Unknown and is not analysed.
	MaxNesting int
}

// ParseError is a command that does not parse. Its message and position come from the
// parser. Analyze never returns a partial analysis with it.
type ParseError struct {
	Line, Col int
	Msg       string
}

// Error returns "line:col: message".
func (e *ParseError) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
}

// Analyze says what the shell command src would do when run with opt. It returns a
// *ParseError when src does not parse; otherwise the analysis, which is never partial:
// whatever could not be followed is in Unknowns. A panic while analysing (a bug, or one in
// Options.Resolve) is caught and becomes the analysis's only Unknown.
func Analyze(src string, opt Options) (res *Analysis, err error) {
	f, err := parse(src)
	if err != nil {
		return nil, err
	}
	defer func() {
		// a bug here must not take the caller down, nor allow anything: what was found is
		// replaced by one Unknown, which a person must answer
		if r := recover(); r != nil {
			res = &Analysis{Unknowns: []Unknown{{What: internalError + fmt.Sprint(r), Text: src, Pos: "1:1"}}}
		}
	}()
	w := newWalker(src, opt)
	w.file(f)
	w.checkUses()
	return w.a.res, nil
}

// internalError starts the Unknown that stands for a bug met while analysing.
const internalError = "the command could not be analysed: "

// parsers are reused: a parser is large, and Parse may be called again once it returns.
var parsers = sync.Pool{New: func() any { return syntax.NewParser() }}

// The parser recurses once per nesting level and a Go stack overflow cannot be recovered, so
// source that could nest deeper than the stack allows is refused before it is parsed.
const (
	maxSource  = 1 << 20 // bytes
	maxBracket = 10000   // ( { [ not yet closed, counted without regard to quoting
)

// parse parses bash source, converting every parser error to a *ParseError. The tree may be
// shared with other analyses (see parseCache): it must only be read.
func parse(src string) (*syntax.File, error) {
	if f, ok := trees.get(src); ok {
		return f, nil
	}
	f, err := parseText(src)
	if err == nil {
		trees.put(src, f)
	}
	return f, err
}

// parseText parses bash source, as parse does, without the cache.
func parseText(src string) (*syntax.File, error) {
	if len(src) > maxSource {
		return nil, &ParseError{Line: 1, Col: 1, Msg: fmt.Sprintf("the command is longer than %d bytes", maxSource)}
	}
	depth, line, col := 0, 1, 0
	for i := 0; i < len(src); i++ {
		col++
		switch src[i] {
		case '\n':
			line, col = line+1, 0
		case '(', '{', '[':
			if depth++; depth > maxBracket {
				return nil, &ParseError{Line: line, Col: col, Msg: fmt.Sprintf("brackets are nested deeper than %d levels", maxBracket)}
			}
		case ')', '}', ']':
			depth = max(depth-1, 0)
		}
	}
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p)
	if err == nil {
		return f, nil
	}
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return nil, &ParseError{Line: int(pe.Pos.Line()), Col: int(pe.Pos.Col()), Msg: pe.Text}
	}
	var le syntax.LangError
	if errors.As(err, &le) {
		msg := le.Error()
		if p := le.Pos.String() + ": "; strings.HasPrefix(msg, p) {
			msg = msg[len(p):]
		}
		return nil, &ParseError{Line: int(le.Pos.Line()), Col: int(le.Pos.Col()), Msg: msg}
	}
	return nil, &ParseError{Msg: err.Error()}
}
