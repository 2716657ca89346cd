package action

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// A View is one review's look at the file system: each path is looked at (lstat, stat,
// readlink) and each directory listed at most once, however many of the call's paths pass
// through it, and every later question is answered from what was seen. The many paths of one
// shell command mostly share their directories, so this spares most of the system calls.
//
// A View must live no longer than the review it serves: it never sees a change made after it
// looked, so a symbolic link swapped between two reviews is seen only because the second review
// takes a new View. Nothing is kept across reviews; Execute's review at the execution boundary
// looks afresh. Within one review the answers are consistent, as one moment's would be.
//
// A nil *View looks at the file system each time. A View is not safe for concurrent use.
type View struct {
	lstats map[string]viewStat
	stats  map[string]viewStat
	links  map[string]viewLink
	dirs   map[string]viewDir
}

type viewStat struct {
	mode uint32 // syscall.S_IF* bits
	err  error
}

type viewLink struct {
	target string
	err    error
}

type viewDir struct {
	entries []fs.DirEntry
	err     error
}

var views = sync.Pool{New: func() any {
	return &View{lstats: map[string]viewStat{}, stats: map[string]viewStat{},
		links: map[string]viewLink{}, dirs: map[string]viewDir{}}
}}

// NewView returns an empty View. Release it when the review is over.
func NewView() *View { return views.Get().(*View) }

// Release forgets what v saw and makes it available to a later NewView. v must not be used
// afterwards.
func (v *View) Release() {
	if v == nil {
		return
	}
	clear(v.lstats)
	clear(v.stats)
	clear(v.links)
	clear(v.dirs)
	views.Put(v)
}

// lstat returns the type bits of p's own mode (a link is not followed), or the error.
func (v *View) lstat(p string) (uint32, error) {
	if v != nil {
		if s, ok := v.lstats[p]; ok {
			return s.mode, s.err
		}
	}
	var st syscall.Stat_t
	err := syscall.Lstat(p, &st)
	mode := st.Mode & syscall.S_IFMT
	if err != nil {
		mode, err = 0, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	if v != nil {
		v.lstats[p] = viewStat{mode, err}
	}
	return mode, err
}

// stat returns the type bits of the mode of what p leads to, links followed, or the error.
func (v *View) stat(p string) (uint32, error) {
	if v != nil {
		if s, ok := v.stats[p]; ok {
			return s.mode, s.err
		}
	}
	// stat looks up p as lstat does, then follows a link at the end: where lstat found no link,
	// or nothing, stat finds the same. So one lstat answers both, and only a link costs more.
	if mode, err := v.lstat(p); mode != syscall.S_IFLNK {
		return mode, err
	}
	var st syscall.Stat_t
	err := syscall.Stat(p, &st)
	mode := st.Mode & syscall.S_IFMT
	if err != nil {
		mode, err = 0, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	if v != nil {
		v.stats[p] = viewStat{mode, err}
	}
	return mode, err
}

func (v *View) readlink(p string) (string, error) {
	if v != nil {
		if l, ok := v.links[p]; ok {
			return l.target, l.err
		}
	}
	target, err := os.Readlink(p)
	if v != nil {
		v.links[p] = viewLink{target, err}
	}
	return target, err
}

// Lstat reports whether p exists (a link is not followed) and whether it is a directory. The
// error matches fs.ErrNotExist where nothing is there.
func (v *View) Lstat(p string) (isDir bool, err error) {
	mode, err := v.lstat(p)
	return mode == syscall.S_IFDIR, err
}

// ReadDir is os.ReadDir, seen once per View: the entries sorted by name, and those read before
// an error with it. The slice is shared: callers must not change it.
func (v *View) ReadDir(dir string) ([]fs.DirEntry, error) {
	if v != nil {
		if d, ok := v.dirs[dir]; ok {
			return d.entries, d.err
		}
	}
	entries, err := os.ReadDir(dir)
	if v != nil {
		v.dirs[dir] = viewDir{entries, err}
	}
	return entries, err
}

// Glob is filepath.Glob, through the View: the same matches, in the same order, and the same
// errors, with each directory listed once however many globs list it.
func (v *View) Glob(pattern string) ([]string, error) {
	return v.glob(pattern, 0)
}

func (v *View) glob(pattern string, depth int) (matches []string, err error) {
	if depth == 10000 { // as filepath.Glob bounds its recursion
		return nil, filepath.ErrBadPattern
	}
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	if !hasGlobMeta(pattern) {
		if _, err := v.lstat(pattern); err != nil {
			return nil, nil
		}
		return []string{pattern}, nil
	}
	dir, file := filepath.Split(pattern)
	switch dir {
	case "":
		dir = "."
	case "/":
	default:
		dir = dir[:len(dir)-1]
	}
	if !hasGlobMeta(dir) {
		return v.globDir(dir, file, nil)
	}
	if dir == pattern {
		return nil, filepath.ErrBadPattern
	}
	m, err := v.glob(dir, depth+1)
	if err != nil {
		return nil, err
	}
	for _, d := range m {
		if matches, err = v.globDir(d, file, matches); err != nil {
			return matches, err
		}
	}
	return matches, nil
}

// globDir appends the names in dir that match pattern, in order; a directory that cannot be
// read adds nothing, as filepath.Glob ignores it.
func (v *View) globDir(dir, pattern string, matches []string) ([]string, error) {
	if mode, err := v.stat(dir); err != nil || mode != syscall.S_IFDIR {
		return matches, nil
	}
	entries, _ := v.ReadDir(dir)
	for _, e := range entries {
		ok, err := filepath.Match(pattern, e.Name())
		if err != nil {
			return matches, err
		}
		if ok {
			matches = append(matches, filepath.Join(dir, e.Name()))
		}
	}
	return matches, nil
}

func hasGlobMeta(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}
