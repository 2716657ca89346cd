//go:build linux

package sandbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/sandbox/internal/initproc"
)

// minABI is the Landlock ABI the sandbox needs: 6 brings the scopes (signals and abstract
// unix sockets); the file system rights used are those of ABI 5 (device ioctls).
const minABI = 6

// outputGrace is how long output is still read once the init process is gone.
const outputGrace = time.Second

// launch gives a run its init process, holding std, with maxProcs as its cgroup's process
// limit: one that waits in the pool for key if there is one (unless cold), else one started
// now. A waiting process that turns out dead or unusable is replaced by a new one; the error
// says so only if that one fails too.
func launch(key startKey, maxProcs int, std *runStdio, cfg []byte, cold bool) (w *initProc, warm bool, err error) {
	var note error
	if !cold {
		var n error
		w, n = pool.take(key)
		note = n
		if w != nil {
			err := w.attach(maxProcs, std, cfg)
			if err == nil {
				return w, true, nil
			}
			note = fmt.Errorf("a waiting init process could not be used: %v", err)
			w.discard()
		}
	}
	w, err = spawnInit(key)
	if errors.Is(err, errCgroupJoin) {
		return nil, false, err
	}
	if err != nil {
		if note != nil {
			err = fmt.Errorf("%v (%v)", err, note)
		}
		return nil, false, fmt.Errorf("%w: cannot start the init process in new namespaces: %v", ErrUnavailable, err)
	}
	if err := w.attach(maxProcs, std, cfg); err != nil {
		w.discard()
		if note != nil {
			err = fmt.Errorf("%w (%v)", err, note)
		}
		return nil, false, err
	}
	return w, false, nil
}

// landlockABI is the Landlock ABI version of the running kernel.
func landlockABI() (int, error) { return llsyscall.LandlockGetABIVersion() }

func (s *Spec) argv() ([]string, error) {
	switch {
	case len(s.Command) > 0:
		if s.Command[0] == "" {
			return nil, errors.New("sandbox: empty program name")
		}
		return s.Command, nil
	case s.Shell != "":
		return []string{"/bin/sh", "-c", s.Shell}, nil
	}
	return nil, errors.New("sandbox: no command")
}

// startDir returns the real path of dir (ws when empty), which must be ws or inside it.
func startDir(ws, dir string) (string, error) {
	if dir == "" {
		return ws, nil
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(ws, dir)
	}
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox: directory: %w", err)
	}
	if r != ws && !strings.HasPrefix(r, ws+"/") {
		return "", fmt.Errorf("sandbox: directory %s is outside the workspace %s", dir, ws)
	}
	if fi, err := os.Stat(r); err != nil {
		return "", fmt.Errorf("sandbox: directory: %w", err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("sandbox: %s is not a directory", dir)
	}
	return r, nil
}

func workspace(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("sandbox: workspace %q is not an absolute path", dir)
	}
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox: workspace: %w", err)
	}
	fi, err := os.Stat(r)
	if err != nil {
		return "", fmt.Errorf("sandbox: workspace: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("sandbox: workspace %s is not a directory", dir)
	}
	return r, nil
}

// withDefaults returns env with PATH set if it was not, and TMPDIR if tmp is not empty and
// it was not.
func withDefaults(env []string, tmp string) []string {
	env = append([]string(nil), env...)
	has := func(k string) bool {
		for _, kv := range env {
			if strings.HasPrefix(kv, k+"=") {
				return true
			}
		}
		return false
	}
	if !has("PATH") {
		env = append(env, "PATH="+DefaultPath)
	}
	if tmp != "" && !has("TMPDIR") {
		env = append(env, "TMPDIR="+tmp)
	}
	return env
}

// withCAVars returns env with every CAVars variable naming file, and no other value of them.
func withCAVars(env []string, file string) []string {
	out := make([]string, 0, len(env)+len(CAVars))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(CAVars, k) {
			out = append(out, kv)
		}
	}
	for _, k := range CAVars {
		out = append(out, k+"="+file)
	}
	return out
}

func run(ctx context.Context, spec Spec) (Result, error) {
	argv, err := spec.argv()
	if err != nil {
		return Result{}, err
	}
	ws, err := workspace(spec.Workspace)
	if err != nil {
		return Result{}, err
	}
	dir, err := startDir(ws, spec.Dir)
	if err != nil {
		return Result{}, err
	}
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultTimeout
	}
	if spec.MaxOutput <= 0 {
		spec.MaxOutput = DefaultMaxOutput
	}
	if spec.NoLimits {
		spec.Timeout, spec.MaxOutput = math.MaxInt64, math.MaxInt64 // never reached
	}
	lim := &limiter{left: spec.MaxOutput}
	stdout, stderr := limitedWriter{lim, spec.Stdout}, limitedWriter{lim, spec.Stderr}
	if spec.Unconfined {
		return runUnconfined(ctx, spec, argv, dir, stdout, stderr, lim)
	}

	key, err := currentKey()
	if err != nil {
		return Result{}, err
	}
	env := withDefaults(spec.Env, "")
	pathVar := initproc.EnvValue(env, "PATH")
	if spec.OnlyListedPaths {
		pathVar = ""
	}
	// The run's own directory: the mount point of the sandbox's root, and what it sees as /tmp.
	run, err := os.MkdirTemp("", "warden-sandbox-")
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	// Removed once the init process has ended (below), or now if it did not start.
	launched := false
	defer func() {
		if !launched {
			os.RemoveAll(run)
		}
	}()
	plan, err := planFS(run, ws, spec.ReadOnly, spec.Hidden, pathVar)
	if err != nil {
		return Result{}, err
	}
	if err := os.Mkdir(plan.Tmp, 0o700); err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Chmod(plan.Tmp, 0o1777); err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	if len(spec.CABundle) > 0 {
		if err := os.WriteFile(filepath.Join(plan.Tmp, filepath.Base(CABundleFile)), spec.CABundle, 0o444); err != nil {
			return Result{}, fmt.Errorf("sandbox: %w", err)
		}
		env = withCAVars(env, CABundleFile)
	}
	// Hard blocks at the system call: see supervise_linux.go.
	var sup *supervisor
	if spec.Boundaries != nil {
		if sup, err = newSupervisor(spec.Boundaries, ws, spec.OnRefusal); err != nil {
			return Result{}, err
		}
		defer sup.stop()
	}
	icfg := initproc.Config{Argv: argv, Env: env, Dir: dir, FS: plan}
	if icfg.Deny, err = denyFilter(); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if sup != nil {
		icfg.Enforce = true
		if icfg.Notify, err = notifyFilter(blockable(spec.Boundaries)); err != nil {
			return Result{}, fmt.Errorf("%w: hard blocks are set, and cannot be enforced at the system call: %v", ErrUnavailable, err)
		}
	}
	cfg, err := json.Marshal(icfg)
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	std, err := newStdio(spec.Stdin, stdout, stderr)
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	// The process limit, where a cgroup can be made: the init process is in a cgroup of its
	// own from its start, and its limit is set before the process has read its
	// configuration, so before anything in the sandbox can fork.
	maxProcs := spec.MaxProcs
	if maxProcs == 0 {
		maxProcs = DefaultMaxProcs
	}
	w, warm, err := launch(key, maxProcs, std, cfg, spec.cold)
	std.closeChild()
	if err != nil {
		closeAll(std.parent)
		return Result{}, err
	}
	switch {
	case spec.cold:
	case warm:
		// The replacement starts while the command runs (on another processor, if there
		// is one), and Run returns only once it is forked: see replenish.
		defer pool.replenishing(key)()
	default:
		// This run's own start is under way: the replacement's would compete with it.
		defer pool.replenish(key)
	}
	// The init process may still be ending when Run returns: its namespaces go down with it,
	// and removing the run's directory before that would wait for the kernel to detach the
	// root mounted on it there (an RCU grace period, milliseconds).
	launched = true
	readerDone := make(chan struct{}) // closed when the control socket has been read to its end
	defer pool.later(func() {
		<-w.done
		<-readerDone // it reads the socket by its number: closed only after that
		w.release()
		os.RemoveAll(run)
	})
	ctl := w.ctl
	std.start()
	w.reap()

	type event struct {
		kind byte
		data []byte
	}
	events := make(chan event, 8)
	allEnded := make(chan struct{}) // closed when the init process says nothing of the run is left
	go func() {
		defer close(readerDone)
		ended := false
		defer func() {
			if !ended {
				close(events)
			}
		}()
		buf := make([]byte, 64<<10)
		oob := make([]byte, unix.CmsgSpace(4*4))
		for {
			n, oobn, _, _, err := unix.Recvmsg(int(ctl.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || n == 0 {
				return
			}
			if buf[0] == initproc.MsgNotify || buf[0] == initproc.MsgReady && sup != nil {
				if !sup.control(buf[0], oob[:oobn], w.cmd.Process) {
					events <- event{initproc.MsgError, []byte("the command started without its supervisor, and was killed")}
					continue
				}
				if buf[0] == initproc.MsgNotify {
					continue
				}
			}
			if buf[0] != initproc.MsgConn {
				if ended {
					continue // nothing but connections comes after the end
				}
				if buf[0] == initproc.MsgReady && spec.started != nil {
					spec.started()
				}
				events <- event{buf[0], append([]byte(nil), buf[1:n]...)}
				if buf[0] == initproc.MsgExit && n == 6 && buf[5] == 1 {
					// The run is over; a connection the command made before it ended may
					// still come, and is served as before.
					ended = true
					close(events)
					close(allEnded)
				}
				continue
			}
			for _, c := range receivedConns(oob[:oobn]) {
				if spec.Proxy == nil {
					c.Close()
					continue
				}
				go spec.Proxy(c)
			}
		}
	}()

	// Ended: everything in the sandbox's PID namespace (the init process killed and reaped the
	// rest, or has ended itself, which kills them), and the output read.
	waited := make(chan struct{})
	go func() {
		select {
		case <-w.done:
		case <-allEnded:
		}
		std.wait()
		close(waited)
	}()
	tctx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	res := Result{Sandboxed: true}
	var pids *pidsGroup // the process limit, if there is one
	if maxProcs > 0 {
		pids = w.pids
	}
	if pids != nil {
		res.ProcessLimit = pids.max
	}
	select {
	case <-waited:
	case <-tctx.Done():
		// The init process is the PID namespace's first: when it dies, the kernel kills
		// everything else in the namespace. Process uses a pidfd, so this never hits a reused pid.
		w.cmd.Process.Kill()
		<-waited
		if ctx.Err() != nil {
			res.Canceled = true
		} else {
			res.TimedOut = true
		}
	}
	var started, exited bool
	var status syscall.WaitStatus
	var setupErr error
	var execErr *ExecError
	for ev := range events {
		switch ev.kind {
		case initproc.MsgReady:
			started = true
			starts.Add(1)
			res.ProxyAddr = "127.0.0.1:" + string(ev.data)
		case initproc.MsgError:
			setupErr = fmt.Errorf("sandbox: %s", ev.data)
		case initproc.MsgUnavailable:
			setupErr = fmt.Errorf("%w: %s", ErrUnavailable, ev.data)
		case initproc.MsgExec:
			if len(ev.data) > 0 {
				execErr = &ExecError{Code: int(ev.data[0]), Msg: string(ev.data[1:])}
			}
		case initproc.MsgExit:
			if len(ev.data) >= 4 {
				exited = true
				status = syscall.WaitStatus(binary.LittleEndian.Uint32(ev.data))
			}
		}
	}
	if !started && setupErr == nil && (res.TimedOut || res.Canceled) {
		// Killed while starting (the command may have begun before the init process said so).
		setStatus(&res, syscall.WaitStatus(syscall.SIGKILL))
		return res, nil
	}
	if !started {
		if execErr != nil {
			return Result{}, execErr
		}
		if setupErr == nil {
			setupErr = fmt.Errorf("sandbox: the init process ended before starting the command (%v)", w.cmd.ProcessState)
		}
		return Result{}, setupErr
	}
	if !exited {
		// Killed at the time limit or on cancellation, or the init process itself died.
		ps, _ := w.cmd.ProcessState.Sys().(syscall.WaitStatus)
		status = ps
	}
	setStatus(&res, status)
	res.Truncated = lim.isTruncated()
	res.ProcessLimitHit = pids != nil && pids.hitLimit()
	if sup != nil {
		sup.stop()
		sup.result(&res)
	}
	return res, nil
}

func (l *limiter) isTruncated() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.truncated
}

func setStatus(res *Result, ws syscall.WaitStatus) {
	switch {
	case ws.Exited():
		res.ExitCode = ws.ExitStatus()
	case ws.Signaled():
		res.ExitCode = -1
		res.Signal, res.SignalNumber = ws.Signal().String(), int(ws.Signal())
	default:
		res.ExitCode = -1
	}
}

// receivedConns turns the file descriptors in a control message into connections.
func receivedConns(oob []byte) []net.Conn {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var out []net.Conn
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			f := os.NewFile(uintptr(fd), "sandbox-conn")
			c, err := net.FileConn(f)
			f.Close()
			if err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// runUnconfined runs the command as it is, in its own process group, with the limits.
func runUnconfined(ctx context.Context, spec Spec, argv []string, dir string, stdout, stderr limitedWriter, lim *limiter) (Result, error) {
	env := withDefaults(spec.Env, "")
	path := argv[0]
	if !strings.Contains(path, "/") {
		var ok bool
		if path, ok = initproc.FindProgram(path, env); !ok {
			return Result{}, &ExecError{Code: 127, Msg: fmt.Sprintf("%s: command not found in PATH (%s)", argv[0], initproc.EnvValue(env, "PATH"))}
		}
	}
	// Descriptors this process inherited without close-on-exec would pass into the command:
	// mark them all (Go opens its own with close-on-exec already).
	CloseInherited()
	cmd := &exec.Cmd{
		Path: path, Args: argv, Env: env, Dir: dir,
		Stdin: spec.Stdin, Stdout: stdout, Stderr: stderr,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
		WaitDelay:   outputGrace,
	}
	if err := cmd.Start(); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return Result{}, &ExecError{Code: initproc.ExecCode(pe.Err), Msg: fmt.Sprintf("%s: %v", path, pe.Err)}
		}
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	if spec.started != nil {
		spec.started()
	}
	pgid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	tctx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	var res Result
	select {
	case <-waited:
	case <-tctx.Done():
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-waited
		if ctx.Err() != nil {
			res.Canceled = true
		} else {
			res.TimedOut = true
		}
	}
	// What the command left in its group goes too. The group's id stays taken while any
	// process is in it, so this cannot reach another group.
	syscall.Kill(-pgid, syscall.SIGKILL)
	ws2, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	setStatus(&res, ws2)
	res.Truncated = lim.isTruncated()
	return res, nil
}

// CloseInherited marks every descriptor of this process above 2 close-on-exec, so that no
// program it starts inherits one: descriptors Go opens are close-on-exec already, but those
// this process was given by its parent (a shell's fd 9, a supervisor's fd 251) are not. warden
// calls it when it starts; Run calls it before an unconfined command (a sandboxed command's
// init process does the same for itself).
func CloseInherited() {
	unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
}
