package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/internal/testnet"
)

// The sandboxed connector tests: a connector with sandbox: true whose stdio server is this test
// binary, run again as TestSandboxedConnectorHelper, in the sandbox. Its probe tool tries what
// the sandbox forbids and says what happened; the tests read that through the gateway.

// sandboxedHelperEnv, set to 1, makes TestSandboxedConnectorHelper a stdio MCP server.
const sandboxedHelperEnv = "WARDEN_SANDBOXED_CONNECTOR_HELPER"

func TestSandboxedConnectorHelper(t *testing.T) {
	if os.Getenv(sandboxedHelperEnv) != "1" {
		t.Skip("a stdio upstream for the sandboxed connector tests, run by them")
	}
	// syscall.Exit, not os.Exit: under the race detector, os.Exit waits a second first.
	syscall.Exit(sandboxedHelper())
}

// sandboxedProbe is what the helper's probe tool found.
type sandboxedProbe struct {
	PID          int               `json:"pid"`
	Home         string            `json:"home"`
	Cwd          string            `json:"cwd"`
	Env          map[string]string `json:"env"`
	WriteHome    string            `json:"write_home"`    // "ok" or the error
	WriteOutside string            `json:"write_outside"` // a file in $PROBE_OUTSIDE
	ReadOutside  string            `json:"read_outside"`  // the file $PROBE_SECRET
	ConnectHost  string            `json:"connect_host"`  // a TCP connection to $PROBE_ADDR
	ProxyFetch   string            `json:"proxy_fetch"`   // GET http://203.0.113.250/ through $HTTP_PROXY, if set
}

// sandboxedHelper serves MCP over stdin and stdout, with three tools: probe (a sandboxedProbe,
// as JSON); spawn, which starts a sleep that outlives the call, in a session of its own, with
// $PROBE_MARKER in its command line; and crash, which exits mid-call. It says it is serving on
// stderr.
func sandboxedHelper() int {
	fmt.Fprintln(os.Stderr, "sandboxed helper: serving on stdio")
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	outcome := func(err error) string {
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	obj := map[string]any{"type": "object"}
	s := mcp.NewServer(&mcp.Implementation{Name: "sandboxed-helper", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "probe", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := sandboxedProbe{PID: os.Getpid(), Home: os.Getenv("HOME"), Env: map[string]string{}}
		r.Cwd, _ = os.Getwd()
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			r.Env[k] = v
		}
		r.WriteHome = outcome(os.WriteFile(filepath.Join(r.Home, "written"), []byte("x"), 0o600))
		r.WriteOutside = outcome(os.WriteFile(filepath.Join(os.Getenv("PROBE_OUTSIDE"), "written"), []byte("x"), 0o600))
		_, err := os.ReadFile(os.Getenv("PROBE_SECRET"))
		r.ReadOutside = outcome(err)
		c, err := net.DialTimeout("tcp", os.Getenv("PROBE_ADDR"), 3*time.Second)
		if err == nil {
			c.Close()
		}
		r.ConnectHost = outcome(err)
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
		if os.Getenv("HTTP_PROXY") == "" {
			r.ProxyFetch = "no proxy" // unsandboxed: nothing to ask
		} else if resp, err := hc.Get("http://203.0.113.250/"); err != nil {
			r.ProxyFetch = err.Error()
		} else {
			resp.Body.Close()
			r.ProxyFetch = fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("X-Warden-Egress-Reason"))
		}
		b, _ := json.Marshal(r)
		return text(string(b)), nil
	})
	s.AddTool(&mcp.Tool{Name: "spawn", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		cmd := exec.Command("sleep", os.Getenv("PROBE_MARKER"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return text(fmt.Sprint(cmd.Process.Pid)), nil
	})
	s.AddTool(&mcp.Tool{Name: "fetch", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// GET url through the sandbox's proxy, with Authorization: Bearer $env (the
		// connector's credential as its process holds it), trusting what SSL_CERT_FILE names.
		var in struct{ URL, Env string }
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		held := os.Getenv(in.Env)
		r, err := http.NewRequest("GET", in.URL, nil)
		if err != nil {
			return nil, err
		}
		r.Header.Set("Authorization", "Bearer "+held)
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
		resp, err := hc.Do(r)
		if err != nil {
			return text(fmt.Sprintf("held=%s error=%v", held, err)), nil
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return text(fmt.Sprintf("held=%s status=%d body=%s", held, resp.StatusCode, body)), nil
	})
	s.AddTool(&mcp.Tool{Name: "plans", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Writes plans.txt in its own directory and reads it back.
		f := filepath.Join(os.Getenv("HOME"), "plans.txt")
		if err := os.WriteFile(f, []byte("the plans"), 0o600); err != nil {
			return text("home=" + os.Getenv("HOME") + " write: " + err.Error()), nil
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return text("home=" + os.Getenv("HOME") + " read: " + err.Error()), nil
		}
		return text("home=" + os.Getenv("HOME") + " read: " + string(b)), nil
	})
	s.AddTool(&mcp.Tool{Name: "crash", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		syscall.Exit(3)
		return nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// sandboxedPolicy has one connector, box, with sandbox: true: the helper, with env (besides
// the variable that makes it the helper) and marker on its command line.
func sandboxedPolicy(t *testing.T, program string, marker string, env map[string]string) []byte {
	t.Helper()
	env[sandboxedHelperEnv] = "1"
	var vars []string
	for k, v := range env {
		vars = append(vars, fmt.Sprintf("%s: %q", k, v))
	}
	slices.Sort(vars)
	return fmt.Appendf(nil, `version: 1
connectors:
  - id: box
    effect: read
    discover: true
    sandbox: true
    upstream: {command: [%q, "-test.run=^TestSandboxedConnectorHelper$", %q], env: {%s}, timeoutMs: 20000}
tenants:
  - id: acme
    connections: [{id: box, connector: box}]
`, program, "marker="+marker, strings.Join(vars, ", "))
}

// processesWith lists the processes whose command line holds marker.
func processesMarked(marker string) []string {
	var found []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, []byte(marker)) {
			found = append(found, f+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// hostListener is a TCP listener on the host's 127.0.0.1 that counts the connections it gets.
func loopbackListener(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), &n
}

func probeSandboxed(t *testing.T, cs *mcp.ClientSession) sandboxedProbe {
	t.Helper()
	out, isErr := call(t, cs, "mcp__box__probe", nil)
	var r sandboxedProbe
	if isErr || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("probe: %v %s", isErr, out)
	}
	return r
}

func TestSandboxedConnector(t *testing.T) {
	sandboxtest.Need(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("not for connectors"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, accepted := loopbackListener(t)
	// The listener is reachable from here: what the sandbox stops is not a dead address.
	if c, err := net.Dial("tcp", addr); err != nil {
		t.Fatal(err)
	} else {
		c.Close()
	}
	for accepted.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	marker := fmt.Sprint(600000 + os.Getpid()%99999)
	base := newRig(t, sandboxedPolicy(t, exe, marker, map[string]string{
		"PROBE_OUTSIDE": outside, "PROBE_SECRET": secretFile, "PROBE_ADDR": addr, "PROBE_MARKER": marker,
	}), nil)
	logs := &lockedWriter{w: &bytes.Buffer{}}
	r := base.with(func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	cs := r.connect(r.token("acme", "person", ""), nil)

	if got := names(t, cs); !slices.Contains(got, "mcp__box__probe") || !slices.Contains(got, "mcp__box__spawn") {
		t.Fatalf("tools %v, want the sandboxed connector's", got)
	}
	rep := probeSandboxed(t, cs)
	t.Logf("the probe found %+v", rep)

	// Its own directory: its HOME and working directory, writable.
	if rep.Home == "" || rep.Home != rep.Cwd || !strings.Contains(filepath.Base(rep.Home), "warden-connector-") {
		t.Errorf("HOME %q, working directory %q; want its own directory for both", rep.Home, rep.Cwd)
	}
	if rep.WriteHome != "ok" {
		t.Errorf("writing in its own directory: %s", rep.WriteHome)
	}
	// Nothing outside it: not there at all, in the sandbox's own file system.
	if !refusedErr(rep.WriteOutside) {
		t.Errorf("writing outside its directory: %s, want a refusal", rep.WriteOutside)
	}
	if _, err := os.Stat(filepath.Join(outside, "written")); err == nil {
		t.Error("the sandboxed connector wrote outside its directory")
	}
	if !refusedErr(rep.ReadOutside) {
		t.Errorf("reading a file outside: %s, want a refusal", rep.ReadOutside)
	}
	// No network but its proxy.
	if rep.ConnectHost == "ok" || accepted.Load() != 1 {
		t.Errorf("connecting to the host's 127.0.0.1: %s (%d connections accepted, 1 was the test's)", rep.ConnectHost, accepted.Load())
	}
	proxy := rep.Env["HTTP_PROXY"]
	if u, err := url.Parse(proxy); err != nil || u.Hostname() != "127.0.0.1" || rep.Env["HTTPS_PROXY"] != proxy {
		t.Errorf("HTTP_PROXY %q, HTTPS_PROXY %q; want the sandbox's proxy on its loopback", proxy, rep.Env["HTTPS_PROXY"])
	}
	if rep.ProxyFetch != "403 not_allowed" {
		t.Errorf("a denied host through the proxy: %q, want the egress proxy's 403 not_allowed", rep.ProxyFetch)
	}
	// The refusal is in the audit trail, under the connector.
	var recorded bool
	for _, e := range r.audited(audit.Filter{Kind: audit.KindEgress}) {
		if e.Principal == "connector:box" && len(e.Blockers) == 1 && e.Blockers[0].Code == "not_allowed" && strings.Contains(e.Blockers[0].Detail, "203.0.113.250") {
			recorded = true
		}
	}
	if !recorded {
		t.Errorf("the connector's refused connection is not in the audit trail: %+v", r.audited(audit.Filter{Kind: audit.KindEgress}))
	}
	// Its environment: the connector's, and what the sandbox sets; nothing else of Warden's.
	var keys []string
	for k := range rep.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"HOME", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "PATH", "PROBE_ADDR", "PROBE_MARKER",
		"PROBE_OUTSIDE", "PROBE_SECRET", "TMPDIR", sandboxedHelperEnv, "http_proxy", "https_proxy", "no_proxy"}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("environment %v, want %v", keys, want)
	}

	// Its standard error is the connector's log.
	logs.mu.Lock()
	logged := logs.w.(*bytes.Buffer).String()
	logs.mu.Unlock()
	if !strings.Contains(logged, `msg="upstream stderr" connector=box line="sandboxed helper: serving on stdio"`) {
		t.Errorf("the connector's stderr is not in the log:\n%s", logged)
	}

	// A process that exits mid-call ends with its directory; the next call starts another, in
	// the sandbox again, in a directory of its own.
	if out, isErr := call(t, cs, "mcp__box__crash", nil); !isErr || !strings.Contains(out, "connector box closed its connection during the call") {
		t.Errorf("a call that crashes the sandboxed connector: %v %s", isErr, out)
	}
	again := probeSandboxed(t, cs)
	if again.Home == rep.Home || again.WriteOutside == "ok" || again.ProxyFetch != "403 not_allowed" {
		t.Errorf("the connector after a crash: %+v", again)
	}
	if _, err := os.Stat(rep.Home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory of the process that crashed: %v", err)
	}
	rep = again

	// Gone after Close, with what it started and its directory.
	if out, isErr := call(t, cs, "mcp__box__spawn", nil); isErr {
		t.Fatalf("spawn: %s", out)
	}
	if l := processesMarked(marker); len(l) != 2 {
		t.Fatalf("processes with the marker %v, want the connector's and its sleep", l)
	}
	start := time.Now()
	r.gw.Close()
	t.Logf("Gateway.Close took %s", time.Since(start))
	if l := processesMarked(marker); len(l) > 0 {
		t.Errorf("processes left after Gateway.Close: %q", l)
	}
	if _, err := os.Stat(rep.Home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its directory after Gateway.Close: %v", err)
	}
}

// A sandboxed connector that cannot start in the sandbox does not start at all: its tools are
// not listed, its dial fails saying why, and nothing ran unconfined. Its program here lies in
// the tenants' workspaces, which connectors may not read.
func TestSandboxedConnectorThatCannotStartDoesNotRun(t *testing.T) {
	sandboxtest.Need(t)
	ran := filepath.Join(t.TempDir(), "ran")
	workspaces := t.TempDir()
	prog := filepath.Join(workspaces, "acme", "server.sh")
	if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+ran+"\nexec cat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Outside the sandbox it runs: only the sandbox stops it.
	if err := exec.Command(prog).Run(); err != nil {
		t.Fatal(err)
	}
	os.Remove(ran)
	base := newRig(t, sandboxedPolicy(t, prog, "none", map[string]string{}), nil)
	r := base.with(func(o *Options) { o.Workspaces = workspaces })
	cs := r.connect(r.token("acme", "person", ""), nil)
	if got := names(t, cs); slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "mcp__box__") }) {
		t.Errorf("tools %v: the connector that did not start is listed", got)
	}
	srv, _ := r.gw.snapshot.Load().p.Server("box")
	_, err := r.gw.upstream.get(context.Background(), srv, credential{}, "acme")
	for _, want := range []string{"connector box", "in the sandbox", "cannot run " + prog} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the dial error %v does not say %q", err, want)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the connector's program ran")
	}
}

// With the operator's switch off (native.Sandbox.Off), a connector with sandbox: true runs as
// one without: unconfined, as Warden's user with the host's network.
func TestSandboxedConnectorWithTheSandboxOff(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	addr, _ := loopbackListener(t)
	marker := fmt.Sprint(500000 + os.Getpid()%99999)
	base := newRig(t, sandboxedPolicy(t, exe, marker, map[string]string{
		"PROBE_OUTSIDE": outside, "PROBE_SECRET": exe, "PROBE_ADDR": addr, "PROBE_MARKER": marker,
	}), nil)
	r := base.with(func(o *Options) { o.Native.Sandbox.Off = true })
	cs := r.connect(r.token("acme", "person", ""), nil)
	rep := probeSandboxed(t, cs)
	if rep.WriteOutside != "ok" || rep.ConnectHost != "ok" || rep.ProxyFetch != "no proxy" || rep.Home != os.Getenv("HOME") {
		t.Errorf("with the sandbox off: %+v; want it unconfined, as a connector without sandbox: true", rep)
	}
	r.gw.Close()
	if l := processesMarked(marker); len(l) > 0 {
		t.Errorf("processes left after Gateway.Close: %q", l)
	}
}

func TestSandboxEnv(t *testing.T) {
	got := sandboxEnv([]string{"PATH=/bin", "HOME=/root", "A=1", "B=2", "A=3", "HOME=/x"}, "/private")
	want := []string{"PATH=/bin", "B=2", "A=3", "HOME=/private"}
	if !slices.Equal(got, want) {
		t.Errorf("sandboxEnv: %q, want %q", got, want)
	}
}

// refusedErr reports whether an error text says the file system refused an access: the path
// is unreadable, read-only or not there.
func refusedErr(s string) bool {
	return strings.Contains(s, "permission denied") || strings.Contains(s, "read-only file system") || strings.Contains(s, "no such file or directory")
}

// TestSandboxedConnectorCredentialPlaceholders: a sandboxed connector whose secrets declare
// hosts holds a placeholder for its credential, not the value; its egress proxy writes the
// value in toward the declared host (a test host in a network namespace, over HTTPS the proxy
// terminates, with a certificate authority the connector's process trusts), gives the
// placeholder back where that host echoes the value, and refuses the placeholder toward a
// second host, recording the refusal under the connector. With exposeToProcess the process
// holds the value, as before.
func TestSandboxedConnectorCredentialPlaceholders(t *testing.T) {
	sandboxtest.Need(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	allowed := testnet.NewHost(t, netip.MustParsePrefix("203.0.113.0/24"), 62, "wc").String()
	other := testnet.NewHost(t, netip.MustParsePrefix("203.0.113.0/24"), 62, "wd").String()
	const value = "connector-CREDENTIAL-5f4e3d2c1b0a9988"
	t.Setenv("WARDEN_TEST_BOX_CREDENTIAL", value)
	list, err := egress.NewAllowlist([]string{allowed, other})
	if err != nil {
		t.Fatal(err)
	}
	policyFor := func(secrets string) []byte {
		return fmt.Appendf(nil, `version: 1
connectors:
  - id: box
    effect: read
    discover: true
    sandbox: true
    secrets: %s
    upstream:
      command: [%q, "-test.run=^TestSandboxedConnectorHelper$"]
      env: {%s: "1"}
      credential: {env: BOX_TOKEN}
      timeoutMs: 20000
tenants:
  - id: acme
    connections: [{id: box, connector: box, secret: "env:WARDEN_TEST_BOX_CREDENTIAL"}]
`, secrets, exe, sandboxedHelperEnv)
	}
	r := newRigWith(t, policyFor(fmt.Sprintf("{hosts: [%q]}", allowed)), nil, func(o *Options) {
		o.Egress = egress.New(egress.Options{Allowlist: list, RootCAs: testHostRoots})
	})
	cs := r.connect(r.token("acme", "person", ""), nil)
	fetch := func(cs *mcp.ClientSession, u string) string {
		t.Helper()
		out, isErr := call(t, cs, "mcp__box__fetch", map[string]any{"url": u, "env": "BOX_TOKEN"})
		if isErr {
			t.Fatalf("fetch %s: %s", u, out)
		}
		return out
	}

	out := fetch(cs, "https://"+allowed+"/echo")
	ph := placeholderPattern.FindString(out)
	if ph == "" || !strings.HasPrefix(out, "held="+ph+" status=200") ||
		!strings.Contains(out, "the test host was sent Authorization: Bearer "+ph) || strings.Contains(out, value) {
		t.Fatalf("the declared host: %s", out)
	}
	if rep := probeSandboxed(t, cs); rep.Env["BOX_TOKEN"] != ph || rep.Env["SSL_CERT_FILE"] == "" {
		t.Errorf("the process's BOX_TOKEN %q, SSL_CERT_FILE %q; want the placeholder %s and the CA bundle", rep.Env["BOX_TOKEN"], rep.Env["SSL_CERT_FILE"], ph)
	}
	got, err := testnet.Recorded(allowed)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Header.Get("Authorization") != "Bearer "+value {
		t.Errorf("the declared host received %+v, want the value", got)
	}

	out = fetch(cs, "https://"+other+"/steal")
	if !strings.Contains(out, "status=403") || !strings.Contains(out, "placeholder_refused") || !strings.Contains(out, "placeholder of BOX_TOKEN") || strings.Contains(out, value) {
		t.Errorf("a second host: %s", out)
	}
	if got, err := testnet.Recorded(other); err != nil || len(got) != 0 {
		t.Errorf("the second host received %+v (%v)", got, err)
	}
	var recorded bool
	for _, e := range r.audited(audit.Filter{Kind: audit.KindEgress}) {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), value) || strings.Contains(string(b), ph) {
			t.Errorf("the audit trail holds the value or the placeholder: %s", b)
		}
		if e.Principal == "connector:box" && len(e.Blockers) == 1 && e.Blockers[0].Code == string(egress.ReasonPlaceholder) && strings.Contains(e.Blockers[0].Detail, other) {
			recorded = true
		}
	}
	if !recorded {
		t.Errorf("the refusal is not in the audit trail: %+v", r.audited(audit.Filter{Kind: audit.KindEgress}))
	}

	// exposeToProcess: the process holds the value itself, which only the redaction of its
	// results hides.
	r = newRigWith(t, policyFor("{exposeToProcess: true}"), nil, func(o *Options) {
		o.Egress = egress.New(egress.Options{Allowlist: list, RootCAs: testHostRoots})
	})
	if rep := probeSandboxed(t, r.connect(r.token("acme", "person", ""), nil)); !strings.HasPrefix(rep.Env["BOX_TOKEN"], "protected://credential/") {
		t.Errorf("exposeToProcess: the process holds %q, want the value (redacted in the result)", rep.Env["BOX_TOKEN"])
	}
}

// TestSandboxedConnectorEnforcesTenantHardBlocks: a sandboxed connector's process that would
// serve two tenants serves one whose hard blocks are set alone, and enforces them at the
// system call: its read of a blocked file is refused (and recorded under the connector, for
// that tenant), while the other tenant's process, started from the same connector, reads it.
// Once the other tenant's blocks change, its next call goes to a process of its own under
// them; once the first tenant's change, its process is started again under the new ones.
func TestSandboxedConnectorEnforcesTenantHardBlocks(t *testing.T) {
	sandboxtest.Need(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Appendf(nil, `version: 1
connectors:
  - id: box
    effect: read
    discover: true
    sandbox: true
    upstream: {command: [%q, "-test.run=^TestSandboxedConnectorHelper$"], env: {%s: "1"}, timeoutMs: 20000}
tenants:
  - id: acme
    account: one
    connections: [{id: box, connector: box, sharedWith: [beta]}]
  - id: beta
    account: one
`, exe, sandboxedHelperEnv)
	const noPlans = `{"version":1,"hardBlocks":[{"id":"no-plans","enabled":true,"type":"path","pattern":"**/plans.txt","match":"glob","operations":["read"],"reason":"plans stay private"}]}`
	const noNotes = `{"version":1,"hardBlocks":[{"id":"no-notes","enabled":true,"type":"path","pattern":"**/notes.txt","match":"glob","operations":["read"]}]}`
	var mu sync.Mutex
	sets := map[string]*boundary.Set{"acme": boundary.Load([]byte(noPlans), boundary.Options{})}
	setRules := func(tenant, doc string) {
		mu.Lock()
		defer mu.Unlock()
		sets[tenant] = boundary.Load([]byte(doc), boundary.Options{})
	}
	r := newRigWith(t, src, nil, func(o *Options) {
		o.Boundaries = func(tenant string) *boundary.Set {
			mu.Lock()
			defer mu.Unlock()
			return sets[tenant] // nil: none
		}
	})
	acme := r.connect(r.token("acme", "person", ""), nil)
	beta := r.connect(r.token("beta", "person", ""), nil)
	plans := func(cs *mcp.ClientSession) (home, result string) {
		t.Helper()
		out, isErr := call(t, cs, "mcp__box__plans", nil)
		if isErr {
			t.Fatalf("plans: %s", out)
		}
		home, result, _ = strings.Cut(strings.TrimPrefix(out, "home="), " ")
		return home, result
	}

	acmeHome, got := plans(acme)
	if got != "read: open "+acmeHome+"/plans.txt: permission denied" {
		t.Errorf("acme's process read the blocked file: %q", got)
	}
	betaHome, got := plans(beta)
	if got != "read: the plans" || betaHome == acmeHome {
		t.Errorf("beta's process (home %s, acme's %s): %q", betaHome, acmeHome, got)
	}
	evs := r.audited(audit.Filter{Kind: audit.KindEnforcement})
	if len(evs) != 1 || evs[0].Tenant != "acme" || evs[0].Principal != "connector:box" || len(evs[0].Blockers) != 1 ||
		evs[0].Blockers[0].Rule != "no-plans" || !strings.Contains(evs[0].Blockers[0].Detail, "read "+acmeHome+"/plans.txt (open") {
		t.Errorf("enforcement events %+v", evs)
	}

	// beta now has blocks of its own: its next call goes to a process of its own.
	setRules("beta", noPlans)
	home, got := plans(beta)
	if home == betaHome || home == acmeHome || got != "read: open "+home+"/plans.txt: permission denied" {
		t.Errorf("beta under its new blocks (home %s, before %s): %q", home, betaHome, got)
	}
	// acme's blocks change: its process is started again under the new ones.
	setRules("acme", noNotes)
	home, got = plans(acme)
	if home == acmeHome || got != "read: the plans" {
		t.Errorf("acme under its changed blocks (home %s, before %s): %q", home, acmeHome, got)
	}
}
