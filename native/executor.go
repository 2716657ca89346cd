package native

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/sandbox"
)

// The defaults of Options.
const (
	DefaultMaxRead   = 256 << 10
	DefaultMaxOutput = 256 << 10
	DefaultTimeout   = 2 * time.Minute
)

// defaultPath is the PATH of commands when Warden's own environment has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Errors returned by Run for actions it does not execute. Tool failures are Results, not errors.
var (
	// ErrNotNative is returned for spawn_subagent: the gateway runs it, starting a child session.
	ErrNotNative = errors.New("native: this kind is run by the gateway, not the native executor")
	// ErrUnknownKind is returned for a kind the executor does not know (connector_call included).
	ErrUnknownKind = errors.New("native: unknown action kind")
	// ErrUnreviewed is returned for an action that cannot have passed review: one that still
	// carries problems, or lacks the resolved path or the input its kind needs.
	ErrUnreviewed = errors.New("native: the action cannot have been reviewed")
)

// Options configure an Executor. The zero value of each field but Workspace is its default.
type Options struct {
	// Workspace is the session's workspace: absolute, and its real path (it is resolved through
	// symbolic links if it is not). Every file operation stays inside it.
	Workspace string
	// MaxRead is the most bytes a read (files_read, net_fetch) returns; larger contents are cut
	// with a note. Default 256 KiB.
	MaxRead int64
	// MaxOutput is the most bytes of a command's output (stdout and stderr together) kept; the
	// rest is dropped from the middle, with a note. Default 256 KiB.
	MaxOutput int64
	// Timeout is a command's wall-clock limit, and bounds searches and fetches too. Default two
	// minutes.
	Timeout time.Duration
	// Env is the base environment of commands, as KEY=value strings. Default: PATH (Warden's
	// own), HOME=the workspace, LANG=C.UTF-8, TERM=dumb. Warden's own environment, which holds
	// secrets, is never passed on.
	Env []string
	// Sandbox says how the programs of shell_exec, git_status, git_diff and files_patch are
	// confined. The zero value runs each in the full sandbox (package sandbox) with no
	// network; a program the sandbox cannot be applied to does not run.
	Sandbox Sandbox
	// Fetch is the client net_fetch uses (the egress-controlled one). Nil: net_fetch fails
	// saying that no egress is configured.
	Fetch *http.Client
}

// Executor runs reviewed native actions in one workspace. It holds no open files; Run is safe
// for concurrent use.
type Executor struct {
	ws        string
	maxRead   int64
	maxOutput int64
	timeout   time.Duration
	env       []string
	fetch     *http.Client
	sandbox   Sandbox
	// The programs run, found once on the PATH of Env outside the workspace ("" when missing).
	shell, shellName string
	git              string
	sh               string // runs the script around git_status's and git_diff's git
}

// New returns an Executor for o.Workspace, which must be an existing directory.
func New(o Options) (*Executor, error) {
	if o.Workspace == "" || !filepath.IsAbs(o.Workspace) {
		return nil, fmt.Errorf("native: the workspace must be an absolute path, not %q", o.Workspace)
	}
	ws, err := filepath.EvalSymlinks(o.Workspace)
	if err != nil {
		return nil, fmt.Errorf("native: workspace: %w", err)
	}
	if st, err := os.Stat(ws); err != nil {
		return nil, fmt.Errorf("native: workspace: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("native: workspace %s is not a directory", ws)
	}
	if o.MaxRead < 0 || o.MaxOutput < 0 || o.Timeout < 0 {
		return nil, errors.New("native: MaxRead, MaxOutput and Timeout must not be negative")
	}
	e := &Executor{
		ws:        ws,
		maxRead:   orDefault(o.MaxRead, DefaultMaxRead),
		maxOutput: orDefault(o.MaxOutput, DefaultMaxOutput),
		timeout:   orDefault(o.Timeout, DefaultTimeout),
		fetch:     o.Fetch,
		sandbox:   o.Sandbox,
	}
	if o.Env == nil {
		p := os.Getenv("PATH")
		if p == "" {
			p = defaultPath
		}
		e.env = []string{"PATH=" + p, "HOME=" + ws, "LANG=C.UTF-8", "TERM=dumb"}
	} else {
		e.env = slices.Clone(o.Env)
	}
	path := envValue(e.env, "PATH")
	for _, name := range []string{"bash", "sh"} {
		if p := e.lookPath(name, path); p != "" {
			e.shell, e.shellName = p, name
			break
		}
	}
	e.git = e.lookPath("git", path)
	e.sh = e.lookPath("sh", path)
	return e, nil
}

func orDefault[T int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// lookPath finds a program on a PATH value, by its real path. Relative entries and programs
// inside the workspace are skipped: an agent that can write the workspace must not be able to
// plant the shell or the git that Warden runs.
func (e *Executor) lookPath(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		real, err := filepath.EvalSymlinks(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if _, inside := e.rel(real); inside {
			continue
		}
		if st, err := os.Stat(real); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return real
		}
	}
	return ""
}

// Result is what a tool returns to the model.
type Result struct {
	// Text is the tool's output, or what went wrong.
	Text string
	// Structured is the same as data (MCP's structuredContent); nil when there is none.
	Structured map[string]any
	// IsError marks a tool failure the model should see.
	IsError bool
	// Refusals are the system calls of the tool's sandboxed programs that a hard block
	// refused (Sandbox.Boundaries), for the caller to record; RefusalsDropped counts more.
	Refusals        []sandbox.Refusal
	RefusalsDropped int
}

// Run executes a reviewed action. env adds variables to a command's process only (the
// protected bindings the caller resolved): they are never set in Warden's environment, never
// logged, and only shell_exec uses them. Tool failures are Results with IsError set; an error
// is a failure of Warden itself, ErrNotNative, ErrUnknownKind or ErrUnreviewed.
func (e *Executor) Run(ctx context.Context, a *action.Action, env map[string]string) (Result, error) {
	if a == nil {
		return Result{}, fmt.Errorf("%w: no action", ErrUnreviewed)
	}
	if len(a.Problems) > 0 {
		p := a.Problems[0]
		return Result{}, fmt.Errorf("%w: %s: %s: %s", ErrUnreviewed, a.Kind, p.Code, p.Detail)
	}
	var (
		r   Result
		err error
	)
	switch a.Kind {
	case "files_read":
		r, err = e.read(a)
	case "files_list":
		r, err = e.list(a)
	case "files_find":
		r, err = e.find(ctx, a)
	case "files_search":
		r, err = e.search(ctx, a)
	case "files_inspect":
		r, err = e.inspect(a)
	case "files_write":
		r, err = e.write(a)
	case "files_edit":
		r, err = e.edit(a)
	case "files_patch":
		r, err = e.patch(ctx, a)
	case "files_delete":
		r, err = e.remove(a)
	case "shell_exec":
		r, err = e.shellExec(ctx, a, env)
	case "git_status":
		r, err = e.gitRun(ctx, a, statusScript)
	case "git_diff":
		r, err = e.gitRun(ctx, a, diffScript)
	case "net_fetch":
		r, err = e.netFetch(ctx, a)
	case "net_search":
		err = failf("net_search is not available: no search provider is configured")
	case "spawn_subagent":
		return Result{}, fmt.Errorf("%w: %s", ErrNotNative, a.Kind)
	default:
		return Result{}, fmt.Errorf("%w: %q", ErrUnknownKind, a.Kind)
	}
	if f, ok := errors.AsType[*failure](err); ok {
		return Result{Text: f.msg, IsError: true}, nil
	}
	return r, err
}

// failure is a tool failure the model sees: Run turns it into a Result with IsError.
type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }

func failf(format string, args ...any) error {
	return &failure{msg: fmt.Sprintf(format, args...)}
}

// path returns the resolved path of a role and its path relative to the workspace. A path
// outside the workspace is a failure: the review confines native tools, and this is the check
// behind it.
func (e *Executor) path(a *action.Action, role string) (abs, rel string, err error) {
	abs = a.Paths[role]
	if abs == "" {
		return "", "", fmt.Errorf("%w: %s has no resolved %s path", ErrUnreviewed, a.Kind, role)
	}
	rel, ok := e.rel(abs)
	if !ok {
		return "", "", failf("%s is outside the workspace %s", abs, e.ws)
	}
	return filepath.Clean(abs), rel, nil
}

// rel returns p relative to the workspace, "." for the workspace itself, and false when p is
// not inside it (lexically: p is a resolved path).
func (e *Executor) rel(p string) (string, bool) {
	if !filepath.IsAbs(p) {
		return "", false
	}
	p = filepath.Clean(p)
	if p == e.ws {
		return ".", true
	}
	prefix := e.ws + "/"
	if e.ws == "/" {
		prefix = "/"
	}
	rest, ok := strings.CutPrefix(p, prefix)
	if !ok || rest == "" {
		return "", false
	}
	return rest, true
}

// show is how a workspace path is named to the model.
func show(rel string) string {
	if rel == "." {
		return "the workspace"
	}
	return rel
}

// openRoot opens the workspace as an os.Root: every file operation goes through one, so none
// can leave the workspace, whatever links it meets.
func (e *Executor) openRoot() (*os.Root, error) {
	r, err := os.OpenRoot(e.ws)
	if err != nil {
		return nil, fmt.Errorf("native: open workspace: %w", err)
	}
	return r, nil
}

// dir opens the directory at abs (rel in the workspace) as a root of its own, checked to be
// the directory the review judged.
func (e *Executor) dir(root *os.Root, abs, rel string) (*os.Root, error) {
	d, err := root.OpenRoot(rel)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return nil, failf("%s is not a directory", show(rel))
		}
		return nil, fsFailure("open", rel, err)
	}
	if err := sameDir(d, abs, rel); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// parent opens the directory holding abs and returns it with the base name of abs in it: the
// file is then reached by that name alone, so no component before it can change under the
// operation. The workspace itself is its own parent, named ".".
func (e *Executor) parent(root *os.Root, abs, rel string) (*os.Root, string, error) {
	if rel == "." {
		d, err := root.OpenRoot(".")
		if err != nil {
			return nil, "", fsFailure("open", rel, err)
		}
		return d, ".", nil
	}
	d, err := root.OpenRoot(filepath.Dir(rel))
	if err != nil {
		return nil, "", fsFailure("open", rel, err)
	}
	if err := sameDir(d, filepath.Dir(abs), filepath.Dir(rel)); err != nil {
		d.Close()
		return nil, "", err
	}
	return d, filepath.Base(rel), nil
}

// sameDir checks, where /proc shows it, that d is the directory at want: a component of the
// path replaced by a link since the review would lead elsewhere (still inside the workspace,
// which os.Root guarantees, but not where the review looked).
func sameDir(d *os.Root, want, rel string) error {
	got, ok, err := where(d)
	if err != nil {
		return fsFailure("open", rel, err)
	}
	if !ok {
		return nil // no /proc: os.Root still keeps the operation inside the workspace
	}
	if got != want {
		return failf("%s changed after it was reviewed (it now leads to %s); call again", show(rel), got)
	}
	return nil
}

// where returns the path at which the open directory d lies now, as /proc shows it; false
// when /proc does not.
func where(d *os.Root) (string, bool, error) {
	f, err := d.Open(".")
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	conn, err := f.SyscallConn()
	if err != nil {
		return "", false, nil
	}
	var got string
	var rerr error
	if err := conn.Control(func(fd uintptr) {
		got, rerr = os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	}); err != nil || rerr != nil {
		return "", false, nil
	}
	return got, true, nil
}

// checkDir checks that a working directory still is the directory the review judged, through
// the workspace's root: a command or git then starts there (by name, the sandbox confining
// what it reaches).
func (e *Executor) checkDir(abs, rel string) error {
	root, err := e.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	d, err := e.workDir(root, abs, rel)
	if err != nil {
		return err
	}
	d.Close()
	return nil
}

// workDir opens the working directory at abs (rel in the workspace) through root, checked to
// be the directory the review judged.
func (e *Executor) workDir(root *os.Root, abs, rel string) (*os.Root, error) {
	if err := wantDir(root, rel, "use", "cwd must name a directory"); err != nil {
		return nil, err
	}
	return e.dir(root, abs, rel)
}

// fsFailure turns a file system error into a message for the model.
func fsFailure(verb, rel string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return failf("%s does not exist", show(rel))
	case errors.Is(err, fs.ErrPermission):
		return failf("cannot %s %s: permission denied", verb, show(rel))
	case errors.Is(err, syscall.ENOTDIR):
		return failf("cannot %s %s: a component of the path is not a directory", verb, show(rel))
	case escapes(err):
		return failf("cannot %s %s: it leads outside the workspace through a symbolic link", verb, show(rel))
	}
	return failf("cannot %s %s: %v", verb, show(rel), cause(err))
}

// escapes reports whether err is os.Root's refusal of a path that leads out of the workspace
// (its error is not exported).
func escapes(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// cause is err without the path a *fs.PathError adds (the message names the path its own way).
func cause(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// envValue returns the value of key in a KEY=value list (the last one wins, as in os/exec).
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
