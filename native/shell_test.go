package native_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/native"
)

func TestShellExec(t *testing.T) {
	ws, e := workspace(t, native.Options{Sandbox: off})
	writeFile(t, ws+"/sub/here.txt", "")
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		code    int
		want    []string
	}{
		{"success", map[string]any{"command": "echo hello"}, false, 0, []string{"hello\n[exit code 0]\n"}},
		{"a failure", map[string]any{"command": "echo oops >&2; exit 3"}, true, 3, []string{"oops\n[exit code 3]\n"}},
		{"stdout and stderr in order", map[string]any{"command": "echo one; echo two >&2; echo three"}, false, 0,
			[]string{"one\ntwo\nthree\n"}},
		{"no output", map[string]any{"command": "true"}, false, 0, []string{"(no output)\n[exit code 0]"}},
		{"in its directory", map[string]any{"command": "ls", "cwd": "sub"}, false, 0, []string{"here.txt\n"}},
		{"in the workspace by default", map[string]any{"command": "pwd"}, false, 0, []string{ws + "\n"}},
		{"stdin is empty", map[string]any{"command": "wc -c"}, false, 0, []string{"0\n"}},
		{"home is the workspace", map[string]any{"command": "echo $HOME"}, false, 0, []string{ws + "\n"}},
		{"a signal", map[string]any{"command": "kill -TERM $$"}, true, -1, []string{"[killed by signal 15 (terminated)]"}},
		{"bash", map[string]any{"command": "echo ${BASH_VERSION:+bash}"}, false, 0, []string{"bash\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, e, ws, "shell_exec", tt.args)
			want(t, r, tt.isError, tt.want...)
			if got := r.Structured["exitCode"]; got != tt.code {
				t.Errorf("exitCode %v, want %d", got, tt.code)
			}
		})
	}
}

func TestShellEnvironment(t *testing.T) {
	t.Setenv("WARDEN_TEST_HOST_SECRET", "host-secret")
	ws, e := workspace(t, native.Options{Sandbox: off})
	a := normalize(t, ws, "shell_exec", map[string]any{"command": `echo "binding=$API_TOKEN host=${WARDEN_TEST_HOST_SECRET:-unset}"`})
	r, err := e.Run(context.Background(), a, map[string]string{"API_TOKEN": "s3cr3t"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, false, "binding=s3cr3t host=unset\n")
	if v, ok := os.LookupEnv("API_TOKEN"); ok {
		t.Errorf("the binding reached Warden's environment: %q", v)
	}
	r, err = e.Run(context.Background(), a, nil)
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, false, "binding= host=unset\n") // bindings are per call

	r, err = e.Run(context.Background(), a, map[string]string{"A=B": "x"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, true, "cannot be the name of an environment variable")

	ws2, e2 := workspace(t, native.Options{Sandbox: off, Env: []string{"PATH=" + os.Getenv("PATH"), "ONLY=this"}})
	r, err = e2.Run(context.Background(), normalize(t, ws2, "shell_exec", map[string]any{"command": "env"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, false, "ONLY=this\n")
	if strings.Contains(r.Text, "HOME=") || strings.Contains(r.Text, "WARDEN_TEST_HOST_SECRET") {
		t.Errorf("more than Options.Env reached the command:\n%s", r.Text)
	}
}

func TestShellOutputCap(t *testing.T) {
	ws, e := workspace(t, native.Options{Sandbox: off, MaxOutput: 1000})
	r := call(t, e, ws, "shell_exec", map[string]any{"command": `echo START; head -c 100000 /dev/zero | tr '\0' x; echo; echo END`})
	want(t, r, false, "START\n", "bytes of output dropped ...]", "END\n[exit code 0]")
	if r.Structured["truncated"] != true {
		t.Error("not marked truncated")
	}
	if len(r.Text) > 1200 {
		t.Errorf("%d bytes of text kept, want about 1000", len(r.Text))
	}
}

// alive reports whether a process is still running (a zombie is not: it has ended).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// waitDead waits until pid has ended, failing the test if it is still running when the test's
// context ends.
func waitDead(ctx context.Context, t *testing.T, pid int) {
	t.Helper()
	for alive(pid) {
		select {
		case <-ctx.Done():
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d is still running", pid)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func readPid(t *testing.T, p string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, p)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestShellTimeoutKillsTheGroup(t *testing.T) {
	ws, e := workspace(t, native.Options{Sandbox: off, Timeout: 2 * time.Second})
	// The test's own limit is far below the 30 s the command would take: Run must end it.
	// (The 2 s limit leaves the shell time to write the child's pid even on a loaded machine.)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a := normalize(t, ws, "shell_exec", map[string]any{"command": "sleep 30 & echo $! > bg.pid; echo started; sleep 30"})
	r, err := e.Run(ctx, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the command ran until the test's own deadline")
	}
	want(t, r, true, "started\n", "[timed out after 2s: the command and every process it started were killed]")
	if r.Structured["timedOut"] != true {
		t.Errorf("timedOut = %v", r.Structured["timedOut"])
	}
	waitDead(ctx, t, readPid(t, ws+"/bg.pid"))
}

func TestShellBackgroundChildIsKilled(t *testing.T) {
	ws, e := workspace(t, native.Options{Sandbox: off})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The shell ends at once, leaving a child that would hold the output open for 30 s.
	a := normalize(t, ws, "shell_exec", map[string]any{"command": "sleep 30 & echo $! > bg.pid; echo parent done"})
	r, err := e.Run(ctx, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("Run waited for the background child")
	}
	want(t, r, false, "parent done\n[exit code 0]")
	if strings.Contains(r.Text, "left its process group") {
		t.Errorf("the child was reported as escaped:\n%s", r.Text)
	}
	waitDead(ctx, t, readPid(t, ws+"/bg.pid"))
}

func TestShellCancelKillsTheGroup(t *testing.T) {
	ws, e := workspace(t, native.Options{Sandbox: off})
	ctx, cancel := context.WithCancel(context.Background())
	a := normalize(t, ws, "shell_exec", map[string]any{"command": "sleep 30 & echo $! > bg.pid; echo ready > ready; wait"})
	done := make(chan native.Result)
	go func() {
		r, err := e.Run(ctx, a, nil)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	limit, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	for {
		if _, err := os.Stat(ws + "/ready"); err == nil {
			break
		}
		select {
		case <-limit.Done():
			t.Fatal("the command did not start")
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	var r native.Result
	select {
	case r = <-done:
	case <-limit.Done():
		t.Fatal("Run did not return after its context was cancelled")
	}
	want(t, r, true, "[cancelled: the command and every process it started were killed]")
	waitDead(limit, t, readPid(t, ws+"/bg.pid"))
}

// TestShellEscapedProcess: a process that leaves the group (the sandbox's job to contain) does
// not hold Run up, and the result says it may still be running.
func TestShellEscapedProcess(t *testing.T) {
	if _, err := os.Stat("/usr/bin/setsid"); err != nil {
		t.Skip("no setsid")
	}
	ws, e := workspace(t, native.Options{Sandbox: off})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a := normalize(t, ws, "shell_exec", map[string]any{"command": "setsid sh -c 'echo $$ > esc.tmp; mv esc.tmp esc.pid; exec sleep 30' & while [ ! -s esc.pid ]; do sleep 0.01; done; echo out"})
	r, err := e.Run(ctx, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, ws+"/esc.pid"))); err == nil {
		defer syscall.Kill(pid, syscall.SIGKILL)
	}
	if ctx.Err() != nil {
		t.Fatal("Run waited for the escaped process")
	}
	want(t, r, false, "out\n", "left its process group")
}

func TestShellMissing(t *testing.T) {
	ws, e := workspace(t, native.Options{Sandbox: off, Env: []string{"PATH=" + t.TempDir()}})
	want(t, call(t, e, ws, "shell_exec", map[string]any{"command": "echo hi"}), true, "neither bash nor sh is installed")
}

func TestShellPlantedInWorkspace(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A bash planted in the workspace, first on the PATH, is never the shell Warden runs.
	writeFile(t, ws+"/bin/bash", "#!/bin/sh\necho planted\n")
	if err := os.Chmod(ws+"/bin/bash", 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := native.New(native.Options{Sandbox: off, Workspace: ws, Env: []string{"PATH=" + ws + "/bin:" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	want(t, call(t, e, ws, "shell_exec", map[string]any{"command": "echo real"}), false, "real\n")
}
