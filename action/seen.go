package action

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A View that records (see Record) notes, with each question it puts to the file system,
// what the answer depends on: the directory a name is looked up or a link read in, the
// directory listed, the file a link leads to; and, for a directory whose names were only
// looked up, the answers (see Seen.Check). The answer to "what is name in d" is the same as
// long as d resolves to the same directory, unchanged: one stat of d (links followed, as the
// kernel follows them to look the name up) then tells whether every answer about d's names
// still holds. So a review that looked at a dozen paths in three directories can be shown to
// still hold with three stats, without resolving any path again (Seen.Holds).
//
// A directory is unchanged when its device, inode, type, permissions, owner, link count, size,
// and modification and change times are. The change time (ctime) moves on every change to the
// directory's entries, and no system call sets it to a chosen value: a link swapped, a file
// made, removed or renamed in it moves it. A change within the clock's tick of the look could
// keep the same ctime, so a directory changed less than SeenMargin before the question was
// put is not relied on: what was seen is then not kept (Seen reports false). (A directory is
// looked at just after the question: one that passes has not changed since before it.) The kernel's timestamps
// come from a clock that lags the one read here by at most a tick (some milliseconds), far
// inside SeenMargin.
//
// Only file systems that keep ctime that way are relied on (see trustedFS); on any other, and
// for any answer other than an entry's type, "no such file" or "not a directory" (permission
// denied, a loop of links, an I/O error), Seen reports false, and nothing is kept.

// SeenMargin is how long a directory must have been unchanged, when a recording View looked
// at it, for what was seen in it to be kept (see Seen).
const SeenMargin = 100 * time.Millisecond

// fileID is what a file or directory was, as a stat (links followed) saw it, or why it could
// not be seen.
type fileID struct {
	errno        syscall.Errno // ENOENT or ENOTDIR: nothing there; 0: the rest says what
	dev, ino     uint64
	nlink        uint64
	mode         uint32
	uid, gid     uint32
	size         int64
	mtime, ctime int64 // nanoseconds since the epoch
}

// statID stats p, a path ending in NUL, following links. ok is false when the answer is
// neither a file nor "no such file" / "not a directory".
func statID(p []byte) (id fileID, ok bool) {
	var st syscall.Stat_t
	if err := statz(p, &st); err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) && (errno == syscall.ENOENT || errno == syscall.ENOTDIR) {
			return fileID{errno: errno}, true
		}
		return fileID{}, false
	}
	return idOf(&st), true
}

// idOf is the fileID of what st describes.
func idOf(st *syscall.Stat_t) fileID {
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), nlink: uint64(st.Nlink), mode: uint32(st.Mode),
		uid: st.Uid, gid: st.Gid, size: int64(st.Size), mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// seenDep is a directory (or a file a link led to) that answers depended on, with what it
// was; and, where every answer that depended on it was an lstat, the answers, so that they
// can be asked again when it has changed (see Seen.Check).
type seenDep struct {
	path []byte // ending in NUL
	id   fileID
	// self: lstat(path) was answered "a directory, id's inode" (see dependLstat).
	self bool
	// names are the lstat answers of names in the directory.
	names []seenName
	// final: an answer depended on it other than by an lstat (a listing, a link read, a stat
	// through a link): it cannot be asked again name by name.
	final bool
}

type seenName struct {
	path  []byte // the directory's path, a slash and the name, ending in NUL
	mode  uint32 // syscall.S_IF* bits, when errno is 0
	errno syscall.Errno
}

// Seen is what the answers of a recording View depended on: see Holds. The zero value holds
// nothing. A Seen is not changed once made, and is safe for concurrent use.
type Seen struct {
	deps []seenDep
}

// Holds reports whether every answer the View gave would be the same now: each directory (or
// file) the answers depended on is still what it was. It costs one stat per directory.
func (s Seen) Holds() bool {
	ok, _, _ := s.Check()
	return ok
}

// Check is Holds, and more: a directory that has changed, where every answer that depended on
// it was an lstat (of the directory in /, or of names in it), has those lstats put again, and
// the answers hold if they are the same now (/tmp changes all the time; the names a command
// looked up in it seldom do). Where that happened, renewed is what was seen with the
// directory as it is now, and true, when it has been unchanged long enough to be relied on
// (see SeenMargin); a caller keeps renewed in place of s.
func (s Seen) Check() (holds bool, renewed Seen, renew bool) {
	if s.deps == nil {
		return false, Seen{}, false
	}
	for i, d := range s.deps {
		id, ok := statID(d.path)
		if ok && id == d.id {
			continue
		}
		if !ok || d.final {
			return false, Seen{}, false
		}
		before := time.Now().UnixNano()
		if id, ok = statID(d.path); !ok || !d.asked() {
			return false, Seen{}, false
		}
		if d.self && (id.errno != 0 || id.dev != d.id.dev || id.ino != d.id.ino) {
			return false, Seen{}, false
		}
		if id.errno == 0 && id.ctime <= before-int64(SeenMargin) && trustedFS(string(d.path[:len(d.path)-1]), id.dev) {
			if !renew {
				renewed.deps, renew = slices.Clone(s.deps), true
			}
			renewed.deps[i].id = id
		}
	}
	if !renew {
		return true, Seen{}, false
	}
	return true, renewed, true
}

// asked puts d's lstats again, and reports whether each has the answer it had.
func (d seenDep) asked() bool {
	var st syscall.Stat_t
	if d.self {
		if err := lstatz(d.path, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR ||
			uint64(st.Dev) != d.id.dev || uint64(st.Ino) != d.id.ino {
			return false
		}
	}
	for _, n := range d.names {
		err := lstatz(n.path, &st)
		switch {
		case err == nil:
			if n.errno != 0 || st.Mode&syscall.S_IFMT != n.mode {
				return false
			}
		case err != n.errno || n.errno == 0:
			return false
		}
	}
	return true
}

// Len is how many directories and files the answers depended on.
func (s Seen) Len() int { return len(s.deps) }

// Record makes v note what its answers depend on from now on, for Seen. It is meant for a new
// View, before its first question.
func (v *View) Record() {
	if v != nil {
		v.recording = true
		v.lost = false
	}
}

// NotRepeatable tells a recording View that its user looked at the file system some other way
// (or that what it found depends on time): what v saw is then not to be kept (Seen reports
// false).
func (v *View) NotRepeatable() {
	if v != nil {
		v.lost = true
	}
}

// Seen returns what v's answers depended on, and true; or false when v was not recording, or
// some answer cannot be shown to hold later (see Record).
func (v *View) Seen() (Seen, bool) {
	if v == nil || !v.recording || v.lost {
		return Seen{}, false
	}
	return Seen{deps: append([]seenDep{}, v.deps...)}, true
}

// clock is the time before a question to the file system, for depend; 0 when v does not
// record.
func (v *View) clock() int64 {
	if v == nil || !v.recording || v.lost {
		return 0
	}
	return time.Now().UnixNano()
}

// depend notes, after a question put at the time before (from clock) whose answer depends on
// p (a directory whose names were looked up or listed, or a file reached through a link), what
// p is now. The answer holds as long as p is what it is now when p has not changed since
// before: so p's ctime must be older than before by SeenMargin, or nothing is kept.
// It returns the index of p's entry in v.deps, or -1 when nothing is noted.
func (v *View) depend(p string, before int64) int {
	return v.dependID(p, before, nil)
}

// dependFinal is depend, for an answer that cannot be asked again name by name.
func (v *View) dependFinal(p string, before int64) {
	if i := v.depend(p, before); i >= 0 {
		v.deps[i].final = true
	}
}

// dependID is depend; when want is set, p must be that directory (an lstat's answer).
func (v *View) dependID(p string, before int64, want *syscall.Stat_t) int {
	if v == nil || !v.recording || v.lost {
		return -1
	}
	if i, ok := v.depOn[p]; ok {
		if want != nil {
			d := &v.deps[i]
			if d.id.errno != 0 || d.id.dev != uint64(want.Dev) || d.id.ino != uint64(want.Ino) {
				v.lost = true
				return -1
			}
			d.self = true
		}
		return i
	}
	if !strings.HasPrefix(p, "/") || strings.IndexByte(p, 0) >= 0 {
		v.lost = true // relative, it depends on the working directory too; or no path at all
		return -1
	}
	cp := v.nulPath(p)
	var id fileID
	ok := false
	if l, seen := v.looked[p]; seen && l.before >= before {
		// An lstat of p itself found a directory after the question was put: that answer
		// is the look (a directory is no link, so stat would see the same).
		id, ok = l.id, true
	} else {
		id, ok = statID(cp)
	}
	if !ok {
		v.lost = true
		return -1
	}
	return v.noteDep(p, cp, before, id, want)
}

// noteDep is dependID once p (cp, ending in NUL, not changed afterwards) has been looked at:
// id is what statID said of it, looking after the time before. A View that shares a Dirs
// looks at a directory before it asks about its names (dirOf): the answers hold as long as
// the directory is what it was then, by the same rule.
func (v *View) noteDep(p string, cp []byte, before int64, id fileID, want *syscall.Stat_t) int {
	if v == nil || !v.recording || v.lost {
		return -1
	}
	if i, ok := v.depOn[p]; ok {
		return i
	}
	switch {
	case id.errno == 0 && (id.ctime > before-int64(SeenMargin) || !trustedFS(p, id.dev)):
		v.lost = true
		return -1
	case want != nil && (id.errno != 0 || id.dev != uint64(want.Dev) || id.ino != uint64(want.Ino)):
		v.lost = true
		return -1
	}
	v.depOn[p] = len(v.deps)
	v.deps = append(v.deps, seenDep{path: cp, id: id, self: want != nil})
	return len(v.deps) - 1
}

// nulPathChunk is the size of the memory a View takes at a time for the paths it keeps.
const nulPathChunk = 1 << 10

// nulPath returns p ending in NUL, in memory that v never reuses (a Seen or a Dirs may hold it
// after v is released): one allocation for the many paths of a review.
func (v *View) nulPath(p string) []byte {
	if cap(v.paths)-len(v.paths) < len(p)+1 {
		v.paths = make([]byte, 0, max(nulPathChunk, len(p)+1))
	}
	n := len(v.paths)
	v.paths = append(v.paths, p...)
	v.paths = append(v.paths, 0)
	return v.paths[n:len(v.paths):len(v.paths)]
}

// dependParent notes what the directory of the name p is now (see depend).
func (v *View) dependParent(p string, before int64) int {
	if v == nil || !v.recording || v.lost {
		return -1
	}
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0:
		v.lost = true
		return -1
	case i == 0:
		return v.depend("/", before)
	default:
		return v.depend(p[:i], before)
	}
}

// maxSeenNames bounds the lstat answers noted for one directory: past it, the directory is
// not asked again name by name.
const maxSeenNames = 32

// dependLstat notes what the answer of lstat(p), st or errno, depends on, with the answer:
// the directory p is in; but for a directory in /, the directory itself. Its entry in / cannot
// change without its ctime changing: it is renamed (which moves the ctime of what is renamed)
// or another takes its place (another inode); and / itself is no link and has no parent. So
// /tmp is looked at again, not /, which changes whenever anything is made at the top.
func (v *View) dependLstat(p string, before int64, st *syscall.Stat_t, errno syscall.Errno) {
	if v == nil || !v.recording || v.lost {
		return
	}
	if errno == 0 && st.Mode&syscall.S_IFMT == syscall.S_IFDIR && len(p) > 1 && strings.LastIndexByte(p, '/') == 0 {
		v.dependID(p, before, st)
		return
	}
	i := v.dependParent(p, before)
	if i < 0 {
		return
	}
	d := &v.deps[i]
	if d.final || len(d.names) == maxSeenNames {
		d.final = true
		return
	}
	n := seenName{path: v.nulPath(p), errno: errno}
	if errno == 0 {
		n.mode = st.Mode & syscall.S_IFMT
	}
	if d.names == nil {
		d.names = make([]seenName, 0, 8) // most directories are asked about a few names
	}
	d.names = append(d.names, n)
}

// answered tells a recording View how one of its questions was answered: anything but a
// result, "no such file" or "not a directory" is not kept.
func (v *View) answered(err error) {
	if err == nil || v == nil || !v.recording {
		return
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) || errno != syscall.ENOENT && errno != syscall.ENOTDIR {
		v.lost = true
	}
}

// trustedFSes caches, by device, whether its file system keeps ctime as Seen relies on.
var trustedFSes sync.Map // uint64 → bool

// trustedFS reports whether the file system of p (on device dev) moves a directory's ctime on
// every change to its entries.
func trustedFS(p string, dev uint64) bool {
	if ok, seen := trustedFSes.Load(dev); seen {
		return ok.(bool)
	}
	ok := fsKeepsCtime(p)
	trustedFSes.Store(dev, ok)
	return ok
}
