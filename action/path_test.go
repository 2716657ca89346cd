package action_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden/action"
)

// tree builds a directory with real symbolic links and returns its real path.
func tree(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, link string) {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	mk("ws/src")
	mk("etc/secret")
	mk("home/u/.ssh")
	if err := os.WriteFile(filepath.Join(dir, "etc/secret/key"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln(filepath.Join(dir, "etc/secret"), "ws/abs")          // absolute link out of the workspace
	ln("../etc/secret", "ws/rel")                           // relative link out of it
	ln("src", "ws/inside")                                  // a link that stays inside
	ln("chain2", "ws/chain1")                               // a chain of links
	ln("abs/key", "ws/chain2")                              //
	ln("loop2", "ws/loop1")                                 // a loop
	ln("loop1", "ws/loop2")                                 //
	ln(filepath.Join(dir, "etc/secret/sub"), "ws/dangling") // a link to something that does not exist
	return dir
}

func TestResolve(t *testing.T) {
	dir := tree(t)
	ws := dir + "/ws"
	r := &action.Resolver{Root: ws, Home: dir + "/home/u"}
	tests := []struct {
		name, base, give, want string
	}{
		{"relative", "", "src/main.go", ws + "/src/main.go"},
		{"absolute", "", dir + "/etc/secret/key", dir + "/etc/secret/key"},
		{"dot dot lexically inside", "", "src/../src/x", ws + "/src/x"},
		{"dot dot out of the workspace", "", "../etc/secret/key", dir + "/etc/secret/key"},
		{"doubled slashes", "", "src//x///y", ws + "/src/x/y"},
		{"absolute link", "", "abs/key", dir + "/etc/secret/key"},
		{"relative link", "", "rel/key", dir + "/etc/secret/key"},
		{"link then dot dot goes to the target's parent", "", "abs/../secret/key", dir + "/etc/secret/key"},
		{"link inside the workspace", "", "inside/a.go", ws + "/src/a.go"},
		{"chain of links", "", "chain1", dir + "/etc/secret/key"},
		{"dangling link: its target, lexically", "", "dangling/x", dir + "/etc/secret/sub/x"},
		{"missing then dot dot back onto a link", "", "nothere/../abs/key", dir + "/etc/secret/key"},
		{"home", "", "~/.ssh/id", dir + "/home/u/.ssh/id"},
		{"home alone", "", "~", dir + "/home/u"},
		{"tilde user is a name", "", "~other/x", ws + "/~other/x"},
		{"another base", ws + "/src", "../abs/key", dir + "/etc/secret/key"},
		{"root dot dot", "", "/../../etc", "/etc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Resolve(tt.base, tt.give)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.give, err)
			}
			if got != tt.want {
				t.Errorf("Resolve(%q) = %q, want %q", tt.give, got, tt.want)
			}
		})
	}
}

func TestResolveAgreesWithTheKernel(t *testing.T) {
	dir := tree(t)
	r := &action.Resolver{Root: dir + "/ws"}
	for _, p := range []string{"abs/key", "rel/key", "chain1", "inside", "abs/../secret/key", "src/../rel/key"} {
		got, err := r.Resolve("", p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := filepath.EvalSymlinks(filepath.Join(dir, "ws", p))
		if err != nil {
			// filepath.EvalSymlinks resolves .. lexically first in some cases; only compare
			// where it reaches the file.
			continue
		}
		if got != want {
			t.Errorf("Resolve(%q) = %q; the file system says %q", p, got, want)
		}
	}
	// The kernel's view of link/.. : open the file through the same path.
	data, err := os.ReadFile(dir + "/ws/abs/../secret/key")
	if err != nil || string(data) != "k" {
		t.Fatalf("the kernel does not follow abs/.. to the target's parent here: %v", err)
	}
}

func TestResolveErrors(t *testing.T) {
	dir := tree(t)
	r := &action.Resolver{Root: dir + "/ws"}
	for _, p := range []string{"loop1", "loop1/x", ""} {
		if got, err := r.Resolve("", p); !errors.Is(err, action.ErrUnresolvable) {
			t.Errorf("Resolve(%q) = %q, %v; want ErrUnresolvable", p, got, err)
		}
	}
	if _, err := (&action.Resolver{Root: dir}).Resolve("", "~/x"); !errors.Is(err, action.ErrUnresolvable) {
		t.Errorf("~ without a home: %v; want ErrUnresolvable", err)
	}
	if _, err := (&action.Resolver{}).Resolve("", "x"); !errors.Is(err, action.ErrUnresolvable) {
		t.Errorf("relative without a root: %v; want ErrUnresolvable", err)
	}
}

func FuzzReal(f *testing.F) {
	for _, s := range []string{"/a/b/../c", "/", "//x//y/", "/../..", "/a/./b/.", "/tmp/x/../../y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if p == "" || p[0] != '/' {
			return
		}
		got, err := action.Real(p)
		if err != nil {
			return
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got {
			t.Fatalf("Real(%q) = %q: not absolute and clean", p, got)
		}
	})
}
