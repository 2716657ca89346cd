package native_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/native"
)

// off runs commands unconfined: the tests of the executor's own process handling use it, and
// the tests below run the same kinds of command in the sandbox.
var off = native.Sandbox{Off: true}

func TestShellSandboxed(t *testing.T) {
	sandboxtest.Need(t)
	t.Setenv("WARDEN_TEST_HOST_SECRET", "host-secret")
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, outside+"/readable/visible.txt", "visible")
	writeFile(t, outside+"/readable/secret.txt", "secret")
	loopback, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer loopback.Close()
	go func() {
		for {
			c, err := loopback.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "reached the host's loopback\n")
			c.Close()
		}
	}()
	// The proxy stand-in answers every connection the command makes to its HTTP_PROXY.
	proxy := func(c net.Conn) {
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.0 200 OK\r\n\r\nthrough the proxy\n")
	}
	// The zero Sandbox is the sandbox; the fields only widen or narrow what it allows.
	ws, e := workspace(t, native.Options{Sandbox: native.Sandbox{
		ReadOnly: []string{outside + "/readable"},
		Hidden:   []string{outside + "/readable/secret.txt"},
		Proxy:    proxy,
	}})
	writeFile(t, ws+"/sub/here.txt", "")
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    []string
	}{
		{"success", map[string]any{"command": "echo hello"}, false, []string{"hello\n[exit code 0]\n"}},
		{"a failure", map[string]any{"command": "echo oops >&2; exit 3"}, true, []string{"oops\n[exit code 3]\n"}},
		{"in its directory", map[string]any{"command": "ls; pwd", "cwd": "sub"}, false, []string{"here.txt\n" + ws + "/sub\n"}},
		{"home is the workspace", map[string]any{"command": "echo $HOME"}, false, []string{ws + "\n"}},
		{"Warden's environment stays out", map[string]any{"command": "echo ${WARDEN_TEST_HOST_SECRET:-unset}"}, false, []string{"unset\n"}},
		{"a write inside", map[string]any{"command": "echo made > sub/new.txt && cat sub/new.txt"}, false, []string{"made\n[exit code 0]"}},
		// Outside the workspace, a path is read-only, unreadable or not there at all (the
		// sandbox's /tmp is its own): either way the host's file is untouched (checked below).
		{"a write outside", map[string]any{"command": "echo x > " + outside + "/readable/new.txt"}, true, []string{"Read-only file system"}},
		{"a write to a read-only path", map[string]any{"command": "echo x > " + outside + "/readable/visible.txt"}, true, []string{"Read-only file system"}},
		{"a path outside", map[string]any{"command": "ls " + outside + "/elsewhere"}, true, []string{"No such file or directory"}},
		{"a read-only path", map[string]any{"command": "cat " + outside + "/readable/visible.txt"}, false, []string{"visible\n[exit code 0]"}},
		{"a hidden path", map[string]any{"command": "cat " + outside + "/readable/secret.txt"}, true, []string{"Permission denied"}},
		{"the host's shadow file", map[string]any{"command": "cat /etc/shadow"}, true, []string{"Permission denied"}},
		{"the host's loopback", map[string]any{"command": "exec 3<>/dev/tcp/127.0.0.1/" + port(loopback) + " && cat <&3"}, true, nil},
		{"the proxy", map[string]any{"command": `p=${HTTP_PROXY#http://}; exec 3<>/dev/tcp/${p%:*}/${p#*:} && printf 'GET http://example.com/ HTTP/1.0\r\n\r\n' >&3 && cat <&3`},
			false, []string{"through the proxy\n"}},
		{"a signal", map[string]any{"command": "kill -TERM $$"}, true, []string{"[killed by signal 15 (terminated)]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, e, ws, "shell_exec", tt.args)
			want(t, r, tt.isError, tt.want...)
			if strings.Contains(r.Text, "reached the host's loopback") {
				t.Errorf("the command reached a listener on the host's loopback:\n%s", r.Text)
			}
			if r.Structured["sandboxed"] != true {
				t.Errorf("sandboxed = %v, want true", r.Structured["sandboxed"])
			}
		})
	}
	if b, err := os.ReadFile(outside + "/readable/visible.txt"); err != nil || string(b) != "visible" {
		t.Errorf("the read-only file holds %q (%v)", b, err)
	}
	if _, err := os.Stat(outside + "/readable/new.txt"); err == nil {
		t.Error("a file was written outside the workspace")
	}
}

func port(ln net.Listener) string {
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p
}

// TestShellSandboxedBindings: protected bindings reach the sandboxed process's environment
// and nothing else.
func TestShellSandboxedBindings(t *testing.T) {
	sandboxtest.Need(t)
	ws, e := workspace(t, native.Options{})
	a := normalize(t, ws, "shell_exec", map[string]any{"command": `echo "binding=$API_TOKEN"`})
	r, err := e.Run(context.Background(), a, map[string]string{"API_TOKEN": "s3cr3t"})
	if err != nil {
		t.Fatal(err)
	}
	want(t, r, false, "binding=s3cr3t\n")
	if _, ok := os.LookupEnv("API_TOKEN"); ok {
		t.Error("the binding reached Warden's environment")
	}
}

// TestShellSandboxedLimits: the time limit, cancellation and the output cap hold in the
// sandbox as outside it, and nothing the command started outlives it.
func TestShellSandboxedLimits(t *testing.T) {
	sandboxtest.Need(t)
	ws, e := workspace(t, native.Options{Timeout: 2 * time.Second, MaxOutput: 1000})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A daemon that would keep the workspace busy: it must be dead when the call returns.
	a := normalize(t, ws, "shell_exec", map[string]any{"command": "(setsid sh -c 'while :; do date > tick; sleep 0.05; done' &) ; echo started; sleep 30"})
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
	before := readFile(t, ws+"/tick")
	time.Sleep(300 * time.Millisecond)
	if after := readFile(t, ws+"/tick"); after != before {
		t.Error("a daemonised child kept running after the call returned")
	}

	r = call(t, e, ws, "shell_exec", map[string]any{"command": `echo START; head -c 100000 /dev/zero | tr '\0' x; echo; echo END`})
	want(t, r, false, "START\n", "bytes of output dropped ...]", "END\n[exit code 0]")
	if r.Structured["truncated"] != true || len(r.Text) > 1200 {
		t.Errorf("truncated = %v with %d bytes of text, want true and about 1000", r.Structured["truncated"], len(r.Text))
	}

	cctx, stop := context.WithCancel(ctx)
	done := make(chan native.Result)
	go func() {
		r, err := e.Run(cctx, normalize(t, ws, "shell_exec", map[string]any{"command": "echo ready > ready; sleep 30"}), nil)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	for {
		if _, err := os.Stat(ws + "/ready"); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the command did not start")
		case <-time.After(5 * time.Millisecond):
		}
	}
	stop()
	select {
	case r = <-done:
		want(t, r, true, "[cancelled: the command and every process it started were killed]")
	case <-ctx.Done():
		t.Fatal("Run did not return after its context was cancelled")
	}
}

// TestShellSandboxedConcurrently: one executor runs several sandboxed commands at once, each
// with its own output.
func TestShellSandboxedConcurrently(t *testing.T) {
	sandboxtest.Need(t)
	ws, e := workspace(t, native.Options{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			word := strings.Repeat("w", i+1)
			a := normalize(t, ws, "shell_exec", map[string]any{"command": "echo " + word + " > " + word + " && cat " + word})
			r, err := e.Run(context.Background(), a, nil)
			if err != nil {
				t.Error(err)
				return
			}
			if r.IsError || !strings.HasPrefix(r.Text, word+"\n[exit code 0]") {
				t.Errorf("run %d: %s", i, r.Text)
			}
		})
	}
	wg.Wait()
}

// TestShellUnconfinedSaysSo: with the sandbox off, the result says the command ran unconfined.
func TestShellUnconfinedSaysSo(t *testing.T) {
	ws, e := workspace(t, native.Options{Sandbox: off})
	r := call(t, e, ws, "shell_exec", map[string]any{"command": "true"})
	if r.Structured["sandboxed"] != false {
		t.Errorf("sandboxed = %v, want false", r.Structured["sandboxed"])
	}
}

// TestShellSandboxedForkBomb: a fork bomb meets the process limit, the call ends, and the
// result says why forks failed. The bomb is a loop of sh (dash), which gives up at the first
// refused fork, where bash would retry each one for fifteen seconds: the call ends as soon as
// the limit is met, however loaded the machine, and the time limit is only a backstop.
func TestShellSandboxedForkBomb(t *testing.T) {
	// Only where the limit holds: without it this would be a real fork bomb.
	if sandboxtest.Need(t).ProcessLimit == 0 {
		t.Skip("no cgroup can hold the process limit on this host (CI, as root, has one)")
	}
	ws, e := workspace(t, native.Options{Timeout: 5 * time.Minute})
	r := call(t, e, ws, "shell_exec", map[string]any{"command": "sh -c 'while :; do sleep 600 & done' 2>/dev/null; echo after"})
	if !strings.Contains(r.Text, "[a fork was refused: the sandbox holds a command and everything it starts to 1024 processes") {
		t.Errorf("the result does not say the process limit was met:\n%s", r.Text)
	}
	if !strings.HasPrefix(r.Text, "after\n") {
		t.Errorf("the command did not go on once its forks were refused:\n%s", r.Text)
	}
}
