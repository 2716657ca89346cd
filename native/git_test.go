package native_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/native"
)

// eachSandbox runs f as two subtests: with git confined by the sandbox (skipped where the
// sandbox cannot run), and with the sandbox off, where only git's own options hold it.
func eachSandbox(t *testing.T, f func(t *testing.T, sb native.Sandbox)) {
	t.Helper()
	t.Run("sandboxed", func(t *testing.T) {
		sandboxtest.Need(t)
		f(t, native.Sandbox{})
	})
	t.Run("off", func(t *testing.T) { f(t, off) })
}

func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// git runs git in dir for a test's setup, with no system or global configuration.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgSign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// repo makes a repository at dir with one committed file, a.txt.
func repo(t testing.TB, dir string) {
	t.Helper()
	writeFile(t, dir+"/a.txt", "one\n")
	writeFile(t, dir+"/sub/b.txt", "two\n")
	git(t, dir, "init", "-q")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "first")
}

func TestGit(t *testing.T) {
	needGit(t)
	eachSandbox(t, testGit)
}

func testGit(t *testing.T, sb native.Sandbox) {
	ws, e := workspace(t, native.Options{Sandbox: sb})
	repo(t, ws+"/repo")
	writeFile(t, ws+"/repo/a.txt", "one\nmore\n")
	writeFile(t, ws+"/repo/new.txt", "")
	if err := os.Mkdir(ws+"/plain", 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		kind    string
		cwd     string
		isError bool
		want    []string
	}{
		{"status", "git_status", "repo", false, []string{"## main\n", " M a.txt\n", "?? new.txt\n"}},
		{"status from a subdirectory", "git_status", "repo/sub", false, []string{" M ../a.txt\n"}},
		{"diff", "git_diff", "repo", false, []string{"diff --git a/a.txt b/a.txt\n", "+more\n"}},
		{"diff from a subdirectory", "git_diff", "repo/sub", false, []string{"+more"}},
		{"status outside a repository", "git_status", "plain", true, []string{"plain is not in a git repository inside the workspace"}},
		{"diff outside a repository", "git_diff", ".", true, []string{"the workspace is not in a git repository"}},
		{"a missing directory", "git_status", "missing", true, []string{"missing does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want(t, call(t, e, ws, tt.kind, map[string]any{"cwd": tt.cwd}), tt.isError, tt.want...)
		})
	}
	git(t, ws+"/repo", "add", "a.txt")
	want(t, call(t, e, ws, "git_diff", map[string]any{"cwd": "repo"}), false, "(no changes: the work tree matches the index)")
	// A linked work tree: its .git file names a git directory whose commondir is the main one.
	git(t, ws+"/repo", "worktree", "add", "-q", "-b", "side", "../side")
	writeFile(t, ws+"/side/sub/b.txt", "two\nthree\n")
	want(t, call(t, e, ws, "git_status", map[string]any{"cwd": "side/sub"}), false, "## side\n", " M b.txt\n")
	want(t, call(t, e, ws, "git_diff", map[string]any{"cwd": "side"}), false, "+three\n")
}

// TestGitInsideALargerRepository: a workspace inside someone's repository is not in a
// repository of its own; git is not allowed to find the one above it.
func TestGitInsideALargerRepository(t *testing.T) {
	needGit(t)
	outer, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo(t, outer)
	e, err := native.New(native.Options{Workspace: outer + "/sub"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, call(t, e, outer+"/sub", "git_status", nil), true, "not in a git repository inside the workspace")
}

// TestGitDirOutside: a git directory out of the workspace is refused, however the .git entry
// leads there.
func TestGitDirOutside(t *testing.T) {
	needGit(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo(t, base+"/other")
	ws := base + "/ws"
	writeFile(t, ws+"/abs/.git", "gitdir: "+base+"/other/.git\n")
	writeFile(t, ws+"/rel/.git", "gitdir: ../../other/.git\n")
	writeFile(t, ws+"/vialink/.git", "gitdir: ../link/.git\n")
	if err := os.Symlink(base+"/other", ws+"/link"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws+"/dotlink", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base+"/other/.git", ws+"/dotlink/.git"); err != nil {
		t.Fatal(err)
	}
	// A linked work tree whose git directory is inside, but its common directory is not.
	writeFile(t, ws+"/linked/.git", "gitdir: ../wtgit\n")
	writeFile(t, ws+"/wtgit/commondir", base+"/other/.git\n")
	writeFile(t, ws+"/wtgit/HEAD", "ref: refs/heads/main\n")
	writeFile(t, ws+"/empty/.git", "gitdir:\n")
	e, err := native.New(native.Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cwd  string
		want string
	}{
		{"abs", "the git directory of this repository (" + base + "/other/.git) is outside the workspace"},
		{"rel", "the git directory of this repository (../../other/.git) is outside the workspace"},
		{"vialink", "the git directory of this repository (../link/.git) is outside the workspace"},
		{"dotlink", "the git directory of this repository (dotlink/.git) is outside the workspace"},
		{"linked", "the common git directory of this repository (" + base + "/other/.git) is outside the workspace"},
		{"empty", "empty names an empty git directory"},
	}
	for _, tt := range tests {
		for _, kind := range []string{"git_status", "git_diff"} {
			want(t, call(t, e, ws, kind, map[string]any{"cwd": tt.cwd}), true, tt.want)
		}
	}
}

// TestGitHostileRepository: a repository the agent could write sets every program-running
// option it can; git_status and git_diff run none of them.
//
// In the sandbox the programs lie in the workspace, where the sandbox would let them run:
// git's options are what stops them there too.
func TestGitHostileRepository(t *testing.T) {
	needGit(t)
	eachSandbox(t, testGitHostileRepository)
}

func testGitHostileRepository(t *testing.T, sb native.Sandbox) {
	ws, e := workspace(t, native.Options{Sandbox: sb})
	marks := ws + "/marks"
	if err := os.Mkdir(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	r := ws + "/repo"
	repo(t, r)
	script := func(name string) string {
		p := marks + "/" + name + ".sh"
		writeFile(t, p, "#!/bin/sh\ntouch "+marks+"/"+name+".ran\ncat\n")
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeFile(t, r+"/.gitattributes", "*.txt filter=evil diff=evil\n")
	git(t, r, "config", "core.fsmonitor", script("fsmonitor"))
	git(t, r, "config", "filter.evil.clean", script("clean"))
	git(t, r, "config", "filter.evil.smudge", script("smudge"))
	git(t, r, "config", "filter.evil.required", "true")
	git(t, r, "config", "diff.evil.textconv", script("textconv"))
	git(t, r, "config", "diff.evil.command", script("diffcommand"))
	git(t, r, "config", "diff.external", script("external"))
	git(t, r, "config", "core.pager", script("pager"))
	git(t, r, "config", "pager.status", script("pagerstatus"))
	git(t, r, "config", "core.hooksPath", marks)
	if err := os.Rename(script("posthook"), marks+"/post-index-change"); err != nil {
		t.Fatal(err)
	}
	git(t, r, "config", "core.worktree", marks)
	// A change of the same size whose modification time differs from the index: status and
	// diff must read the file, through its clean filter, to see it.
	writeFile(t, r+"/a.txt", "ONE\n")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(r+"/a.txt", later, later); err != nil {
		t.Fatal(err)
	}

	want(t, call(t, e, ws, "git_status", map[string]any{"cwd": "repo"}), false, " M a.txt\n")
	want(t, call(t, e, ws, "git_diff", map[string]any{"cwd": "repo"}), false, "-one\n+ONE\n")
	ran, err := filepath.Glob(marks + "/*.ran")
	if err != nil {
		t.Fatal(err)
	}
	if len(ran) > 0 {
		t.Errorf("the repository's configuration ran programs: %v", ran)
	}

	// The control: plain git in the same repository runs the fsmonitor and the filter, so the
	// configuration above is live and the test means something.
	cmd := exec.Command("git", "--work-tree=.", "status", "--short")
	cmd.Dir = r
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	cmd.Run()
	for _, m := range []string{"fsmonitor", "clean"} {
		if _, err := os.Stat(marks + "/" + m + ".ran"); err != nil {
			t.Errorf("control: plain git status did not run the %s: the test does not exercise it", m)
		}
	}
}

// TestGitDriverNames: drivers are emptied whatever their names, which are never read as shell
// code; a name that cannot be written on git's command line is refused, not run.
func TestGitDriverNames(t *testing.T) {
	needGit(t)
	eachSandbox(t, func(t *testing.T, sb native.Sandbox) {
		ws, e := workspace(t, native.Options{Sandbox: sb})
		r := ws + "/repo"
		marks := ws + "/marks"
		writeFile(t, marks+"/f.sh", "#!/bin/sh\ntouch "+marks+"/ran\ncat\n")
		if err := os.Chmod(marks+"/f.sh", 0o755); err != nil {
			t.Fatal(err)
		}
		names := []string{"x$(touch${IFS}" + marks + "/injected)", "`touch${IFS}" + marks + "/injected`",
			"a.b", "q'uote", "*", `back\slash`, "d\"q", "UPPER", "a b"}
		var attrs strings.Builder
		for i, n := range names {
			writeFile(t, fmt.Sprintf("%s/f%d.txt", r, i), "one\n")
			if !strings.Contains(n, " ") { // an attribute cannot name it; git must still cope
				fmt.Fprintf(&attrs, "f%d.txt filter=%s diff=%s\n", i, n, n)
			}
		}
		writeFile(t, r+"/.gitattributes", attrs.String())
		git(t, ws, "init", "-q", r)
		git(t, r, "add", ".")
		git(t, r, "commit", "-q", "-m", "first")
		for i, n := range names {
			git(t, r, "config", "filter."+n+".clean", marks+"/f.sh")
			git(t, r, "config", "filter."+n+".required", "true")
			git(t, r, "config", "diff."+n+".textconv", marks+"/f.sh")
			// Changed without a change of size, and later: status must read it, through its filter.
			writeFile(t, fmt.Sprintf("%s/f%d.txt", r, i), "ONE\n")
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(fmt.Sprintf("%s/f%d.txt", r, i), later, later); err != nil {
				t.Fatal(err)
			}
		}
		want(t, call(t, e, ws, "git_status", map[string]any{"cwd": "repo"}), false, " M f0.txt\n", " M f8.txt\n")
		want(t, call(t, e, ws, "git_diff", map[string]any{"cwd": "repo"}), false, "-one\n+ONE\n")
		if ran, _ := filepath.Glob(marks + "/*"); len(ran) != 1 {
			t.Errorf("a driver ran, or a name was run as code: %v", ran)
		}

		git(t, r, "config", "filter.a=b.clean", "false")
		want(t, call(t, e, ws, "git_status", map[string]any{"cwd": "repo"}), true, `the repository's configuration defines a filter driver named "a=b"`)
	})
}

// TestGitConfigRefused: a configuration git cannot read, or one with more driver settings than
// are checked, stops the call before git status or diff runs.
func TestGitConfigRefused(t *testing.T) {
	needGit(t)
	eachSandbox(t, func(t *testing.T, sb native.Sandbox) {
		ws, e := workspace(t, native.Options{Sandbox: sb})
		repo(t, ws+"/broken")
		writeFile(t, ws+"/broken/.git/config", readFile(t, ws+"/broken/.git/config")+"[filter\n")
		repo(t, ws+"/many")
		var many strings.Builder
		many.WriteString(readFile(t, ws+"/many/.git/config"))
		for i := range 1000 {
			fmt.Fprintf(&many, "[filter \"f%04d\"]\n\tclean = cat\n", i)
		}
		writeFile(t, ws+"/many/.git/config", many.String())
		for _, kind := range []string{"git_status", "git_diff"} {
			want(t, call(t, e, ws, kind, map[string]any{"cwd": "broken"}), true, "git cannot read the repository's configuration:\n", "bad config")
			want(t, call(t, e, ws, kind, map[string]any{"cwd": "many"}), true, "defines too many filter and diff settings to check")
		}
	})
}

func TestGitMissing(t *testing.T) {
	ws, e := workspace(t, native.Options{Env: []string{"PATH=" + t.TempDir()}})
	want(t, call(t, e, ws, "git_status", nil), true, "git_status needs git, which is not installed")
	want(t, call(t, e, ws, "files_patch", map[string]any{"patch": "--- a.txt\n+++ a.txt\n@@ -1 +1 @@\n-a\n+b\n"}),
		true, "files_patch needs git", "not installed")
}

func TestFilesPatch(t *testing.T) {
	needGit(t)
	tests := []struct {
		name    string
		cwd     string
		patch   string
		isError bool
		want    []string
		files   map[string]string // content after; "" for a file that must not exist
	}{
		{
			name: "a git diff, with a/ and b/ prefixes",
			patch: "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n" +
				"diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n",
			want:  []string{"applied the patch in the workspace:\nmodify a.txt\ncreate new.txt\n"},
			files: map[string]string{"a.txt": "one\nTWO\n", "new.txt": "new\n"},
		},
		{
			name:  "a plain diff without prefixes, applied -p0",
			patch: "--- sub/c.txt\n+++ sub/c.txt\n@@ -1 +1 @@\n-c\n+C\n",
			want:  []string{"modify sub/c.txt"},
			files: map[string]string{"sub/c.txt": "C\n"},
		},
		{
			name:  "relative to its working directory",
			cwd:   "sub",
			patch: "--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-c\n+see\n",
			want:  []string{"applied the patch in sub:\nmodify c.txt"},
			files: map[string]string{"sub/c.txt": "see\n"},
		},
		{
			name: "a delete and a rename",
			patch: "diff --git a/a.txt b/a.txt\ndeleted file mode 100644\n--- a/a.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n" +
				"diff --git a/sub/c.txt b/sub/d.txt\nsimilarity index 100%\nrename from sub/c.txt\nrename to sub/d.txt\n",
			want:  []string{"delete a.txt\nrename sub/c.txt -> sub/d.txt\n"},
			files: map[string]string{"a.txt": "", "sub/c.txt": "", "sub/d.txt": "c\n"},
		},
		{
			name:    "a patch that does not apply",
			patch:   "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-three\n+THREE\n",
			isError: true,
			want:    []string{"the patch does not apply; nothing was changed", "patch failed: a.txt:1"},
			files:   map[string]string{"a.txt": "one\ntwo\n"},
		},
		{
			name: "all or nothing",
			patch: "--- a/sub/c.txt\n+++ b/sub/c.txt\n@@ -1 +1 @@\n-c\n+C\n" +
				"--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-three\n+THREE\n",
			isError: true,
			want:    []string{"nothing was changed"},
			files:   map[string]string{"a.txt": "one\ntwo\n", "sub/c.txt": "c\n"},
		},
		{
			name: "sections read with different strip levels",
			patch: "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n" +
				"--- sub/c.txt\n+++ sub/c.txt\n@@ -1 +1 @@\n-c\n+C\n",
			isError: true,
			want:    []string{"git apply would not apply this patch to the files it was reviewed for"},
			files:   map[string]string{"a.txt": "one\ntwo\n", "sub/c.txt": "c\n"},
		},
		{
			name:    "into .git",
			patch:   "diff --git a/.git/hooks/x b/.git/hooks/x\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/x\n@@ -0,0 +1 @@\n+x\n",
			isError: true,
			want:    []string{"invalid path '.git/hooks/x'"},
			files:   map[string]string{".git/hooks/x": ""},
		},
	}
	eachSandbox(t, func(t *testing.T, sb native.Sandbox) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ws, e := workspace(t, native.Options{Sandbox: sb})
				writeFile(t, ws+"/a.txt", "one\ntwo\n")
				writeFile(t, ws+"/sub/c.txt", "c\n")
				args := map[string]any{"patch": tt.patch}
				if tt.cwd != "" {
					args["cwd"] = tt.cwd
				}
				want(t, call(t, e, ws, "files_patch", args), tt.isError, tt.want...)
				for f, content := range tt.files {
					b, err := os.ReadFile(ws + "/" + f)
					switch {
					case content == "" && err == nil:
						t.Errorf("%s exists", f)
					case content != "" && string(b) != content:
						t.Errorf("%s holds %q, want %q (%v)", f, b, content, err)
					}
				}
			})
		}
	})
}

// TestFilesPatchInHostileRepository: a patch applied inside a repository does not run the
// repository's filters (git apply would run clean and smudge filters there).
func TestFilesPatchInHostileRepository(t *testing.T) {
	needGit(t)
	eachSandbox(t, testFilesPatchInHostileRepository)
}

func testFilesPatchInHostileRepository(t *testing.T, sb native.Sandbox) {
	ws, e := workspace(t, native.Options{Sandbox: sb})
	marks := ws + "/marks"
	repo(t, ws)
	writeFile(t, marks+"/f.sh", "#!/bin/sh\ntouch "+marks+"/ran\ncat\n")
	if err := os.Chmod(marks+"/f.sh", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, ws+"/.gitattributes", "* filter=evil\n")
	git(t, ws, "config", "filter.evil.clean", marks+"/f.sh")
	git(t, ws, "config", "filter.evil.smudge", marks+"/f.sh")
	r := call(t, e, ws, "files_patch", map[string]any{"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n"})
	want(t, r, false, "modify a.txt")
	if got := readFile(t, ws+"/a.txt"); got != "ONE\n" {
		t.Errorf("a.txt holds %q", got)
	}
	if _, err := os.Stat(marks + "/ran"); err == nil {
		t.Error("the repository's filter ran")
	}
	if strings.Contains(r.Text, "warning") {
		t.Errorf("git warned: %s", r.Text)
	}
}

// TestGitFailsClosed: where the sandbox cannot start git, git does not run at all, and the
// result says why. (A hidden path that is not absolute stops the sandbox on any host; where
// the sandbox cannot be applied at all, that stops it first.)
func TestGitFailsClosed(t *testing.T) {
	needGit(t)
	ws, e := workspace(t, native.Options{Sandbox: native.Sandbox{Hidden: []string{"not/absolute"}}})
	repo(t, ws)
	for _, kind := range []string{"git_status", "git_diff"} {
		r, err := e.Run(context.Background(), normalize(t, ws, kind, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		want(t, r, true, "git ", " the sandbox")
	}
	want(t, call(t, e, ws, "files_patch", map[string]any{"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n"}),
		true, "git ", " the sandbox")
	if got := readFile(t, ws+"/a.txt"); got != "one\n" {
		t.Errorf("the patch was applied: a.txt holds %q", got)
	}
}
