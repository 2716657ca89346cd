package action

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A View is one review's look at the file system: each path is looked at (lstat, stat,
// readlink) and each directory listed at most once, however many of the call's paths pass
// through it, and every later question is answered from what was seen. The many paths of one
// shell command mostly share their directories, so this spares most of the system calls.
//
// A View must live no longer than the review it serves: it never sees a change made after it
// looked, so a symbolic link swapped between two reviews is seen only because the second review
// takes a new View, or checks that what the first one's View saw still holds (Record, Seen:
// one stat per directory looked in). Within one review the answers are consistent, as one
// moment's would be.
//
// A nil *View looks at the file system each time. A View is not safe for concurrent use.
type View struct {
	lstats map[string]viewStat
	stats  map[string]viewStat
	links  map[string]viewLink
	dirs   map[string]viewDir
	// looked is what each lstat system call that found a directory saw of it, with the time
	// just before: the look at the directory that dirOf and depend would otherwise stat it
	// for again (see lookedDir).
	looked map[string]lookedDir
	// asked counts the lstat calls made for names in each directory: a small directory asked
	// about often is listed instead, once, and the listing answers the rest (see lstat).
	asked map[string]int

	// recording, lost, deps and depOn note what the answers depend on (see Record, in
	// seen.go): lost once one cannot be shown to hold later.
	recording, lost bool
	deps            []seenDep
	depOn           map[string]int // path → its index in deps

	// shared and checked take answers from, and keep them in, what earlier Views found in
	// the same directories (see Share, in dirs.go): checked is what this View knows of each
	// directory it asked about (nil: not one to keep answers of).
	shared  *Dirs
	checked map[string]*dirState
	states  []dirState // where checked's entries are, reused by the next View

	// paths holds paths ending in NUL that deps and Dirs keep (nulPath): never reused.
	paths []byte
}

// lookedDir is a directory as an lstat saw it: a directory is not a link, so what stat would
// see of it then is the same. before is the time just before the lstat.
type lookedDir struct {
	before int64
	id     fileID
}

type viewStat struct {
	mode uint32 // syscall.S_IF* bits
	size int64  // st_size, for a directory a measure of its listing's length
	err  error
}

// A directory is listed once listAfter of its names have cost an lstat each, when its own size
// says the listing is short (listMaxSize bytes: some hundreds of names). The listing costs four
// system calls, and a tree walk or glob of the same review often needs it anyway.
const (
	listAfter   = 2
	listMaxSize = 16 << 10
)

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
		links: map[string]viewLink{}, dirs: map[string]viewDir{}, asked: map[string]int{}, looked: map[string]lookedDir{},
		depOn: map[string]int{}, checked: map[string]*dirState{}}
}}

// NewView returns an empty View. Release it when the review is over.
func NewView() *View { return views.Get().(*View) }

// Release forgets what v saw and makes it available to a later NewView. v must not be used
// afterwards.
func (v *View) Release() {
	if v == nil {
		return
	}
	if v.shared != nil {
		v.publish()
		v.shared = nil
	}
	clear(v.checked)
	clear(v.states)
	v.states = v.states[:0]
	v.paths = nil
	clear(v.lstats)
	clear(v.stats)
	clear(v.links)
	clear(v.dirs)
	clear(v.asked)
	clear(v.looked)
	clear(v.depOn)
	v.deps = v.deps[:0]
	v.recording, v.lost = false, false
	views.Put(v)
}

// lstat returns the type bits of p's own mode (a link is not followed), or the error.
func (v *View) lstat(p string) (uint32, error) {
	if v == nil {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return 0, &fs.PathError{Op: "lstat", Path: p, Err: err}
		}
		return st.Mode & syscall.S_IFMT, nil
	}
	if s, ok := v.lstats[p]; ok {
		return s.mode, s.err
	}
	s, dir, kept := v.sharedLstat(p)
	if kept {
		// Answered from what an earlier View found in p's directory, which one stat showed
		// unchanged since (dirOf): the answer depends on it as one asked now would.
		st := syscall.Stat_t{Mode: s.mode}
		var errno syscall.Errno
		if s.err != nil {
			errno = syscall.ENOENT
			if pe, ok := s.err.(*fs.PathError); ok {
				errno, _ = pe.Err.(syscall.Errno)
			}
			v.dependLstat(p, dir.before, nil, errno)
		} else {
			v.dependLstat(p, dir.before, &st, 0)
		}
		v.lstats[p] = s
		return s.mode, s.err
	}
	s, listed := v.fromListing(p)
	if !listed {
		before := v.clock()
		if before == 0 && v.shared != nil {
			before = time.Now().UnixNano() // for looked, which dirOf relies on
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			v.answered(err)
			errno, _ := err.(syscall.Errno)
			v.dependLstat(p, before, nil, errno)
			s = viewStat{err: &fs.PathError{Op: "lstat", Path: p, Err: err}}
			dir.keepLstat(p, s, errno)
		} else {
			s = viewStat{mode: st.Mode & syscall.S_IFMT, size: st.Size}
			if s.mode == syscall.S_IFDIR && before != 0 {
				v.looked[p] = lookedDir{before, idOf(&st)}
			}
			v.dependLstat(p, before, &st, 0)
			dir.keepLstat(p, s, 0)
		}
	}
	v.lstats[p] = s
	return s.mode, s.err
}

// fromListing answers an lstat of p from the listing of its directory, listing it first when
// it is small and asked about often. A name in the listing exists, with the type the listing
// gives (the same lookup's answer, but for a directory that can be read and not searched, where
// lstat fails and a listed link then fails to be read: an unresolvable path, which denies); a
// name not in it does not exist. It reports false when p is to be looked at by itself.
func (v *View) fromListing(p string) (viewStat, bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return viewStat{}, false
	}
	dir, name := p[:i], p[i+1:]
	if dir == "" {
		dir = "/"
	}
	if name == "" || name == "." || name == ".." {
		return viewStat{}, false
	}
	d, ok := v.dirs[dir]
	if !ok {
		// A name with glob characters is a glob that matched nothing, taken literally: the
		// glob's own expansion lists the directory anyway, so list it now.
		if v.asked[dir]++; v.asked[dir] <= listAfter && !hasGlobMeta(name) {
			return viewStat{}, false
		}
		if s, seen := v.lstats[dir]; !seen || s.err != nil || s.mode != syscall.S_IFDIR || s.size > listMaxSize {
			return viewStat{}, false
		}
		entries, err := v.ReadDir(dir)
		d = viewDir{entries, err}
		if len(entries) > maxKeptListing {
			v.asked[dir] = -1 << 30 // not kept: its other names are looked at one by one
		}
	}
	if d.err != nil {
		return viewStat{}, false
	}
	k, found := slices.BinarySearchFunc(d.entries, name, func(e fs.DirEntry, name string) int {
		return strings.Compare(e.Name(), name)
	})
	if !found {
		return viewStat{err: &fs.PathError{Op: "lstat", Path: p, Err: syscall.ENOENT}}, true
	}
	return viewStat{mode: modeBits(d.entries[k].Type())}, true
}

// modeBits turns a DirEntry's type into syscall.S_IF* bits.
func modeBits(t fs.FileMode) uint32 {
	switch {
	case t&fs.ModeDir != 0:
		return syscall.S_IFDIR
	case t&fs.ModeSymlink != 0:
		return syscall.S_IFLNK
	case t&fs.ModeNamedPipe != 0:
		return syscall.S_IFIFO
	case t&fs.ModeSocket != 0:
		return syscall.S_IFSOCK
	case t&fs.ModeCharDevice != 0:
		return syscall.S_IFCHR
	case t&fs.ModeDevice != 0:
		return syscall.S_IFBLK
	}
	return syscall.S_IFREG
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
	before := v.clock()
	var st syscall.Stat_t
	err := syscall.Stat(p, &st)
	v.dependFinal(p, before) // what the link leads to
	mode := st.Mode & syscall.S_IFMT
	if err != nil {
		v.answered(err)
		mode, err = 0, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	if v != nil {
		v.stats[p] = viewStat{mode: mode, err: err}
	}
	return mode, err
}

func (v *View) readlink(p string) (string, error) {
	if v != nil {
		if l, ok := v.links[p]; ok {
			return l.target, l.err
		}
	}
	var dir *dirState
	if i := strings.LastIndexByte(p, '/'); i > 0 && v != nil {
		if dir = v.dirOf(p[:i]); dir != nil && dir.ok && dir.kept != nil {
			if target, ok := dir.kept.lookLink(p[i+1:]); ok {
				v.shared.hits.Add(1)
				if i := v.dependParent(p, dir.before); i >= 0 {
					v.deps[i].final = true
				}
				v.links[p] = viewLink{target, nil}
				return target, nil
			}
		}
	}
	before := v.clock()
	target, err := os.Readlink(p)
	if i := v.dependParent(p, before); i >= 0 {
		v.deps[i].final = true
	}
	if err != nil {
		v.NotRepeatable()
	}
	if v != nil {
		v.links[p] = viewLink{target, err}
	}
	if err == nil && dir != nil && dir.ok && len(dir.found.names)+len(dir.found.links) < dirsMaxNames {
		if dir.found.links == nil {
			dir.found.links = map[string]string{}
		}
		dir.found.links[p[strings.LastIndexByte(p, '/')+1:]] = target
	}
	return target, err
}

// Lstat reports whether p exists (a link is not followed) and whether it is a directory. The
// error matches fs.ErrNotExist where nothing is there.
func (v *View) Lstat(p string) (isDir bool, err error) {
	mode, err := v.lstat(p)
	return mode == syscall.S_IFDIR, err
}

// maxKeptListing bounds the listings a View keeps: a walk through directories of many files
// would otherwise hold them all until the review ends, where it held one at a time. A longer
// listing is read again if asked for again. (A directory listed to answer lookups is small:
// listMaxSize keeps it well under this.)
const maxKeptListing = 4096

// ReadDir is os.ReadDir, seen once per View (up to maxKeptListing entries): the entries sorted
// by name, and those read before an error with it. The slice is shared: callers must not
// change it.
func (v *View) ReadDir(dir string) ([]fs.DirEntry, error) {
	if v != nil {
		if d, ok := v.dirs[dir]; ok {
			return d.entries, d.err
		}
	}
	st := v.dirOf(dir)
	if st != nil && st.ok && st.kept != nil && st.kept.listed {
		v.shared.hits.Add(1)
		v.dependFinal(dir, st.before)
		v.dirs[dir] = viewDir{st.kept.listing, nil}
		return st.kept.listing, nil
	}
	before := v.clock()
	entries, err := os.ReadDir(dir)
	v.dependFinal(dir, before)
	if err != nil {
		v.NotRepeatable()
	}
	if v != nil && len(entries) <= maxKeptListing {
		v.dirs[dir] = viewDir{entries, err}
	}
	if err == nil && st != nil && st.ok && len(entries) <= dirsMaxListing {
		st.found.listing, st.found.listed = entries, true
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
