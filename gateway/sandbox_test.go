package gateway

import (
	"context"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/internal/testnet"
)

// testHostRoots trusts the test hosts' HTTPS (testnet.UseTLS); the sessions' proxies are told
// to, where a test gives them a checker.
var testHostRoots *x509.CertPool

func TestMain(m *testing.M) {
	testnet.ServeIfHost(testnet.ServeHelloAndRecord)
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if os.Getenv(sandboxedHelperEnv) == "1" {
		return m.Run() // a connector's process: its environment is the test's subject
	}
	var err error
	if testHostRoots, err = testnet.UseTLS(); err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "warden-test-hosts-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := testnet.Record(dir); err != nil {
		log.Fatal(err)
	}
	return m.Run()
}

const sandboxPolicy = `
version: 1
builtins:
  - name: shell_exec
  - name: net_fetch
  - name: sandbox_allow_host
tenants:
  - id: default
    owner: true
  - id: other
`

// throughProxy is a shell command that asks for http://host/ through the command's
// HTTP_PROXY with bash alone (no curl needed), and prints the whole answer.
func throughProxy(host string) string {
	return `p=${HTTP_PROXY#http://}; exec 3<>/dev/tcp/${p%:*}/${p#*:} && printf 'GET http://` + host +
		`/ HTTP/1.0\r\n\r\n' >&3 && cat <&3`
}

// TestSandboxEgressAndAllowHost runs real commands through the gateway: shell_exec's sandbox
// reaches the network only through the session's egress proxy, which refuses an unlisted
// host until a person answers a sandbox_allow_host card; allow once widens that session alone,
// allow for the tenant every session of the tenant, and the saved answer outlives the process.
func TestSandboxEgressAndAllowHost(t *testing.T) {
	sandboxtest.Need(t)
	host := testnet.NewHost(t, netip.MustParsePrefix("203.0.113.0/24"), 62, "wg").String()
	r := newRigWith(t, []byte(sandboxPolicy), nil, func(o *Options) {
		o.Egress = egress.New(egress.Options{Allowlist: &egress.Allowlist{}}) // nothing listed
		o.Approvals = o.Store.(StandingStore)
	})

	a := r.connect(r.token("default", "person", ""), nil)
	b := r.connect(r.token("default", "person", ""), nil)
	elsewhere := r.connect(r.token("other", "person", ""), nil)

	// answered makes a call and answers every card it parks: sandbox_allow_host's with ans,
	// any other (the review asks about some commands) with allow once.
	answered := func(cs *mcp.ClientSession, name string, args map[string]any, ans approval.Answer) string {
		t.Helper()
		done := make(chan string, 1)
		go func() {
			out, _ := call(t, cs, name, args)
			done <- out
		}()
		for {
			select {
			case out := <-done:
				return out
			case c := <-r.cards:
				a := approval.AllowOnce
				if c.Tool == "sandbox_allow_host" {
					a = ans
					if !strings.Contains(string(c.Args), args["host"].(string)) {
						t.Errorf("card %+v", c)
					}
				}
				if _, err := r.broker.Answer(context.Background(), c.Tenant, c.ID, a, "alice", approval.ChannelAPI, c.Digest); err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not end", name)
			}
		}
	}
	shell := func(cs *mcp.ClientSession, command string) string {
		t.Helper()
		return answered(cs, "shell_exec", map[string]any{"command": command}, "")
	}
	reaches := func(cs *mcp.ClientSession) bool {
		t.Helper()
		out := shell(cs, throughProxy(host))
		switch {
		case strings.Contains(out, "hello from the test host"):
			return true
		case strings.Contains(out, "403") && strings.Contains(out, "not_allowed"):
			return false
		}
		t.Fatalf("neither the host's answer nor the proxy's refusal:\n%s", out)
		return false
	}
	ask := func(cs *mcp.ClientSession, h string, ans approval.Answer) string {
		t.Helper()
		return answered(cs, "sandbox_allow_host", map[string]any{"host": h, "reason": "the tests need it"}, ans)
	}

	// Before anything is allowed: refused by the proxy, and no way around it.
	if reaches(a) {
		t.Fatal("an unlisted host was reached")
	}
	if out := shell(a, "exec 3<>/dev/tcp/"+host+"/80 && echo connected"); strings.Contains(out, "connected") {
		t.Fatalf("a direct connection left the sandbox:\n%s", out)
	}

	// A host no answer could open is refused before anybody is asked: a never-allowed
	// address, a wildcard over a public suffix of the list's private section.
	out, isErr := call(t, a, "sandbox_allow_host", map[string]any{"host": "169.254.169.254"})
	if !isErr || !strings.Contains(out, "invalid_input") {
		t.Errorf("the metadata address: %v %s", isErr, out)
	}
	out, isErr = call(t, a, "sandbox_allow_host", map[string]any{"host": "*.github.io"})
	if !isErr || !strings.Contains(out, "invalid_input") || !strings.Contains(out, "github.io is a public suffix (private section)") {
		t.Errorf("*.github.io: %v %s", isErr, out)
	}
	select {
	case c := <-r.cards:
		t.Errorf("a card was parked for a never-allowed address: %+v", c)
	default:
	}

	// Allow once: this session, at once, without a restart; not the other session.
	if out := ask(a, host, approval.AllowOnce); !strings.Contains(out, "for this session only") {
		t.Errorf("allow once: %s", out)
	}
	if !reaches(a) {
		t.Error("allow once did not widen the session's sandbox")
	}
	if reaches(b) {
		t.Error("allow once widened another session")
	}

	// Allow for the tenant: every session of the tenant, saved; not another tenant.
	if out := ask(b, host, approval.AllowTenant); !strings.Contains(out, "for tenant default (saved)") {
		t.Errorf("allow for the tenant: %s", out)
	}
	if !reaches(b) {
		t.Error("allow for the tenant did not widen the asking session")
	}
	c := r.connect(r.token("default", "person", ""), nil)
	if !reaches(c) {
		t.Error("allow for the tenant did not reach a new session of the tenant")
	}
	if reaches(elsewhere) {
		t.Error("allow for tenant default widened tenant other")
	}
	standing, err := r.db.Standings(context.Background(), "default")
	if err != nil || len(standing) != 1 || standing[0].Tool != "sandbox_allow_host" {
		t.Fatalf("standing approvals %+v, %v", standing, err)
	}

	// Each refusal is in the audit trail, once per session and host.
	refused := map[string]bool{}
	for _, e := range r.audited(audit.Filter{Kind: audit.KindEgress}) {
		if e.Decision != "deny" || len(e.Blockers) != 1 || e.Blockers[0].Code != "not_allowed" || !strings.Contains(e.Blockers[0].Detail, host) {
			t.Errorf("egress event %+v", e)
		}
		if refused[e.Session] {
			t.Errorf("session %s's refusal of %s recorded twice", e.Session, host)
		}
		refused[e.Session] = true
	}
	if len(refused) != 3 { // a, b and the other tenant's session
		t.Errorf("%d sessions' refusals recorded, want 3", len(refused))
	}

	// A later process on the same store reads the saved host back.
	fresh := &allowedHosts{store: r.db, logger: r.gw.logger, policy: r.gw.allowed.policy}
	if _, ok := fresh.list("default")().MatchName(host); !ok {
		if _, ok := fresh.list("default")().MatchAddr(netip.MustParseAddr(host)); !ok {
			t.Errorf("a new gateway does not read the host saved for the tenant: %v", fresh.list("default")().Entries())
		}
	}
	// Revoking the standing approval takes the host off the list on the next read.
	if err := r.db.RevokeStanding(context.Background(), "default", standing[0].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	revoked := &allowedHosts{store: r.db, logger: r.gw.logger, policy: r.gw.allowed.policy}
	if got := revoked.list("default")().Entries(); len(got) != 0 {
		t.Errorf("after the revocation the tenant's list is %v", got)
	}
}

// TestNetFetchObeysEgress: net_fetch runs in Warden's own process, which could reach what the
// sandbox cannot; it dials through the session's egress checks all the same.
func TestNetFetchObeysEgress(t *testing.T) {
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "a service on the host's loopback")
	}))
	defer local.Close()
	r := newRigWith(t, []byte(sandboxPolicy), nil, func(o *Options) {
		o.Egress = egress.New(egress.Options{Mode: egress.ModeOpen})
	})
	cs := r.connect(r.token("default", "person", ""), nil)
	for _, u := range []string{local.URL, "http://169.254.169.254/latest/meta-data/", "http://0x7f.1:" + strings.TrimPrefix(local.URL, "http://127.0.0.1:") + "/"} {
		out, isErr := call(t, cs, "net_fetch", map[string]any{"url": u})
		if !isErr || strings.Contains(out, "a service on the host's loopback") || !strings.Contains(out, "private_address") {
			t.Errorf("net_fetch %s: %v\n%s", u, isErr, out)
		}
	}
	// Recorded once per host and port: the loopback service (spelled twice) and the metadata
	// address.
	if evs := r.audited(audit.Filter{Kind: audit.KindEgress}); len(evs) != 2 {
		t.Errorf("%d egress events, want 2: %+v", len(evs), evs)
	}
}

// TestSandboxAllowHostAbsentWhenOpen: with SANDBOX_EGRESS=open there is nothing to ask for.
func TestSandboxAllowHostAbsentWhenOpen(t *testing.T) {
	r := newRig(t, []byte(sandboxPolicy), map[string]string{"SANDBOX_EGRESS": "Open"})
	cs := r.connect(r.token("default", "person", ""), nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "sandbox_allow_host" {
			t.Error("sandbox_allow_host is listed while SANDBOX_EGRESS is open")
		}
	}
}
