package gateway

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/policy"
)

// roleCapPolicy has a role like inbound whose sessions each tenant may hold two of at once, and
// open three of in a minute (as Scout's per-brand inbound limits).
const roleCapPolicy = `
version: 1
builtins:
  - name: files_read
roles:
  - id: mail_in
    ceiling: [files_read]
    sessions: {maxLive: 2, perMinute: 3}
tenants:
  - id: acme
  - id: globex
`

// A role's caps per tenant: its live sessions, and how many open in a minute; another tenant's
// and another role's sessions are not counted. Real MCP clients; the clock is the test's.
func TestRoleSessionCaps(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	r := newRigWith(t, []byte(roleCapPolicy), nil, func(o *Options) { o.Now = clock })
	acme := r.token("acme", "mail_in", "")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

	first := r.connect(acme, nil)
	r.connect(acme, nil)
	wantError(t, "a third live mail_in session of acme", r.post(acme, "", init), 403, -32001, 1, "session_refused",
		"tenant acme already holds 2 live sessions of role mail_in, the role's cap (sessions.maxLive)")
	// another tenant, and another role of the same tenant, are counted apart
	r.connect(r.token("globex", "mail_in", ""), nil)
	r.connect(r.token("acme", "person", ""), nil)

	// Ending one makes room: the third opens in the minute, the fourth is past the rate.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	var third = r.connectEventually(acme)
	if err := third.Close(); err != nil {
		t.Fatal(err)
	}
	wantError(t, "a fourth mail_in session of acme in a minute", r.post(acme, "", init), 403, -32001, 1, "session_refused",
		"tenant acme opened 3 sessions of role mail_in in the last minute, the role's rate (sessions.perMinute)")
	advance(61 * time.Second)
	r.connect(acme, nil)
}

// connectEventually connects once the gateway has let go of a session just closed (its DELETE
// is served before Close returns, but polling costs nothing and holds on a loaded machine).
func (r *rig) connectEventually(secret string) interface{ Close() error } {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cs, err := r.dial(secret, nil)
		if err == nil {
			return cs
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no session opened within 30s: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling, not waiting for a timer
	}
}

// Scout's inbound role carries its per-brand caps (examples/scout/warden.yaml), and the gateway
// enforces them on inbound sessions with real MCP clients: the fifth live inbound session of a
// brand is refused.
func TestScoutInboundSessionCap(t *testing.T) {
	src, err := os.ReadFile("../examples/scout/warden.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, src, map[string]string{"AGENTMAIL_WEBHOOK_URL_SECRET": "s"})
	role, ok := r.gw.snapshot.Load().p.Role("inbound")
	if !ok || role.Sessions != (policy.RoleSessions{MaxLive: 4, PerMinute: 10}) {
		t.Fatalf("Scout's inbound role: %+v", role)
	}
	tenant := scoutTenant(t, r)
	brand := r.token(tenant, "inbound", "")
	for range 4 {
		r.connect(brand, nil)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	wantError(t, "a fifth live inbound session of a brand", r.post(brand, "", init), 403, -32001, 1, "session_refused",
		"already holds 4 live sessions of role inbound, the role's cap (sessions.maxLive)")
}

// scoutTenant is the first tenant of the rig's policy.
func scoutTenant(t *testing.T, r *rig) string {
	t.Helper()
	for tn := range r.gw.snapshot.Load().p.Tenants() {
		return tn.ID
	}
	t.Fatal("the policy has no tenant")
	return ""
}
