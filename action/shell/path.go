package shell

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// target adds the effect of op on the path a names, relative to dir, or an Unknown when that
// path cannot be known. why says what causes it ("rm operand", "redirect >").
func (w *walker) target(idx int, dir string, op Op, a arg, why string, rec bool) {
	w.targetFrom(idx, dir, op, a, why, rec, "")
}

// listingTree, given as targetFrom's from, marks a recursive read as a listing (Effect.Listing).
const listingTree = "\x00listing"

// targetFrom is target for a recursive write whose tree comes from the path from (Effect.From).
func (w *walker) targetFrom(idx int, dir string, op Op, a arg, why string, rec bool, from string) {
	switch {
	case a.input || a.pipe:
		// xargs' input is covered by xargs' own Unknown; <(...) is a pipe, not a file
		return
	case a.roots != nil:
		// find's {}: every path under each root
		for _, r := range a.roots {
			w.targetFrom(idx, r.rootDir, op, r.arg, why, true, "")
		}
		return
	case a.dyn:
		if items := w.bound(a); items != nil {
			// a loop variable: each of its words in turn
			for _, it := range items {
				it.src, it.pos = a.src, a.pos
				w.targetFrom(idx, dir, op, it, why, rec, from)
			}
			return
		}
	}
	p, glob, ok := w.path(dir, a, why)
	if !ok {
		return
	}
	if glob {
		why += " (glob)"
	}
	listing := false
	if from == listingTree {
		from, listing = "", rec
	}
	if !rec || glob {
		from = ""
	}
	e := Effect{Op: op, Path: p, Recursive: rec, Listing: listing, From: from, Cmd: idx, Why: why}
	w.a.addEffect(e)
	w.throughLinks(e, a.src, a.pos)
}

// path is the absolute, resolved path a names relative to dir. It reports an Unknown and
// fails when that cannot be known; it fails silently for "" and for special files that are
// not file effects (/dev/null, /dev/stdout, /dev/fd/N).
func (w *walker) path(dir string, a arg, why string) (p string, glob, ok bool) {
	if a.dyn {
		w.unknown(subject(why)+" comes from an expansion", a.src, a.pos)
		return "", false, false
	}
	v := a.val
	if v == "" {
		return "", false, false
	}
	if a.tilde() {
		user, rest, _ := strings.Cut(v[1:], "/")
		switch {
		case user != "":
			w.unknown(subject(why)+" is in another user's home directory (~"+user+")", a.src, a.pos)
			return "", false, false
		case w.a.opt.Home == "":
			w.unknown(subject(why)+" is in the home directory, which is not known", a.src, a.pos)
			return "", false, false
		}
		v = w.a.opt.Home + "/" + rest
	}
	if !filepath.IsAbs(v) && dir == "" {
		w.unknown(fmt.Sprintf("%s %q is relative to a working directory that is not known", subject(why), v), a.src, a.pos)
		return "", false, false
	}
	lex := v
	if !filepath.IsAbs(v) {
		lex = dir + "/" + v
	}
	lex = filepath.Clean(lex)
	if special(lex) {
		return "", false, false
	}
	var err error
	if strings.Contains(v, "..") {
		p, err = w.a.resolve(dir, v)
	} else {
		p, err = w.a.resolveClean(lex) // what resolve would join and clean first
	}
	if err != nil {
		w.unknown("path could not be resolved: "+err.Error(), a.src, a.pos)
		p = lex
	}
	return p, a.glob(), true
}

// subject names the position of a path in messages: "rm's operand", "the redirect > path".
func subject(why string) string {
	if p, ok := strings.CutSuffix(why, " operand"); ok && !strings.Contains(p, " ") {
		return p + "'s operand"
	}
	return "the " + why + " path"
}

// special reports the files that are not file effects: the null device, the standard
// streams, the terminal, the random devices and already open descriptors.
func special(p string) bool {
	switch p {
	case "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
		"/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/")
}

var errNotAbs = errors.New("resolve returned a relative path")

// resolve joins v to dir and makes the result real through Options.Resolve. A ".." after a
// symbolic link goes to the parent of the link's target, as the kernel does, so the part
// before each ".." is made real first.
func (a *analyzer) resolve(dir, v string) (string, error) {
	if !strings.Contains(v, "..") {
		// Without "..", walking the components one by one gives the lexical join: build it
		// once rather than one string per component.
		p := v
		if !filepath.IsAbs(v) {
			p = dir + "/" + v
		}
		return a.resolveClean(filepath.Clean(p))
	}
	p := dir
	if filepath.IsAbs(v) {
		p = "/"
	}
	rest := v
	for rest != "" {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		switch c {
		case "", ".":
			continue
		case "..":
			if a.opt.Resolve != nil && p != "/" {
				r, err := a.real(p)
				if err != nil {
					return "", err
				}
				p = r
			}
			p = filepath.Dir(p)
		default:
			if p == "/" {
				p = "/" + c
			} else {
				p = p + "/" + c
			}
		}
	}
	p = filepath.Clean(p)
	if a.opt.Resolve == nil {
		return p, nil
	}
	return a.real(p)
}

// resolveClean is resolve of an absolute, clean path with no "..".
func (a *analyzer) resolveClean(p string) (string, error) {
	if a.opt.Resolve == nil {
		return p, nil
	}
	return a.real(p)
}

func (a *analyzer) real(p string) (string, error) {
	r, err := a.opt.Resolve(p)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(r) {
		return "", fmt.Errorf("%w: %q", errNotAbs, r)
	}
	return filepath.Clean(r), nil
}
