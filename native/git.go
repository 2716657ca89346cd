package native

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wardenhq/warden/action"
)

// gitSafety are the options of every git_status and git_diff run: they switch off what a
// repository's own configuration could use to run a program (see the package doc). Command-
// line configuration outranks every configuration file, and reaches the git processes git
// starts itself through GIT_CONFIG_PARAMETERS.
var gitSafety = []string{
	"--no-pager",
	"--no-optional-locks", // status does not write the index, so no post-index-change hook
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.pager=cat",
	"-c", "protocol.allow=never", // no lazy fetch of a partial clone, so no transport or ssh command
	"-c", "color.ui=false",
	"-c", "color.status=false",
	"-c", "color.diff=false",
	"-c", "status.submoduleSummary=false",
	"-c", "diff.submodule=short",
}

// gitEnv is the environment of git: the base environment without any GIT_ variable (one could
// name an external diff or a configuration), with the system and global configuration (the
// global one would be $HOME/.gitconfig, in the workspace) switched off, plus extra.
func (e *Executor) gitEnv(extra ...string) []string {
	env := make([]string, 0, len(e.env)+10+len(extra))
	for _, kv := range e.env {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_LAZY_FETCH=1",
	)
	return append(env, extra...)
}

// gitRun runs a git subcommand for git_status or git_diff in Paths["cwd"].
func (e *Executor) gitRun(ctx context.Context, a *action.Action, sub ...string) (Result, error) {
	cwd, rel, err := e.path(a, "cwd")
	if err != nil {
		return Result{}, err
	}
	if err := e.checkDir(cwd, rel); err != nil {
		return Result{}, err
	}
	if e.git == "" {
		return Result{}, failf("%s needs git, which is not installed", a.Kind)
	}
	gitDir, workTree, err := e.findRepo(cwd, rel)
	if err != nil {
		return Result{}, err
	}
	// Found here, inside the workspace, and named to git: neither a discovery past the
	// workspace nor core.worktree can send git elsewhere.
	env := e.gitEnv("GIT_DIR="+gitDir, "GIT_WORK_TREE="+workTree)
	drivers, err := e.gitDrivers(ctx, cwd, env)
	if err != nil {
		return Result{}, err
	}
	args := append(append(append([]string{"git"}, gitSafety...), drivers...), sub...)
	o, err := e.run(ctx, proc{path: e.git, args: args, dir: cwd, env: env})
	if err != nil {
		return Result{}, failf("git could not be started: %v", err)
	}
	out := o.output()
	data := map[string]any{"exitCode": o.exitCode, "truncated": o.dropped > 0}
	switch {
	case o.timedOut:
		return Result{}, failf("%s[git timed out after %s and was killed]", withNewline(out), e.timeout)
	case o.cancelled:
		return Result{}, failf("%s[cancelled: git was killed]", withNewline(out))
	case o.exitCode != 0:
		return Result{Text: fmt.Sprintf("%s[git exited with code %d]", withNewline(out), o.exitCode), Structured: data, IsError: true}, nil
	}
	if out == "" && sub[0] == "diff" {
		out = "(no changes: the work tree matches the index)\n"
	}
	return Result{Text: out, Structured: data}, nil
}

func withNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// findRepo finds the repository of cwd: the nearest .git at or above it, not above the
// workspace, whose git directory (a .git file or a link may point elsewhere) lies inside the
// workspace too.
func (e *Executor) findRepo(cwd, rel string) (gitDir, workTree string, err error) {
	for d := cwd; ; d = filepath.Dir(d) {
		if _, inside := e.rel(d); !inside {
			break
		}
		dotgit := filepath.Join(d, ".git")
		if st, err := os.Lstat(dotgit); err == nil {
			gd, err := e.gitDirAt(dotgit, st)
			return gd, d, err
		}
		if d == e.ws {
			break
		}
	}
	return "", "", failf("%s is not in a git repository inside the workspace", show(rel))
}

// gitDirAt returns the real git directory that a .git entry stands for, checked to be inside
// the workspace with the common directory of a linked work tree.
func (e *Executor) gitDirAt(dotgit string, st fs.FileInfo) (string, error) {
	gd := dotgit
	if st.Mode().IsRegular() {
		b, err := readSmall(dotgit)
		line, _, _ := strings.Cut(string(b), "\n")
		p, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		if err != nil || !ok {
			return "", failf("%s is a .git file that does not name a git directory", e.display(dotgit))
		}
		gd = strings.TrimSpace(p)
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(filepath.Dir(dotgit), gd)
		}
	}
	real, err := filepath.EvalSymlinks(gd)
	if err != nil {
		return "", failf("the git directory %s cannot be used: %v", e.display(gd), err)
	}
	if _, inside := e.rel(real); !inside {
		return "", failf("the git directory of this repository (%s) is outside the workspace", real)
	}
	// A linked work tree takes its objects, references and configuration from a common directory.
	if b, err := readSmall(filepath.Join(real, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(real, c)
		}
		creal, err := filepath.EvalSymlinks(c)
		if err != nil {
			return "", failf("the common git directory %s cannot be used: %v", e.display(c), err)
		}
		if _, inside := e.rel(creal); !inside {
			return "", failf("the common git directory of this repository (%s) is outside the workspace", creal)
		}
	}
	return real, nil
}

// display is a path as the model sees it: relative when inside the workspace.
func (e *Executor) display(p string) string {
	if rel, ok := e.rel(p); ok {
		return show(rel)
	}
	return p
}

func readSmall(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4096))
}

// gitDrivers lists the filter and diff drivers the repository's configuration defines, and
// returns the options that empty each of them: a clean filter runs when status compares a
// changed file, a smudge filter when a file is written, a textconv when a diff is shown.
// Their names are arbitrary, so they are read from the configuration as git itself reads it.
func (e *Executor) gitDrivers(ctx context.Context, cwd string, env []string) ([]string, error) {
	args := append(append([]string{"git"}, gitSafety...), "config", "-z", "--get-regexp", `^(filter|diff)\.`)
	o, err := e.run(ctx, proc{path: e.git, args: args, dir: cwd, env: env})
	if err != nil {
		return nil, failf("git could not be started: %v", err)
	}
	switch {
	case o.exitCode == 1 && len(o.head) == 0:
		return nil, nil // no such key
	case o.exitCode != 0:
		return nil, failf("git cannot read the repository's configuration:\n%s", o.output())
	case o.dropped > 0:
		return nil, failf("the repository's configuration defines too many filter and diff settings to check; refusing to run git there")
	}
	out := slices.Concat(o.head, o.tail)
	var flags []string
	seen := map[string]bool{}
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		key, _, _ := strings.Cut(string(rec), "\n")
		section, rest, ok := strings.Cut(key, ".")
		last := strings.LastIndexByte(rest, '.')
		if !ok || last < 0 {
			continue // no subsection: diff.external and the like, switched off by options
		}
		sub := rest[:last]
		if seen[section+"\x00"+sub] {
			continue
		}
		seen[section+"\x00"+sub] = true
		if strings.ContainsAny(sub, "=\n\x00") {
			return nil, failf("the repository's configuration defines a %s driver named %q, which cannot be switched off on git's command line; refusing to run git there", section, sub)
		}
		var vars []string
		switch section {
		case "filter":
			vars = []string{"clean=", "smudge=", "process=", "required=false"}
		case "diff":
			vars = []string{"textconv=", "command="}
		}
		for _, v := range vars {
			flags = append(flags, "-c", section+"."+sub+"."+v)
		}
	}
	return flags, nil
}
