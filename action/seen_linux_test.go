package action_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/action"
)

// settle waits until each path has been unchanged for longer than action.SeenMargin, so that
// a recording View relies on what it sees there. It waits on the clock, polling the paths'
// change times: the condition, not a guess at how long it takes.
func settle(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		for {
			var st unix.Stat_t
			if err := unix.Stat(p, &st); err != nil {
				t.Fatal(err)
			}
			age := time.Since(time.Unix(st.Ctim.Unix()))
			if age > action.SeenMargin+time.Millisecond {
				break
			}
			time.Sleep(action.SeenMargin + time.Millisecond - age)
		}
	}
}

// keepsCtime skips a test where the temporary directory is on a file system a View does not
// rely on.
func keepsCtime(t testing.TB, dir string) {
	t.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	switch uint32(fs.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.OVERLAYFS_SUPER_MAGIC:
	default:
		t.Skipf("the temporary directory is on a file system (%#x) whose answers a View does not keep", fs.Type)
	}
}

type seenFixture struct {
	dir, ws, out, secret string
	r                    *action.Resolver
}

func newSeenFixture(t *testing.T) *seenFixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keepsCtime(t, dir)
	f := &seenFixture{dir: dir, ws: dir + "/ws", out: dir + "/ws/out", secret: dir + "/secret"}
	for _, d := range []string{f.out, f.secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Relative links: an absolute one is resolved from /, through the temporary directory's
	// parent, which other programs change all the time.
	if err := os.Symlink("out", f.ws+"/dest"); err != nil {
		t.Fatal(err)
	}
	if f.r, err = action.NewResolver(f.ws, dir+"/home"); err != nil {
		t.Fatal(err)
	}
	return f
}

// look resolves paths and globs as a review would, through a recording View, and returns what
// it found and what that depended on.
func (f *seenFixture) look(t *testing.T) ([]string, action.Seen, bool) {
	t.Helper()
	v := action.NewView()
	defer v.Release()
	v.Record()
	r := f.r.In(v)
	var found []string
	for _, p := range []string{"dest/token", "out/a.txt", f.ws + "/out/../dest/x"} {
		real, err := r.Resolve("", p)
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, real)
	}
	m, err := v.Glob(f.ws + "/out/*.key")
	if err != nil {
		t.Fatal(err)
	}
	found = append(found, m...)
	seen, ok := v.Seen()
	return found, seen, ok
}

// TestSeenHolds checks that what a recording View saw holds while nothing it depended on
// changes, and not after a link it followed is swapped, a file is made where it listed, or a
// directory it looked in is made unreadable.
func TestSeenHolds(t *testing.T) {
	changes := []struct {
		name   string
		change func(f *seenFixture) error
	}{
		{"link swapped", func(f *seenFixture) error {
			if err := os.Remove(f.ws + "/dest"); err != nil {
				return err
			}
			return os.Symlink("../secret", f.ws+"/dest")
		}},
		{"link swapped by rename", func(f *seenFixture) error {
			if err := os.Symlink("../secret", f.ws+"/dest.new"); err != nil {
				return err
			}
			return os.Rename(f.ws+"/dest.new", f.ws+"/dest")
		}},
		{"file made in a listed directory", func(f *seenFixture) error {
			return os.WriteFile(f.out+"/b.key", nil, 0o600)
		}},
		{"file made where a name was missing", func(f *seenFixture) error {
			return os.WriteFile(f.out+"/a.txt", nil, 0o600)
		}},
		{"directory made unreadable", func(f *seenFixture) error {
			return os.Chmod(f.out, 0o300)
		}},
		{"workspace replaced", func(f *seenFixture) error {
			if err := os.Rename(f.ws, f.dir+"/ws.old"); err != nil {
				return err
			}
			return os.MkdirAll(f.out, 0o755)
		}},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			f := newSeenFixture(t)
			settle(t, f.dir, f.ws, f.out, f.secret, filepath.Dir(f.dir))
			found, seen, ok := f.look(t)
			if !ok || seen.Len() == 0 {
				t.Fatalf("a View that looked at settled directories kept nothing (%v, %d)", ok, seen.Len())
			}
			if !seen.Holds() {
				t.Fatal("what was seen does not hold, and nothing changed")
			}
			if again, _, _ := f.look(t); !equal(again, found) {
				t.Fatalf("a second look found %q; the first %q", again, found)
			}
			if err := c.change(f); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(f.out, 0o755) })
			if seen.Holds() {
				t.Fatal("what was seen still holds after the change")
			}
		})
	}
}

// TestSeenNotKept checks what a View does not keep: directories changed a moment before it
// looked, answers other than a type or "no such file", and a look past the View.
func TestSeenNotKept(t *testing.T) {
	f := newSeenFixture(t)
	if _, _, ok := f.look(t); ok {
		t.Error("a View kept what it saw in directories changed a moment before")
	}
	settle(t, f.dir, f.ws, f.out, f.secret, filepath.Dir(f.dir))
	if _, _, ok := f.look(t); !ok {
		t.Fatal("settled: nothing kept")
	}

	v := action.NewView()
	v.Record()
	if _, err := f.r.In(v).Resolve("", "out/x"); err != nil {
		t.Fatal(err)
	}
	v.NotRepeatable()
	if _, ok := v.Seen(); ok {
		t.Error("a View told it was looked past still kept what it saw")
	}
	v.Release()

	v = action.NewView()
	defer v.Release()
	if _, err := f.r.In(v).Resolve("", "out/x"); err != nil {
		t.Fatal(err)
	}
	if _, ok := v.Seen(); ok {
		t.Error("a View that was not recording reported what it saw")
	}

	if os.Geteuid() != 0 { // root reads a directory of any mode
		if err := os.Chmod(f.out, 0o000); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(f.out, 0o755)
		settle(t, f.out)
		v := action.NewView()
		defer v.Release()
		v.Record()
		f.r.In(v).Resolve("", "out/x")
		if _, ok := v.Seen(); ok {
			t.Error("a View kept a permission error")
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSeenAskedAgain checks that a directory that changed, where only names were looked up,
// has those names looked up again: what was seen holds while their answers are the same, is
// renewed once the directory has settled, and does not hold once a name's answer differs.
func TestSeenAskedAgain(t *testing.T) {
	f := newSeenFixture(t)
	settle(t, f.dir, f.ws, f.out)
	look := func() (action.Seen, bool) {
		v := action.NewView()
		defer v.Release()
		v.Record()
		for _, p := range []string{"out/a.txt", "out/b.txt"} {
			if _, err := f.r.In(v).Resolve("", p); err != nil {
				t.Fatal(err)
			}
		}
		return v.Seen()
	}
	seen, ok := look()
	if !ok {
		t.Fatal("settled: nothing kept")
	}
	if holds, _, renew := seen.Check(); !holds || renew {
		t.Fatalf("nothing changed: holds %v, renewed %v", holds, renew)
	}
	if err := os.WriteFile(f.out+"/other.txt", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if holds, _, renew := seen.Check(); !holds || renew {
		t.Fatalf("a name not looked up was made a moment ago: holds %v, renewed %v; want it to hold, not renewed", holds, renew)
	}
	settle(t, f.out)
	holds, renewed, renew := seen.Check()
	if !holds || !renew {
		t.Fatalf("settled: holds %v, renewed %v; want both", holds, renew)
	}
	if holds, _, renew := renewed.Check(); !holds || renew {
		t.Fatalf("the renewed: holds %v, renewed %v; want it to hold as it is", holds, renew)
	}
	if err := os.Symlink("../../secret/token", f.out+"/a.txt"); err != nil {
		t.Fatal(err)
	}
	if seen.Holds() || renewed.Holds() {
		t.Fatal("a name looked up is now a link, and what was seen still holds")
	}
}
