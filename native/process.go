package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wardenhq/warden/sandbox"
)

// outputGrace is how long output is still read once a command's process group is gone: a
// process that left the group (setsid) may hold the output open, and is not waited for.
const outputGrace = time.Second

// errTimedOut is the cause of a context that ended at the executor's own time limit.
var errTimedOut = errors.New("time limit reached")

// proc is a program to run.
type proc struct {
	path  string
	args  []string
	dir   string
	env   []string
	stdin string
}

// outcome is how a program ended and what it wrote.
type outcome struct {
	head, tail []byte // the output kept: its start and its end
	dropped    int64  // bytes dropped between them
	exitCode   int    // -1 when a signal ended it
	signal     syscall.Signal
	timedOut   bool
	cancelled  bool
	// lingered: something outside the process group still held the output open when the group
	// was gone.
	lingered bool
	// procLimit is the sandbox's process limit when a fork was refused at it (else 0).
	procLimit int
	// refusals are the system calls the hard blocks refused (Sandbox.Boundaries), and
	// refusalsDropped how many more there were.
	refusals        []sandbox.Refusal
	refusalsDropped int
}

// output is the kept output, with a note where some was dropped.
func (o *outcome) output() string {
	if o.dropped == 0 {
		return text(slices.Concat(o.head, o.tail))
	}
	return fmt.Sprintf("%s\n[... %d bytes of output dropped ...]\n%s", text(o.head), o.dropped, text(o.tail))
}

// run runs p in its own process group with the executor's time limit. Stdout and stderr go to
// one pipe, so they interleave in the order they were written. When the time limit passes or
// ctx ends, the whole group is killed; when the first process ends, whatever it left in its
// group is killed too. An error means the program could not be started.
func (e *Executor) run(ctx context.Context, p proc) (outcome, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return outcome{}, fmt.Errorf("native: pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        p.path,
		Args:        p.args,
		Dir:         p.dir,
		Env:         p.env,
		Stdout:      w,
		Stderr:      w,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		WaitDelay:   outputGrace,
	}
	if p.stdin != "" {
		cmd.Stdin = strings.NewReader(p.stdin)
	}
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return outcome{}, err
	}
	out := newCapture(e.maxOutput)
	copied := make(chan struct{})
	go func() {
		io.Copy(out, r)
		close(copied)
	}()
	g := &group{pid: cmd.Process.Pid}
	waited := make(chan error, 1)
	go func() { waited <- g.wait(cmd) }()

	tctx, cancel := context.WithTimeoutCause(ctx, e.timeout, errTimedOut)
	defer cancel()
	var o outcome
	select {
	case <-waited:
	case <-tctx.Done():
		g.kill()
		<-waited
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if context.Cause(tctx) == errTimedOut || errors.Is(tctx.Err(), context.DeadlineExceeded) {
				o.timedOut = true
			} else {
				o.cancelled = true
			}
		}
	}
	select {
	case <-copied:
	case <-time.After(outputGrace):
		o.lingered = true
		r.Close() // ends the copy
		<-copied
	}
	r.Close()

	o.head, o.tail, o.dropped = out.parts()
	o.exitCode = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		o.signal = ws.Signal()
	}
	return o, nil
}

// group is a command's process group, whose id is its first process's pid.
type group struct {
	mu     sync.Mutex
	pid    int
	reaped bool
}

// kill kills every process in the group, unless the first one was reaped: then its pid, and
// so the group id, may belong to someone else.
func (g *group) kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.reaped {
		syscall.Kill(-g.pid, syscall.SIGKILL)
	}
}

// reaping marks the first process as about to be reaped: the group is not signalled after.
func (g *group) reaping() {
	g.mu.Lock()
	g.reaped = true
	g.mu.Unlock()
}

// capture keeps the start and the end of a stream, at most max bytes: three quarters for the
// start, the rest a ring holding the latest bytes, made when the start is full. What does not
// fit is counted.
type capture struct {
	head     []byte
	headMax  int
	ringMax  int
	ring     []byte
	pos      int
	full     bool
	tailSeen int64 // bytes written past the head
}

func newCapture(max int64) *capture {
	headMax := int(max - max/4)
	return &capture{headMax: headMax, ringMax: int(max) - headMax}
}

// Write keeps what fits and never fails, so a command is never blocked on its output.
func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	c.tailSeen += int64(len(p))
	if c.ringMax == 0 {
		return n, nil
	}
	if c.ring == nil {
		c.ring = make([]byte, c.ringMax)
	}
	if len(p) >= len(c.ring) {
		copy(c.ring, p[len(p)-len(c.ring):])
		c.pos, c.full = 0, true
		return n, nil
	}
	k := copy(c.ring[c.pos:], p)
	if k < len(p) {
		copy(c.ring, p[k:])
		c.full = true
	}
	c.pos = (c.pos + len(p)) % len(c.ring)
	if c.pos == 0 {
		c.full = true
	}
	return n, nil
}

// parts returns the start kept, the end kept, and how many bytes between them were dropped.
func (c *capture) parts() (head, tail []byte, dropped int64) {
	if !c.full {
		tail = c.ring[:c.pos]
	} else {
		tail = append(append([]byte(nil), c.ring[c.pos:]...), c.ring[:c.pos]...)
	}
	return c.head, tail, c.tailSeen - int64(len(tail))
}
