package review

import (
	"errors"
	"io/fs"
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
const maxTreeEntries = 5000

// maxTreeTime bounds a walk's time, so that a slow file system cannot hold a review. It is a
// variable for the tests, which judge corpora on a loaded machine and want the count alone to
// bound a walk, so that one command is judged alike in every run (see export_test.go).
var maxTreeTime = 200 * time.Millisecond

// treeHit is a rule hit on a path below a recursive effect.
type treeHit struct {
	hit  boundary.Hit
	path string
}

// narrowTree returns the hits of a recursive effect on what is really below it, and true; or
// false when the tree cannot be seen in full, and the conservative hits stand. A read or a
// delete acts on the tree at Path (a listing on its directories only); a write acts on the
// names of the tree at From (a copy, or a change in place), placed below Path; a write whose
// names are not known is not narrowed. The tree is looked at through view, the review's own.
func narrowTree(set *boundary.Set, view *action.View, e action.Effect) ([]treeHit, bool) {
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
	isDir, err := view.Lstat(root)
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
	t := treeWalk{set: set, view: view, e: e}
	t.add(set.CheckPath(e.Op, e.Path, false, nil), e.Path)
	if !isDir {
		return t.out, true // a file (or a link, copied or moved as one) has nothing below it
	}
	t.deadline = time.Now().Add(maxTreeTime)
	if err := t.dir(root, e.Path); err != nil {
		// past the bound (which counts time too) or unreadable: not to be kept as the answer
		// for this state of the tree
		view.NotRepeatable()
		return nil, false
	}
	return t.out, true
}

// treeWalk is one walk of the tree below a recursive effect, in lexical order, as
// filepath.WalkDir would take it.
type treeWalk struct {
	set      *boundary.Set
	view     *action.View
	e        action.Effect
	deadline time.Time
	n        int
	seen     map[string]bool
	out      []treeHit
	hits     []boundary.Hit
}

var errBound = errors.New("the tree is larger than the walk's bound")

func (t *treeWalk) add(hits []boundary.Hit, p string) {
	for _, h := range hits {
		if !t.seen[h.Rule.ID] {
			if t.seen == nil {
				t.seen = map[string]bool{} // made at the first hit: the common walk has none
			}
			t.seen[h.Rule.ID] = true
			t.out = append(t.out, treeHit{h, p})
		}
	}
}

// dir checks what is in the directory p, whose place in the effect's tree is target.
func (t *treeWalk) dir(p, target string) error {
	entries, err := t.view.ReadDir(p)
	if err != nil {
		return err // a part that cannot be read cannot be judged
	}
	for _, d := range entries {
		if err := t.entry(filepath.Join(p, d.Name()), filepath.Join(target, d.Name()), d); err != nil {
			return err
		}
	}
	return nil
}

func (t *treeWalk) entry(p, target string, d fs.DirEntry) error {
	if t.e.Listing && !d.IsDir() {
		// A listing reads directories and names the files in them: a file is neither
		// checked nor counted, so a tree of many files in few directories is seen whole.
		return nil
	}
	if t.n++; t.n > maxTreeEntries || t.n%64 == 0 && time.Now().After(t.deadline) {
		return errBound
	}
	t.hits = t.set.CheckPath(t.e.Op, target, false, t.hits[:0])
	t.add(t.hits, target)
	if d.Type()&fs.ModeSymlink != 0 && t.e.Op == action.OpRead {
		// a program that follows links (grep -R, cp -L) reads what the link reaches, looked at
		// past the view: what the review found is not kept
		t.view.NotRepeatable()
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return err
		}
		t.hits = t.set.CheckPath(t.e.Op, real, true, t.hits[:0])
		t.add(t.hits, real)
	}
	if d.IsDir() {
		return t.dir(p, target)
	}
	return nil
}
