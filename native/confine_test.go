//go:build linux

package native_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/native"
)

// canary is what the files outside the workspace hold, in their contents, their names and a
// branch name: it must never appear in anything a tool returns, nor anywhere in the workspace.
const canary = "canary-5c1e0b7d"

// TestConfinedWhileSwapped is the attack of issue 11: while a directory of the workspace, d, is
// swapped with a symbolic link to a directory outside it (renameat2 RENAME_EXCHANGE, in a
// loop), every native tool is called thousands of times on paths below d, as reviewed while
// it was a directory. Calls may fail; none may read or write outside: nothing outside is
// opened (inotify watches it), nothing outside appears in a result or in the workspace, and
// nothing outside changes.
//
// Outside, the same tree as inside, but with the canary: a file holding it, a file named with
// it, a repository on a branch named with it, and the git directory of a work tree (wt, whose
// .git file says gitdir: ../d/wt.git) whose index holds it.
//
// Against the code before issue 11 (git run on the host), every one of twenty-two runs failed
// here, with between 11 and 178 opens outside.
func TestConfinedWhileSwapped(t *testing.T) {
	sandboxtest.Need(t)
	needGit(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, out := base+"/ws", base+"/out"
	fill := func(d, mark, branch string) {
		writeFile(t, d+"/file.txt", mark+" file\n")
		writeFile(t, d+"/secret.txt", mark+" secret\n")
		writeFile(t, d+"/edit.txt", "alpha "+mark+"\n")
		writeFile(t, d+"/p.txt", "one\n")
		writeFile(t, d+"/"+mark+"-name.txt", "")
		writeFile(t, d+"/sub/deep.txt", mark+" deep\n")
		// A repository with a change, an untracked file and a branch that show the mark.
		git(t, base, "init", "-q", "-b", branch, d+"/repo")
		writeFile(t, d+"/repo/a.txt", mark+" committed\n")
		git(t, d+"/repo", "add", ".")
		git(t, d+"/repo", "commit", "-q", "-m", "first")
		writeFile(t, d+"/repo/a.txt", "changed\n")
		writeFile(t, d+"/repo/"+mark+"-untracked.txt", "")
		// The git directory of ws/wt, which lives outside any work tree.
		tmp := d + "/wt.tmp"
		git(t, base, "init", "-q", "-b", branch, tmp)
		writeFile(t, tmp+"/f.txt", mark+" committed\n")
		git(t, tmp, "add", ".")
		git(t, tmp, "commit", "-q", "-m", "first")
		if err := os.Rename(tmp+"/.git", d+"/wt.git"); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(tmp); err != nil {
			t.Fatal(err)
		}
	}
	fill(ws+"/d", "inside", "main")
	fill(out+"/d", canary, canary)
	writeFile(t, ws+"/wt/.git", "gitdir: ../d/wt.git\n")
	writeFile(t, ws+"/wt/f.txt", "changed\n")
	if err := os.Symlink(out+"/d", ws+"/l"); err != nil {
		t.Fatal(err)
	}

	// The control: what lies outside shows the canary to a git that reaches it, so a tool that
	// escaped would return it.
	for _, c := range [][]string{
		{"-C", out + "/d/repo", "--no-optional-locks", "status", "--short", "--branch"},
		{"--git-dir=" + out + "/d/wt.git", "--work-tree=" + ws + "/wt", "--no-optional-locks", "diff"},
	} {
		if got := git(t, base, c...); !strings.Contains(got, canary) {
			t.Fatalf("control: git %v does not show the canary:\n%s", c, got)
		}
	}

	e, err := native.New(native.Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	// The file tools hold without the sandbox too: half their calls go through an executor
	// with the sandbox off.
	unconfined, err := native.New(native.Options{Workspace: ws, Sandbox: off})
	if err != nil {
		t.Fatal(err)
	}
	a := func(kind string, args map[string]any) *action.Action { return normalize(t, ws, kind, args) }
	gitPatch := func(body string) *action.Action { return a("files_patch", map[string]any{"patch": body}) }
	// Each list, run in order once, succeeds and leaves the workspace as it found it; the
	// lists are run over and over while d is swapped.
	fileCalls := []*action.Action{
		a("files_read", map[string]any{"path": "d/file.txt"}),
		a("files_read", map[string]any{"path": "d/secret.txt"}),
		a("files_read", map[string]any{"path": "d/sub/deep.txt"}),
		a("files_list", map[string]any{"path": "d"}),
		a("files_list", map[string]any{"path": "d/sub"}),
		a("files_inspect", map[string]any{"path": "d/file.txt"}),
		a("files_inspect", map[string]any{"path": "d"}),
		a("files_find", map[string]any{"pattern": "d/**"}),
		a("files_find", map[string]any{"pattern": "d/*.txt"}),
		a("files_search", map[string]any{"path": "d", "query": "."}),
		a("files_search", map[string]any{"path": "d/file.txt", "query": "file"}),
		a("files_write", map[string]any{"path": "d/file.txt", "content": "inside file\n"}),
		a("files_write", map[string]any{"path": "d/gone.txt", "content": "gone\n"}),
		a("files_delete", map[string]any{"path": "d/gone.txt"}),
		a("files_write", map[string]any{"path": "d/sub/made/new.txt", "content": "new\n"}),
		a("files_delete", map[string]any{"path": "d/sub/made/new.txt"}),
		a("files_delete", map[string]any{"path": "d/sub/made"}),
		a("files_edit", map[string]any{"path": "d/edit.txt", "old": "alpha", "new": "omega"}),
		a("files_edit", map[string]any{"path": "d/edit.txt", "old": "omega", "new": "alpha"}),
	}
	runCalls := []*action.Action{
		gitPatch("--- a/d/p.txt\n+++ b/d/p.txt\n@@ -1 +1 @@\n-one\n+two\n"),
		gitPatch("--- a/d/p.txt\n+++ b/d/p.txt\n@@ -1 +1 @@\n-two\n+one\n"),
		gitPatch("diff --git a/d/made.txt b/d/made.txt\nnew file mode 100644\n--- /dev/null\n+++ b/d/made.txt\n@@ -0,0 +1 @@\n+made\n"),
		gitPatch("diff --git a/d/made.txt b/d/made.txt\ndeleted file mode 100644\n--- a/d/made.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-made\n"),
		// A copy would carry what it reads outside into the workspace.
		gitPatch("diff --git a/d/secret.txt b/stolen.txt\nsimilarity index 100%\ncopy from d/secret.txt\ncopy to stolen.txt\n"),
		a("files_delete", map[string]any{"path": "stolen.txt"}),
		a("files_patch", map[string]any{"cwd": "d", "patch": "--- a/p.txt\n+++ b/p.txt\n@@ -1 +1 @@\n-one\n+two\n"}),
		a("files_patch", map[string]any{"cwd": "d", "patch": "--- a/p.txt\n+++ b/p.txt\n@@ -1 +1 @@\n-two\n+one\n"}),
		a("git_status", map[string]any{"cwd": "d/repo"}),
		a("git_diff", map[string]any{"cwd": "d/repo"}),
		a("git_status", map[string]any{"cwd": "wt"}),
		a("git_diff", map[string]any{"cwd": "wt"}),
		a("shell_exec", map[string]any{"command": "cat d/file.txt d/secret.txt; ls d"}),
	}

	var (
		mu       sync.Mutex
		problems []string
		oks      = map[string]int{}
		calls    atomic.Int64
		failed   atomic.Bool
	)
	ctx := context.Background()
	do := func(e *native.Executor, a *action.Action, mustSucceed bool) {
		r, err := e.Run(ctx, a, nil)
		calls.Add(1)
		got := r.Text + fmt.Sprint(r.Structured)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s %v: error %v", a.Kind, a.Args, err))
		case strings.Contains(got, canary):
			problems = append(problems, fmt.Sprintf("%s %v returned what lies outside:\n%s", a.Kind, a.Args, got))
		case mustSucceed && r.IsError:
			problems = append(problems, fmt.Sprintf("%s %v failed with nothing swapped:\n%s", a.Kind, a.Args, r.Text))
		case !r.IsError:
			oks[a.Kind]++
		}
		if len(problems) > 0 {
			failed.Store(true)
		}
	}
	report := func() {
		mu.Lock()
		defer mu.Unlock()
		for i, l := range problems {
			if i == 10 {
				t.Errorf("... and %d more", len(problems)-i)
				break
			}
			t.Error(l)
		}
		problems = nil
	}

	// With nothing swapped, every call works: the race below means something.
	for _, list := range [][]*action.Action{fileCalls, runCalls} {
		for _, a := range list {
			do(e, a, true)
		}
	}
	report()
	if t.Failed() {
		t.FailNow()
	}

	before := snapshot(t, out)
	touched := watch(t, out)
	// Two swappers, so that one is likely running whenever a tool is, on a machine whose
	// cores the tools' own programs keep busy.
	var (
		stop  atomic.Bool
		swaps atomic.Int64
		sw    sync.WaitGroup
	)
	swap := func() error {
		return unix.Renameat2(unix.AT_FDCWD, ws+"/d", unix.AT_FDCWD, ws+"/l", unix.RENAME_EXCHANGE)
	}
	for range 2 {
		sw.Go(func() {
			for !stop.Load() {
				if err := swap(); err != nil {
					t.Errorf("swap: %v", err)
					return
				}
				swaps.Add(1)
			}
		})
	}

	// Thousands of file calls (3,800), which are cheap, then the tools that run a program
	// (156 calls, about 250 sandboxed starts), which cost a sandboxed start or two each: one
	// kind after the other, so that the programs do not leave the swappers too little of the
	// machine. Two workers each, so calls race each other as well as the swaps. A worker
	// stops early once something has escaped.
	const fileRounds, runRounds = 100, 6
	var wg sync.WaitGroup
	for _, fe := range []*native.Executor{e, unconfined} {
		wg.Go(func() {
			for range fileRounds {
				for _, a := range fileCalls {
					if failed.Load() {
						return
					}
					do(fe, a, false)
				}
			}
		})
	}
	wg.Wait()
	for range 2 {
		wg.Go(func() {
			for range runRounds {
				for _, a := range runCalls {
					if failed.Load() {
						return
					}
					do(e, a, false)
				}
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	sw.Wait()
	n := swaps.Load()
	if n%2 == 1 { // d back to the directory
		if err := swap(); err != nil {
			t.Errorf("swap back: %v", err)
		}
	}
	report()
	t.Logf("%d calls during %d swaps; calls that succeeded, by kind: %v", calls.Load(), n, oks)
	// Even a call that failed must not have opened anything outside.
	if ev := touched(); len(ev) > 0 {
		t.Errorf("%d times, something opened, read or changed what lies outside; the first: %v", len(ev), ev[:min(len(ev), 10)])
	}

	after := snapshot(t, out)
	for p, was := range before {
		if now, ok := after[p]; !ok {
			t.Errorf("outside, %s was removed", p)
		} else if now != was {
			t.Errorf("outside, %s changed: %s, now %s", p, was, now)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("outside, %s was created", p)
		}
	}
	// Nothing outside was carried into the workspace either.
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		if strings.Contains(d.Name(), canary) {
			t.Errorf("the workspace holds %s", p)
		}
		if d.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), canary) {
				t.Errorf("the workspace's %s holds what lies outside", p)
			}
		}
		return nil
	})
}

// watch watches every directory below dir with inotify, and returns a function that returns
// what has happened there since: every open, read and change of a file or directory, by
// anyone. An open the sandbox refuses is no event: only what got through counts.
func watch(t *testing.T, dir string) func() []string {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	const mask = unix.IN_OPEN | unix.IN_ACCESS | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
		unix.IN_CREATE | unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVE | unix.IN_MOVE_SELF
	// Listed first, then watched: the walk itself opens and reads them.
	var list []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			list = append(list, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[int]string{}
	for _, p := range list {
		wd, err := unix.InotifyAddWatch(fd, p, mask)
		if err != nil {
			t.Fatal(err)
		}
		dirs[wd] = p
	}
	return func() []string {
		var events []string
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EAGAIN {
				return events
			}
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				off += unix.SizeofInotifyEvent + int(ev.Len)
				if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
					events = append(events, "(more events than the queue holds)")
					continue
				}
				events = append(events, fmt.Sprintf("%#x %s", ev.Mask, filepath.Join(dirs[int(ev.Wd)], name)))
			}
		}
	}
}

// snapshot describes every entry below dir: its type, mode, inode, and a regular file's size
// and content digest, or a link's target.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	s := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v ino %d", info.Mode(), info.Sys().(*syscall.Stat_t).Ino)
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %d bytes sha256 %x", len(b), sha256.Sum256(b))
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		s[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
