package review

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
)

// A recursive effect matches a rule when anything below its path could match. When one does,
// the tree is looked at: what is really below the path is checked, entry by entry, so that
// grep -r x sub or cp -r sub sub2 is allowed where sub holds nothing a rule guards. The walk
// is bounded (maxTreeEntries entries checked, directories only for a listing, and
// maxTreeTime); past the bound, or where the tree cannot be seen, the conservative answer
// stands.
const (
	maxTreeEntries = 5000
	maxTreeTime    = 200 * time.Millisecond
)

// treeHit is a rule hit on a path below a recursive effect.
type treeHit struct {
	hit  boundary.Hit
	path string
}

// narrowTree returns the hits of a recursive effect on what is really below it, and true; or
// false when the tree cannot be seen in full, and the conservative hits stand. A read or a
// delete acts on the tree at Path (a listing on its directories only); a write acts on the names of the tree at From (a copy, or
// a change in place), placed below Path; a write whose names are not known is not narrowed.
func narrowTree(set *boundary.Set, e action.Effect) ([]treeHit, bool) {
	root := e.Path
	switch e.Op {
	case action.OpRead, action.OpDelete:
	case action.OpWrite:
		if e.From == "" {
			return nil, false
		}
		root = e.From
	default:
		return nil, false
	}
	info, err := os.Lstat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist) && e.Op == action.OpRead && e.From == "":
		// Nothing is there to read. A tree the command makes there first is made by effects
		// that are judged themselves: writes whose names are known, or, when they are not
		// (tar -x, git clone), a write of the whole tree, judged conservatively.
		var out []treeHit
		for _, h := range set.CheckPath(e.Op, e.Path, false, nil) {
			out = append(out, treeHit{h, e.Path})
		}
		return out, true
	case errors.Is(err, fs.ErrNotExist) && e.Op == action.OpWrite && e.From == e.Path:
		// A change in place of a tree that is not there changes nothing below it; what the
		// command makes there is new (git init's template in a new repository), and Path
		// itself is judged.
		var out []treeHit
		for _, h := range set.CheckPath(e.Op, e.Path, false, nil) {
			out = append(out, treeHit{h, e.Path})
		}
		return out, true
	case err != nil:
		return nil, false
	}
	var out []treeHit
	seen := map[string]bool{}
	add := func(hits []boundary.Hit, p string) {
		for _, h := range hits {
			if !seen[h.Rule.ID] {
				seen[h.Rule.ID] = true
				out = append(out, treeHit{h, p})
			}
		}
	}
	add(set.CheckPath(e.Op, e.Path, false, nil), e.Path)
	if !info.IsDir() {
		return out, true // a file (or a link, copied or moved as one) has nothing below it
	}
	deadline := time.Now().Add(maxTreeTime)
	n := 0
	errBound := errors.New("bound")
	var hits []boundary.Hit
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err // a part that cannot be read cannot be judged
		}
		if p == root {
			return nil
		}
		if e.Listing && !d.IsDir() {
			// A listing reads directories and names the files in them: a file is neither
			// checked nor counted, so a tree of many files in few directories is seen whole.
			return nil
		}
		if n++; n > maxTreeEntries || n%64 == 0 && time.Now().After(deadline) {
			return errBound
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		target := filepath.Join(e.Path, rel)
		hits = set.CheckPath(e.Op, target, false, hits[:0])
		add(hits, target)
		if d.Type()&fs.ModeSymlink != 0 && e.Op == action.OpRead {
			// a program that follows links (grep -R, cp -L) reads what the link reaches
			if real, err := filepath.EvalSymlinks(p); err == nil {
				hits = set.CheckPath(e.Op, real, true, hits[:0])
				add(hits, real)
			} else {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, false
	}
	return out, true
}
