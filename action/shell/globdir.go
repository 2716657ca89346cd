package shell

import "strings"

// Bash expands a glob by listing the directory it names: echo ~/.ssh/* lists ~/.ssh, which is
// reading it, whatever the command then does with the names. A glob that is a file operand
// reports what it matches as well (cat *.go reads the files); the listing is reported for
// every glob bash expands, wherever it is.

// globListing reports the directory bash lists to expand a, if a is a glob: a read of the
// directory before its first pattern component, or, where a later component is a pattern too
// (*/*.go), a listing of the tree below it.
func (w *walker) globListing(idx int, dir string, a arg) {
	if !a.glob() {
		return
	}
	d, rec := globDir(a)
	why := "glob directory"
	if rec {
		w.targetFrom(idx, dir, Read, d, why, true, listingTree)
		return
	}
	w.target(idx, dir, Read, d, why, false)
}

// globDir returns the directory a glob lists first, with its quoting and expansions kept, and
// whether a component after the first pattern is a pattern too, so that the directories it
// matches are listed as well.
func globDir(a arg) (arg, bool) {
	at := globStart(a)
	cut := strings.LastIndexByte(a.val[:at], '/')
	rest := a.val[at:]
	slash := strings.IndexByte(rest, '/')
	rec := slash >= 0 && strings.ContainsAny(rest[slash:], "*?[") || strings.Contains(rest, "**")
	switch cut {
	case -1:
		return litArg(".", a.src, a.pos), rec
	case 0:
		return litArg("/", a.src, a.pos), rec
	}
	return argPrefix(a, cut), rec
}

// globStart is the offset in a.val of the first unquoted glob character (or extended glob).
func globStart(a arg) int {
	off := 0
	for _, s := range a.segs {
		if s.ext {
			return off
		}
		if !s.quoted && !s.dyn {
			if i := strings.IndexAny(s.text, "*?["); i >= 0 {
				return off + i
			}
		}
		off += len(s.text)
	}
	return len(a.val)
}
