//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/sandbox/internal/initproc"
)

// warmMax is how many init processes wait for a run at most. One: agents run their commands
// one after another, and a replacement is started as soon as one is taken, so it waits again
// by the time the next command comes (a Go start, some 30-40 ms on a loaded machine); a
// second would only serve a second command started in that window, and costs a process, five
// threads and its memory for as long as the pool is idle (the sandbox's test binary: 9 MB
// resident, 1 MB of it its own, the rest the program's pages; a bigger binary's package inits
// keep more).
const warmMax = 1

// warmIdle is how long waiting init processes outlive the last run: then they are ended, and
// the next run starts cold. A variable for the tests.
var warmIdle = 30 * time.Second

// A startKey is everything an init process's start depends on before it is given a run: the
// program it is, the user and group the user namespace maps (when not root) and the Landlock
// ABI it was checked against. A waiting process is only used by a run with the same key.
type startKey struct {
	exe      string
	uid, gid int
	abi      int
}

// currentKey is the key a run starting now needs, or an error wrapping ErrUnavailable when
// the sandbox cannot be applied here.
func currentKey() (startKey, error) {
	v, err := landlockABI()
	if err != nil || v < minABI {
		return startKey{}, fmt.Errorf("%w: Landlock ABI %d, need %d or later (%v)", ErrUnavailable, v, minABI, err)
	}
	self, err := os.Executable()
	if err != nil {
		return startKey{}, fmt.Errorf("%w: cannot find this program to start the init process: %v", ErrUnavailable, err)
	}
	return startKey{exe: self, uid: os.Geteuid(), gid: os.Getegid(), abi: v}, nil
}

// An initProc is an init process started in its namespaces, waiting for its run: its
// standard streams are /dev/null until Run hands it the run's (attach), and it reads its
// configuration only after that. It runs at most one command.
type initProc struct {
	key   startKey
	cmd   *exec.Cmd
	pidfd int        // to see whether it is still alive without reaping it
	ctl   *os.File   // the control socket
	cfg   *os.File   // the write end of the configuration pipe
	pids  *pidsGroup // its cgroup, without a limit until attach sets one; nil where none can be made
	done  chan struct{}
}

// spawnInit starts an init process for key, in its cgroup.
func spawnInit(key startKey) (*initProc, error) {
	w, err := startInit(key)
	if err != nil {
		return nil, err
	}
	if err := w.join(); err != nil {
		w.discard()
		return nil, err
	}
	return w, nil
}

// startInit starts an init process for key: this binary as initproc.Arg0 in new namespaces, with
// the control socket as fd 3 and the configuration pipe as fd 4. join must follow.
func startInit(key startKey) (*initProc, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	ctl, childCtl := os.NewFile(uintptr(fds[0]), "sandbox-control"), os.NewFile(uintptr(fds[1]), "sandbox-control")
	defer childCtl.Close()
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		ctl.Close()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	defer cfgR.Close()
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWNS,
		// A session of its own, so no controlling terminal: nothing in the sandbox can type
		// into the terminal Warden was started from (TIOCSTI), or be stopped by its job control.
		Setsid:    true,
		Pdeathsig: syscall.SIGKILL,
	}
	if key.uid != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: key.uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: key.gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	cmd := &exec.Cmd{
		Path: key.exe,
		Args: []string{initproc.Arg0},
		Env:  []string{initproc.Env + "=1"},
		// Not the workspace: the process may wait for a run of another one. It never uses
		// its starting directory (it pivots into its own root and starts the command in the
		// run's directory).
		Dir:         "/",
		ExtraFiles:  []*os.File{childCtl, cfgR}, // fds 3 and 4
		SysProcAttr: attr,
	}
	// A descriptor this process inherited without close-on-exec would otherwise stay open
	// in the waiting process for as long as it waits (the init process closes it at exec,
	// but may wait for a long time first).
	CloseInherited()
	if err := cmd.Start(); err != nil {
		ctl.Close()
		cfgW.Close()
		return nil, err
	}
	// Not reaped before this: the pid is still this process's child's.
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		ctl.Close()
		cfgW.Close()
		return nil, fmt.Errorf("pidfd_open: %w", err)
	}
	return &initProc{key: key, cmd: cmd, pidfd: pidfd, ctl: ctl, cfg: cfgW, done: make(chan struct{})}, nil
}

// join moves the process into a cgroup of its own for the process limit, without a limit
// until attach sets one. A process that waits in the pool has joined it already: moving a
// process between cgroups waits for an RCU grace period (milliseconds, more under load),
// which a run that takes it does not pay then. Where no cgroup can be made, the run goes on
// without a process limit.
func (w *initProc) join() error {
	g, err := newPidsGroup(0)
	if err != nil {
		return nil
	}
	if err := g.add(w.cmd.Process.Pid); err != nil {
		g.remove()
		return fmt.Errorf("%w: %v", errCgroupJoin, err)
	}
	w.pids = g
	return nil
}

// errCgroupJoin is wrapped by the error of a start whose process could not join its cgroup.
var errCgroupJoin = errors.New("sandbox: moving the init process into its cgroup")

// alive reports whether the process has not ended. It is not reaped until reap or discard, so
// its pid cannot go to another process meanwhile.
func (w *initProc) alive() bool {
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(w.pidfd), Events: unix.POLLIN}}, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n == 0
	}
}

// attach gives the process to a run: it sets its cgroup's process limit to maxProcs (none if
// it is negative), before the process has read its configuration, so before anything in the
// sandbox can fork, and hands it the run's standard streams, which let it go on, and its
// configuration.
func (w *initProc) attach(maxProcs int, std *runStdio, cfg []byte) error {
	if !w.alive() {
		return errors.New("the init process had ended")
	}
	if w.pids != nil && maxProcs > 0 {
		if err := w.pids.setMax(maxProcs); err != nil {
			return fmt.Errorf("sandbox: setting the process limit: %w", err)
		}
	}
	// The process reads its configuration only once it has its streams: written before, the
	// configuration is there when it looks, if the pipe holds it all.
	early := false
	if n, err := unix.FcntlInt(w.cfg.Fd(), unix.F_GETPIPE_SZ, 0); err == nil && len(cfg) <= n {
		early = true
		w.cfg.Write(cfg)
		w.cfg.Close()
	}
	rights := unix.UnixRights(int(std.child[0].Fd()), int(std.child[1].Fd()), int(std.child[2].Fd()))
	for {
		err := unix.Sendmsg(int(w.ctl.Fd()), []byte{initproc.MsgStdio}, rights, nil, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("sandbox: handing the init process its standard streams: %w", err)
		}
		break
	}
	if !early {
		w.cfg.Write(cfg) // an error means the process is gone, which its end reports
		w.cfg.Close()
	}
	return nil
}

// reap waits for the process in the background; done is closed once it has ended.
func (w *initProc) reap() {
	go func() {
		w.cmd.Wait()
		close(w.done)
	}()
}

// release closes this side's descriptors of a process that has been reaped, and removes its
// cgroup.
func (w *initProc) release() {
	w.ctl.Close()
	w.cfg.Close()
	unix.Close(w.pidfd)
	if w.pids != nil {
		w.pids.remove()
	}
}

// discard ends a process that will not run a command, and waits for it.
func (w *initProc) discard() {
	w.cmd.Process.Kill()
	w.cmd.Wait()
	w.release()
}

// An initPool holds the init processes waiting for a run, at most warmMax, for one key.
type initPool struct {
	mu       sync.Mutex
	cond     *sync.Cond // signalled when a start ends
	waiting  []*initProc
	starting int       // starts under way
	gen      uint64    // moved on when the pool is emptied: starts from before are dropped
	last     time.Time // the last take
	failed   error     // why the last start failed, if it did
	timer    *time.Timer
	ending   int // processes being ended in the background
}

// pool is this process's one pool: every Run shares it.
var pool = newInitPool()

func newInitPool() *initPool {
	p := &initPool{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// take removes a waiting process for key from the pool and returns it, or nil when there is
// none; note says why one that was there could not be used. The run then calls replenishing
// (or replenish).
func (p *initPool) take(key startKey) (w *initProc, note error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// One forked but not yet in its cgroup is worth waiting for: a cold start takes longer.
	for len(p.waiting) == 0 && p.starting > 0 {
		p.cond.Wait()
	}
	var drop []*initProc
	for len(p.waiting) > 0 && w == nil {
		c := p.waiting[0]
		p.waiting = p.waiting[1:]
		switch {
		case c.key != key:
			drop = append(drop, c)
		case !c.alive():
			note = errors.New("the waiting init process had ended")
			drop = append(drop, c)
		default:
			w = c
		}
	}
	for _, d := range drop {
		p.laterLocked(d.discard)
	}
	return w, note
}

// replenish starts a process for key if the pool is not full, and the idle timer again. A run
// calls it (or replenishing) when it has taken a process.
//
// The process is started (fork and exec) before replenish returns, and Run returns only after
// that, not in the background: between the two, a new process holds a copy of every
// descriptor of this one, and while it holds one open for writing on a program file,
// executing that program fails (ETXTBSY), so a caller that writes a program and runs it after
// Run must not meet a fork it did not make. Only the rest (the cgroup, the new process's own
// start) goes on in the background.
func (p *initPool) replenish(key startKey) {
	p.mu.Lock()
	p.last = time.Now()
	if p.timer == nil {
		p.timer = time.AfterFunc(warmIdle, p.expire)
	} else {
		p.timer.Reset(warmIdle)
	}
	if len(p.waiting)+p.starting >= warmMax {
		p.mu.Unlock()
		return
	}
	p.starting++
	gen := p.gen
	p.mu.Unlock()
	w, err := startInit(key)
	if err != nil {
		p.add(nil, err, gen)
		return
	}
	go func() {
		if err := w.join(); err != nil {
			w.discard()
			p.add(nil, err, gen)
			return
		}
		p.add(w, nil, gen)
	}()
}

// replenishing runs replenish in the background, and returns a function that waits until it
// has returned (the process is forked and executed).
func (p *initPool) replenishing(key startKey) (wait func()) {
	forked := make(chan struct{})
	go func() {
		defer close(forked)
		p.replenish(key)
	}()
	return func() { <-forked }
}

// add ends a start: w joins the pool, unless the pool was emptied or filled meanwhile.
func (p *initPool) add(w *initProc, err error, gen uint64) {
	p.mu.Lock()
	p.starting--
	if err != nil {
		p.failed = err
	}
	if w != nil && gen == p.gen && len(p.waiting) < warmMax {
		p.waiting = append(p.waiting, w)
		w = nil
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	if w != nil {
		w.discard()
	}
}

// expire ends the waiting processes once warmIdle has passed since the last take.
func (p *initPool) expire() {
	p.mu.Lock()
	if left := warmIdle - time.Since(p.last); left > 0 {
		p.timer.Reset(left) // a take came meanwhile
		p.mu.Unlock()
		return
	}
	idle := p.waiting
	p.waiting = nil
	p.gen++
	p.mu.Unlock()
	for _, w := range idle {
		p.later(w.discard)
	}
}

// later runs f, which ends a process, in the background.
func (p *initPool) later(f func()) {
	p.mu.Lock()
	p.laterLocked(f)
	p.mu.Unlock()
}

// laterLocked is later, with p.mu held.
func (p *initPool) laterLocked(f func()) {
	p.ending++
	go func() {
		f()
		p.mu.Lock()
		p.ending--
		p.cond.Broadcast()
		p.mu.Unlock()
	}()
}

// ready makes sure a process for key waits in the pool, and returns it once it has said it
// waits (or ended), still in the pool; the error says why none could be started.
func (p *initPool) ready(key startKey) (*initProc, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for len(p.waiting) > 0 && p.waiting[0].key != key {
			p.laterLocked(p.waiting[0].discard)
			p.waiting = p.waiting[1:]
		}
		if len(p.waiting) > 0 {
			break
		}
		if p.starting == 0 {
			p.failed = nil
			p.mu.Unlock()
			p.replenish(key)
			p.mu.Lock()
		} else {
			p.cond.Wait()
		}
		if len(p.waiting) == 0 && p.starting == 0 && p.failed != nil {
			return nil, p.failed
		}
	}
	w := p.waiting[0]
	// Its first message says it waits; it stays queued for the run that takes it.
	buf := make([]byte, 1)
	for {
		_, _, err := unix.Recvfrom(int(w.ctl.Fd()), buf, unix.MSG_PEEK)
		if !errors.Is(err, unix.EINTR) {
			return w, nil
		}
	}
}

// prestart is Prestart.
func prestart(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	key, err := currentKey()
	if err != nil {
		return err
	}
	if _, err := pool.ready(key); err != nil {
		return fmt.Errorf("%w: cannot start the init process in new namespaces: %v", ErrUnavailable, err)
	}
	return nil
}
