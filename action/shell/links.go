package shell

import (
	"path/filepath"
	"strings"
)

// A symbolic link the command makes is there for what follows it: after ln -s ~ k, the path
// k/.ssh/id_ed25519 is ~/.ssh/id_ed25519. The file system review looks at does not have the
// link yet, so a path through it is reported twice: as named, and where the link leads.

// throughLink ends the Why of an effect on the path a link the command made leads to.
const throughLink = " (through a link the command made)"

// maxLinkHops bounds following links the command made through one another.
const maxLinkHops = 8

// noteLink records that the command makes a symbolic link at the path link names (relative to
// dir) leading to target, which is relative to the link's directory, or to dir where relative
// is set (ln -r). A target that is not known is recorded as such: a path through the link
// is then an Unknown.
func (c *call) noteLink(link, target arg, relative bool) {
	if !link.lit() || link.glob() {
		return // the link's name is an Unknown already
	}
	at, ok := c.w.lexical(c.dir, link)
	if !ok {
		return
	}
	to := ""
	if target.lit() && !target.glob() {
		base := filepath.Dir(at)
		if relative {
			base = c.dir
		}
		if t, ok := c.w.lexical(base, target); ok {
			to = t
		}
	}
	if c.w.a.links == nil {
		c.w.a.links = map[string]string{}
	}
	c.w.a.links[at] = to
	if real, err := c.w.a.resolve("", at); err == nil && real != at {
		c.w.a.links[real] = to
	}
}

// lexical is the absolute, clean path a names relative to dir, with ~ replaced, without
// resolving links; false where it is not known.
func (w *walker) lexical(dir string, a arg) (string, bool) {
	v := a.val
	if a.tilde() {
		rest, ok := strings.CutPrefix(v, "~/")
		switch {
		case w.a.opt.Home == "":
			return "", false
		case v == "~":
			rest = ""
		case !ok:
			return "", false // another user's home
		}
		v = w.a.opt.Home + "/" + rest
	}
	if !filepath.IsAbs(v) {
		if dir == "" {
			return "", false
		}
		v = dir + "/" + v
	}
	return filepath.Clean(v), true
}

// throughLinks adds e again where the path goes through a link the command made: the same
// effect on the path the link leads to.
func (w *walker) throughLinks(e Effect, text, pos string) {
	for hop := 0; hop < maxLinkHops && len(w.a.links) > 0; hop++ {
		via, to, ok := w.linkAbove(e.Path)
		if !ok {
			return
		}
		if to == "" {
			w.unknown("a path goes through a symbolic link the command made to a target that is not known ("+via+")", text, pos)
			return
		}
		p := to + e.Path[len(via):]
		if real, err := w.a.resolve("", p); err == nil {
			p = real
		}
		if p == e.Path {
			return
		}
		e.Path, e.From = p, ""
		if !strings.HasSuffix(e.Why, throughLink) {
			e.Why += throughLink
		}
		w.a.addEffect(e)
	}
}

// linkAbove returns the innermost link the command made at p or above it, and where it leads.
func (w *walker) linkAbove(p string) (string, string, bool) {
	for q := p; ; q = filepath.Dir(q) {
		if to, ok := w.a.links[q]; ok {
			return q, to, true
		}
		if q == "/" || q == "." {
			return "", "", false
		}
	}
}
