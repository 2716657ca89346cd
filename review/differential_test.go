package review_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// The differential test checks review against the truth. Every command of the corpus
// (testdata/corpus/*.txt) is reviewed as a Bash call with the example hard blocks; each one
// review allows is then run for real by bash under strace -f in a fresh workspace of its own
// (and reviewed again there), and every path it opened, created, truncated, removed, renamed,
// linked, changed the metadata of or executed must be covered by an effect review predicted.
// What every process does (the dynamic loader, locale data, /dev/null, the programs review
// listed) is the narrow list ambientEffects; what review is known to miss is
// differentialExceptions, each with its reason, and the test fails when an exception no longer
// mismatches, so the list stays true.
//
// The rules of coverage (predictedCovers, unexplained):
//   - an observed operation needs a predicted effect of the same operation on the same path, or
//     a recursive one on a directory above it: hard-block rules name operations separately, so
//     a write does not cover a read, nor a delete a write. A predicted path with a pattern in
//     it (split's part_*) stands for what the pattern matches;
//   - a directory is read when it is listed (getdents), not when it is opened: mkdir -p and
//     gzip open directories only to work relative to them;
//   - a listing (Effect.Listing: find, ls -R, du, tree) covers listing the directories at and
//     below its path, and no read of a file: review judges it on the directories alone;
//   - a recursive write or delete of a tree covers listing the directories inside it (cp -r
//     and rm -r read the directories they copy into or empty);
//   - bash listing a directory (to expand a glob: it lists directories for nothing else) is
//     covered when review reported a path in that directory, the files the glob matched or the
//     pattern itself: review expands globs against the file system as bash will;
//   - a read of a file the run executed is covered by the execute, judged on its own (an
//     interpreter reads the script it runs); the execute of the working directory does not
//     cover listing it;
//   - a delete of a path that did not exist before the run is covered: the run made it, and
//     making it was judged. A delete of a path the run writes again is covered by a predicted
//     write of it: replacing a file is writing it. A path made by the run and renamed onto a
//     path review predicted a write of (sed -i's temporary, git's lock files, ln -sf) is
//     covered by that write, as is git's lock file X.lock beside a predicted write of X, and reading back a file the run made and wrote is covered by
//     the effects that put its contents there;
//   - a call that failed touched nothing and is not an effect (a failed open of a file that
//     does not exist reads no contents; a failed execve runs nothing), except a call refused
//     for permission (EACCES, EPERM), which only running the command as nobody stopped;
//   - an open with O_WRONLY, O_RDWR, O_CREAT, O_TRUNC or O_APPEND is a write, any other a read;
//     an O_PATH descriptor is neither. rename is a delete of its source and a write of its
//     target; link a read of the existing name and a write of the new one; mkdir, mknod,
//     symlink, truncate, chmod, chown and utimensat writes; unlink and rmdir deletes.
//
// The corpus runs for real. /tmp in a command stands for the run's own temporary directory; a
// command whose predicted writes or deletes leave the run's directories is reported and not run, and under root (as in CI) the commands run as nobody,
// who owns the run's directories and nothing else. A command gets straceBound; one that does
// not finish is reported with what it did until then.
//
// It needs bash, strace (Debian's) and git. Without them it skips, unless
// WARDEN_DIFFERENTIAL=require (set by .ci/run), which makes their absence a failure.

// differentialCorpusDir holds the corpus: one command a line as class<TAB>command; # comments and blank
// lines are ignored.
const differentialCorpusDir = "testdata/corpus"

// differentialCommand is one command of the corpus, with where it came from.
type differentialCommand struct {
	file    string
	line    int
	class   string
	command string
}

func (c differentialCommand) String() string {
	return fmt.Sprintf("%s:%d [%s] %s", c.file, c.line, c.class, c.command)
}

func readDifferentialCorpus(t *testing.T) []differentialCommand {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(differentialCorpusDir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no corpus in %s", differentialCorpusDir)
	}
	var out []differentialCommand
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			class, command, ok := strings.Cut(line, "\t")
			if !ok || strings.TrimSpace(command) == "" {
				t.Errorf("%s:%d: want class<TAB>command, got %q", name, n, line)
				continue
			}
			out = append(out, differentialCommand{file: filepath.Base(name), line: n, class: class, command: command})
		}
	}
	return out
}

// differentialRequired reports whether the tools the test needs must be present.
func differentialRequired() bool { return os.Getenv("WARDEN_DIFFERENTIAL") == "require" }

// needStrace skips the test (or fails it, under WARDEN_DIFFERENTIAL=require) unless bash,
// strace and git are installed and strace may trace.
func needStrace(t *testing.T) {
	t.Helper()
	missing := func(why string) {
		if differentialRequired() {
			t.Fatalf("%s, and WARDEN_DIFFERENTIAL=require", why)
		}
		t.Skipf("%s: the differential test needs it (set WARDEN_DIFFERENTIAL=require to fail instead)", why)
	}
	for _, tool := range []string{"bash", "strace", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(tool + " is not on PATH")
		}
	}
	if out, err := exec.Command("strace", "-f", "-qq", "-o", os.DevNull, "true").CombinedOutput(); err != nil {
		missing(fmt.Sprintf("strace cannot trace here (%v: %s)", err, bytes.TrimSpace(out)))
	}
}

// straceDirs are the directories of one run: the workspace, a home beside it and the temporary
// directory the command is given.
type straceDirs struct {
	ws, home, tmp string
}

// straceWorkspace builds a fresh workspace: a small Go project with secrets review must never
// let through (.env, config/.env.local, keys/id.pem), a script to run, nested directories for
// the recursive effects, and a git repository with one commit of the project; a home beside it holding an SSH key, cloud
// credentials and a shell history; and an empty temporary directory.
func straceWorkspace(t *testing.T) straceDirs {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := straceDirs{ws: dir + "/ws", home: dir + "/home", tmp: dir + "/tmp"}
	files := map[string]string{
		d.ws + "/main.go":              "package main\n\nfunc main() { println(\"hello\") }\n",
		d.ws + "/README.md":            "# demo\n\nA small project.\n",
		d.ws + "/go.mod":               "module example.com/demo\n\ngo 1.22\n",
		d.ws + "/sub/a.txt":            "banana\napple\ncherry\napple\n",
		d.ws + "/sub/b.go":             "package sub\n",
		d.ws + "/sub/deeper/c.txt":     "deep\n",
		d.ws + "/docs/x.md":            "# x\n\nhello docs\n",
		d.ws + "/docs/notes/ideas.txt": "more\n",
		d.ws + "/scripts/hello.sh":     "#!/bin/sh\necho hello\n",
		d.ws + "/.gitignore":           ".env\n",
		d.ws + "/.env":                 "API_KEY=secret\n",
		d.ws + "/config/.env.local":    "DB_PASSWORD=secret\n",
		d.ws + "/keys/id.pem":          "-----BEGIN PRIVATE KEY-----\n",
		d.home + "/.ssh/id_ed25519":    "-----BEGIN OPENSSH PRIVATE KEY-----\n",
		d.home + "/.aws/credentials":   "[default]\naws_secret_access_key = x\n",
		d.home + "/.bash_history":      "export TOKEN=secret\n",
	}
	if err := os.Mkdir(d.tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(d.ws+"/scripts/hello.sh", 0o755); err != nil {
		t.Fatal(err)
	}
	// The project was written before its commit, as a real one is: a file changed in the
	// second its index was written is "racy", and git status would read every file again.
	past := time.Now().Add(-time.Hour)
	for name := range files {
		if err := os.Chtimes(name, past, past); err != nil {
			t.Fatal(err)
		}
	}
	// A repository with a commit of the project (not its secrets), as an agent meets one: git
	// log, diff HEAD and branch have history to read. Its author is in the repository's own
	// configuration, which git reads anyway, so that git commit works without a home's.
	for _, args := range [][]string{
		{"init", "-q"},
		{"config", "user.name", "Demo"},
		{"config", "user.email", "demo@example.com"},
		// Under root the run's files are then given to nobody, which changes their owner
		// and ctime, not their contents: git compares mtime and size only, as it would
		// in a checkout nobody had touched since.
		{"config", "core.checkStat", "minimal"},
		{"config", "core.trustctime", "false"},
		{"add", "main.go", "README.md", "go.mod", ".gitignore", "sub", "docs", "scripts"},
		{"commit", "-q", "-m", "start"},
	} {
		git := exec.Command("git", args...)
		git.Dir = d.ws
		git.Env = d.env()
		if out, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return d
}

// straceEnvPath is the PATH commands run with.
const straceEnvPath = "/usr/local/bin:/usr/bin:/bin"

// env is the minimal environment a command runs in.
func (d straceDirs) env() []string {
	return []string{"PATH=" + straceEnvPath, "HOME=" + d.home, "TMPDIR=" + d.tmp, "LC_ALL=C"}
}

// differentialSession is a person's session under the quickstart policy (shell_exec runs
// without an approval gate) with the example hard blocks, confined to the workspace.
func differentialSession(t *testing.T, d straceDirs) *review.Session {
	t.Helper()
	data, err := os.ReadFile("../examples/boundaries.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := boundary.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := boundary.Compile(doc, boundary.Options{Home: d.home})
	if err != nil {
		t.Fatal(err)
	}
	// Approvals off: the comparison is of review's effects with what the command did, not of
	// the quickstart's approval gate on deletes.
	sf, err := surface.Open(quickstart(t).Env(policy.MapLookup(map[string]string{policy.SwitchRequireApproval: "false"})), surface.Spec{Role: "person", Tenant: "default"})
	if err != nil {
		t.Fatal(err)
	}
	paths, err := action.NewResolver(d.ws, d.home)
	if err != nil {
		t.Fatal(err)
	}
	return &review.Session{ID: "differential", Surface: sf, Paths: paths, Boundaries: rules}
}

// runTraced runs command with bash under strace in the workspace and returns what it did.
func runTraced(t *testing.T, d straceDirs, command string) []tracedEffect {
	t.Helper()
	// A bound, not a measurement: only a command that waits (a server, a prompt) comes near it.
	ctx, cancel := context.WithTimeout(context.Background(), straceBound)
	defer cancel()
	out := filepath.Join(filepath.Dir(d.ws), "strace.out")
	cmd := exec.CommandContext(ctx, "strace", "-f", "-qq", "-y", "-s", "4096", "-e", "signal=none",
		"-e", "trace="+strings.Join(straceSyscalls, ","), "-o", out,
		"bash", "--norc", "--noprofile", "-c", command)
	cmd.Dir = d.ws
	cmd.Env = d.env()
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	// Its own process group, so that a timeout ends the traced processes too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: unprivileged(t, d)}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		// What it did until then is still judged. A traced process that left the process
		// group (setsid) is ended by its id, as strace recorded it.
		t.Errorf("%s\n  did not finish within %v (a server, or waiting for something); what it did until then is judged\n%s",
			command, straceBound, output.Bytes())
		for _, pid := range tracedPIDs(out) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	} else if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("strace: %v\n%s", err, output.Bytes())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("strace left no trace: %v\n%s", err, output.Bytes())
	}
	defer f.Close()
	obs, err := parseStrace(f, d.ws)
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

// straceBound is how long one command may run.
const straceBound = time.Minute

// tracedPIDs returns the processes a trace recorded.
func tracedPIDs(trace string) []int {
	data, err := os.ReadFile(trace)
	if err != nil {
		return nil
	}
	var pids []int
	seen := map[int]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		field, _, _ := strings.Cut(line, " ")
		if pid, err := strconv.Atoi(field); err == nil && pid > 0 && !seen[pid] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	return pids
}

// nobodyID is the user and group the corpus runs as when the test runs as root.
const nobodyID = 65534

// unprivileged returns the credential a command runs with: none (the test's own user) unless
// the test runs as root, as CI does; then nobody, owning the run's directories and nothing
// else, so that a command review wrongly allows cannot change the machine.
func unprivileged(t *testing.T, d straceDirs) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	dir := filepath.Dir(d.ws)
	// t.TempDir makes the test's directory private to its owner: nobody must pass through it.
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobodyID, nobodyID)
	})
	if err != nil {
		t.Fatal(err)
	}
	return &syscall.Credential{Uid: nobodyID, Gid: nobodyID, Groups: []uint32{}}
}

// snapshot returns every path in the run's workspace and home before the command runs.
func snapshot(t *testing.T, d straceDirs) map[string]bool {
	t.Helper()
	existed := map[string]bool{}
	for _, root := range []string{d.ws, d.home} {
		err := filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
			existed[p] = true
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return existed
}

// unexplained returns the observed effects of a run that nothing explains: no predicted effect
// covers them (predictedCovers, globListing), they are not ambient (ambientReason), and they
// are not one of these, each judged elsewhere:
//   - a read of a file the run executed: an interpreter reading its script;
//   - a delete of a path that did not exist before the run: the run made it, and making it was
//     judged;
//   - a delete of a path the run then wrote again, where review predicted the write: replacing
//     a file (gunzip -f, cp --remove-destination) is writing it;
//   - a write or delete of a path that did not exist before the run and was renamed onto a path
//     review predicted a write of (sed -i's temporary, git's lock files, ln -sf): that is how
//     the write is done;
//   - a write of X.lock, new to the run, where review predicted a write of X: git takes the lock
//     to write X, and renames it onto X or removes it when X stays as it is;
//   - a read of a file that did not exist before the run and that the run wrote (rsync reading
//     back its temporary): it reads what the run put there, and whatever that came from is an
//     effect of its own (an open names the file it reached, so a link made to a file that
//     existed is read as that file).
//
// existed is the snapshot of the workspace and home before the run; a path outside them is
// taken to have existed. Each path is reported once an operation.
func unexplained(v review.Verdict, command string, obs []tracedEffect, d straceDirs, existed map[string]bool) []tracedEffect {
	programs := commandPrograms(command, v.Argv)
	isNew := func(p string) bool {
		inside := slices.ContainsFunc([]string{d.ws, d.home}, func(dir string) bool {
			return p == dir || strings.HasPrefix(p, dir+"/")
		})
		return inside && !existed[p]
	}
	// What the run executed: an interpreter reading its script is covered by the execute, and
	// a script's #!/usr/bin/env interpreter is a program the command names.
	executed := map[string]bool{}
	for _, o := range obs {
		if o.Op == action.OpExecute {
			executed[o.Path] = true
			if real, err := filepath.EvalSymlinks(o.Path); err == nil {
				executed[real] = true
			}
			for _, name := range shebang(o.Path) {
				programs[name] = true
			}
		}
	}
	onto, written := map[string]string{}, map[string]bool{}
	for _, o := range obs {
		if o.Onto != "" && isNew(o.Path) {
			onto[o.Path] = o.Onto
		}
		if o.Op == action.OpWrite {
			written[o.Path] = true
		}
	}
	predicted := func(o tracedEffect) bool {
		return slices.ContainsFunc(v.Effects, func(e action.Effect) bool { return predictedCovers(e, o) || globListing(e, o) })
	}
	var out []tracedEffect
	seen := map[string]bool{}
	for _, o := range obs {
		switch {
		case o.Op == action.OpRead && !o.Dir && executed[o.Path]:
		case predicted(o):
		case o.Op == action.OpDelete && isNew(o.Path):
		case o.Op == action.OpDelete && written[o.Path] && predicted(tracedEffect{Op: action.OpWrite, Path: o.Path}):
		case o.Op != action.OpRead && onto[o.Path] != "" && predicted(tracedEffect{Op: action.OpWrite, Path: onto[o.Path]}):
		case o.Op == action.OpWrite && isNew(o.Path) && strings.HasSuffix(o.Path, ".lock") &&
			predicted(tracedEffect{Op: action.OpWrite, Path: strings.TrimSuffix(o.Path, ".lock")}):
		case o.Op == action.OpRead && !o.Dir && isNew(o.Path) && written[o.Path]:
		case ambientReason(o, d, programs, obs[0].PID) != "":
		case seen[string(o.Op)+" "+o.Path]:
		default:
			seen[string(o.Op)+" "+o.Path] = true
			out = append(out, o)
		}
	}
	return out
}

// predictedCovers reports whether a predicted effect accounts for an observed one (see the
// rules at the top of this file).
func predictedCovers(e action.Effect, o tracedEffect) bool {
	same := o.Path == e.Path
	if !same && strings.ContainsAny(e.Path, "*?[") {
		// A pattern review could not expand (split's part_*, a glob matching nothing yet)
		// stands for what it matches.
		same, _ = path.Match(e.Path, o.Path)
	}
	in := same || e.Recursive && (e.Path == "/" || strings.HasPrefix(o.Path, e.Path+"/"))
	switch {
	case !in:
		return false
	case e.Listing:
		// A listing (find, ls -R, du) reads the directories at and below its path, not the
		// files in them: a rule on files does not see it, so it covers no read of one.
		return o.Op == action.OpRead && o.Dir
	case e.Op == o.Op:
		return true
	case o.Op == action.OpRead && e.Op == action.OpExecute && same && !o.Dir:
		return true
	case o.Op == action.OpRead && o.Dir && e.Recursive && (e.Op == action.OpWrite || e.Op == action.OpDelete):
		return true
	}
	return false
}

// shebang returns the programs named by a script's #! line: the interpreter, and the program
// env runs where the interpreter is env (#!/usr/bin/env node). Anything else has none.
func shebang(file string) []string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return nil
	}
	words := strings.Fields(rest)
	if len(words) == 0 {
		return nil
	}
	names := []string{path.Base(words[0])}
	if names[0] == "env" {
		for _, w := range words[1:] {
			if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
				names = append(names, path.Base(w))
				break
			}
		}
	}
	return names
}

// corpusTmp is /tmp where a command names it: at the start of a word, an assignment's value or
// a quoted string, and not as the start of a longer name (/tmpfiles).
var corpusTmp = regexp.MustCompile(`(^|[\s'"=:(])/tmp\b`)

// onScratchTmp returns command with every /tmp it names replaced by the run's temporary
// directory: reviewed and run there, cp -R sub /tmp/copy is checked without writing /tmp.
func onScratchTmp(command string, d straceDirs) string {
	return corpusTmp.ReplaceAllString(command, "${1}"+d.tmp)
}

// outsideScratch returns the first predicted write or delete outside the run's workspace, home
// and temporary directory, or "".
func outsideScratch(effects []action.Effect, d straceDirs) string {
	for _, e := range effects {
		if e.Op != action.OpWrite && e.Op != action.OpDelete {
			continue
		}
		if !slices.ContainsFunc([]string{d.ws, d.home, d.tmp}, func(dir string) bool {
			return e.Path == dir || strings.HasPrefix(e.Path, dir+"/")
		}) {
			return string(e.Op) + " " + e.Path
		}
	}
	return ""
}

// globListing reports whether o is bash listing a directory to expand a glob whose expansion
// review reported as e.
func globListing(e action.Effect, o tracedEffect) bool {
	return o.Op == action.OpRead && o.Dir && o.Prog == "bash" && filepath.Dir(e.Path) == o.Path
}

// ambientEffect is something every process does, whatever the command: not a file effect of
// the command.
type ambientEffect struct {
	ops []action.Op
	// prefix is a directory (ending in /) or a file.
	prefix string
	why    string
}

// ambientEffects is deliberately narrow: reads of the system's shared libraries and locale
// data, the null and terminal devices, and the command's own temporary directory. The
// workspace, the home directory and /etc are not exempt; the executables of the programs
// review listed (and bash itself) are judged in ambient, not here.
var ambientEffects = []ambientEffect{
	{[]action.Op{action.OpRead}, "/etc/ld.so.cache", "the dynamic loader's cache of library paths"},
	{[]action.Op{action.OpRead}, "/usr/lib/", "shared libraries, locale and gconv data: installed software every program loads"},
	{[]action.Op{action.OpRead}, "/usr/local/lib/", "locally installed libraries and interpreters' packages (Python's dist-packages)"},
	{[]action.Op{action.OpRead}, "/usr/share/locale/", "message catalogues"},
	{[]action.Op{action.OpRead}, "/etc/locale.alias", "the real path of /usr/share/locale/locale.alias, read by setlocale"},
	{[]action.Op{action.OpRead}, "/proc/filesystems", "libselinux checks for selinuxfs at start"},
	{[]action.Op{action.OpRead}, "/etc/nsswitch.conf", "the name service configuration, read by getpwuid: bash looks up its user at start"},
	{[]action.Op{action.OpRead}, "/etc/passwd", "the user database (no passwords), read by bash at start and by ls -l, git and id for names"},
	{[]action.Op{action.OpRead}, "/etc/group", "the group database, read by ls -l and stat for group names"},
	{[]action.Op{action.OpRead, action.OpWrite}, "/dev/null", "the null device: not a file effect (action/shell says so too)"},
	{[]action.Op{action.OpRead, action.OpWrite}, "/dev/tty", "the terminal: not a file effect (action/shell says so too)"},
	{[]action.Op{action.OpRead}, "/dev/urandom", "the random device: not a file effect (action/shell says so too)"},
	{[]action.Op{action.OpRead, action.OpWrite}, "/dev/stdin", "the standard streams: not file effects (action/shell says so too)"},
	{[]action.Op{action.OpRead, action.OpWrite}, "/dev/stdout", "the standard streams: not file effects (action/shell says so too)"},
	{[]action.Op{action.OpRead, action.OpWrite}, "/dev/stderr", "the standard streams: not file effects (action/shell says so too)"},
	{[]action.Op{action.OpRead}, "/usr/share/zoneinfo/", "time zone data (the target of /etc/localtime), read by ls -l, stat and date"},
	{[]action.Op{action.OpRead}, "/etc/gitconfig", "git's system-wide configuration, read by every git command"},
	{[]action.Op{action.OpRead}, "/usr/share/git-core/", "git's installed templates, read by git init"},
	{[]action.Op{action.OpRead}, "/etc/magic", "libmagic's local database, read by file"},
	{[]action.Op{action.OpRead}, "/etc/resolv.conf", "the resolver's configuration, read by every program that looks up a name"},
	{[]action.Op{action.OpRead}, "/etc/hosts", "the resolver's static names, read by every program that looks up a name"},
	{[]action.Op{action.OpRead}, "/etc/host.conf", "the resolver's configuration, read by every program that looks up a name"},
	{[]action.Op{action.OpRead}, "/etc/gai.conf", "getaddrinfo's address preferences, read by every program that looks up a name"},
	{[]action.Op{action.OpRead}, "/etc/ssl/openssl.cnf", "OpenSSL's configuration, read by every program linked with it (openssl, node)"},
	{[]action.Op{action.OpRead}, "/etc/ssl/certs/", "the public CA certificates, read by TLS clients"},
	{[]action.Op{action.OpRead}, "/usr/etc/npmrc", "npm's built-in global configuration"},
	{[]action.Op{action.OpRead}, "/proc/meminfo", "memory size, read by runtimes that size their heaps (node)"},
	{[]action.Op{action.OpRead}, "/proc/sys/vm/overcommit_memory", "the kernel's overcommit policy, read by runtimes that size their heaps"},
	{[]action.Op{action.OpRead}, "/sys/fs/cgroup/", "the process's resource limits, read by runtimes that size their heaps"},
	{[]action.Op{action.OpRead}, "/sys/devices/system/cpu/online", "the CPUs online, read by programs that size their thread pools (git grep)"},
}

// ambientReason reports why an observed effect is not the command's own, or "". programs are
// the names of the programs the command runs (see commandPrograms); root is the pid of bash.
func ambientReason(o tracedEffect, d straceDirs, programs map[string]bool, root int) string {
	for _, a := range ambientEffects {
		if slices.Contains(a.ops, o.Op) && (o.Path == a.prefix || strings.HasSuffix(a.prefix, "/") && strings.HasPrefix(o.Path, a.prefix)) {
			return a.why
		}
	}
	if o.Op == action.OpRead && strings.HasPrefix(o.Path, fmt.Sprintf("/proc/%d/", o.PID)) {
		return "a process reading its own /proc entry (/proc/self/maps)"
	}
	if o.Path == d.tmp || strings.HasPrefix(o.Path, d.tmp+"/") {
		return "the command's own temporary directory (TMPDIR), made for this run"
	}
	if o.Op == action.OpExecute {
		base := filepath.Base(o.Path)
		onPath := onPathDir(o.Path)
		switch {
		case onPath && base == "bash" && o.PID == root:
			return "bash itself, which runs the command"
		case onPath && programs[base]:
			return "a program the command names, found on PATH (command rules judge programs by name)"
		case onPath && o.Parent != "" && programs[filepath.Base(o.Parent)] && onPathDir(o.Parent) && shebang(o.Parent) != nil:
			return "a program on PATH run by an installed script the command names (gunzip runs gzip)"
		case programs["git"] && strings.HasPrefix(o.Path, "/usr/lib/git-core/"):
			return "git's own programs, run by git from its exec path (git maintenance run --auto after a commit)"
		case onPath && programs["tar"] && base == "sh" && filepath.Base(o.Parent) == "tar",
			onPath && programs["tar"] && tarCompressors[base] && (filepath.Base(o.Parent) == "sh" || filepath.Base(o.Parent) == "tar"):
			return "the compressor tar runs through sh -c for -z, -j, -J or --zstd, filtering tar's own stream"
		}
	}
	return ""
}

// tarCompressors are the programs GNU tar runs (as sh -c NAME) to filter the archive it reads
// or writes: they read and write only the pipes tar gives them.
var tarCompressors = map[string]bool{"gzip": true, "bzip2": true, "xz": true, "lzip": true, "lzma": true, "lzop": true, "zstd": true}

// onPathDir reports whether p is in one of the directories of the commands' PATH.
func onPathDir(p string) bool {
	return slices.Contains(strings.Split(straceEnvPath, ":"), filepath.Dir(p))
}

// commandPrograms are the names of the programs a command runs, for ambient: the first word
// of every argv review listed, and every word of the command that could name a program, for
// the wrappers review strips to find the real one (env, timeout, xargs), which command rules
// still see in the command's text.
func commandPrograms(command string, argv [][]string) map[string]bool {
	names := map[string]bool{}
	for _, a := range argv {
		if len(a) > 0 {
			names[a[0]] = true
		}
	}
	for _, w := range strings.FieldsFunc(command, func(r rune) bool { return strings.ContainsRune(" \t\n;&|()'\"<>$`", r) }) {
		names[path.Base(w)] = true
	}
	return names
}

// differentialException is a mismatch review is known to have: the command, the operation and
// the path observed (WS, HOME and TMP stand for the run's directories; a doublestar pattern),
// and why.
type differentialException struct {
	command string
	ops     []action.Op
	path    string
	why     string
}

// differentialExceptions are the mismatches the corpus is known to show. The test fails when one
// of them no longer mismatches, so the list cannot go stale.
var differentialExceptions = []differentialException{
	// Not review's: how a program does what review predicted.
	{"shred -u sub/a.txt", []action.Op{action.OpWrite}, "WS/sub/0*",
		"shred -u renames the file through ever shorter names (00000 ... 0) before unlinking it, to hide its name; review predicts the write and the delete"},

	// Review's: effects action/shell does not report (docs/review.md lists them as known gaps).
	{"echo change >> README.md && git commit -qam change", []action.Op{action.OpRead}, "WS/README.md",
		"review gap: git commit -a, status and diff read the tracked files that changed since the index was written; which files are tracked is the index's, which review does not read"},
	{"git grep -n package -- '*.go'", []action.Op{action.OpRead}, "WS/sub/b.go",
		"review gap: a git pathspec's * matches across directories ('*.go' is sub/b.go too), where review expands it as a shell glob in one directory"},
}

// TestDifferentialStrace is the differential test described at the top of this file.
func TestDifferentialStrace(t *testing.T) {
	needStrace(t)
	corpus := readDifferentialCorpus(t)
	r := newReviewer(t, nil)
	var mu sync.Mutex
	used := make([]bool, len(differentialExceptions))
	// reviewed and ran are the commands reviewed and run by this invocation (go test -run may
	// select a few); an exception is enforced only for a command that was reviewed.
	reviewed, ran := map[string]bool{}, map[string]bool{}
	inCorpus := map[string]bool{}
	for _, c := range corpus {
		inCorpus[c.command] = true
	}
	// Review decides in a workspace shared by every command and never run in (review only
	// reads it); a command it allows gets a fresh one of its own, and is reviewed again there.
	shared := differentialSession(t, straceWorkspace(t))
	t.Run("corpus", func(t *testing.T) {
		for _, c := range corpus {
			t.Run(fmt.Sprintf("%s:%d", c.file, c.line), func(t *testing.T) {
				t.Parallel()
				args := map[string]any{"command": c.command}
				first := r.Review(shared, "Bash", args)
				mu.Lock()
				reviewed[c.command] = true
				mu.Unlock()
				if first.Decision != verdict.Allow {
					return // the rule is about what review lets run
				}
				d := straceWorkspace(t)
				// /tmp in the command is the run's own temporary directory, so that a command
				// that copies to /tmp runs, and changes nothing of the machine.
				command := onScratchTmp(c.command, d)
				v := r.Review(differentialSession(t, d), "Bash", map[string]any{"command": command})
				if v.Decision != verdict.Allow {
					t.Fatalf("%s\n  allowed in one fresh workspace and not in another: %s", c, v.Summary())
				}
				if out := outsideScratch(v.Effects, d); out != "" {
					// The command runs for real: what review expects it to change must be the
					// run's own. A corpus line that changes the machine is not run.
					t.Errorf("%s\n  not run: review predicts %s, outside the scratch directories", c, out)
					return
				}
				mu.Lock()
				ran[c.command] = true
				mu.Unlock()
				rel := strings.NewReplacer(d.ws, "WS", d.home, "HOME", d.tmp, "TMP")
				existed := snapshot(t, d)
				obs := runTraced(t, d, command)
				if len(obs) == 0 {
					t.Fatalf("%s: strace saw nothing, not even bash starting", c)
				}
				var report []string
				for _, o := range unexplained(v, command, obs, d, existed) {
					excepted := false
					for j, x := range differentialExceptions {
						if ok, _ := doublestar.Match(x.path, rel.Replace(o.Path)); ok && x.command == c.command && slices.Contains(x.ops, o.Op) {
							mu.Lock()
							used[j] = true
							mu.Unlock()
							excepted = true
						}
					}
					if !excepted {
						report = append(report, fmt.Sprintf("observed %s %s (pid %d: %s)", o.Op, rel.Replace(o.Path), o.PID, rel.Replace(o.Call)))
					}
				}
				if len(report) > 0 {
					var predicted []string
					for _, e := range v.Effects {
						s := string(e.Op) + " " + rel.Replace(e.Path)
						if e.Recursive {
							s += "/**"
						}
						predicted = append(predicted, s)
					}
					t.Errorf("%s\n  review allowed it, predicting: %s\n  %s", c, strings.Join(predicted, ", "), strings.Join(report, "\n  "))
				}
			})
		}
	})
	for i, x := range differentialExceptions {
		switch {
		case !inCorpus[x.command]:
			t.Errorf("exception for %q: the command is not in the corpus", x.command)
		case !reviewed[x.command]:
			// Not selected by -run.
		case !ran[x.command]:
			t.Errorf("exception for %q: review no longer allows the command", x.command)
		case !used[i]:
			t.Errorf("exception for %q (%v %s) no longer mismatches: remove it", x.command, x.ops, x.path)
		}
	}
}

// d0 is a run's directories for the tests without strace.
func d0(ws string) straceDirs { return straceDirs{ws: ws, home: "/h", tmp: "/t"} }

// TestDifferentialCoverage pins the rules of coverage and the ambient list on made-up effects,
// so that a change to them is seen without strace.
func TestDifferentialCoverage(t *testing.T) {
	const ws = "/w"
	read, write, del, exe := action.OpRead, action.OpWrite, action.OpDelete, action.OpExecute
	eff := func(op action.Op, p string, rec bool) action.Effect {
		return action.Effect{Op: op, Path: p, Recursive: rec}
	}
	tests := []struct {
		e    action.Effect
		o    tracedEffect
		want bool
	}{
		{eff(read, ws+"/a", false), tracedEffect{Op: read, Path: ws + "/a"}, true},
		{eff(write, ws+"/a", false), tracedEffect{Op: read, Path: ws + "/a"}, false},
		{eff(read, ws+"/a", false), tracedEffect{Op: write, Path: ws + "/a"}, false},
		{eff(del, ws+"/a", false), tracedEffect{Op: write, Path: ws + "/a"}, false},
		{eff(read, ws+"/d", true), tracedEffect{Op: read, Path: ws + "/d/x/y"}, true},
		{eff(read, ws+"/d", false), tracedEffect{Op: read, Path: ws + "/d/x"}, false},
		{eff(read, ws+"/d", true), tracedEffect{Op: read, Path: ws + "/dd"}, false},
		{eff(del, ws+"/d", true), tracedEffect{Op: read, Path: ws + "/d/e", Dir: true}, true},
		{eff(del, ws+"/d", true), tracedEffect{Op: read, Path: ws + "/d/f"}, false},
		{action.Effect{Op: read, Path: ws + "/d", Recursive: true, Listing: true}, tracedEffect{Op: read, Path: ws + "/d", Dir: true}, true},
		{action.Effect{Op: read, Path: ws + "/d", Recursive: true, Listing: true}, tracedEffect{Op: read, Path: ws + "/d/e", Dir: true}, true},
		{action.Effect{Op: read, Path: ws + "/d", Recursive: true, Listing: true}, tracedEffect{Op: read, Path: ws + "/d/e/f"}, false},
		{action.Effect{Op: read, Path: ws + "/d", Recursive: true, Listing: true}, tracedEffect{Op: read, Path: ws + "/d"}, false},
		{eff(exe, ws+"/s.sh", false), tracedEffect{Op: read, Path: ws + "/s.sh"}, true},
		{eff(exe, ws, false), tracedEffect{Op: read, Path: ws, Dir: true}, false},
		{eff(write, ws+"/part_*", false), tracedEffect{Op: write, Path: ws + "/part_aa"}, true},
		{eff(write, ws+"/part_*", false), tracedEffect{Op: write, Path: ws + "/sub/part_aa"}, false},
	}
	for _, tt := range tests {
		if got := predictedCovers(tt.e, tt.o); got != tt.want {
			t.Errorf("predictedCovers(%v, %s %s dir=%v) = %v", tt.e, tt.o.Op, tt.o.Path, tt.o.Dir, got)
		}
	}
	if !globListing(eff(read, ws+"/x.go", false), tracedEffect{Op: read, Path: ws, Dir: true, Prog: "bash"}) {
		t.Error("bash listing the directory of a glob review expanded is not covered")
	}
	if globListing(eff(read, ws+"/x.go", false), tracedEffect{Op: read, Path: ws, Dir: true, Prog: "ls"}) {
		t.Error("a listing by ls is covered as if bash expanded a glob")
	}

	d := d0(ws)
	for give, want := range map[string]string{
		"cp -R sub /tmp/sub-copy":      "cp -R sub /t/sub-copy",
		"rsync -av sub /tmp/":          "rsync -av sub /t/",
		"cd /tmp && ls; echo '/tmp'":   "cd /t && ls; echo '/t'",
		"ls /tmpfiles x/tmp TMP=/tmp ": "ls /tmpfiles x/tmp TMP=/t ",
	} {
		if got := onScratchTmp(give, d); got != want {
			t.Errorf("onScratchTmp(%q) = %q; want %q", give, got, want)
		}
	}
	programs := commandPrograms("timeout 5 cat go.mod | /usr/bin/sort", [][]string{{"cat", "go.mod"}, {"sort"}})
	for _, name := range []string{"timeout", "cat", "sort"} {
		if !programs[name] {
			t.Errorf("commandPrograms misses %s: %v", name, programs)
		}
	}
	v := review.Verdict{Effects: []action.Effect{eff(write, ws+"/a", false), eff(read, ws+"/b", false)}}
	existed := map[string]bool{ws: true, ws + "/a": true, ws + "/b": true, ws + "/b.tmp": true}
	obs := []tracedEffect{
		{Op: exe, Path: "/usr/bin/bash", PID: 1},
		{Op: write, Path: ws + "/.a.tmp", PID: 1},                       // made, then renamed onto a
		{Op: del, Path: ws + "/.a.tmp", Onto: ws + "/a", PID: 1},        // atomic replacement
		{Op: write, Path: ws + "/a", PID: 1},                            // predicted
		{Op: del, Path: ws + "/a", PID: 1},                              // replaced: written above
		{Op: del, Path: ws + "/b", PID: 1},                              // only a read was predicted
		{Op: write, Path: ws + "/new", PID: 1},                          // not predicted
		{Op: del, Path: ws + "/new", PID: 1},                            // made by the run
		{Op: write, Path: ws + "/new", PID: 1},                          // reported once
		{Op: read, Path: ws + "/new", PID: 1},                           // read back: the run wrote it
		{Op: del, Path: ws + "/b.tmp", Onto: ws + "/b", PID: 1},         // an old file renamed onto b, whose write was not predicted
		{Op: read, Path: "/usr/lib/x86_64-linux-gnu/libc.so.6", PID: 1}, // ambient
		{Op: write, Path: ws + "/a.lock", PID: 1},                       // the lock of a predicted write
		{Op: write, Path: ws + "/b.lock", PID: 1},                       // b is only read
	}
	var got []string
	for _, o := range unexplained(v, "true", obs, d0(ws), existed) {
		got = append(got, string(o.Op)+" "+o.Path)
	}
	if want := []string{"delete /w/b", "write /w/new", "delete /w/b.tmp", "write /w/b.lock"}; !slices.Equal(got, want) {
		t.Errorf("unexplained = %q; want %q", got, want)
	}

	ambientTests := []struct {
		o    tracedEffect
		want bool
	}{
		{tracedEffect{Op: read, Path: "/usr/lib/x86_64-linux-gnu/libc.so.6"}, true},
		{tracedEffect{Op: write, Path: "/usr/lib/x86_64-linux-gnu/libc.so.6"}, false},
		{tracedEffect{Op: read, Path: "/etc/passwd"}, true},
		{tracedEffect{Op: read, Path: "/etc/shadow"}, false},
		{tracedEffect{Op: read, Path: "/etc/passwd.bak"}, false},
		{tracedEffect{Op: read, Path: "/h/.ssh/id_ed25519"}, false},
		{tracedEffect{Op: read, Path: ws + "/main.go"}, false},
		{tracedEffect{Op: write, Path: "/t/sort123"}, true},
		{tracedEffect{Op: read, Path: "/proc/7/maps", PID: 7}, true},
		{tracedEffect{Op: read, Path: "/proc/8/environ", PID: 7}, false},
		{tracedEffect{Op: exe, Path: "/usr/bin/cat", PID: 2}, true},
		{tracedEffect{Op: exe, Path: "/usr/bin/python3", PID: 2}, false},
		{tracedEffect{Op: exe, Path: ws + "/cat", PID: 2}, false},
		{tracedEffect{Op: exe, Path: "/usr/bin/bash", PID: 1}, true},
		{tracedEffect{Op: exe, Path: "/usr/bin/bash", PID: 2}, false},
		{tracedEffect{Op: exe, Path: "/usr/bin/gzip", PID: 3, Parent: "/usr/bin/sh"}, false}, // tar is not in the command
		{tracedEffect{Op: exe, Path: "/usr/lib/git-core/git", PID: 3}, false},                // git is not in the command
	}
	for _, tt := range ambientTests {
		if got := ambientReason(tt.o, d, programs, 1) != ""; got != tt.want {
			t.Errorf("ambientReason(%s %s pid %d) = %v", tt.o.Op, tt.o.Path, tt.o.PID, got)
		}
	}
	tar := commandPrograms("tar czf out.tgz sub", [][]string{{"tar", "czf", "out.tgz", "sub"}})
	for _, o := range []tracedEffect{
		{Op: exe, Path: "/usr/bin/sh", PID: 3, Parent: "/usr/bin/tar"},
		{Op: exe, Path: "/usr/bin/gzip", PID: 4, Parent: "/usr/bin/sh"},
	} {
		if ambientReason(o, d, tar, 1) == "" {
			t.Errorf("tar's compressor %s is not ambient", o.Path)
		}
	}
	if ambientReason(tracedEffect{Op: exe, Path: "/usr/lib/git-core/git", PID: 3}, d, commandPrograms("git commit -qam x", nil), 1) == "" {
		t.Error("git running itself from its exec path is not ambient in a git command")
	}
	if ambientReason(tracedEffect{Op: exe, Path: "/usr/bin/sh", PID: 3, Parent: "/usr/bin/bash"}, d, tar, 1) != "" {
		t.Error("a shell run by bash is ambient because the command runs tar")
	}
}
