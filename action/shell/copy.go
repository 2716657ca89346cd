package shell

import (
	"path/filepath"
	"strings"
)

func init() {
	register(&program{kind: kindChanges, g: newGrammar("S:t:",
		"target-directory= suffix= backup=? reflink=? preserve=? no-preserve= sparse= update=? context=? "+
			"archive recursive no-target-directory force interactive link symbolic-link verbose one-file-system "+
			"parents attributes-only copy-contents dereference no-dereference no-clobber remove-destination "+
			"strip-trailing-slashes debug"),
		run: func(c *call, p *parsed) {
			rec := p.has("r", "R", "recursive", "a", "archive")
			c.copyLike(p, "cp", Read, rec, p.has("parents"))
		}}, "cp")
	register(&program{kind: kindChanges, g: newGrammar("g:m:o:S:t:",
		"group= mode= owner= suffix= target-directory= strip-program= backup=? context=? compare directory "+
			"no-target-directory preserve-timestamps strip verbose debug preserve-context"),
		run: func(c *call, p *parsed) {
			if p.has("d", "directory") {
				for _, a := range p.ops {
					c.write(a, "install -d operand", false)
				}
				return
			}
			c.copyLike(p, "install", Read, false, false)
		}}, "install")
	// mv: a source may be a directory, so sources and targets are whole trees
	register(&program{kind: kindChanges, g: newGrammar("S:t:",
		"target-directory= suffix= backup=? update=? context=? force interactive no-clobber no-target-directory "+
			"strip-trailing-slashes verbose exchange no-copy debug"),
		run: func(c *call, p *parsed) { c.copyLike(p, "mv", Delete, true, false) }}, "mv")
	register(&program{kind: kindChanges, g: newGrammar("S:t:",
		"suffix= target-directory= backup=? force interactive logical no-dereference no-target-directory physical "+
			"relative symbolic verbose"), run: ln}, "ln", "link")
}

// copyLike is cp, install and mv: the sources get srcOp (read, or delete for mv) and the
// target is written. The target is the last operand, or -t's value. When the target may be
// a directory the copy lands at target/base(source), which is reported too.
func (c *call) copyLike(p *parsed, name string, srcOp Op, rec, parents bool) {
	ops := p.ops
	dirTarget, hasT := p.val("t", "target-directory")
	var target arg
	switch {
	case hasT:
	case len(ops) == 0:
		return
	case len(ops) == 1 && !ops[0].input:
		// a single operand with no target: cp fails, unless xargs supplies the rest
		c.eff(srcOp, ops[0], name+" source", rec)
		return
	default:
		target, ops = ops[len(ops)-1], ops[:len(ops)-1]
	}
	for _, s := range ops {
		c.eff(srcOp, s, name+" source", rec)
	}
	noDir := p.has("T", "no-target-directory")
	switch {
	case hasT:
		c.into(dirTarget, ops, name, rec || srcOp == Delete, parents)
	case target.input:
		// xargs supplies the target: reported by xargs
	case noDir:
		c.write(target, name+" target", rec)
	case len(ops) > 1 || strings.HasSuffix(target.val, "/"):
		c.into(target, ops, name, rec, parents)
	default:
		c.writeFrom(target, name+" target", rec, ops[0])
		c.into(target, ops, name, rec, parents)
	}
}

// writeFrom is a write of a copy of the tree at src (Effect.From), when src is a plain path.
func (c *call) writeFrom(a arg, why string, rec bool, src arg) {
	if stdio(a) {
		return
	}
	from := ""
	if rec && src.lit() && !src.glob() && !src.tilde() && (c.dir != "" || strings.HasPrefix(src.val, "/")) {
		if p, err := c.w.a.resolve(c.dir, src.val); err == nil {
			from = p
		}
	}
	c.w.targetFrom(c.idx, c.dir, Write, a, why, rec, from)
}

// into writes target/base(source) for each source copied into the directory target; a
// source whose name is not known makes the whole directory written.
func (c *call) into(dir arg, sources []arg, name string, rec, parents bool) {
	if !dir.lit() {
		c.write(dir, name+" target", true)
		return
	}
	for _, s := range sources {
		// dir/. copies the contents; so does rsync's src/
		contents := s.val == "." || strings.HasSuffix(s.val, "/.") || name == "rsync" && strings.HasSuffix(s.val, "/")
		if !s.lit() || s.glob() || contents && remote(s) {
			c.write(dir, name+" target", true)
			continue
		}
		if contents {
			c.writeFrom(dir, name+" target", true, s)
			continue
		}
		b := filepath.Base(filepath.Clean(s.val))
		if parents {
			b = filepath.Clean(s.val)
		}
		if b == "." || b == ".." || b == "/" || filepath.IsAbs(b) && !parents {
			c.write(dir, name+" target", true)
			continue
		}
		t := dir
		t.segs = append(append([]seg(nil), dir.segs...), seg{text: "/" + strings.TrimPrefix(b, "/"), quoted: true})
		t.finish()
		c.writeFrom(t, name+" target", rec, s)
	}
}

// ln writes the link names. The target is reported as read: the new link reaches it, so a
// rule on reading the target applies to making a way to it.
func ln(c *call, p *parsed) {
	ops := p.ops
	sym := p.has("s", "symbolic")
	var links []arg // the link names
	var targets []arg
	if d, ok := p.val("t", "target-directory"); ok {
		targets = ops
		for _, t := range ops {
			links = append(links, joinBase(d, t))
		}
	} else {
		switch {
		case len(ops) == 0:
			return
		case len(ops) == 1:
			targets = ops
			links = append(links, joinBase(litArg(".", c.text, c.pos), ops[0]))
		case len(ops) == 2 && !strings.HasSuffix(ops[1].val, "/"):
			targets = ops[:1]
			links = append(links, ops[1])
			if !p.has("T", "no-target-directory") {
				links = append(links, joinBase(ops[1], ops[0]))
			}
		default:
			targets = ops[:len(ops)-1]
			for _, t := range targets {
				links = append(links, joinBase(ops[len(ops)-1], t))
			}
		}
	}
	for _, l := range links {
		c.write(l, "ln link name", false)
	}
	if sym {
		// each link name leads to its target: the only one, or the one at its index
		for i, l := range links {
			c.noteLink(l, targets[min(i, len(targets)-1)], p.has("r", "relative"))
		}
	}
	for i, t := range targets {
		if sym && t.lit() && !filepath.IsAbs(t.val) && !t.tilde() {
			// a relative symbolic link is relative to the link's directory
			l := links[min(i, len(links)-1)]
			if !l.lit() || l.tilde() {
				continue
			}
			d := filepath.Dir(l.val)
			if !filepath.IsAbs(d) {
				if c.dir == "" {
					continue
				}
				d = filepath.Join(c.dir, d)
			}
			c.w.target(c.idx, d, Read, t, "ln target", false)
			continue
		}
		c.read(t, "ln target", false)
	}
}

// joinBase is dir/base(name), for a link or copy made inside a directory.
func joinBase(dir, name arg) arg {
	if !dir.lit() {
		return dir
	}
	if !name.lit() {
		return name
	}
	b := filepath.Base(filepath.Clean(name.val))
	t := dir
	t.segs = append(append([]seg(nil), dir.segs...), seg{text: "/" + b, quoted: true})
	t.finish()
	return t
}
