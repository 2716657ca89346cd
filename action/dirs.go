package action

import (
	"container/list"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Dirs keeps, from one review to the next, what Views found in directories: the answers of
// lstat and readlink for names in a directory, and its listing. A View that shares a Dirs
// (View.Share) takes an answer from it only after one stat of the directory (links followed,
// as the kernel follows them to look a name up) shows it unchanged since the answer was kept,
// by the rule Seen relies on: same device, inode, type, permissions, owner, link count, size,
// and modification and change times, the change time older than SeenMargin when the
// directory was looked at, on a file system that moves it on every change to the entries
// (trustedFS). A directory changed since is looked at afresh, and what was kept of it
// replaced; one changed within SeenMargin of the look is neither taken from nor kept. So a
// first review of a new command, in directories that earlier reviews looked in, costs one stat
// per directory instead of an lstat per name and four system calls per listing.
//
// What a link leads to (a stat through it) is never kept, nor any answer other than a type,
// "no such file" or "not a directory", nor anything about names in /, whose entries an
// earlier review's own rule covers (see dependLstat). Dirs is bounded (dirsMax directories,
// dirsMaxNames names and links and dirsMaxListing listed entries each, least recently used forgotten)
// and safe for concurrent use; what it holds is never changed once kept, only replaced.
type Dirs struct {
	mu    sync.Mutex
	order *list.List // of *dirAnswers, most recently used first
	byDir map[string]*list.Element

	hits atomic.Int64
}

// Hits reports how many answers Views took from d.
func (d *Dirs) Hits() int64 { return d.hits.Load() }

// The bounds of a Dirs: at most dirsMax × (dirsMaxNames + dirsMaxListing) entries of some tens
// of bytes each, under 20 MB, and far less where directories are small.
const (
	dirsMax        = 512
	dirsMaxNames   = 128
	dirsMaxListing = 256
	dirsLayers     = 8
)

// NewDirs returns an empty Dirs.
func NewDirs() *Dirs {
	return &Dirs{order: list.New(), byDir: map[string]*list.Element{}}
}

// dirAnswers is what was found in one directory while it was id. Never changed once in Dirs.
type dirAnswers struct {
	dir   string
	path  []byte // dir ending in NUL, for statz
	id    fileID
	names map[string]viewStat
	links map[string]string
	// under holds more names and links (layers of them: merge); count is how many in all.
	under         *dirAnswers
	layers, count int
	// listing is the directory's entries, sorted, when it was listed (listed).
	listing []fs.DirEntry
	listed  bool
}

// answer is the lstat of name in the directory, from what was found there.
func (a *dirAnswers) answer(name string) (viewStat, bool) {
	if a == nil {
		return viewStat{}, false
	}
	if s, ok := a.lookName(name); ok {
		return s, true
	}
	if !a.listed {
		return viewStat{}, false
	}
	k, found := slices.BinarySearchFunc(a.listing, name, func(e fs.DirEntry, name string) int {
		return strings.Compare(e.Name(), name)
	})
	if !found {
		return viewStat{err: syscall.ENOENT}, true
	}
	return viewStat{mode: modeBits(a.listing[k].Type())}, true
}

// get returns what is kept of dir, if anything.
func (d *Dirs) get(dir string) *dirAnswers {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.byDir[dir]
	if !ok {
		return nil
	}
	d.order.MoveToFront(e)
	return e.Value.(*dirAnswers)
}

// forget drops what is kept of dir if it is a (found stale).
func (d *Dirs) forget(a *dirAnswers) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.byDir[a.dir]; ok && e.Value.(*dirAnswers) == a {
		d.order.Remove(e)
		delete(d.byDir, a.dir)
	}
}

// put keeps a, merged with what is kept of the same directory in the same state, in place of
// what is kept of it in another state.
func (d *Dirs) put(a *dirAnswers) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.byDir[a.dir]; ok {
		old := e.Value.(*dirAnswers)
		if old.id == a.id {
			a = merge(old, a)
		} else if old.id.ctime > a.id.ctime {
			return // a later state is kept already
		}
		e.Value = a
		d.order.MoveToFront(e)
		return
	}
	d.byDir[a.dir] = d.order.PushFront(a)
	if d.order.Len() > dirsMax {
		last := d.order.Back()
		d.order.Remove(last)
		delete(d.byDir, last.Value.(*dirAnswers).dir)
	}
}

// merge returns the answers of a and b, of the same directory in the same state, in a new
// dirAnswers within the bounds. The names and links b adds are a layer over a's, which it
// shares (never changed once kept), so that a review that found one new name in a directory of
// many does not copy them all; past dirsLayers layers they are copied into one.
func merge(a, b *dirAnswers) *dirAnswers {
	m := &dirAnswers{dir: a.dir, path: a.path, id: a.id, listing: a.listing, listed: a.listed,
		under: a, layers: a.layers + 1, count: a.count}
	if !m.listed && b.listed {
		m.listing, m.listed = b.listing, true
	}
	for k, v := range b.names {
		if m.count >= dirsMaxNames {
			break
		}
		if _, ok := a.lookName(k); ok {
			continue
		}
		if m.names == nil {
			m.names = make(map[string]viewStat, len(b.names))
		}
		m.names[k] = v
		m.count++
	}
	for k, v := range b.links {
		if m.count >= dirsMaxNames {
			break
		}
		if _, ok := a.lookLink(k); ok {
			continue
		}
		if m.links == nil {
			m.links = map[string]string{}
		}
		m.links[k] = v
		m.count++
	}
	if m.names == nil && m.links == nil {
		m.under, m.layers = a.under, a.layers // nothing new but, perhaps, the listing
		m.names, m.links = a.names, a.links
	}
	if m.layers > dirsLayers {
		m.flatten()
	}
	return m
}

// flatten copies the layers of names and links below a into a's own.
func (a *dirAnswers) flatten() {
	names := map[string]viewStat{}
	links := map[string]string{}
	var layers []*dirAnswers
	for l := a; l != nil; l = l.under {
		layers = append(layers, l)
	}
	for _, l := range slices.Backward(layers) {
		maps.Copy(names, l.names)
		maps.Copy(links, l.links)
	}
	a.names, a.links, a.under, a.layers = names, links, nil, 0
}

// lookName is the lstat answer kept for name, in a's layers.
func (a *dirAnswers) lookName(name string) (viewStat, bool) {
	for l := a; l != nil; l = l.under {
		if s, ok := l.names[name]; ok {
			return s, true
		}
	}
	return viewStat{}, false
}

// lookLink is the link target kept for name, in a's layers.
func (a *dirAnswers) lookLink(name string) (string, bool) {
	for l := a; l != nil; l = l.under {
		if t, ok := l.links[name]; ok {
			return t, true
		}
	}
	return "", false
}

// dirState is what one View knows of a directory it asked about, when it shares a Dirs.
type dirState struct {
	// ok: the directory was looked at (id) and can be relied on: what is kept of it in this
	// state is used, and what is found in it is kept.
	ok   bool
	id   fileID
	path []byte // the directory ending in NUL
	// before is the time just before the directory was looked at (for depend).
	before int64
	kept   *dirAnswers // what Dirs held of it in this state, or nil
	found  dirAnswers  // what this View found in it itself
}

// Share makes v take answers from d and keep what it finds there (see Dirs). It is meant for a
// new View, before its first question.
func (v *View) Share(d *Dirs) {
	if v != nil {
		v.shared = d
	}
}

// dirOf returns what v knows of dir, the directory of the names it is about to ask about (or
// to list), looking at it once per View; nil when v shares no Dirs or dir is not one to keep
// answers of.
func (v *View) dirOf(dir string) *dirState {
	if v == nil || v.shared == nil {
		return nil
	}
	if st, ok := v.checked[dir]; ok {
		return st
	}
	if dir == "/" || !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || strings.IndexByte(dir, 0) >= 0 {
		v.checked[dir] = nil
		return nil
	}
	kept := v.shared.get(dir)
	if len(v.states) == cap(v.states) {
		// a new array: the entries of the one before stay where they are, as checked holds them
		v.states = make([]dirState, 0, max(8, 2*cap(v.states)))
	}
	v.states = append(v.states, dirState{kept: kept})
	st := &v.states[len(v.states)-1]
	if kept != nil {
		st.path = kept.path
	} else {
		st.path = v.nulPath(dir)
	}
	st.before = time.Now().UnixNano()
	var id fileID
	ok := false
	if i, seen := v.depOn[dir]; seen {
		// A recording View looked at it already, and relied on it then (noteDep): no
		// change since would have escaped that look, so it stands for this one.
		id, ok = v.deps[i].id, true
	} else if l, seen := v.looked[dir]; seen {
		// An lstat of this review found it a directory: that was a look at it, after
		// l.before, and the View answers as of it, as it answers the lstat.
		id, ok, st.before = l.id, true, l.before
	} else {
		id, ok = statID(st.path)
	}
	st.id = id
	st.ok = ok && id.errno == 0 && id.mode&syscall.S_IFMT == syscall.S_IFDIR &&
		id.ctime <= st.before-int64(SeenMargin) && trustedFS(dir, id.dev)
	if kept != nil && (!st.ok || kept.id != id) {
		v.shared.forget(kept)
		st.kept = nil
	}
	if ok {
		// This look is the one a recording View's answers about dir depend on (depend).
		v.noteDep(dir, st.path, st.before, id, nil)
	}
	v.checked[dir] = st
	return st
}

// sharedLstat answers lstat(p) from what is kept of p's directory.
func (v *View) sharedLstat(p string) (s viewStat, st *dirState, ok bool) {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 || v == nil || v.shared == nil {
		return viewStat{}, nil, false
	}
	switch p[i+1:] {
	case "", ".", "..":
		return viewStat{}, nil, false // not a name in the directory: neither taken nor kept
	}
	st = v.dirOf(p[:i])
	if st == nil || !st.ok {
		return viewStat{}, st, false
	}
	if s, ok = st.kept.answer(p[i+1:]); ok {
		v.shared.hits.Add(1)
	}
	if _, pe := s.err.(*fs.PathError); ok && s.err != nil && !pe {
		// missing from the listing: kept as a name too, so that its error is made once
		s.err = &fs.PathError{Op: "lstat", Path: p, Err: s.err}
		st.keepLstat(p, s, syscall.ENOENT)
	}
	return s, st, ok
}

// keepLstat notes the answer of lstat(p), a system call's, in st (p's directory) to be kept:
// a type, or "no such file" or "not a directory" (errno), as an *fs.PathError naming p.
func (st *dirState) keepLstat(p string, s viewStat, errno syscall.Errno) {
	if st == nil || !st.ok || len(st.found.names)+len(st.found.links) >= dirsMaxNames {
		return
	}
	if s.err != nil && errno != syscall.ENOENT && errno != syscall.ENOTDIR {
		return
	}
	if st.found.names == nil {
		st.found.names = map[string]viewStat{}
	}
	st.found.names[p[strings.LastIndexByte(p, '/')+1:]] = s
}

// publish keeps in v.shared what v found in directories it could rely on.
func (v *View) publish() {
	for dir, st := range v.checked {
		if st == nil || !st.ok || st.found.names == nil && st.found.links == nil && !st.found.listed {
			continue
		}
		a := new(dirAnswers)
		*a = st.found
		a.dir, a.path, a.id = dir, st.path, st.id
		a.count = len(a.names) + len(a.links)
		if st.kept != nil {
			if a = merge(st.kept, a); a.count == st.kept.count && a.listed == st.kept.listed {
				continue // nothing new
			}
		}
		v.shared.put(a)
	}
}
