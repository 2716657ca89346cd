package interop

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scenario is one line of the conformance suite's summary.
type scenario struct {
	passed, failed int
}

var (
	ansi        = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	summaryLine = regexp.MustCompile(`^[✓✗]\s+(\S+):\s+(\d+) passed, (\d+) failed`)
	// oneResult is the summary when the suite runs one scenario.
	oneResult = regexp.MustCompile(`(?m)^\s*Passed: (\d+)/\d+, (\d+) failed`)
)

// conformance runs the MCP conformance suite's server scenarios (all of them, or those named)
// against url and returns each scenario's counts.
func conformance(t *testing.T, modules, url string, only ...string) map[string]scenario {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{"server", "--url", url, "-o", t.TempDir()}
	for _, name := range only {
		args = append(args, "--scenario", name)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(modules, ".bin", "conformance"), args...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite did not finish: %v\n%s", err, out)
	}
	// The suite exits non-zero when any scenario fails; the summary says which.
	got := map[string]scenario{}
	for _, line := range strings.Split(ansi.ReplaceAllString(string(out), ""), "\n") {
		m := summaryLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[2])
		f, _ := strconv.Atoi(m[3])
		got[m[1]] = scenario{passed: p, failed: f}
	}
	if m := oneResult.FindStringSubmatch(ansi.ReplaceAllString(string(out), "")); len(got) == 0 && len(only) == 1 && m != nil {
		p, _ := strconv.Atoi(m[1])
		f, _ := strconv.Atoi(m[2])
		got[only[0]] = scenario{passed: p, failed: f}
	}
	if len(got) == 0 {
		t.Fatalf("no scenario results in the conformance suite's output (%v):\n%s", err, out)
	}
	return got
}

// worse reports whether a scenario that passes directly does not pass as fully through Warden.
func worse(direct, through scenario) bool {
	return direct.failed == 0 && direct.passed > 0 && (through.failed > 0 || through.passed < direct.passed)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// everythingHTTP runs server-everything over streamable HTTP and returns its MCP URL.
func everythingHTTP(t *testing.T, modules string) string {
	t.Helper()
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(modules, ".bin", "mcp-server-everything"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
	}
	t.Fatal("server-everything did not listen in 30 s")
	return ""
}

// withBearer is a reverse proxy that adds the session token to every request: the suite has
// no option for a header, and Warden refuses requests without one.
func withBearer(t *testing.T, target, token string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
			r.Out.URL.Path = u.Path
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1, // server-sent events pass at once
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// Every conformance scenario that passes against server-everything directly passes through
// Warden, with a policy that grants everything, server-everything as its stdio upstream.
func TestConformanceThroughWarden(t *testing.T) {
	modules := peers(t)
	direct := conformance(t, modules, everythingHTTP(t, modules))

	dir := t.TempDir()
	policy := fmt.Sprintf(`
version: 1
connectors:
  - id: everything
    effect: read
    discover: true
    upstream: {command: [%q, stdio]}
tenants:
  - id: default
    connections: [{id: everything, connector: everything}]
`, filepath.Join(modules, ".bin", "mcp-server-everything"))
	if err := os.WriteFile(filepath.Join(dir, "warden.yaml"), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serve(t, dir, nil)
	through := conformance(t, modules, withBearer(t, s.url, s.clientToken))

	names := make([]string, 0, len(direct))
	for name := range direct {
		names = append(names, name)
	}
	slices.Sort(names)
	var dp, df, wp, wf int
	var report strings.Builder
	for _, name := range names {
		d, w := direct[name], through[name]
		dp, df, wp, wf = dp+d.passed, df+d.failed, wp+w.passed, wf+w.failed
		fmt.Fprintf(&report, "%-32s direct %d passed %d failed; through Warden %d passed %d failed\n", name, d.passed, d.failed, w.passed, w.failed)
		if worse(d, w) {
			// Some of the suite's checks wait on a clock (server-sse-multiple-streams gives each
			// stream 2 s to say something), which a loaded machine can miss once. The scenario runs
			// again alone; a difference that Warden makes shows every time.
			again := w
			for try := 0; try < 2 && worse(d, again); try++ {
				again = conformance(t, modules, withBearer(t, s.url, s.clientToken), name)[name]
			}
			if worse(d, again) {
				t.Errorf("%s passes directly (%d checks) but not through Warden (%d passed, %d failed; alone, then %d passed, %d failed)",
					name, d.passed, w.passed, w.failed, again.passed, again.failed)
			} else {
				fmt.Fprintf(&report, "%-32s (through Warden: %d passed %d failed at first, %d passed %d failed alone)\n", "", w.passed, w.failed, again.passed, again.failed)
			}
		}
	}
	for name := range through {
		if _, ok := direct[name]; !ok {
			fmt.Fprintf(&report, "%s ran only through Warden\n", name)
		}
	}
	fmt.Fprintf(&report, "conformance: directly %d passed, %d failed; through Warden %d passed, %d failed (%d scenarios)\n", dp, df, wp, wf, len(names))
	t.Log("\n" + report.String())
	// CI prints the comparison from this file, so that it runs the suite once, in go test -race ./...
	if path := os.Getenv("WARDEN_CONFORMANCE_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}
