package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/action/patch"
)

// files_patch runs git apply outside any repository: GIT_DIR names no git directory, so git
// reads no repository configuration (a filter driver there would run on every file written)
// and takes the patch's paths relative to the working directory, as the review did. git apply
// then also refuses paths with .. or .git in them, absolute paths, and paths beyond a
// symbolic link, and applies all of the patch or none of it.
const gitNoRepo = "GIT_DIR=/dev/null"

func (e *Executor) patch(ctx context.Context, a *action.Action) (Result, error) {
	diff := a.Inputs["patch"]
	if diff == "" {
		return Result{}, fmt.Errorf("%w: files_patch without a patch", ErrUnreviewed)
	}
	cwd, rel, err := e.path(a, "cwd")
	if err != nil {
		return Result{}, err
	}
	changes, err := patch.Changes(diff)
	if err != nil {
		return Result{}, fmt.Errorf("%w: the patch does not parse: %v", ErrUnreviewed, err)
	}
	if err := e.checkPatchPaths(cwd, rel, changes); err != nil {
		return Result{}, err
	}
	if e.git == "" {
		return Result{}, failf("files_patch needs git (it applies patches with git apply), and git is not installed")
	}
	env := e.gitEnv(gitNoRepo)
	// The review read a/ and b/ prefixes off where package patch found them; git must strip the
	// same. Each level is tried with --numstat, which applies nothing, and the one under which
	// git names the files the review named is used; a patch neither reads the same way (one
	// that mixes prefixed and bare sections) is refused.
	level := ""
	var why []string
	for _, p := range []string{"-p1", "-p0"} {
		o, err := e.runGit(ctx, proc{path: e.git, args: []string{"git", "apply", "--numstat", "-z", p, "-"},
			dir: cwd, env: env, stdin: diff})
		if err != nil {
			return Result{}, err
		}
		if o.exitCode != 0 {
			why = append(why, fmt.Sprintf("with %s: %s", p, strings.TrimSpace(o.output())))
			continue
		}
		if o.dropped == 0 && sameFiles(changes, numstatNames(slices.Concat(o.head, o.tail))) {
			level = p
			break
		}
		why = append(why, fmt.Sprintf("with %s git reads other paths", p))
	}
	if level == "" {
		return Result{}, failf("git apply would not apply this patch to the files it was reviewed for, so it was not applied (%s)",
			strings.Join(why, "; "))
	}
	o, err := e.runGit(ctx, proc{path: e.git, args: []string{"git", "apply", "--whitespace=nowarn", level, "-"},
		dir: cwd, env: env, stdin: diff})
	if err != nil {
		return Result{}, err
	}
	switch {
	case o.timedOut || o.cancelled:
		return Result{}, failf("git apply was stopped before it finished (%s): check the files the patch touches", e.timeout)
	case o.exitCode != 0:
		return Result{}, failf("the patch does not apply; nothing was changed. git apply says:\n%s", strings.TrimSpace(o.output()))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "applied the patch in %s:\n", show(rel))
	files := make([]map[string]any, len(changes))
	for i, c := range changes {
		switch c.Op {
		case patch.Rename, patch.Copy:
			fmt.Fprintf(&b, "%s %s -> %s\n", c.Op, c.Old, c.New)
		case patch.Delete:
			fmt.Fprintf(&b, "%s %s\n", c.Op, c.Old)
		default:
			fmt.Fprintf(&b, "%s %s\n", c.Op, c.New)
		}
		files[i] = map[string]any{"op": string(c.Op), "old": c.Old, "new": c.New}
	}
	return Result{Text: b.String(), Structured: map[string]any{"files": files, "strip": level}}, nil
}

// checkPatchPaths checks, through the workspace's root, that cwd still is the directory the
// review judged and that no path the patch touches leads out of the workspace, by .. or by a
// link. git apply then reaches the paths by name itself: what holds it inside the workspace
// whatever changes meanwhile is the sandbox, and these checks give a clear message.
func (e *Executor) checkPatchPaths(cwd, rel string, changes []patch.Change) error {
	root, err := e.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	d, err := e.workDir(root, cwd, rel)
	if err != nil {
		return err
	}
	d.Close()
	for _, c := range changes {
		for _, p := range []string{c.Old, c.New} {
			if p == "" {
				continue
			}
			target := rel + "/" + p // unresolved: os.Root follows its links and its ..
			if filepath.IsAbs(p) {
				r, inside := e.rel(p)
				if !inside {
					return failf("the patch touches %s, which is outside the workspace", p)
				}
				target = r
			}
			_, err := root.Stat(target)
			switch {
			case escapes(err):
				return failf("the patch touches %s, which is outside the workspace", p)
			case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
				// A file to create, or a path git apply will refuse itself.
			default:
				return failf("the patch touches %s, which cannot be resolved: %v", p, cause(err))
			}
		}
	}
	return nil
}

// numstatNames reads the file names of git apply --numstat -z: "added\tdeleted\tname\0" per
// file, or, for a rename or copy in some versions, "added\tdeleted\t\0old\0new\0".
func numstatNames(out []byte) []string {
	recs := bytes.Split(out, []byte{0})
	var names []string
	for i := 0; i < len(recs); i++ {
		f := strings.SplitN(string(recs[i]), "\t", 3)
		if len(f) != 3 {
			continue
		}
		if f[2] == "" && i+2 < len(recs) {
			names = append(names, string(recs[i+2]))
			i += 2
			continue
		}
		names = append(names, f[2])
	}
	return names
}

// sameFiles reports whether git names, section by section, the files the review read.
func sameFiles(changes []patch.Change, names []string) bool {
	if len(changes) != len(names) {
		return false
	}
	for i, c := range changes {
		want := []string{c.New}
		switch c.Op {
		case patch.Delete:
			want = []string{c.Old}
		case patch.Modify:
			want = append(want, c.Old) // --- x.orig, +++ x: git picks one of the two
		}
		if !slices.Contains(want, names[i]) {
			return false
		}
	}
	return true
}
