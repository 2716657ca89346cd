package sandbox

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// ErrUnavailable is wrapped by the error Run returns when the sandbox cannot be applied
// (no Landlock, or too old a Landlock, no namespaces, not Linux). The command did not run.
var ErrUnavailable = errors.New("sandbox: cannot be applied")

// An ExecError is the error Run returns when the sandbox was applied but the program could
// not be started in it: not found (Code 127) or found but not executable or not readable
// there (126), the codes a shell gives. Msg names the program's path.
type ExecError struct {
	Code int
	Msg  string
}

func (e *ExecError) Error() string {
	return "sandbox: cannot run " + e.Msg + " (the sandbox shows the workspace, the system paths, the directories of PATH and the read-only paths; anything else is not there)"
}

// Defaults for the zero values of Spec's limits.
const (
	// DefaultTimeout is the time limit when Spec.Timeout is zero.
	DefaultTimeout = 10 * time.Minute
	// DefaultMaxOutput is the output limit (stdout and stderr together) when Spec.MaxOutput
	// is zero.
	DefaultMaxOutput = 16 << 20
	// DefaultMaxProcs is the process limit when Spec.MaxProcs is zero: ample for builds and
	// test runners, far below a host's process table.
	DefaultMaxProcs = 1024
)

// DefaultHidden are paths that are never readable in the sandbox, whatever Spec.Hidden says:
// password hashes, sudo rules, SSH host keys and TLS private keys, all under /etc, which is
// otherwise readable.
var DefaultHidden = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private",
}

// SystemReadOnly are the paths a command may read and execute: programs, libraries and
// configuration. The ones that do not exist are left out.
var SystemReadOnly = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// A Spec is a command to run in the sandbox.
type Spec struct {
	// Workspace is the directory the command may write (and, unless Dir says otherwise, runs
	// in): an absolute path to an existing directory. Required.
	Workspace string
	// Dir is the directory the command starts in: Workspace or a directory inside it.
	// Empty means Workspace.
	Dir string
	// Command is the program and its arguments. A program without a slash is looked up in the
	// PATH of Env (or DefaultPath). Either Command or Shell is required.
	Command []string
	// Shell, when Command is empty, is run as sh -c Shell.
	Shell string
	// Env is the command's whole environment, as KEY=VALUE: protected bindings passed here
	// reach that process only. PATH defaults to DefaultPath; TMPDIR (the sandbox's private
	// /tmp) and the proxy variables are always set by the sandbox.
	Env []string
	// Hidden are paths the command may not read, write or list, added to DefaultHidden.
	// One inside something the command sees is covered with an empty entry of mode 000 on a
	// read-only mount; one elsewhere is not there anyway.
	Hidden []string
	// ReadOnly are further paths the command may read and execute (a toolchain in /opt, say).
	ReadOnly []string
	// OnlyListedPaths keeps the directories of the command's PATH out of what it may read,
	// unless SystemReadOnly or ReadOnly name them. By default each absolute PATH directory
	// holding an executable is readable, and so is the installation a bin, sbin or shims
	// directory belongs to (~/.pyenv for ~/.pyenv/shims), unless that is a home directory;
	// credentials and shell histories under a home (~/.cargo/credentials.toml, ...) stay
	// hidden.
	OnlyListedPaths bool
	// Proxy serves each connection the command opens to its proxy (the address in its
	// HTTP_PROXY), from its own goroutine, and must close it. Nil means no way out: each
	// connection is closed at once. A Listener's Handle method fits here.
	Proxy func(net.Conn)
	// CABundle, if set, is the certificates (PEM) the command's TLS clients should trust
	// instead of the system's: written into the run's private /tmp as CABundleFile and named
	// by every variable of CAVars, replacing any value Env gives them. The egress proxy's
	// bundle (the system roots and the session's CA) goes here. Unconfined runs have no proxy
	// and ignore it.
	CABundle []byte
	// Stdin is the command's standard input; nil means /dev/null.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output; nil discards it. When both are the same
	// writer, it gets the two interleaved.
	Stdout, Stderr io.Writer
	// Timeout is the time limit; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxOutput is how many bytes of stdout and stderr together are passed on; the rest is
	// read and dropped (Result.Truncated). Zero means DefaultMaxOutput.
	MaxOutput int64
	// Unconfined runs the command without Landlock and namespaces, because the operator turned
	// the sandbox off explicitly (which the start-up banner must say). Limits still apply.
	Unconfined bool
	// MaxProcs is the most processes and threads the command and everything it starts may
	// hold at once: a fork beyond it fails, so a fork bomb cannot fill the host's process
	// table. It is a cgroup's pids.max, applied where this host lets Warden make a cgroup (as
	// root, or with a delegated cgroup v2 subtree); Result.ProcessLimit says whether it was.
	// Zero means DefaultMaxProcs; negative, no limit. NoLimits does not lift it.
	MaxProcs int
	// NoLimits lifts the time and output limits (Timeout and MaxOutput are ignored): for a
	// long-lived server whose output is its protocol, such as a connector's stdio process,
	// which ends when its context ends or Process.Kill is called.
	NoLimits bool
	// Boundaries, when not nil, are the tenant's hard blocks, enforced on the command at the
	// system call: every file the command or anything it starts opens, creates, removes,
	// renames, links, changes or runs is checked first, and a refused call fails with EACCES
	// (Result.Refusals). It needs seccomp user notification (Linux 5.14 or later); where that
	// cannot be had, the command does not run (ErrUnavailable). Ignored with Unconfined. See
	// docs/sandbox.md.
	Boundaries HardBlocks
	// OnRefusal, if set, is told of each system call the hard blocks refuse as it is refused,
	// besides Result.Refusals: for a long-lived process (Start), whose result comes only at
	// its end. It is called from the supervisor's goroutine before the refused call returns
	// (so what it records is there when the command sees the refusal): it must be safe for
	// concurrent use, and quick.
	OnRefusal func(Refusal)

	// started, if set, is called once the command runs (Start waits for it).
	started func()
	// cold starts a new init process even if one waits (for the tests and benchmarks).
	cold bool
}

// CABundleFile is where a run's Spec.CABundle is, inside the sandbox.
const CABundleFile = "/tmp/warden-ca-bundle.pem"

// CAVars are the variables that name Spec.CABundle to the command's TLS clients: OpenSSL
// and Go, Python's requests, Node, git and curl.
var CAVars = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"}

// DefaultPath is the command's PATH when Spec.Env has none.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// A Result is how a command that ran ended.
type Result struct {
	// ExitCode is the command's exit status, or -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended the command, if one did ("killed", ...).
	Signal string
	// SignalNumber is that signal's number (0 when none ended the command).
	SignalNumber int
	// TimedOut is true when the time limit ended the command.
	TimedOut bool
	// Canceled is true when the context ended the command.
	Canceled bool
	// Truncated is true when output beyond MaxOutput was dropped.
	Truncated bool
	// Sandboxed is false when the command ran unconfined (Spec.Unconfined).
	Sandboxed bool
	// ProcessLimit is the most processes and threads the command's tree could hold at once
	// (Spec.MaxProcs), or 0 when no cgroup could hold it to a limit on this host.
	ProcessLimit int
	// ProcessLimitHit is true when a fork was refused at ProcessLimit.
	ProcessLimitHit bool
	// ProxyAddr is the command's proxy address inside its namespace ("127.0.0.1:port").
	ProxyAddr string
	// Refusals are the system calls Spec.Boundaries refused, in the order they were refused
	// (at most MaxRefusals); RefusalsDropped counts those left out.
	Refusals        []Refusal
	RefusalsDropped int
}

// A Listener is a net.Listener whose connections come from sandboxes: pass its Handle method
// as Spec.Proxy and the Listener to an HTTP server (such as egress.Proxy.Serve). One Listener
// may serve any number of runs.
type Listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewListener returns an open Listener.
func NewListener() *Listener {
	return &Listener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Handle hands c to Accept, or closes it if the Listener is closed.
func (l *Listener) Handle(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

// Accept returns the next connection a sandboxed command made to its proxy.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept; later connections are closed when handed over.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr is a placeholder address: the Listener has none of its own.
func (l *Listener) Addr() net.Addr { return sandboxAddr{} }

type sandboxAddr struct{}

func (sandboxAddr) Network() string { return "sandbox" }
func (sandboxAddr) String() string  { return "sandbox" }

// limiter passes on at most max bytes in all to the writers it wraps, and drops the rest
// without failing, so the command never blocks on its output.
type limiter struct {
	mu        sync.Mutex
	left      int64
	truncated bool
}

type limitedWriter struct {
	l *limiter
	w io.Writer
}

func (lw limitedWriter) Write(p []byte) (int, error) {
	lw.l.mu.Lock()
	defer lw.l.mu.Unlock()
	n := len(p)
	if int64(len(p)) > lw.l.left {
		p = p[:lw.l.left]
		lw.l.truncated = true
	}
	lw.l.left -= int64(len(p))
	if len(p) > 0 && lw.w != nil {
		lw.w.Write(p) // a failing writer does not stop the command
	}
	return n, nil
}

// Run runs spec's command in the sandbox and waits for it and everything it started to end.
// An error means the command did not run (or the sandbox failed around it); how the command
// itself ended is in the Result. Everything the command started is dead when Run returns.
func Run(ctx context.Context, spec Spec) (Result, error) {
	return run(ctx, spec)
}

// Prestart makes sure an init process waits for the next Run or Start, starting one if none
// does, and returns once it waits: for a server at start-up, so that its first command starts
// as fast as the next ones (Run keeps one waiting by itself after the first run), and for
// benchmarks. An error wraps ErrUnavailable when the sandbox cannot be applied.
func Prestart(ctx context.Context) error {
	return prestart(ctx)
}

// Start starts spec's command in the sandbox and returns once it is running, for a caller that
// talks to it while it runs (through pipes as Spec.Stdin and Spec.Stdout: a Stdin that is an
// *os.File is passed to the command as it is, anything else is copied). An error means the
// command did not start, as for Run: it wraps ErrUnavailable when the sandbox cannot be
// applied. The command then runs until it ends, ctx ends, the time limit passes or Kill is
// called; Wait says how it ended.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	ctx, cancel := context.WithCancel(ctx)
	p := &Process{cancel: cancel, done: make(chan struct{})}
	ready := make(chan struct{})
	var once sync.Once
	spec.started = func() { once.Do(func() { close(ready) }) }
	go func() {
		p.res, p.err = run(ctx, spec)
		cancel()
		close(p.done)
	}()
	select {
	case <-ready:
		return p, nil
	case <-p.done:
		if p.err != nil {
			return nil, p.err
		}
		return p, nil // ended as it started (ctx ended, say): Wait says how
	}
}

// A Process is a command Start started.
type Process struct {
	cancel context.CancelFunc
	done   chan struct{}
	res    Result // set before done is closed
	err    error
}

// Wait waits for the command and everything it started to end, and returns how it ended, as
// Run does. It may be called any number of times, from any goroutine.
func (p *Process) Wait() (Result, error) {
	<-p.done
	return p.res, p.err
}

// Done is closed when the command and everything it started have ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Kill ends the command and everything it started, as the end of Start's context does
// (Result.Canceled), and returns at once: Wait waits for the end.
func (p *Process) Kill() { p.cancel() }
