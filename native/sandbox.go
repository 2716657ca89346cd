package native

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"syscall"

	"github.com/wardenhq/warden/sandbox"
)

// Sandbox says how the executor confines the programs its tools run: shell_exec's commands, and
// git for git_status, git_diff and files_patch. The zero value is the full sandbox with no way
// out to the network.
type Sandbox struct {
	// Off runs commands and git without the sandbox, as Warden's own user with this host's
	// network and files. Only an operator's explicit choice should set it, and the start-up
	// banner should say so.
	Off bool
	// Hidden are paths commands may not read, write or list, besides sandbox.DefaultHidden:
	// Warden's database, other tenants' workspaces, credentials that lie under a readable
	// directory.
	Hidden []string
	// ReadOnly are further paths commands may read and execute (a toolchain in /opt, say).
	ReadOnly []string
	// Proxy serves each connection a command opens to its HTTP(S)_PROXY (see sandbox.Spec):
	// the session's egress proxy. Nil means no way out at all. git never gets one.
	Proxy func(net.Conn)
	// Boundaries, when not nil, returns the tenant's hard blocks at the time of each run of a
	// command or git, which the sandbox then enforces at the system call (sandbox.Spec's
	// Boundaries); a nil answer enforces none. Refused calls are the Result's Refusals.
	Boundaries func() sandbox.HardBlocks
	// CABundle, if set, is asked at the start of each command that has a Proxy for the
	// certificates its TLS clients should trust (sandbox.Spec.CABundle); nil or empty leaves
	// them to the system's. The session's proxy answers while the command holds placeholders.
	CABundle func() []byte
}

// gitHidden is hidden from git besides Sandbox.Hidden: git is told to read no system
// configuration and needs nothing else there, so a git led astray reads programs and
// libraries outside the workspace, and nothing of this host's own.
var gitHidden = []string{"/etc"}

// runGit runs git (or a script around it) for a tool: in the sandbox, with no network and
// gitHidden hidden too, or unconfined where the operator turned the sandbox off. An error is
// a tool failure saying why git did not run.
func (e *Executor) runGit(ctx context.Context, p proc) (outcome, error) {
	if e.sandbox.Off {
		o, err := e.run(ctx, p)
		if err != nil {
			return o, failf("git could not be started: %v", err)
		}
		return o, nil
	}
	o, err := e.runSandboxed(ctx, p, slices.Concat(e.sandbox.Hidden, gitHidden), nil)
	if err != nil {
		return o, sandboxFailure("git", err)
	}
	return o, nil
}

// runSandboxed runs p in the sandbox with the executor's limits, in the same shape as run,
// hiding hidden and handing connections to proxy.
func (e *Executor) runSandboxed(ctx context.Context, p proc, hidden []string, proxy func(net.Conn)) (outcome, error) {
	out := &lockedCapture{c: newCapture(e.maxOutput)}
	spec := sandbox.Spec{
		Workspace: e.ws,
		Dir:       p.dir,
		Command:   append([]string{p.path}, p.args[1:]...),
		Env:       p.env,
		Hidden:    hidden,
		ReadOnly:  e.sandbox.ReadOnly,
		Proxy:     proxy,
		Stdout:    out,
		Stderr:    out,
		Timeout:   e.timeout,
		// The capture keeps the start and the end within maxOutput; everything in between is
		// counted and dropped there, so the sandbox's own limit is only a backstop.
		MaxOutput: 1 << 40,
	}
	if p.stdin != "" {
		spec.Stdin = bytes.NewReader([]byte(p.stdin))
	}
	if e.sandbox.Boundaries != nil {
		spec.Boundaries = e.sandbox.Boundaries()
	}
	if proxy != nil && e.sandbox.CABundle != nil {
		spec.CABundle = e.sandbox.CABundle()
	}
	res, err := sandbox.Run(ctx, spec)
	if err != nil {
		return outcome{}, err
	}
	var o outcome
	o.head, o.tail, o.dropped = out.parts()
	o.exitCode = res.ExitCode
	o.timedOut, o.cancelled = res.TimedOut, res.Canceled
	if res.ProcessLimitHit {
		o.procLimit = res.ProcessLimit
	}
	o.signal = syscall.Signal(res.SignalNumber)
	o.refusals, o.refusalsDropped = res.Refusals, res.RefusalsDropped
	return o, nil
}

// lockedCapture is a capture that stdout and stderr may write to from two goroutines.
type lockedCapture struct {
	mu sync.Mutex
	c  *capture
}

func (l *lockedCapture) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c.Write(p)
}

func (l *lockedCapture) parts() ([]byte, []byte, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c.parts()
}

// sandboxFailure is the tool failure for a program (what: "the command", "git") the sandbox
// refused to start.
func sandboxFailure(what string, err error) error {
	if errors.Is(err, sandbox.ErrUnavailable) {
		return failf("%s did not run: the sandbox cannot be applied on this host (%v); an operator may turn it off explicitly (warden serve --no-sandbox)", what, err)
	}
	return failf("%s could not be started in the sandbox: %v", what, err)
}
