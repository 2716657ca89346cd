package patch

import (
	"errors"
	"strconv"
	"strings"
)

// gitSection is one diff --git section: its first line, its extended headers and what follows.
type gitSection struct {
	start            int
	line             gitLine
	oldMode, newMode string
	fileMode         string // of new file mode
	deletedMode      string // of deleted file mode
	newFile, deleted bool
	rename, copy     bool
	from, to         string
	hasFrom, hasTo   bool
	names            bool // --- and +++ lines were read
	minus, plus      headerPath
	binary           bool
	t                totals
}

// gitSection reads the section whose diff --git line is line i.
func (p *parser) gitSection(i int) (int, error) {
	g := gitSection{start: i}
	var err error
	if g.line, err = parseGitLine(p.header(i)[len("diff --git "):]); err != nil {
		return i, fail(i, "diff --git line: "+err.Error())
	}
	j := i + 1
header:
	for ; j < len(p.lines); j++ {
		h := p.header(j)
		var herr error
		switch {
		case strings.HasPrefix(h, "old mode "):
			herr = setOnce(&g.oldMode, h[len("old mode "):], checkMode)
		case strings.HasPrefix(h, "new mode "):
			herr = setOnce(&g.newMode, h[len("new mode "):], checkMode)
		case strings.HasPrefix(h, "new file mode "):
			g.newFile = true
			herr = setOnce(&g.fileMode, h[len("new file mode "):], checkMode)
		case strings.HasPrefix(h, "deleted file mode "):
			g.deleted = true
			herr = setOnce(&g.deletedMode, h[len("deleted file mode "):], checkMode)
		case strings.HasPrefix(h, "rename from "):
			g.rename = true
			herr = g.setPath(&g.from, &g.hasFrom, h[len("rename from "):])
		case strings.HasPrefix(h, "rename old "):
			g.rename = true
			herr = g.setPath(&g.from, &g.hasFrom, h[len("rename old "):])
		case strings.HasPrefix(h, "rename to "):
			g.rename = true
			herr = g.setPath(&g.to, &g.hasTo, h[len("rename to "):])
		case strings.HasPrefix(h, "rename new "):
			g.rename = true
			herr = g.setPath(&g.to, &g.hasTo, h[len("rename new "):])
		case strings.HasPrefix(h, "copy from "):
			g.copy = true
			herr = g.setPath(&g.from, &g.hasFrom, h[len("copy from "):])
		case strings.HasPrefix(h, "copy to "):
			g.copy = true
			herr = g.setPath(&g.to, &g.hasTo, h[len("copy to "):])
		case strings.HasPrefix(h, "similarity index "):
			herr = checkPercent(h[len("similarity index "):])
		case strings.HasPrefix(h, "dissimilarity index "):
			herr = checkPercent(h[len("dissimilarity index "):])
		case strings.HasPrefix(h, "index "):
			herr = checkIndex(h[len("index "):])
		case strings.HasPrefix(h, "--- "):
			if j+1 >= len(p.lines) || !strings.HasPrefix(p.header(j+1), "+++ ") {
				return j, fail(j, "--- header without a +++ header after it")
			}
			if g.minus, err = parseHeaderPath(h[4:]); err != nil {
				return j, fail(j, "--- header: "+err.Error())
			}
			if g.plus, err = parseHeaderPath(p.header(j + 1)[4:]); err != nil {
				return j + 1, fail(j+1, "+++ header: "+err.Error())
			}
			g.names = true
			if j+2 >= len(p.lines) || !strings.HasPrefix(p.header(j+2), "@@") {
				return j + 1, fail(j+1, "+++ header without a hunk after it")
			}
			if j, g.t, err = p.hunks(j + 2); err != nil {
				return j, err
			}
			break header
		case strings.HasPrefix(h, "+++ "):
			return j, fail(j, "+++ header without a --- header before it")
		case h == "GIT binary patch":
			g.binary = true
			if j, err = p.binaryPatch(j); err != nil {
				return j, err
			}
			break header
		case strings.HasPrefix(h, "Binary files ") && strings.HasSuffix(h, " differ"):
			// Only the word of git: git apply cannot apply it, so its paths touch nothing.
			g.binary = true
			j++
			break header
		default:
			break header
		}
		if herr != nil {
			return j, fail(j, herr.Error())
		}
	}
	if j == i+1 {
		// git apply carries the paths of a bare diff --git line over to the next section.
		return j, fail(i, "diff --git line without any header after it")
	}
	c, err := g.change()
	if err != nil {
		return j, fail(i, err.Error())
	}
	return j, p.add(c, g.line.a, g.line.b, g.minus.name, g.plus.name)
}

// setPath reads the path of a rename or copy header.
func (g *gitSection) setPath(dst *string, seen *bool, s string) error {
	if *seen {
		return errors.New("repeated rename or copy header")
	}
	name, err := parseGitPath(s)
	if err != nil {
		return err
	}
	*dst, *seen = name, true
	return nil
}

// setOnce sets a header's value, which may appear once, after checking it.
func setOnce(dst *string, s string, check func(string) error) error {
	if *dst != "" {
		return errors.New("repeated mode header")
	}
	if err := check(s); err != nil {
		return err
	}
	*dst = s
	return nil
}

// checkMode accepts a git file mode: six octal digits.
func checkMode(s string) error {
	if len(s) != 6 || strings.TrimLeft(s, "01234567") != "" {
		return errors.New("bad file mode " + strconv.Quote(s))
	}
	return nil
}

// checkPercent accepts the "95%" of a similarity index.
func checkPercent(s string) error {
	if n, rest, ok := number(s); !ok || rest != "%" || n > 100 {
		return errors.New("bad similarity index " + strconv.Quote(s))
	}
	return nil
}

// checkIndex accepts "abc123..def456" with an optional mode.
func checkIndex(s string) error {
	ids, mode, hasMode := strings.Cut(s, " ")
	a, b, ok := strings.Cut(ids, "..")
	if !ok || !isHex(a) || !isHex(b) || hasMode && checkMode(mode) != nil {
		return errors.New("bad index header " + strconv.Quote(s))
	}
	return nil
}

func isHex(s string) bool {
	return len(s) >= 4 && len(s) <= 64 && strings.TrimLeft(s, "0123456789abcdef") == ""
}

// change checks that the headers agree and makes the section's Change.
func (g *gitSection) change() (Change, error) {
	create, del := g.newFile, g.deleted
	switch {
	case (g.oldMode == "") != (g.newMode == ""):
		return Change{}, errors.New("old mode and new mode must come together")
	case g.newFile && g.deleted:
		return Change{}, errors.New("both new file and deleted file")
	case (g.newFile || g.deleted) && g.oldMode != "":
		return Change{}, errors.New("mode change on a new or deleted file")
	case g.rename && g.copy:
		return Change{}, errors.New("both rename and copy headers")
	case g.hasFrom != g.hasTo:
		return Change{}, errors.New("rename or copy header without its partner")
	case create && del:
		return Change{}, errors.New("section both creates and deletes its file")
	case (create || del) && g.hasFrom:
		return Change{}, errors.New("rename or copy of a new or deleted file")
	case g.names && g.newFile != g.minus.null:
		// git apply reads --- /dev/null without new file mode as the path dev/null, GNU
		// patch as a new file.
		return Change{}, errors.New("--- /dev/null and new file mode must come together")
	case g.names && g.deleted != g.plus.null:
		return Change{}, errors.New("+++ /dev/null and deleted file mode must come together")
	case create && g.t.old > 0:
		return Change{}, errors.New("hunk removes lines from a file the patch creates")
	case del && g.t.new > 0:
		return Change{}, errors.New("hunk adds lines to a file the patch deletes")
	}
	oldName, newName, err := g.paths()
	if err != nil {
		return Change{}, err
	}
	c := Change{Line: g.start + 1, Binary: g.binary, Mode: g.newMode}
	switch {
	case create:
		c.Op, c.New, c.Mode = Create, newName, g.fileMode
	case del:
		c.Op, c.Old = Delete, oldName
	case g.copy:
		c.Op, c.Old, c.New = Copy, oldName, newName
	case g.rename:
		c.Op, c.Old, c.New = Rename, oldName, newName
	default:
		c.Op, c.Old, c.New = Modify, oldName, newName
		c.ModeOnly = g.oldMode != "" && g.t.hunks == 0 && !g.binary
	}
	return c, nil
}

// paths finds the one reading of the section's paths that its headers agree on. The diff
// --git line is read with and without the a/ and b/ prefixes and, when its paths are neither
// quoted nor told apart by anything else, split at each space. Without a rename or copy both
// of its paths are the same file; with one they are the rename or copy paths; the --- and
// +++ paths, when present, must be the same files again.
func (g *gitSection) paths() (oldName, newName string, err error) {
	found := false
	for a, b := range g.line.splits {
		for _, prefixed := range [2]bool{true, false} {
			oa, ok := side(a, "a/", prefixed)
			if !ok {
				continue
			}
			ob, ok := side(b, "b/", prefixed)
			if !ok {
				continue
			}
			if g.hasFrom && (oa != g.from || ob != g.to) || !g.hasFrom && oa != ob {
				continue
			}
			if g.names && !g.minus.null {
				if n, ok := side(g.minus.name, "a/", prefixed); !ok || n != oa {
					continue
				}
			}
			if g.names && !g.plus.null {
				if n, ok := side(g.plus.name, "b/", prefixed); !ok || n != ob {
					continue
				}
			}
			if found && (oa != oldName || ob != newName) {
				return "", "", errors.New("paths of the section can be read two ways")
			}
			found, oldName, newName = true, oa, ob
		}
	}
	if !found {
		if g.hasFrom || g.names {
			return "", "", errors.New("paths of the diff --git line do not match the section's other headers")
		}
		return "", "", errors.New("diff --git line does not name the same file twice")
	}
	return oldName, newName, nil
}

// side strips a prefix from a path when the reading has prefixes. What is left must be a
// relative path that is not empty: "a//x" is /x to git apply and x to GNU patch.
func side(name, prefix string, prefixed bool) (string, bool) {
	if !prefixed {
		return name, true
	}
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" || rest[0] == '/' {
		return "", false
	}
	return rest, true
}

// gitLine holds the two paths of a diff --git line, as written. When neither is quoted and
// the line has more than one space, reading alone cannot tell them apart: split is false and
// rest is the whole text, to be split at each space in turn.
type gitLine struct {
	a, b  string
	split bool
	rest  string
}

// parseGitLine reads the text after "diff --git ".
func parseGitLine(s string) (gitLine, error) {
	switch q := strings.IndexByte(s, '"'); {
	case q == 0:
		a, rest, err := unquote(s)
		if err != nil {
			return gitLine{}, err
		}
		if rest == "" || rest[0] != ' ' {
			return gitLine{}, errors.New("second path missing")
		}
		b, err := parseGitPath(rest[1:])
		if err != nil {
			return gitLine{}, err
		}
		return gitLine{a: a, b: b, split: true}, nil
	case q > 0:
		// The first path is not quoted, so the quote starts the second.
		if q < 2 || s[q-1] != ' ' {
			return gitLine{}, errUnquoted
		}
		a, err := parseGitPath(s[:q-1])
		if err != nil {
			return gitLine{}, err
		}
		b, err := parseGitPath(s[q:])
		if err != nil {
			return gitLine{}, err
		}
		return gitLine{a: a, b: b, split: true}, nil
	}
	if strings.IndexByte(s, ' ') < 0 {
		return gitLine{}, errors.New("second path missing")
	}
	if err := checkPath(s); err != nil {
		return gitLine{}, err
	}
	if strings.IndexByte(s, '\t') >= 0 {
		return gitLine{}, errUnquoted
	}
	return gitLine{rest: s}, nil
}

// splits yields every way to read the line as two paths.
func (l gitLine) splits(yield func(a, b string) bool) {
	if l.split {
		yield(l.a, l.b)
		return
	}
	for k := 1; k < len(l.rest)-1; k++ {
		if l.rest[k] == ' ' && !yield(l.rest[:k], l.rest[k+1:]) {
			return
		}
	}
}
