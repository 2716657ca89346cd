package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/sandbox"
)

// TestNoCapabilities: where Warden runs as root, a sandboxed command keeps uid 0 (it may still
// write the workspace's files) but holds no capability: what only a capability allows fails,
// though Landlock would let it through.
func TestNoCapabilities(t *testing.T) {
	sandboxtest.Need(t)
	if os.Geteuid() != 0 {
		t.Skip("as another user the command had no capabilities outside its namespaces to begin with")
	}
	ws := t.TempDir()
	tests := []struct{ name, script string }{
		{"chown to another user (CAP_CHOWN)", "touch f && chown 12345 f"},
		{"a device node (CAP_MKNOD)", "mknod null2 c 1 3"},
		{"another user's file (CAP_DAC_OVERRIDE)", "touch g && chmod 000 g && cat g"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, res := sh(t, sandbox.Spec{Workspace: ws}, tt.script)
			if res.ExitCode == 0 {
				t.Errorf("%q succeeded in the sandbox:\n%s", tt.script, out)
			}
		})
	}
	out, res := sh(t, sandbox.Spec{Workspace: ws}, "id -u && echo made > h && cat h")
	if res.ExitCode != 0 || !strings.HasPrefix(out, "0\nmade\n") {
		t.Errorf("uid 0 without capabilities could not use its workspace: %d %q", res.ExitCode, out)
	}
}

// TestProcessLimit: a fork bomb meets the process limit and the command ends; nothing is
// left behind, and the result says the limit was hit.
func TestProcessLimit(t *testing.T) {
	// Only where the limit holds: without it the fork bomb below would be a real one.
	if sandboxtest.Need(t).ProcessLimit == 0 {
		t.Skip("no cgroup can hold the process limit on this host (CI, as root, has a pids controller)")
	}
	spec := sandbox.Spec{Workspace: t.TempDir(), MaxProcs: 64, Timeout: 20 * time.Second}
	_, res := sh(t, spec, `for i in $(seq 200); do sleep 5 & done 2>/dev/null; echo started; kill $(jobs -p) 2>/dev/null; true`)
	if res.ProcessLimit != 64 || !res.ProcessLimitHit {
		t.Errorf("ProcessLimit %d, hit %v; want 64 and true", res.ProcessLimit, res.ProcessLimitHit)
	}
	// A classic fork bomb ends at the time limit at worst, and holds at most the limit.
	start := time.Now()
	_, res = sh(t, sandbox.Spec{Workspace: t.TempDir(), MaxProcs: 64, Timeout: 3 * time.Second}, `bomb() { bomb | bomb & }; bomb; sleep 1; echo survived`)
	if !res.ProcessLimitHit {
		t.Errorf("the fork bomb did not meet the limit: %+v", res)
	}
	if time.Since(start) > 15*time.Second {
		t.Errorf("the fork bomb took %s to end", time.Since(start))
	}
	// Without a limit asked for, none is applied.
	if _, res := sh(t, sandbox.Spec{Workspace: t.TempDir(), MaxProcs: -1}, "true"); res.ProcessLimit != 0 {
		t.Errorf("MaxProcs -1: ProcessLimit %d", res.ProcessLimit)
	}
}

// TestOwnIPC: the command sees none of the host's System V IPC objects.
func TestOwnIPC(t *testing.T) {
	sandboxtest.Need(t)
	if _, err := exec.LookPath("ipcs"); err != nil {
		t.Skip("needs ipcs")
	}
	const key = 0x5741524e // "WARN"
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Skipf("cannot make a shared memory segment here: %v", err)
	}
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	if host, err := exec.Command("ipcs", "-m").Output(); err != nil || !strings.Contains(string(host), "0x5741524e") {
		t.Skipf("ipcs does not list the host's segment: %v\n%s", err, host)
	}
	out, res := sh(t, sandbox.Spec{}, "ipcs -m")
	if res.ExitCode != 0 {
		t.Fatalf("%d %s", res.ExitCode, out)
	}
	if strings.Contains(out, "0x5741524e") {
		t.Errorf("the host's shared memory segment is visible in the sandbox:\n%s", out)
	}
}

// TestOwnProc: /proc is a procfs of the sandbox's own PID namespace, readable, listing only
// the sandbox's processes; the init process outside the command's Landlock domain keeps its
// environment, memory and file descriptors (the control socket to Warden among them) to itself.
func TestOwnProc(t *testing.T) {
	sandboxtest.Need(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	out, res := sh(t, sandbox.Spec{}, "bash -c 'grep -c ^Cap /proc/self/status; ls /proc | grep -c \"^[0-9]\"'")
	if res.ExitCode != 0 {
		t.Skipf("/proc is not mounted in this sandbox (a container that refuses procfs in a namespace): %q", out)
	}
	var caps, procs int
	fmt.Sscan(out, &caps, &procs)
	if caps != 5 || procs == 0 || procs > 10 {
		t.Errorf("/proc/self/status has %d Cap lines, /proc lists %d processes; want 5 and the sandbox's few:\n%s", caps, procs, out)
	}
	// PTRACE_ATTACH to every thread of the init process (one of them starts the command, in
	// its Landlock domain, and the init process is not dumpable for that reason).
	if nr, ok := map[string]int{"amd64": 101, "arm64": 117}[runtime.GOARCH]; ok {
		if _, err := exec.LookPath("perl"); err == nil {
			script := fmt.Sprintf(`perl -e 'opendir(D,"/proc/1/task"); for $t (grep {/^\d+$/} readdir(D)) { if (syscall(%d, 16, $t+0, 0, 0) == 0) { print "attached $t\n"; exit 0 } } exit 1'`, nr)
			if out, res := sh(t, sandbox.Spec{}, script); res.ExitCode == 0 {
				t.Errorf("ptrace attached to the init process: %q", out)
			}
		}
	}
	for _, script := range []string{
		"cat /proc/1/environ",
		"cat /proc/1/maps",
		"head -c 1 /proc/1/mem",
		"bash -c 'exec 9</proc/1/fd/3'",
		"bash -c 'exec 9</proc/1/fd/4'",
		"readlink /proc/1/fd/3",
		"for t in /proc/1/task/*; do cat $t/environ && exit 0; done; exit 1",
		"for t in /proc/1/task/*; do head -c 1 $t/mem && exit 0; done; exit 1",
		"for t in /proc/1/task/*; do cat $t/maps && exit 0; done; exit 1",
		"echo x > /proc/sys/kernel/hostname",
		"echo c > /proc/sysrq-trigger",
	} {
		if out, res := sh(t, sandbox.Spec{}, script); res.ExitCode == 0 {
			t.Errorf("%q succeeded: %q", script, out)
		}
	}
}

// TestSeccomp: the system calls the filter refuses fail in a sandboxed command, with the
// errors that make callers fall back where there is a fallback; everyday programs still run.
func TestSeccomp(t *testing.T) {
	sandboxtest.Need(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("the system call numbers below are amd64's")
	}
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("needs perl")
	}
	// perl's syscall returns -1 and sets $! (printed as its number).
	for _, tt := range []struct {
		name, call string
		errno      int
	}{
		{"keyctl", "syscall(250, 0, 0, 0, 0, 0)", 1},              // EPERM
		{"add_key", "syscall(248, 0, 0, 0, 0, 0)", 1},             // EPERM
		{"bpf", "syscall(321, 0, 0, 0)", 1},                       // EPERM
		{"userfaultfd", "syscall(323, 0)", 1},                     // EPERM
		{"unshare(CLONE_NEWUSER)", "syscall(272, 0x10000000)", 1}, // EPERM
		{"unshare(CLONE_NEWNET)", "syscall(272, 0x40000000)", 1},  // EPERM
		{"setns", "syscall(308, 0, 0)", 1},                        // EPERM
		{"io_uring_setup", "syscall(425, 8, 0)", 38},              // ENOSYS
		{"clone3", "syscall(435, 0, 0)", 38},                      // ENOSYS
	} {
		out, res := sh(t, sandbox.Spec{}, fmt.Sprintf(`perl -e '$r = %s; print $r, " ", $!+0, "\n"'`, tt.call))
		if want := fmt.Sprintf("-1 %d\n", tt.errno); res.ExitCode != 0 || out != want {
			t.Errorf("%s: %q (exit %d), want %q", tt.name, out, res.ExitCode, want)
		}
	}
	out, res := sh(t, sandbox.Spec{}, "unshare -U true || echo refused")
	if !strings.Contains(out, "refused") {
		t.Errorf("unshare -U: %d %q", res.ExitCode, out)
	}
	for _, prog := range [][]string{{"git", "--version"}, {"python3", "-c", "import os; print(os.getpid())"}, {"node", "-e", "require('fs').writeFileSync('n', 'x')"}, {"sh", "-c", "(sleep 0 &); wait"}} {
		if _, err := exec.LookPath(prog[0]); err != nil {
			continue
		}
		var buf syncBuffer
		res, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: t.TempDir(), Command: prog, Stdout: &buf, Stderr: &buf,
			Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}})
		if err != nil || res.ExitCode != 0 {
			t.Errorf("%v in the sandbox: %v %+v\n%s", prog, err, res, buf.String())
		}
	}
}
