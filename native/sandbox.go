package native

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"syscall"

	"github.com/wardenhq/warden/sandbox"
)

// Sandbox says how shell_exec confines its commands. The zero value is the full sandbox with
// no way out to the network.
type Sandbox struct {
	// Off runs commands without the sandbox, as Warden's own user with this host's network.
	// Only an operator's explicit choice should set it, and the start-up banner should say so.
	Off bool
	// Hidden are paths commands may not read, write or list, besides sandbox.DefaultHidden:
	// Warden's database, other tenants' workspaces, credentials that lie under a readable
	// directory.
	Hidden []string
	// ReadOnly are further paths commands may read and execute (a toolchain in /opt, say).
	ReadOnly []string
	// Proxy serves each connection a command opens to its HTTP(S)_PROXY (see sandbox.Spec):
	// the session's egress proxy. Nil means no way out at all.
	Proxy func(net.Conn)
}

// runSandboxed runs p in the sandbox with the executor's limits, in the same shape as run.
func (e *Executor) runSandboxed(ctx context.Context, p proc) (outcome, error) {
	out := &lockedCapture{c: newCapture(e.maxOutput)}
	spec := sandbox.Spec{
		Workspace: e.ws,
		Dir:       p.dir,
		Command:   append([]string{p.path}, p.args[1:]...),
		Env:       p.env,
		Hidden:    e.sandbox.Hidden,
		ReadOnly:  e.sandbox.ReadOnly,
		Proxy:     e.sandbox.Proxy,
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

// sandboxFailure is the tool failure for a command the sandbox refused to start.
func sandboxFailure(err error) error {
	if errors.Is(err, sandbox.ErrUnavailable) {
		return failf("the command did not run: the sandbox cannot be applied on this host (%v); an operator may turn it off explicitly (warden serve --no-sandbox)", err)
	}
	return failf("the command could not be started in the sandbox: %v", err)
}
