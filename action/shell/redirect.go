package shell

import (
	"mvdan.cc/sh/v3/syntax"
)

// redirectSubsts analyses the substitutions in a redirection's target and, for a
// here-document whose delimiter is not quoted, in its body.
func (w *walker) redirectSubsts(st *state, r *syntax.Redirect) {
	if r.Word != nil {
		w.substs(st, r.Word)
	}
	if r.Hdoc != nil {
		w.substs(st, r.Hdoc)
	}
}

// redirects adds the file effects of redirections. They are made by the shell, in the
// shell's working directory. Duplicated descriptors (2>&1, >&-), here-documents and
// here-strings name no file.
func (w *walker) redirects(idx int, st *state, redirs []*syntax.Redirect) {
	for _, r := range redirs {
		if r.Word == nil {
			continue
		}
		var ops [2]Op
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob,
			syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
			ops[0] = Write
		case syntax.RdrIn:
			ops[0] = Read
		case syntax.RdrInOut:
			ops = [2]Op{Read, Write}
		case syntax.DplOut, syntax.DplIn:
			a := w.word(r.Word)
			if a.lit() && isDescriptor(a.val) {
				continue
			}
			if r.Op == syntax.DplIn || r.N != nil {
				// <&word and N>&word take a descriptor; a word that is not one is an error
				if !a.lit() {
					w.unknown("the descriptor of a redirect comes from an expansion", a.src, a.pos)
				}
				continue
			}
			ops[0] = Write // >&file is &>file
		default: // here-documents and here-strings
			continue
		}
		why := "redirect " + r.Op.String()
		if r.N != nil {
			why = "redirect " + r.N.Value + r.Op.String()
		}
		// bash brace-expands a redirect target: > /{e..e}tc/x is > /etc/x (and more than one
		// word is an error, but each is reported)
		if !hasBrace(r.Word) {
			w.redirectTo(idx, st, ops, w.word(r.Word), why)
			continue
		}
		for _, a := range w.appendWord(nil, r.Word) {
			w.redirectTo(idx, st, ops, a, why)
		}
	}
}

// isDescriptor reports a file descriptor word: 2, 2-, -.
func isDescriptor(s string) bool {
	s = trimSuffixByte(s, '-')
	return s == "" || isNumber(s)
}

func trimSuffixByte(s string, c byte) string {
	if len(s) > 0 && s[len(s)-1] == c {
		return s[:len(s)-1]
	}
	return s
}

// redirectTo adds the effects of a redirection to the file a names.
func (w *walker) redirectTo(idx int, st *state, ops [2]Op, a arg, why string) {
	for _, op := range ops {
		if op != "" {
			w.target(idx, st.dir, op, a, why, false)
		}
	}
}
