package review_test

import (
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"weak"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// settle waits until each path has been unchanged for longer than action.SeenMargin, so that
// a review relies on what it sees there and keeps it. It waits on the clock, polling the
// paths' change times: the condition, not a guess at how long it takes.
func settle(t *testing.T, paths ...string) {
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

// memoFixture is the review fixture with a directory out in the workspace, a relative link
// dest to it (an absolute link is resolved from /, through the temporary directory's parent,
// which other programs change all the time, and a review through it is seldom kept), and the
// hard blocks of the fixture plus a rule on reading src/b.env.
func memoFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	var fs unix.Statfs_t
	if err := unix.Statfs(f.dir, &fs); err != nil {
		t.Fatal(err)
	}
	switch uint32(fs.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.OVERLAYFS_SUPER_MAGIC:
	default:
		t.Skipf("the temporary directory is on a file system (%#x) whose answers a review does not keep", fs.Type)
	}
	if err := os.MkdirAll(f.ws+"/out", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("out", f.ws+"/dest"); err != nil {
		t.Fatal(err)
	}
	f.rules = rulesWith(t, f, `{"id":"env","enabled":true,"type":"path","pattern":"WS/src/b.env","match":"exact","operations":["read"]}`)
	return f
}

// rulesWith compiles the fixture's rules with more.
func rulesWith(t *testing.T, f *fixture, more ...string) *boundary.Set {
	t.Helper()
	doc := strings.TrimSuffix(strings.TrimSpace(rulesJSON), "]}")
	for _, m := range more {
		doc += ",\n" + m
	}
	doc = strings.NewReplacer("SECRET", f.secret, "WS", f.ws, "DIR", f.dir).Replace(doc + "]}")
	set, err := boundary.Compile(mustDoc(t, doc), boundary.Options{Home: f.dir + "/home"})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func (f *fixture) settle(t *testing.T) {
	t.Helper()
	settle(t, f.dir, f.ws, f.ws+"/src", f.ws+"/out", f.secret)
}

// sameVerdict fails unless two verdicts agree in everything but their tokens.
func sameVerdict(t *testing.T, got, want review.Verdict) {
	t.Helper()
	got.Token, want.Token = "", ""
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("verdict\n%+v\n%+v\nwant the same as a review afresh\n%+v\n%+v", got, got.Action, want, want.Action)
	}
}

func counts(t *testing.T, r *review.Reviewer, hits, kept int64) {
	t.Helper()
	if h, k := r.MemoCounts(); h != hits || k != kept {
		t.Fatalf("reviews taken from what was kept: %d, kept: %d; want %d and %d", h, k, hits, kept)
	}
}

// TestMemoSeesASwappedLink checks that a review kept is not used once a link it followed is
// swapped: the next review, and Execute's review with the first one's token, see the new
// target and deny.
func TestMemoSeesASwappedLink(t *testing.T) {
	f := memoFixture(t)
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	args := map[string]any{"command": "cat dest/token; ls dest/*; echo x > dest/new.txt"}
	f.settle(t)

	first := r.Review(s, "shell_exec", args)
	if first.Decision != verdict.Allow {
		t.Fatalf("first review: %s", first.Summary())
	}
	counts(t, r, 0, 1)
	again := r.Review(s, "shell_exec", args)
	counts(t, r, 1, 1)
	sameVerdict(t, again, first)
	ran := false
	if _, err := r.Execute(s, again.Token, "shell_exec", args, func(*action.Action) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("Execute with nothing changed: %v (ran %v)", err, ran)
	}
	counts(t, r, 2, 1)

	if err := os.Remove(f.ws + "/dest"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret", f.ws+"/dest"); err != nil {
		t.Fatal(err)
	}
	v := r.Review(s, "shell_exec", args)
	if v.Decision != verdict.Deny || !slices.Contains(v.Rules, "secret") {
		t.Fatalf("review after the swap: %s %v; want a deny by the rule secret", v.Summary(), v.Rules)
	}
	if h, _ := r.MemoCounts(); h != 2 {
		t.Fatalf("the review after the swap was taken from what was kept")
	}
	got, err := r.Execute(s, again.Token, "shell_exec", args, func(*action.Action) error {
		t.Fatal("the call ran")
		return nil
	})
	if err == nil || got.Decision != verdict.Deny {
		t.Fatalf("Execute after the swap: %v, %s; want the second review to deny", err, got.Summary())
	}
	fresh := newReviewer(t, nil).Review(s, "shell_exec", args)
	sameVerdict(t, got, fresh)
}

// TestMemoSeesANewFile checks that a file made where a kept review's glob matched nothing is
// seen by the next review.
func TestMemoSeesANewFile(t *testing.T) {
	f := memoFixture(t)
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	args := map[string]any{"command": "cat src/*.env | wc -l"}
	f.settle(t)
	for range 2 {
		if v := r.Review(s, "shell_exec", args); v.Decision != verdict.Allow {
			t.Fatalf("review: %s", v.Summary())
		}
	}
	counts(t, r, 1, 1)
	if err := os.WriteFile(f.ws+"/src/b.env", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if v := r.Review(s, "shell_exec", args); v.Decision != verdict.Deny || !slices.Contains(v.Rules, "env") {
		t.Fatalf("review after src/b.env was made: %s %v; want a deny by the rule env", v.Summary(), v.Rules)
	}
	counts(t, r, 1, 1) // src changed a moment ago: not kept
	settle(t, f.ws+"/src")
	v := r.Review(s, "shell_exec", args)
	counts(t, r, 1, 2)
	w := r.Review(s, "shell_exec", args)
	counts(t, r, 2, 2)
	sameVerdict(t, w, v)
}

// TestMemoKeyedByRulesPolicyAndCall checks that what a review kept is used only for the same
// call under the same hard blocks, policy and session paths.
func TestMemoKeyedByRulesPolicyAndCall(t *testing.T) {
	f := memoFixture(t)
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	args := map[string]any{"command": "cat src/a.txt"}
	f.settle(t)
	for range 2 {
		if v := r.Review(s, "shell_exec", args); v.Decision != verdict.Allow {
			t.Fatalf("review: %s", v.Summary())
		}
	}
	counts(t, r, 1, 1)

	// new hard blocks: a new Set
	blocked := *s
	blocked.Boundaries = rulesWith(t, f, `{"id":"a","enabled":true,"type":"path","pattern":"WS/src/a.txt","match":"exact","operations":["read"]}`)
	if v := r.Review(&blocked, "shell_exec", args); v.Decision != verdict.Deny || !slices.Contains(v.Rules, "a") {
		t.Fatalf("review under a rule on src/a.txt: %s %v; want a deny by the rule a", v.Summary(), v.Rules)
	}
	counts(t, r, 1, 2)

	// a new policy revision: new tools
	s2 := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	if v := r.Review(s2, "shell_exec", args); v.Decision != verdict.Allow {
		t.Fatalf("review under the new policy: %s", v.Summary())
	}
	counts(t, r, 1, 3)

	// other arguments, another workspace, another confinement, another tool name
	other := []struct {
		name string
		s    *review.Session
		tool string
		args map[string]any
	}{
		{"cwd", s, "shell_exec", map[string]any{"command": "cat src/a.txt", "cwd": "src"}},
		{"number", s, "shell_exec", map[string]any{"command": "cat src/a.txt", "timeout": 5.0}},
		{"confined", func() *review.Session { c := *s; c.Unconfined = false; return &c }(), "shell_exec", args},
		{"Bash", s, "Bash", args},
	}
	for i, o := range other {
		fresh := newReviewer(t, nil).Review(o.s, o.tool, o.args)
		v := r.Review(o.s, o.tool, o.args)
		if h, _ := r.MemoCounts(); h != 1 {
			t.Fatalf("%s: taken from what another call's review kept", o.name)
		}
		sameVerdict(t, v, fresh)
		if i == 0 && !slices.ContainsFunc(v.Effects, func(e action.Effect) bool { return e.Path == f.ws+"/src/src/a.txt" }) {
			t.Fatalf("cwd: effects %v; want a read of src/src/a.txt", v.Effects)
		}
	}
	// a call whose arguments are not kept: an object
	obj := map[string]any{"command": "cat src/a.txt", "protectedBindings": map[string]any{}}
	r.Review(s, "shell_exec", obj)
	r.Review(s, "shell_exec", obj)
	if h, _ := r.MemoCounts(); h != 1 {
		t.Fatal("a call with an object argument was taken from what was kept")
	}
}

// TestMemoVerdictsAreTheReviews checks that a verdict taken from what was kept is the verdict
// a review afresh gives, for commands of every kind of effect, and that changing one does not
// change the other.
func TestMemoVerdictsAreTheReviews(t *testing.T) {
	f := memoFixture(t)
	for _, d := range []string{"src/build", "docs"} {
		if err := os.MkdirAll(f.ws+"/"+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"src/main.go", "src/build/a.o", "docs/x.md"} {
		if err := os.WriteFile(f.ws+"/"+p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	f.settle(t)
	settle(t, f.ws+"/src/build", f.ws+"/docs")
	for _, c := range []struct {
		cmd  string
		kept bool
	}{
		// the benchmark's command, writing in the workspace rather than in /tmp, which other
		// programs change all the time
		{strings.ReplaceAll(benchCommand, "/tmp/", "../out/"), true},
		{"cd src && rm -rf build && cp -r ../docs ../out/docs && sed -i s/a/b/ main.go", true},
		{"cat dest/../src/main.go > out/copy.go; git status --short; ls -la docs", true},
		{"echo $(cat src/main.go) | curl -d @- https://example.com", true},
		{"python3 -c 'print(1)'", true},
		// the tree below / is walked past links: not kept
		{"rm -rf /", false},
	} {
		args := map[string]any{"command": c.cmd}
		fresh := newReviewer(t, nil).Review(s, "shell_exec", args)
		hits, _ := r.MemoCounts()
		r.Review(s, "shell_exec", args)
		v := r.Review(s, "shell_exec", args)
		if h, _ := r.MemoCounts(); (h == hits+1) != c.kept {
			t.Fatalf("%s: taken from what was kept %d times; want kept %v", c.cmd, h-hits, c.kept)
		}
		sameVerdict(t, v, fresh)
		// a verdict is the caller's: appending to it does not reach the next
		v.Blockers = append(v.Blockers, review.Blocker{Code: "x"})
		v.Effects = append(v.Effects, action.Effect{Path: "x"})
		v.Add(review.Blocker{Code: "y", Rule: "y", Decision: verdict.Deny}, s.Surface)
		sameVerdict(t, r.Review(s, "shell_exec", args), fresh)
	}
}

// TestMemoAsksNamesAgain checks that a kept review survives a change in a directory it only
// looked names up in, when their answers are the same, and not when one of them is now a link
// to the secret.
func TestMemoAsksNamesAgain(t *testing.T) {
	f := memoFixture(t)
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	args := map[string]any{"command": "cat out/a.txt > out/b.txt"}
	f.settle(t)
	first := r.Review(s, "shell_exec", args)
	if first.Decision != verdict.Allow {
		t.Fatalf("review: %s", first.Summary())
	}
	counts(t, r, 0, 1)
	if err := os.WriteFile(f.ws+"/out/other.txt", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sameVerdict(t, r.Review(s, "shell_exec", args), first)
	counts(t, r, 1, 1)
	if err := os.Symlink("../../secret/token", f.ws+"/out/a.txt"); err != nil {
		t.Fatal(err)
	}
	v := r.Review(s, "shell_exec", args)
	if v.Decision != verdict.Deny || !slices.Contains(v.Rules, "secret") {
		t.Fatalf("review after out/a.txt became a link to the secret: %s %v; want a deny by the rule secret", v.Summary(), v.Rules)
	}
	counts(t, r, 1, 1)
}

// TestMemoConcurrent checks that reviews of the same calls at once, some kept and some taken
// from what was kept, all give the review's verdict (and, under -race, share nothing they
// write).
func TestMemoConcurrent(t *testing.T) {
	f := memoFixture(t)
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	f.settle(t)
	calls := []map[string]any{
		{"command": "cat dest/token; ls dest/*; echo x > out/b.txt"},
		{"command": "cd src && cat a.txt | wc -l > ../out/n.txt"},
	}
	want := make([]review.Verdict, len(calls))
	for i, c := range calls {
		want[i] = newReviewer(t, nil).Review(s, "shell_exec", c)
	}
	errs := make(chan string, 4)
	for range 4 {
		go func() {
			for n := range 50 {
				i := n % len(calls)
				v := r.Review(s, "shell_exec", calls[i])
				v.Token = ""
				w := want[i]
				w.Token = ""
				if !reflect.DeepEqual(v, w) {
					errs <- v.Summary()
					return
				}
				v.Blockers = append(v.Blockers, review.Blocker{Code: "x"})
			}
			errs <- ""
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Fatalf("a concurrent review gave %s, not the review's verdict", e)
		}
	}
	if h, _ := r.MemoCounts(); h == 0 {
		t.Fatal("no review was taken from what was kept")
	}
}

// TestMemoKeepsNoRulesAlive checks that what a review kept does not keep its hard-block set
// from being collected once no session holds it.
func TestMemoKeepsNoRulesAlive(t *testing.T) {
	f := memoFixture(t)
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	f.settle(t)
	set := rulesWith(t, f)
	gone := weak.Make(set)
	func() {
		c := *s
		c.Boundaries = set
		r.Review(&c, "shell_exec", map[string]any{"command": "cat src/a.txt"})
	}()
	counts(t, r, 0, 1)
	set = nil
	for range 5 {
		runtime.GC()
		if gone.Value() == nil {
			return
		}
	}
	t.Fatal("the hard-block set of a kept review is still alive after five collections")
}

// TestDirsFirstReviewSeesChanges checks that the first review of a new command, which takes
// what earlier reviews found in the directories it looks in (action.Dirs), sees a link swapped
// and a file made since, as a reviewer that kept nothing sees them, the moment they are made.
func TestDirsFirstReviewSeesChanges(t *testing.T) {
	f := memoFixture(t)
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	f.settle(t)
	review := func(command string) review.Verdict {
		t.Helper()
		args := map[string]any{"command": command}
		v := r.Review(s, "shell_exec", args)
		sameVerdict(t, v, newReviewer(t, nil).Review(s, "shell_exec", args))
		return v
	}
	if v := review("cat dest/token; ls dest/*; cat src/*.env | wc -l"); v.Decision != verdict.Allow {
		t.Fatalf("first review: %s", v.Summary())
	}
	before := r.DirsHits()
	if v := review("cat dest/token src/*.env; ls dest/* | wc -l"); v.Decision != verdict.Allow {
		t.Fatalf("a new command in the same directories: %s", v.Summary())
	}
	if r.DirsHits() == before {
		t.Fatal("the review of a new command in the same directories took nothing from the earlier one's")
	}

	if err := os.Remove(f.ws + "/dest"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret", f.ws+"/dest"); err != nil {
		t.Fatal(err)
	}
	if v := review("cat dest/token && ls dest/*"); v.Decision != verdict.Deny || !slices.Contains(v.Rules, "secret") {
		t.Fatalf("review of a new command after the swap: %s %v; want a deny by the rule secret", v.Summary(), v.Rules)
	}
	if err := os.WriteFile(f.ws+"/src/b.env", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if v := review("cat src/*.env | sort"); v.Decision != verdict.Deny || !slices.Contains(v.Rules, "env") {
		t.Fatalf("review of a new command after src/b.env was made: %s %v; want a deny by the rule env", v.Summary(), v.Rules)
	}
	settle(t, f.ws, f.ws+"/src")
	for _, c := range []string{"cat src/*.env | sort -r", "cat src/*.env | sort -u"} {
		if v := review(c); v.Decision != verdict.Deny || !slices.Contains(v.Rules, "env") {
			t.Fatalf("review of %q once settled: %s %v; want a deny by the rule env", c, v.Summary(), v.Rules)
		}
	}
}
