package action_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wardenhq/warden/action"
)

// dirsFixture is a workspace with files, a directory, links (relative: an absolute one is
// resolved through the temporary directory's parent, which other programs change all the
// time) and a secret directory beside it.
type dirsFixture struct {
	dir, ws, secret string
	r               *action.Resolver
}

func newDirsFixture(t testing.TB) *dirsFixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keepsCtime(t, dir)
	f := &dirsFixture{dir: dir, ws: dir + "/ws", secret: dir + "/secret"}
	for _, d := range []string{f.ws + "/out", f.ws + "/src/deep", f.secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{f.ws + "/out/a.txt", f.ws + "/src/main.go", f.secret + "/token"} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("out", f.ws+"/dest"); err != nil {
		t.Fatal(err)
	}
	if f.r, err = action.NewResolver(f.ws, dir+"/home"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *dirsFixture) settle(t testing.TB) {
	t.Helper()
	settle(t, f.dir, f.ws, f.ws+"/out", f.ws+"/src", f.ws+"/src/deep", f.secret)
}

// look asks, through a View that shares d (nil: none) and records, what a review asks: paths
// resolved through links, missing names, globs, listings and types. It returns the answers,
// with the workspace's directory written DIR, and what they depended on.
func (f *dirsFixture) look(t *testing.T, d *action.Dirs) (string, action.Seen, bool) {
	t.Helper()
	v := action.NewView()
	defer v.Release()
	v.Share(d)
	v.Record()
	r := f.r.In(v)
	var b strings.Builder
	for _, p := range []string{"dest/token", "dest/a.txt", "out/a.txt", "out/a.txt/x", "out/../dest/new.txt",
		"src/main.go", "src/deep/../main.go", "src/nothing/here", "dest", "link2/x"} {
		real, err := r.Resolve("", p)
		fmt.Fprintf(&b, "resolve %s: %s %v\n", p, real, err)
	}
	for _, g := range []string{"out/*.key", "dest/*", "src/*/", "*/a.txt"} {
		m, err := v.Glob(f.ws + "/" + g)
		fmt.Fprintf(&b, "glob %s: %q %v\n", g, m, err)
	}
	for _, p := range []string{"", "/out", "/src", "/dest", "/out/a.txt"} {
		isDir, err := v.Lstat(f.ws + p)
		fmt.Fprintf(&b, "lstat %s: %v %v\n", p, isDir, err)
		if !isDir {
			continue // a listing that fails is not kept, for the Dirs nor for Seen
		}
		entries, err := v.ReadDir(f.ws + p)
		var names []string
		for _, e := range entries {
			names = append(names, fmt.Sprintf("%s:%v", e.Name(), e.Type()))
		}
		fmt.Fprintf(&b, "list %s: %q %v\n", p, names, err)
	}
	seen, ok := v.Seen()
	return strings.ReplaceAll(b.String(), f.dir, "DIR"), seen, ok
}

// TestDirsSeesChanges checks that a View that shares a Dirs answers as a View that shares
// none would, the moment a directory it took answers about changes (a link swapped, a file made
// where a glob matched nothing, a file removed, a directory replaced or renamed), and that what
// a recording View saw through the Dirs stops holding then; and that, with nothing changed, it
// takes its answers from the Dirs.
func TestDirsSeesChanges(t *testing.T) {
	changes := []struct {
		name   string
		change func(f *dirsFixture) error
	}{
		{"link swapped", func(f *dirsFixture) error {
			if err := os.Remove(f.ws + "/dest"); err != nil {
				return err
			}
			return os.Symlink("../secret", f.ws+"/dest")
		}},
		{"link made where nothing was", func(f *dirsFixture) error { return os.Symlink("../secret", f.ws+"/link2") }},
		{"file made where a glob matched nothing", func(f *dirsFixture) error {
			return os.WriteFile(f.ws+"/out/b.key", nil, 0o600)
		}},
		{"file removed", func(f *dirsFixture) error { return os.Remove(f.ws + "/out/a.txt") }},
		{"file replaced by a directory", func(f *dirsFixture) error {
			if err := os.Remove(f.ws + "/out/a.txt"); err != nil {
				return err
			}
			return os.Mkdir(f.ws+"/out/a.txt", 0o755)
		}},
		{"directory renamed away and a link put in its place", func(f *dirsFixture) error {
			if err := os.Rename(f.ws+"/out", f.ws+"/out2"); err != nil {
				return err
			}
			return os.Symlink("../secret", f.ws+"/out")
		}},
		{"directory made anew", func(f *dirsFixture) error {
			if err := os.RemoveAll(f.ws + "/src"); err != nil {
				return err
			}
			if err := os.MkdirAll(f.ws+"/src/deep", 0o755); err != nil {
				return err
			}
			return os.Symlink("../../secret/token", f.ws+"/src/main.go")
		}},
		{"directory made where a name was missing", func(f *dirsFixture) error {
			return os.MkdirAll(f.ws+"/src/nothing/here", 0o755)
		}},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			f := newDirsFixture(t)
			d := action.NewDirs()
			f.settle(t)
			want, _, _ := f.look(t, nil)
			if got, _, _ := f.look(t, d); got != want {
				t.Fatalf("first look through the Dirs:\n%s\nwant\n%s", got, want)
			}
			before := d.Hits()
			got, seen, kept := f.look(t, d)
			if got != want {
				t.Fatalf("second look through the Dirs:\n%s\nwant\n%s", got, want)
			}
			if d.Hits() == before {
				t.Fatal("the second look took nothing from the Dirs")
			}
			if !kept || !seen.Holds() {
				t.Fatalf("what the second look saw is not kept (%v) or does not hold", kept)
			}

			if err := c.change(f); err != nil {
				t.Fatal(err)
			}
			want, _, _ = f.look(t, nil)
			if got, _, _ := f.look(t, d); got != want {
				t.Fatalf("look through the Dirs after the change:\n%s\nwant\n%s", got, want)
			}
			if seen.Holds() {
				t.Fatal("what was seen through the Dirs before the change still holds")
			}
			settle(t, f.ws, f.ws+"/out", f.ws+"/src", f.ws+"/src/deep")
			want, _, _ = f.look(t, nil)
			if got, _, _ := f.look(t, d); got != want {
				t.Fatalf("look through the Dirs once settled:\n%s\nwant\n%s", got, want)
			}
			if got, _, _ := f.look(t, d); got != want {
				t.Fatalf("second look through the Dirs once settled:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestDirsRandom changes a tree at random, many times, and checks after each change that a
// View sharing a Dirs that has seen the tree before answers as one sharing none.
func TestDirsRandom(t *testing.T) {
	f := newDirsFixture(t)
	d := action.NewDirs()
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"out/a.txt", "out/b.key", "dest", "link2", "src/main.go", "src/deep", "out/x", "src/nothing"}
	targets := []string{"out", "../secret", "src", "../secret/token", "nowhere"}
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		f.settle(t)
		if got, _, _ := f.look(t, d); got == "" {
			t.Fatal("nothing looked at")
		}
		for step := range 10 {
			p := filepath.Join(f.ws, names[rng.IntN(len(names))])
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			var what string
			switch k := rng.IntN(4); k {
			case 0:
				what = "removed"
			case 1:
				what = "a file"
				err := os.WriteFile(p, nil, 0o644)
				if err != nil && !os.IsNotExist(err) && !strings.Contains(err.Error(), "not a directory") {
					t.Fatal(err)
				}
			case 2:
				what = "a directory"
				err := os.Mkdir(p, 0o755)
				if err != nil && !os.IsNotExist(err) && !strings.Contains(err.Error(), "not a directory") {
					t.Fatal(err)
				}
			default:
				target := targets[rng.IntN(len(targets))]
				what = "a link to " + target
				err := os.Symlink(target, p)
				if err != nil && !os.IsNotExist(err) && !strings.Contains(err.Error(), "not a directory") {
					t.Fatal(err)
				}
			}
			for _, dir := range []string{f.ws + "/out", f.ws + "/src", f.ws + "/src/deep"} {
				if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
					if err := os.RemoveAll(dir); err != nil {
						t.Fatal(err)
					}
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			want, _, _ := f.look(t, nil)
			got, _, _ := f.look(t, d)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d, step %d (%s made %s): through the Dirs\n%s\nwant\n%s", round, step, p, what, got, want)
			}
		}
	}
	if d.Hits() == 0 {
		t.Fatal("no answer was taken from the Dirs")
	}
}

// TestDirsConcurrent has Views share one Dirs at once (run it with -race): each answers as a
// View that shares none.
func TestDirsConcurrent(t *testing.T) {
	f := newDirsFixture(t)
	d := action.NewDirs()
	f.settle(t)
	want, _, _ := f.look(t, nil)
	done := make(chan string)
	for range 4 {
		go func() {
			for range 50 {
				v := action.NewView()
				v.Share(d)
				r := f.r.In(v)
				_, _ = r.Resolve("", "dest/token")
				_, _ = v.Glob(f.ws + "/src/*")
				v.Release()
			}
			got, _, _ := f.look(t, d)
			done <- got
		}()
	}
	for range 4 {
		if got := <-done; got != want {
			t.Errorf("through the Dirs:\n%s\nwant\n%s", got, want)
		}
	}
}

// TestDirsNotNames checks that lstat of a path ending in "/", "." or ".." is not answered as a
// name in a directory from a kept listing.
func TestDirsNotNames(t *testing.T) {
	f := newDirsFixture(t)
	d := action.NewDirs()
	f.settle(t)
	look := func(d *action.Dirs) string {
		// the listings kept first, by a View of their own
		v := action.NewView()
		v.Share(d)
		for _, dir := range []string{"/out", "/src", ""} {
			if _, err := v.ReadDir(f.ws + dir); err != nil {
				t.Fatal(err)
			}
		}
		v.Release()
		v = action.NewView()
		defer v.Release()
		v.Share(d)
		var b strings.Builder
		for _, p := range []string{"/out/", "/out/.", "/out/..", "/dest/", "/out/a.txt/", "/dest/..", "/src/.", "/."} {
			isDir, err := v.Lstat(f.ws + p)
			fmt.Fprintf(&b, "%s: %v %v\n", p, isDir, err)
		}
		return strings.ReplaceAll(b.String(), f.dir, "DIR")
	}
	want := look(nil)
	for range 2 {
		if got := look(d); got != want {
			t.Fatalf("through the Dirs:\n%s\nwant\n%s", got, want)
		}
	}
}

// FuzzDirs resolves and looks at paths in a fixed tree through Views that share one Dirs, and
// checks that each answer is what a View that shares none gives: the Dirs, filled by the
// paths before, must never answer otherwise for a tree that does not change.
func FuzzDirs(f *testing.F) {
	for _, s := range []string{"dest/token", "out/a.txt/", "out/./a.txt/..", "dest/../out//a.txt", "src/deep/../../dest/",
		"../secret/token", "out/..", "out/.", "link2/x", "src/deep/", ".", "dest/./.", "out/a.txt/x/..", "dest/../.."} {
		f.Add(s)
	}
	fx := newDirsFixture(f)
	fx.settle(f)
	d := action.NewDirs()
	look := func(d *action.Dirs, p string) string {
		v := action.NewView()
		defer v.Release()
		v.Share(d)
		v.Record()
		real, err := fx.r.In(v).Resolve("", p)
		out := fmt.Sprintf("%s %v", real, err)
		for _, q := range []string{fx.ws + "/" + p, real} {
			isDir, err := v.Lstat(q)
			out += fmt.Sprintf("; %v %v", isDir, err)
			if isDir {
				entries, err := v.ReadDir(q)
				out += fmt.Sprintf(" %d %v", len(entries), err)
			}
		}
		return out
	}
	f.Fuzz(func(t *testing.T, p string) {
		if strings.IndexByte(p, 0) >= 0 || len(p) > 200 || strings.HasPrefix(p, "/") || strings.Count(p, "..") > 2 {
			// only paths within the tree, which nothing changes: above it, /tmp changes
			// between the two looks, whatever either looks through
			return
		}
		want := look(nil, p)
		for range 2 {
			if got := look(d, p); got != want {
				t.Fatalf("%q through the Dirs: %s; want %s", p, got, want)
			}
		}
	})
}

// TestFirstLookHolds checks what a View sharing a new Dirs saw: its lstats of directories are
// system calls, and each stands for the look at the directory that its names' answers depend
// on (no stat of its own). What it saw holds with nothing changed, and stops holding once a
// name in one of those directories changes.
func TestFirstLookHolds(t *testing.T) {
	changes := map[string]func(f *dirsFixture) error{
		"link swapped": func(f *dirsFixture) error {
			if err := os.Remove(f.ws + "/dest"); err != nil {
				return err
			}
			return os.Symlink("../secret", f.ws+"/dest")
		},
		"file made in a directory an lstat found": func(f *dirsFixture) error {
			return os.WriteFile(f.ws+"/out/b.key", nil, 0o600)
		},
		"file replaced by a directory": func(f *dirsFixture) error {
			if err := os.Remove(f.ws + "/out/a.txt"); err != nil {
				return err
			}
			return os.Mkdir(f.ws+"/out/a.txt", 0o755)
		},
		"directory renamed away and a link put in its place": func(f *dirsFixture) error {
			if err := os.Rename(f.ws+"/out", f.ws+"/out2"); err != nil {
				return err
			}
			return os.Symlink("../secret", f.ws+"/out")
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			f := newDirsFixture(t)
			f.settle(t)
			want, _, _ := f.look(t, nil)
			got, seen, kept := f.look(t, action.NewDirs())
			if got != want {
				t.Fatalf("first look through a new Dirs:\n%s\nwant\n%s", got, want)
			}
			if !kept || !seen.Holds() {
				t.Fatalf("what the first look saw is not kept (%v) or does not hold", kept)
			}
			if err := change(f); err != nil {
				t.Fatal(err)
			}
			if seen.Holds() {
				t.Fatal("what the first look saw still holds after the change")
			}
		})
	}
}
