package action_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wardenhq/warden/action"
)

// TestViewGlob checks that a View expands globs exactly as filepath.Glob does, directories
// with patterns in them, links, missing directories and bad patterns included.
func TestViewGlob(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/x", "a/y", "b/x", "c"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/x/1.o", "a/x/2.o", "a/y/3.o", "b/x/1.c", "c/z.log", "top.o"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(dir+"/a", dir+"/ln"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/file", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	v := action.NewView()
	defer v.Release()
	for _, p := range []string{"*.o", "*/x/*.o", "?/*/[0-9].o", "ln/*/*.o", "a/x/1.o", "a/x/none",
		"missing/*.o", "file/*", "[", "a/[/*", `a/\x/*`, "*/*/*", "c/*.log", "*"} {
		full := dir + "/" + p
		want, wantErr := filepath.Glob(full)
		got, gotErr := v.Glob(full)
		if !slices.Equal(got, want) || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("Glob(%q) = %q, %v; filepath.Glob gives %q, %v", p, got, gotErr, want, wantErr)
		}
		// asked again, the View answers from what it saw, the same
		again, _ := v.Glob(full)
		if !slices.Equal(again, got) {
			t.Errorf("Glob(%q) again = %q; first %q", p, again, got)
		}
	}
}

// TestViewIsOneReviews checks that a View answers from what it saw, and that a new View (a new
// review) sees a link swapped since: nothing is kept across reviews.
func TestViewIsOneReviews(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ws/out", "secret"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(dir+"/ws/out", dir+"/ws/dest"); err != nil {
		t.Fatal(err)
	}
	r, err := action.NewResolver(dir+"/ws", "")
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(v *action.View) string {
		t.Helper()
		p, err := r.In(v).Resolve("", "dest/token")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := action.NewView()
	if got := resolve(first); got != dir+"/ws/out/token" {
		t.Fatalf("before the swap: %s", got)
	}
	if err := os.Remove(dir + "/ws/dest"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir+"/secret", dir+"/ws/dest"); err != nil {
		t.Fatal(err)
	}
	// The same review answers as it saw, consistently ...
	if got := resolve(first); got != dir+"/ws/out/token" {
		t.Errorf("the same View after the swap: %s; want what it saw", got)
	}
	first.Release()
	// ... and the next review, whose View may be the same one recycled, looks afresh.
	for _, v := range []*action.View{action.NewView(), nil} {
		if got := resolve(v); got != dir+"/secret/token" {
			t.Errorf("a new View after the swap: %s; want %s", got, dir+"/secret/token")
		}
		v.Release()
	}
}

// TestViewListingAnswersAsLstat checks that a View that lists a directory asked about often
// resolves every name in it, links and missing names included, exactly as lstat would.
func TestViewListingAnswersAsLstat(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := dir + "/ws"
	for _, d := range []string{"ws/src/sub", "elsewhere/x"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(ws+"/src/file", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"src/up": dir + "/elsewhere", "src/rel": "sub", "src/dangling": "nothing/here", "src/loop": "loop"} {
		if err := os.Symlink(to, ws+"/"+link); err != nil {
			t.Fatal(err)
		}
	}
	r, err := action.NewResolver(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	v := action.NewView()
	defer v.Release()
	names := []string{"src/a", "src/b", "src/file", "src/sub", "src/up/x/y", "src/rel/z", "src/dangling/q",
		"src/missing/../file", "src/up/../ws", "src/sub/../up/x", "src/.hidden", "src/loop/x", "src/file/x"}
	for round := range 2 {
		for _, n := range names {
			want, wantErr := r.Resolve("", n)
			got, gotErr := r.In(v).Resolve("", n)
			if got != want || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("round %d: %s resolves to %q, %v through a View; %q, %v without", round, n, got, gotErr, want, wantErr)
			}
		}
	}
}
