//go:build linux

package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/sandbox"
)

// BenchmarkStartWarm starts `true` three ways in turns, each timed on its own: plain
// (exec.Command), in the sandbox with a new init process (cold) and in the sandbox with the
// init process that waits in the pool (warm; the wait for its replacement is not timed). It
// reports the median of each and their ratios to plain.
func BenchmarkStartWarm(b *testing.B) {
	sandboxtest.Need(b)
	ws := b.TempDir()
	spec := sandbox.Spec{Workspace: ws, Command: []string{"true"}}
	var plain, cold, warm []time.Duration
	timed := func(to *[]time.Duration, f func() error) {
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		*to = append(*to, time.Since(t0))
	}
	sandboxed := func(run func(context.Context, sandbox.Spec) (sandbox.Result, error)) func() error {
		return func() error {
			res, err := run(context.Background(), spec)
			if err == nil && res.ExitCode != 0 {
				b.Fatalf("status %d", res.ExitCode)
			}
			return err
		}
	}
	b.ResetTimer()
	for range b.N {
		if sandbox.WarmPid() == 0 {
			b.Fatal("no init process waits")
		}
		timed(&plain, func() error { return exec.Command("true").Run() })
		timed(&cold, sandboxed(sandbox.RunCold))
		timed(&warm, sandboxed(sandbox.Run))
	}
	b.StopTimer()
	mp, mc, mw := median(plain), median(cold), median(warm)
	b.ReportMetric(float64(mp.Microseconds())/1000, "plain-ms")
	b.ReportMetric(float64(mc.Microseconds())/1000, "cold-ms")
	b.ReportMetric(float64(mw.Microseconds())/1000, "warm-ms")
	b.ReportMetric(float64(mc)/float64(mp), "cold/plain")
	b.ReportMetric(float64(mw)/float64(mp), "warm/plain")
	b.ReportMetric(0, "ns/op")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// pidfd opens a pidfd of pid, to see when it ends.
func pidfd(t *testing.T, pid int) int {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// ended reports whether the process of fd has ended; with wait, it waits for that.
func ended(t *testing.T, fd int, wait bool) bool {
	t.Helper()
	timeout := 0
	if wait {
		timeout = -1
	}
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, timeout)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
}

// A run takes the init process that waits in the pool, which runs that one command only; the
// command gets the caller's *os.File as its standard input as it is (a regular file here), as
// from a cold start, and its output.
func TestWarmInitRunsOnce(t *testing.T) {
	sandboxtest.Need(t)
	pid := sandbox.WarmPid()
	if pid == 0 {
		t.Fatal("no init process waits")
	}
	fd := pidfd(t, pid)
	in, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	in.WriteString("from a file\n")
	in.Seek(0, 0)
	var out, errOut syncBuffer
	res, err := sandbox.Run(context.Background(), sandbox.Spec{
		Workspace: t.TempDir(), Stdin: in, Stdout: &out, Stderr: &errOut,
		Shell: `test -f /dev/stdin && cat; echo to stderr >&2; exit 3`,
	})
	if err != nil || res.ExitCode != 3 || out.String() != "from a file\n" || errOut.String() != "to stderr\n" {
		t.Fatalf("%+v, %v, stdout %q, stderr %q", res, err, out.String(), errOut.String())
	}
	if next := sandbox.WarmPid(); next == pid || next == 0 {
		t.Errorf("the pool holds %d after the run, want a new process (not %d)", next, pid)
	}
	ended(t, fd, true) // it ends after its one command
	// The next run takes the new one, and works the same.
	res, err = sandbox.Run(context.Background(), sandbox.Spec{Workspace: t.TempDir(), Command: []string{"true"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("second run: %+v, %v", res, err)
	}
}

// A waiting init process that has died is not used: the run starts a new one, and says
// nothing about it.
func TestWarmInitDeadFallsBack(t *testing.T) {
	sandboxtest.Need(t)
	pid := sandbox.WarmPid()
	if pid == 0 {
		t.Fatal("no init process waits")
	}
	fd := pidfd(t, pid)
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		t.Fatal(err)
	}
	ended(t, fd, true)
	var out syncBuffer
	res, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: t.TempDir(), Stdout: &out, Shell: "echo cold"})
	if err != nil || res.ExitCode != 0 || out.String() != "cold\n" {
		t.Fatalf("%+v, %v, %q", res, err, out.String())
	}
	if next := sandbox.WarmPid(); next == pid || next == 0 {
		t.Errorf("the pool holds %d, want a new process", next)
	}
}

// A waiting init process is never given to a run that would start another way (here, under
// another user's uid map): the pool ends it instead.
func TestWarmInitKeyed(t *testing.T) {
	sandboxtest.Need(t)
	pid := sandbox.WarmPid()
	if pid == 0 {
		t.Fatal("no init process waits")
	}
	fd := pidfd(t, pid)
	if sandbox.TakeWarmOtherUser() {
		t.Error("a run under another user was given the waiting init process")
	}
	ended(t, fd, true)
}

// Waiting init processes end after the idle timeout; when the pool is empty, every process
// and descriptor the runs made is gone.
func TestWarmInitIdleAndNoLeak(t *testing.T) {
	sandboxtest.Need(t)
	sandbox.DrainWarm()
	sandbox.SettleWarm()
	fds0, kids0 := openFDs(t), children(t)

	ctx := context.Background()
	for i := range 3 {
		var out syncBuffer
		res, err := sandbox.Run(ctx, sandbox.Spec{Workspace: t.TempDir(), Stdin: strings.NewReader("in\n"), Stdout: &out, Shell: "cat"})
		if err != nil || res.ExitCode != 0 || out.String() != "in\n" {
			t.Fatalf("run %d: %+v, %v, %q", i, res, err, out.String())
		}
	}
	p, err := sandbox.Start(ctx, sandbox.Spec{Workspace: t.TempDir(), Command: []string{"sleep", "1000"}, NoLimits: true})
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()
	p.Wait()
	if _, err := sandbox.Run(ctx, sandbox.Spec{Workspace: t.TempDir(), Command: []string{"no-such-program-here"}}); err == nil {
		t.Fatal("a missing program ran")
	}

	pid := sandbox.WarmPid()
	if pid == 0 {
		t.Fatal("no init process waits")
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sandbox.SetWarmIdle(time.Millisecond)()
	ended(t, fd, true) // the idle timeout ends it
	unix.Close(fd)
	sandbox.SettleWarm()
	if fds, kids := openFDs(t), children(t); !slices.Equal(fds, fds0) || len(kids) != len(kids0) {
		t.Errorf("descriptors %v, child processes %v; before the runs %v, %v", fds, kids, fds0, kids0)
	}
}

// When the process that started them ends, waiting init processes end with it.
func TestWarmInitEndsWithParent(t *testing.T) {
	if os.Getenv(warmHelperEnv) != "" {
		fmt.Println(sandbox.WarmPid())
		io.Copy(io.Discard, os.Stdin) // until killed
		return
	}
	sandboxtest.Need(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestWarmInitEndsWithParent$")
	cmd.Env = append(os.Environ(), warmHelperEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil || pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the helper's waiting init process: %d, %v", pid, err)
	}
	fd := pidfd(t, pid)
	if ended(t, fd, false) {
		t.Fatal("the waiting init process ended before its parent")
	}
	cmd.Process.Kill()
	cmd.Wait()
	ended(t, fd, true)
}

// warmHelperEnv makes TestWarmInitEndsWithParent the helper it starts.
const warmHelperEnv = "WARDEN_TEST_WARM_HELPER"

// openFDs lists this process's open descriptors.
func openFDs(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+"="+l)
	}
	// ReadDir's own descriptor is among them, the same number each time.
	return out
}

// children lists this process's child processes.
func children(t *testing.T) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		if err != nil {
			continue // the thread ended
		}
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}
