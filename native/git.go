package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
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
// name an external diff or a configuration) or a file the shell around git would read first
// (BASH_ENV, ENV), with the system and global configuration (the global one would be
// $HOME/.gitconfig, in the workspace) switched off, plus extra.
func (e *Executor) gitEnv(extra ...string) []string {
	env := make([]string, 0, len(e.env)+10+len(extra))
	for _, kv := range e.env {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "GIT_") && k != "BASH_ENV" && k != "ENV" {
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

// gitRun runs git_status or git_diff (script is statusScript or diffScript) in
// Paths["cwd"]: one start of sh, sandboxed, that lists the repository's drivers and runs git.
func (e *Executor) gitRun(ctx context.Context, a *action.Action, script string) (Result, error) {
	cwd, rel, err := e.path(a, "cwd")
	if err != nil {
		return Result{}, err
	}
	root, err := e.openRoot()
	if err != nil {
		return Result{}, err
	}
	defer root.Close()
	d, err := e.workDir(root, cwd, rel)
	if err != nil {
		return Result{}, err
	}
	d.Close()
	switch {
	case e.git == "":
		return Result{}, failf("%s needs git, which is not installed", a.Kind)
	case e.sh == "":
		return Result{}, failf("%s needs sh to run git, and sh is not installed", a.Kind)
	}
	gitDir, workTree, err := e.findRepo(root, rel)
	if err != nil {
		return Result{}, err
	}
	// Found here, inside the workspace, and named to git: neither a discovery past the
	// workspace nor core.worktree can send git elsewhere.
	env := e.gitEnv("GIT_DIR="+gitDir, "GIT_WORK_TREE="+workTree)
	o, err := e.runGit(ctx, proc{path: e.sh, args: []string{"sh", "-c", script, "sh", e.git}, dir: cwd, env: env})
	if err != nil {
		return Result{}, err
	}
	out := o.output()
	data := map[string]any{"exitCode": o.exitCode, "truncated": o.dropped > 0}
	switch {
	case o.timedOut:
		return Result{}, failf("%s[git timed out after %s and was killed]", withNewline(out), e.timeout)
	case o.cancelled:
		return Result{}, failf("%s[cancelled: git was killed]", withNewline(out))
	case o.exitCode == exitConfig:
		return Result{}, failf("git cannot read the repository's configuration:\n%s", out)
	case o.exitCode == exitDriverName:
		section, name, _ := strings.Cut(strings.TrimSuffix(out, "\n"), "\n")
		return Result{}, failf("the repository's configuration defines a %s driver named %q, which cannot be switched off on git's command line; refusing to run git there", section, name)
	case o.exitCode == exitDrivers:
		return Result{}, failf("the repository's configuration defines too many filter and diff settings to check; refusing to run git there")
	case o.exitCode != 0:
		return Result{Text: fmt.Sprintf("%s[git exited with code %d]", withNewline(out), o.exitCode), Structured: data, IsError: true}, nil
	}
	if out == "" && script == diffScript {
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

// findRepo finds the repository of the directory rel: the nearest .git at or above it, not
// above the workspace, whose git directory (a .git file or a link may point elsewhere) lies
// inside the workspace too. It looks through root only, so a link swapped in meanwhile cannot
// lead it out. It returns the real paths of the git directory and the work tree.
func (e *Executor) findRepo(root *os.Root, rel string) (gitDir, workTree string, err error) {
	for d := rel; ; d = path.Dir(d) {
		st, err := root.Lstat(path.Join(d, ".git"))
		if err == nil {
			gd, err := e.gitDirAt(root, d, st)
			return gd, filepath.Join(e.ws, d), err
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", fsFailure("look for the repository of", rel, err)
		}
		if d == "." {
			break
		}
	}
	return "", "", failf("%s is not in a git repository inside the workspace", show(rel))
}

// gitDirAt returns the real path of the git directory that the .git entry in the directory
// d stands for, opened through root and so inside the workspace, as is the common directory
// of a linked work tree.
func (e *Executor) gitDirAt(root *os.Root, d string, st fs.FileInfo) (string, error) {
	dotgit := path.Join(d, ".git")
	target, named := dotgit, dotgit
	if st.Mode().IsRegular() {
		dir, err := root.OpenRoot(d)
		if err != nil {
			return "", fsFailure("read", dotgit, err)
		}
		b, err := readSmall(dir, ".git", dotgit)
		dir.Close()
		if err != nil {
			return "", err
		}
		line, _, _ := strings.Cut(string(b), "\n")
		p, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		if !ok {
			return "", failf("%s is a .git file that does not name a git directory", dotgit)
		}
		named = strings.TrimSpace(p)
		if target, err = e.within(d, named, "git directory"); err != nil {
			return "", err
		}
	}
	real, g, err := e.realDir(root, target, named, "git directory")
	if err != nil {
		return "", err
	}
	defer g.Close()
	// A linked work tree takes its objects, references and configuration from a common directory.
	if _, err := g.Lstat("commondir"); errors.Is(err, fs.ErrNotExist) {
		return real, nil
	}
	realRel, _ := e.rel(real)
	b, err := readSmall(g, "commondir", path.Join(realRel, "commondir"))
	if err != nil {
		return "", err
	}
	c := strings.TrimSpace(string(b))
	cTarget, err := e.within(realRel, c, "common git directory")
	if err != nil {
		return "", err
	}
	_, cg, err := e.realDir(root, cTarget, c, "common git directory")
	if err != nil {
		return "", err
	}
	cg.Close()
	return real, nil
}

// within returns a path a git file names (absolute, or relative to the directory base) as a
// path for the workspace's root: still unresolved, so that os.Root follows its links and its
// .. components, and refuses those that leave the workspace.
func (e *Executor) within(base, p, what string) (string, error) {
	if p == "" {
		return "", failf("%s names an empty %s", show(base), what)
	}
	if !filepath.IsAbs(p) {
		return base + "/" + p, nil
	}
	rel, ok := e.rel(p)
	if !ok {
		return "", failf("the %s of this repository (%s) is outside the workspace", what, p)
	}
	return rel, nil
}

// realDir opens the directory at target through root and returns the path it lies at, which
// is inside the workspace, and the directory itself. named is the path as the repository
// gave it, for messages.
func (e *Executor) realDir(root *os.Root, target, named, what string) (string, *os.Root, error) {
	g, err := root.OpenRoot(target)
	switch {
	case escapes(err):
		return "", nil, failf("the %s of this repository (%s) is outside the workspace", what, named)
	case err != nil:
		return "", nil, failf("the %s %s cannot be used: %v", what, named, cause(err))
	}
	real, ok, err := where(g)
	switch {
	case err != nil:
		err = failf("the %s %s cannot be used: %v", what, named, cause(err))
	case !ok:
		err = failf("the %s %s cannot be used: where it lies cannot be read from /proc", what, named)
	default:
		if _, inside := e.rel(real); !inside {
			err = failf("the %s of this repository (%s) is outside the workspace", what, real)
		}
	}
	if err != nil {
		g.Close()
		return "", nil, err
	}
	return real, g, nil
}

// readSmall reads the start of the regular file name in dir (a link is refused, not followed).
func readSmall(dir *os.Root, name, rel string) ([]byte, error) {
	f, _, err := openRegular(dir, name, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, fsFailure("read", rel, err)
	}
	return b, nil
}

// The exit statuses by which gitScript refuses to run git (git itself exits with 0, 1, 128
// or 129, or is killed).
const (
	exitConfig     = 113 // git config failed: what it said is the output
	exitDriverName = 114 // a driver's name holds "=": the output is its section, then its name
	exitDrivers    = 115 // more driver settings than maxDriverKeys bytes of names
)

// maxDriverKeys bounds the names of driver settings gitScript reads (about seven hundred;
// a repository using Git LFS has four). sh dedups them in time that grows as the square of
// their number: about 0.25 s at the bound.
const maxDriverKeys = 16 << 10

// gitScript is what git_status and git_diff run with sh, in one sandboxed start, with the path
// of git as $1. It lists the filter and diff drivers the repository's configuration defines,
// as git itself reads it, and runs git with each of them emptied: a clean filter runs when
// status compares a changed file, a smudge filter when a file is written, a textconv when a
// diff is shown. Their names are arbitrary, so they are only ever expanded inside double
// quotes, never parsed again; a name holding "=" cannot be written as a -c option and is
// refused. A subsection cannot hold a newline, so the names git config prints, one a line,
// are read back exactly. @SAFETY@ and @SUB@ stand for the quoted options of every git run and
// of the subcommand.
const gitScript = `g=$1
nl='
'
k=$("$g" @SAFETY@ config --name-only --get-regexp '^(filter|diff)\.' 2>&1)
case $? in
0) ;;
1) [ -z "$k" ] || { printf '%s\n' "$k"; exit @EXITCONFIG@; } ;;
*) printf '%s\n' "$k"; exit @EXITCONFIG@ ;;
esac
[ ${#k} -le @MAXKEYS@ ] || exit @EXITDRIVERS@
set --
seen=$nl
while IFS= read -r key; do
	case $key in
	filter.*.*) s=filter ;;
	diff.*.*) s=diff ;;
	*) continue ;; # no subsection: diff.external and the like, switched off by options
	esac
	d=${key#"$s".}
	d=${d%.*}
	case $seen in *"$nl$s.$d$nl"*) continue ;; esac
	seen=$seen$s.$d$nl
	case $d in *=*) printf '%s\n%s\n' "$s" "$d"; exit @EXITNAME@ ;; esac
	if [ "$s" = filter ]; then
		set -- "$@" -c "filter.$d.clean=" -c "filter.$d.smudge=" -c "filter.$d.process=" -c "filter.$d.required=false"
	else
		set -- "$@" -c "diff.$d.textconv=" -c "diff.$d.command="
	fi
done <<EOF
$k
EOF
exec "$g" @SAFETY@ "$@" @SUB@
`

// The scripts of git_status and git_diff.
var (
	statusScript = gitCommand("status", "--short", "--branch", "--ignore-submodules=dirty")
	diffScript   = gitCommand("diff", "--no-color", "--no-ext-diff", "--no-textconv",
		"--ignore-submodules=dirty", "--submodule=short")
)

// gitCommand is gitScript running the subcommand sub.
func gitCommand(sub ...string) string {
	return strings.NewReplacer(
		"@SAFETY@", shellQuote(gitSafety),
		"@SUB@", shellQuote(sub),
		"@EXITCONFIG@", strconv.Itoa(exitConfig),
		"@EXITNAME@", strconv.Itoa(exitDriverName),
		"@EXITDRIVERS@", strconv.Itoa(exitDrivers),
		"@MAXKEYS@", strconv.Itoa(maxDriverKeys),
	).Replace(gitScript)
}

// shellQuote quotes each word for sh, in single quotes.
func shellQuote(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
