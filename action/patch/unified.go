package patch

import (
	"errors"
	"strings"
)

// unifiedSection reads a plain unified diff section: the --- line i, the +++ line after it,
// and its hunks.
func (p *parser) unifiedSection(i int) (int, error) {
	o, err := parseHeaderPath(p.header(i)[4:])
	if err != nil {
		return i, fail(i, "--- header: "+err.Error())
	}
	n, err := parseHeaderPath(p.header(i + 1)[4:])
	if err != nil {
		return i + 1, fail(i+1, "+++ header: "+err.Error())
	}
	if i+2 >= len(p.lines) || !strings.HasPrefix(p.header(i+2), "@@") {
		return i + 1, fail(i+1, "+++ header without a hunk after it")
	}
	next, t, err := p.hunks(i + 2)
	if err != nil {
		return next, err
	}
	c, err := plainChange(o, n, t)
	if err != nil {
		return next, fail(i, err.Error())
	}
	c.Line = i + 1
	return next, p.add(c, o.name, n.name)
}

// binaryFilesLine reads "Binary files X and Y differ" outside a git section, as diff -r
// writes for files it cannot show. Nothing applies it, but the files do change.
func (p *parser) binaryFilesLine(i int, line string) error {
	body := strings.TrimSuffix(strings.TrimPrefix(line, "Binary files "), " differ")
	a, b, err := binaryNames(body)
	if err != nil {
		return fail(i, "Binary files line: "+err.Error())
	}
	o := headerPath{name: a, null: a == "/dev/null"}
	n := headerPath{name: b, null: b == "/dev/null"}
	c, err := plainChange(o, n, totals{})
	if err != nil {
		return fail(i, err.Error())
	}
	c.Line, c.Binary = i+1, true
	return p.add(c, a, b)
}

// binaryNames splits "X and Y"; an unquoted path with " and " in it could be read two ways.
func binaryNames(s string) (a, b string, err error) {
	if strings.HasPrefix(s, `"`) {
		a, rest, err := unquote(s)
		if err != nil {
			return "", "", err
		}
		rest, ok := strings.CutPrefix(rest, " and ")
		if !ok {
			return "", "", errors.New(`want " and " after the first path`)
		}
		b, err := parseGitPath(rest)
		return a, b, err
	}
	if k := strings.Index(s, ` and "`); k >= 0 {
		if a, err = parseGitPath(s[:k]); err != nil {
			return "", "", err
		}
		b, err = parseGitPath(s[k+len(" and "):])
		return a, b, err
	}
	if strings.Count(s, " and ") != 1 {
		return "", "", errors.New("cannot tell the two paths apart")
	}
	a, b, _ = strings.Cut(s, " and ")
	if err = checkPath(a); err == nil {
		err = checkPath(b)
	}
	return a, b, err
}

// plainChange makes the Change of a plain unified section from its two header paths and its
// hunk totals. The a/ and b/ prefixes are stripped only when both sides have them (or one
// side is /dev/null). diff -N writes an epoch timestamp for the missing side of a new or
// deleted file, and GNU patch and git apply read it as /dev/null.
func plainChange(o, n headerPath, t totals) (Change, error) {
	if o.null && n.null {
		return Change{}, errors.New("both paths are /dev/null")
	}
	oldName, newName := o.name, n.name
	if (o.null || strings.HasPrefix(oldName, "a/")) && (n.null || strings.HasPrefix(newName, "b/")) {
		var ok bool
		if !o.null {
			if oldName, ok = side(oldName, "a/", true); !ok {
				return Change{}, errors.New("no path after the a/ prefix")
			}
		}
		if !n.null {
			if newName, ok = side(newName, "b/", true); !ok {
				return Change{}, errors.New("no path after the b/ prefix")
			}
		}
	}
	// GNU patch looks at the timestamp only when the hunk is empty on that side.
	oldEpoch, sure := stampEpoch(o.stamp)
	if !sure && t.hunks > 0 && t.old == 0 {
		return Change{}, errors.New("cannot tell whether the --- timestamp marks a new file: give it a time zone")
	}
	newEpoch, sure := stampEpoch(n.stamp)
	if !sure && t.hunks > 0 && t.new == 0 {
		return Change{}, errors.New("cannot tell whether the +++ timestamp marks a deleted file: give it a time zone")
	}
	create := o.null || oldEpoch && t.old == 0 && t.hunks > 0
	del := n.null || newEpoch && t.new == 0 && t.hunks > 0
	switch {
	case create && del:
		return Change{}, errors.New("section both creates and deletes its file")
	case create:
		if t.old > 0 {
			return Change{}, errors.New("hunk removes lines from a file the patch creates")
		}
		if !o.null && oldName != newName {
			// GNU patch would pick one of the two names to create.
			return Change{}, errors.New("new file with two different paths")
		}
		return Change{Op: Create, New: newName}, nil
	case del:
		if t.new > 0 {
			return Change{}, errors.New("hunk adds lines to a file the patch deletes")
		}
		if !n.null && oldName != newName {
			return Change{}, errors.New("deleted file with two different paths")
		}
		return Change{Op: Delete, Old: oldName}, nil
	}
	return Change{Op: Modify, Old: oldName, New: newName}, nil
}
