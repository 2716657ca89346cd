package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A for loop over words written in the command (for f in sub/*.go a.txt) gives its variable
// those words, one at a time: where the body names a file with the variable alone ("$f",
// $f), each word is that file. This keeps for f in *.md; do wc -l "$f"; done known. It holds
// only while nothing in the body can give the variable another value: an assignment, a
// builtin given its name, a function call, eval or source, or a cd (the words were expanded
// where the loop began); otherwise the variable is an expansion like any other.

// maxLoopWords bounds the words a loop variable is followed through.
const maxLoopWords = 64

// loopWords are the words of a for loop for its variable, or nil when the variable cannot be
// followed.
func (w *walker) loopWords(c *syntax.ForClause, l *syntax.WordIter) []arg {
	if l.Name == nil || !l.InPos.IsValid() || len(l.Items) == 0 || c.Select {
		return nil
	}
	var items []arg
	for _, word := range l.Items {
		items = w.appendWord(items, word)
		if len(items) > maxLoopWords {
			return nil
		}
	}
	for _, a := range items {
		if !a.lit() || a.val == "" {
			return nil
		}
	}
	if w.mayChange(l.Name.Value, c.Do) {
		return nil
	}
	return items
}

// mayChange reports whether the statements could give the variable name a value.
func (w *walker) mayChange(name string, body []*syntax.Stmt) bool {
	changed := false
	for _, s := range body {
		syntax.Walk(s, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Assign:
				// IFS changes how an unquoted $f is split
				changed = changed || n.Name != nil && (n.Name.Value == name || n.Name.Value == "IFS")
			case *syntax.ForClause:
				if it, ok := n.Loop.(*syntax.WordIter); ok && it.Name != nil && it.Name.Value == name {
					changed = true
				}
			case *syntax.CallExpr:
				for i, word := range n.Args {
					v := word.Lit()
					// cd: the words were expanded where the loop began
					if i == 0 && (v == "eval" || v == "source" || v == "." || v == "cd" || v == "pushd" ||
						v == "popd" || len(w.a.funcs[v]) > 0) {
						changed = true
					}
					// a builtin given the name: read f, printf -v f, unset f, ...
					if v == name || strings.HasPrefix(v, name+"[") || v == "IFS" {
						changed = true
					}
				}
			case *syntax.DeclClause, *syntax.ArithmCmd, *syntax.LetClause, *syntax.FuncDecl:
				changed = true // conservative: any of these may set it
			}
			return !changed
		})
		if changed {
			return true
		}
	}
	return false
}

// bound is the words a loop variable stands for where a is exactly $name, ${name} or "$name"
// of a variable being followed; nil otherwise.
func (w *walker) bound(a arg) []arg {
	if len(w.a.loopVars) == 0 || len(a.segs) != 1 || !a.segs[0].dyn {
		return nil
	}
	src := a.src
	quoted := strings.HasPrefix(src, `"`) && strings.HasSuffix(src, `"`) && len(src) >= 2
	if quoted {
		src = src[1 : len(src)-1]
	}
	name := strings.TrimPrefix(src, "$")
	if len(name) == len(src) {
		return nil
	}
	if strings.HasPrefix(name, "{") && strings.HasSuffix(name, "}") {
		name = name[1 : len(name)-1]
	}
	items, ok := w.a.loopVars[name]
	if !ok || !isName(name) {
		return nil
	}
	if quoted {
		return items
	}
	// unquoted, the value is split into words and each is a glob: follow only values that
	// stay one word and whose quoting does not change what they match
	if w.a.ifs {
		return nil
	}
	for _, it := range items {
		if strings.ContainsAny(it.val, " \t\n") {
			return nil
		}
		for _, s := range it.segs {
			if s.quoted && strings.ContainsAny(s.text, "*?[~") {
				return nil
			}
		}
	}
	return items
}
