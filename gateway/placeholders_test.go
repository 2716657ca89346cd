package gateway

import (
	"context"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/internal/testnet"
	"github.com/wardenhq/warden/sandbox"
)

// placeholderValue is the protected value of TestProtectedBindingsNeverEnterTheSandbox.
const placeholderValue = "ghp-REALVALUE-9d8c7b6a5f4e3d2c1b0a"

// issuerServer is an in-process MCP server whose one tool answers with value, protected.
func issuerServer(t *testing.T, value string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "vault", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "issue", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
			Text: `{"token":{"$wardenSensitive":{"type":"token","value":"` + value + `"}}}`}}}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

var placeholderPattern = regexp.MustCompile(regexp.QuoteMeta(egress.PlaceholderPrefix) + `[a-z2-7]{32}`)

// TestProtectedBindingsNeverEnterTheSandbox runs curl in the real sandbox through the gateway:
// a command bound to a protected value holds a placeholder, and whatever it prints (the
// variable, reversed, base32, a slice) holds only the placeholder; its HTTPS request to the
// host the value may go to (a test host in a network namespace, with a CA of its own that
// only the proxy trusts) arrives with the real value in a header and in the body; the same
// placeholder to a second host, over plain HTTP or HTTPS, plainly or percent-encoded, is
// refused and recorded, and never becomes the value there, while a request without it gets
// through. A
// source that says exposeToProcess gives the process the value, which only redaction hides.
func TestProtectedBindingsNeverEnterTheSandbox(t *testing.T) {
	sandboxtest.Need(t)
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("WARDEN_CURL") == "require" {
			t.Fatal("needs curl, and WARDEN_CURL=require (CI installs it)")
		}
		t.Skip("needs curl")
	}
	allowed := testnet.NewHost(t, netip.MustParsePrefix("203.0.113.0/24"), 62, "wp").String()
	other := testnet.NewHost(t, netip.MustParsePrefix("203.0.113.0/24"), 62, "wq").String()
	const exposedValue = "exposed-VALUE-1a2b3c4d5e6f7a8b"
	src := fmt.Appendf(nil, `
version: 1
builtins:
  - name: shell_exec
connectors:
  - id: vault
    effect: read
    discover: true
    upstream: {url: %q}
    secrets: {hosts: [%q]}
  - id: open
    effect: read
    discover: true
    upstream: {url: %q}
    secrets: {exposeToProcess: true}
tenants:
  - id: default
    owner: true
    connections: [{id: vault, connector: vault}, {id: open, connector: open}]
`, issuerServer(t, placeholderValue), allowed, issuerServer(t, exposedValue))
	list, err := egress.NewAllowlist([]string{allowed, other})
	if err != nil {
		t.Fatal(err)
	}
	r := newRigWith(t, src, nil, func(o *Options) {
		o.Egress = egress.New(egress.Options{Allowlist: list, RootCAs: testHostRoots})
	})
	cs := r.connect(r.token("default", "person", ""), nil)

	handle := func(tool string) string {
		t.Helper()
		out, isErr := call(t, cs, tool, nil)
		var res struct{ Token string }
		if err := json.Unmarshal([]byte(out), &res); isErr || err != nil || !strings.HasPrefix(res.Token, "protected://") {
			t.Fatalf("%s: %v %s", tool, isErr, out)
		}
		return res.Token
	}
	// shell runs a command bound to T, answering any card the review parks with allow once.
	shell := func(command, h string) string {
		t.Helper()
		done := make(chan string, 1)
		go func() {
			out, _ := call(t, cs, "shell_exec", map[string]any{"command": command, "protectedBindings": map[string]any{"T": h}})
			done <- out
		}()
		for {
			select {
			case out := <-done:
				return out
			case c := <-r.cards:
				if _, err := r.broker.Answer(context.Background(), c.Tenant, c.ID, approval.AllowOnce, "alice", approval.ChannelAPI, c.Digest); err != nil {
					t.Fatal(err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("shell_exec did not end")
			}
		}
	}

	// A command holding no placeholder trusts the session's CA from its start too, so that its
	// HTTPS still verifies while a command beside it holds placeholders (every tunnel is
	// terminated then).
	if out, isErr := call(t, cs, "shell_exec", map[string]any{"command": "printenv SSL_CERT_FILE"}); isErr || !strings.Contains(out, sandbox.CABundleFile) {
		t.Errorf("a command without placeholders: %v %s; want SSL_CERT_FILE naming the CA bundle", isErr, out)
	}

	h := handle("mcp__vault__issue")
	out := shell(`curl -sS -H "Authorization: Bearer $T" --data-binary "{\"key\":\"$T\"}" https://`+allowed+`/submit; `+
		`curl -sS -H "Authorization: Bearer $T" https://`+allowed+`/echo; `+
		`printf 'plain=%s\n' "$T"; printf '%s' "$T" | rev; echo; printf '%s' "$T" | base32 -w0; echo; echo "slice=${T:0:12}"; `+
		`curl -sS -w 'status=%{http_code}\n' -H "Authorization: Bearer $T" http://`+other+`/; `+
		`curl -sS -w 'status=%{http_code}\n' -H "Authorization: Bearer $T" https://`+other+`/tunnel; `+
		`curl -sS -w 'status=%{http_code}\n' "https://`+other+`/encoded?k=$(printf %s "$T" | od -An -tx1 | tr -d ' \n' | sed 's/../%&/g')"; `+
		`curl -sS -w 'status=%{http_code}\n' https://`+other+`/clean`, h)
	ph := placeholderPattern.FindString(out)
	if ph == "" {
		t.Fatalf("no placeholder in the command's output:\n%s", out)
	}
	reversed := []byte(ph)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	for _, want := range []string{
		// The host's answers: to the upload, and its echo, given the placeholder back.
		"the test host read " + fmt.Sprint(len(`{"key":"`+placeholderValue+`"}`)) + " bytes of body",
		"the test host was sent Authorization: Bearer " + ph,
		"plain=" + ph, string(reversed), base32.StdEncoding.EncodeToString([]byte(ph)), "slice=" + ph[:12],
		"status=403", "placeholder_refused", "the placeholder of T, whose value may not go to " + other,
		// Over HTTPS, to a host the value may not go to: refused too, plainly and encoded.
		"the placeholder of T, whose value may not go to " + other + ":443",
		"the query holds the placeholder of T (its random part, percent-encoded), whose value may not go to " + other + ":443",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, placeholderValue) || strings.Contains(out, "REALVALUE") || strings.Contains(out, "protected://") {
		t.Errorf("the value, or a redaction of it, is in the output:\n%s", out)
	}

	// The host the value may go to received it, in the header and in the body.
	got, err := testnet.Recorded(allowed)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Header.Get("Authorization") != "Bearer "+placeholderValue || got[0].Body != `{"key":"`+placeholderValue+`"}` ||
		got[1].Path != "/echo" || got[1].Header.Get("Authorization") != "Bearer "+placeholderValue {
		t.Errorf("the allowed host received %+v", got)
	}
	if n := strings.Count(out, "status=403"); n != 3 {
		t.Errorf("%d requests refused, want 3 (plain HTTP, HTTPS, HTTPS encoded):\n%s", n, out)
	}
	// The other host received neither the value nor the placeholder: its plain HTTP and its
	// HTTPS were refused, and only the request without a placeholder reached it, over TLS
	// the proxy terminated, the host's own certificate verified.
	got, err = testnet.Recorded(other)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Path != "/clean" || got[0].Header.Get("Authorization") != "" {
		t.Errorf("the other host received %+v", got)
	}

	// The refusal is in the audit trail; the value and the placeholder are nowhere in it.
	var refused int
	for _, e := range r.audited(audit.Filter{}) {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), placeholderValue) || strings.Contains(string(b), ph) {
			t.Errorf("the audit trail holds the value or the placeholder: %s", b)
		}
		if e.Kind == audit.KindEgress && len(e.Blockers) == 1 && e.Blockers[0].Code == string(egress.ReasonPlaceholder) &&
			strings.Contains(e.Blockers[0].Detail, "placeholder of T") && strings.Contains(e.Blockers[0].Detail, other) {
			refused++
		}
	}
	if refused != 3 {
		t.Errorf("%d placeholder refusals recorded, want 3", refused)
	}

	// A fresh placeholder each call.
	if again := placeholderPattern.FindString(shell(`printf '%s\n' "$T"`, h)); again == "" || again == ph {
		t.Errorf("the second call's placeholder %q, the first's %q", again, ph)
	}

	// exposeToProcess: the process holds the value itself, and only redaction hides it.
	out = shell(`printf 'plain=%s\n' "$T"`, handle("mcp__open__issue"))
	if strings.Contains(out, exposedValue) || strings.Contains(out, egress.PlaceholderPrefix) || !strings.Contains(out, "plain=protected://") {
		t.Errorf("exposeToProcess: %s", out)
	}
}
