package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/server"
)

// elicitPolicy gates files_write on every role. desk has an approval channel and leaves
// approvalByElicitation unset (off); kiosk turns it on.
const elicitPolicy = `
version: 1
builtins:
  - name: files_read
  - name: files_write
    gate: {approval: true}
roles:
  - {id: desk, approvalChannel: true, ceiling: ['*']}
  - {id: kiosk, approvalChannel: true, approvalByElicitation: true, ceiling: ['*']}
tenants:
  - id: default
`

// elicitor is an MCP client's elicitation handler that counts the requests it is sent and
// answers each with action (and, for accept, decision).
type elicitor struct {
	asked    atomic.Int32
	action   string
	decision string
	message  atomic.Pointer[string]
}

func (e *elicitor) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		e.asked.Add(1)
		msg := req.Params.Message
		e.message.Store(&msg)
		res := &mcp.ElicitResult{Action: e.action}
		if e.action == "accept" {
			res.Content = map[string]any{"decision": e.decision}
		}
		return res, nil
	}}
}

// api serves the REST API on the rig's store and broker, and returns its URL and an approver
// token for tenant default.
func (r *rig) api() (string, string) {
	r.t.Helper()
	secret, hash, err := auth.NewSecret()
	if err != nil {
		r.t.Fatal(err)
	}
	tok := &auth.Token{ID: "tok_" + newID(), Hash: hash, Role: auth.RoleApprover, Tenant: "default", Name: "approver", Created: time.Now()}
	if err := r.db.CreateToken(context.Background(), tok); err != nil {
		r.t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Options{Store: r.db, Broker: r.broker}))
	r.t.Cleanup(srv.Close)
	return srv.URL, secret
}

// answerByAPI answers a card through POST /api/v1/approvals/{id} and returns the card JSON.
func answerByAPI(t *testing.T, url, secret string, c *approval.Card, answer approval.Answer) map[string]any {
	t.Helper()
	body := `{"answer":"` + string(answer) + `","digest":"` + c.Digest + `"}`
	req, err := http.NewRequest("POST", url+"/api/v1/approvals/"+c.ID, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v1/approvals/%s: %d %v %v", c.ID, resp.StatusCode, out, err)
	}
	return out
}

// callResult is what a tool call returned.
type callResult struct {
	*mcp.CallToolResult
	err error
}

// callAsync calls a tool in the background, for a call that waits for a card.
func callAsync(cs *mcp.ClientSession, name string, args map[string]any) <-chan callResult {
	done := make(chan callResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		done <- callResult{res, err}
	}()
	return done
}

// parked waits for the next card the rig's broker parks.
func (r *rig) parked() *approval.Card {
	r.t.Helper()
	select {
	case c := <-r.cards:
		return c
	case <-time.After(20 * time.Second):
		r.t.Fatal("no card was parked")
		return nil
	}
}

// canBeAsked reports what the gateway decided for the session that parked c: whether its
// client declared elicitation, and whether the session is asked there.
func (r *rig) canBeAsked(c *approval.Card) (declared, asked bool) {
	r.t.Helper()
	r.gw.mu.Lock()
	s := r.gw.sessions[c.Session]
	r.gw.mu.Unlock()
	if s == nil {
		r.t.Fatalf("no session %s", c.Session)
	}
	ss := s.ss.Load()
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil, s.canElicit(ss)
}

// approvalEvent returns the approval event of the tenant's only approval.
func (r *rig) approvalEvent() *audit.Event {
	r.t.Helper()
	evs := r.audited(audit.Filter{Tenant: "default", Kind: audit.KindApproval})
	if len(evs) != 1 {
		r.t.Fatalf("%d approval events, want 1: %v", len(evs), codes(evs))
	}
	return evs[0]
}

// TestElicitationByRole: a session answers its own card in its client only where its role
// says so; elsewhere the card waits for the API, and each card says which way it was answered.
func TestElicitationByRole(t *testing.T) {
	const personOff = `
version: 1
builtins:
  - name: files_read
  - name: files_write
    gate: {approval: true}
roles:
  - {id: person, approvalByElicitation: false}
tenants:
  - id: default
`
	tests := []struct {
		name   string
		policy string
		role   string
		asked  bool
	}{
		{name: "person, by default", policy: elicitPolicy, role: "person", asked: true},
		{name: "a declared role that turns it on", policy: elicitPolicy, role: "kiosk", asked: true},
		{name: "a declared role that leaves it off", policy: elicitPolicy, role: "desk"},
		{name: "person, turned off by the policy", policy: personOff, role: "person"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, []byte(tt.policy), nil)
			url, secret := r.api()
			el := &elicitor{action: "accept", decision: "allow_once"}
			cs := r.connect(r.token("default", tt.role, ""), el.options())

			done := callAsync(cs, "files_write", map[string]any{"path": "a.txt", "content": "x"})
			c := r.parked()
			declared, asked := r.canBeAsked(c)
			if !declared || asked != tt.asked {
				t.Fatalf("the client declared elicitation: %v; the session is asked: %v, want %v", declared, asked, tt.asked)
			}
			wantChannel := approval.ChannelElicitation
			if !tt.asked {
				// nobody answers in the client: the card waits until a person answers it over the API
				if card, err := r.db.Card(context.Background(), "default", c.ID); err != nil || card.State != approval.Pending {
					t.Fatalf("the card before the API answered: %+v, %v; want pending", card, err)
				}
				if got := answerByAPI(t, url, secret, c, approval.AllowOnce); got["channel"] != "api" || got["approver"] != "approver" {
					t.Errorf("the card the API answered: %v; want channel api, approver approver", got)
				}
				wantChannel = approval.ChannelAPI
			}
			if res := <-done; res.err != nil || res.IsError {
				t.Fatalf("the call after the approval: %+v, %v", res.CallToolResult, res.err)
			}
			if n := el.asked.Load(); (n == 1) != tt.asked || n > 1 {
				t.Errorf("the client was asked %d times; want asked: %v", n, tt.asked)
			}
			card, err := r.db.Card(context.Background(), "default", c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if card.State != approval.Allowed || card.Channel != wantChannel {
				t.Errorf("card %s, channel %q; want allowed through %q", card.State, card.Channel, wantChannel)
			}
			if tt.asked && (card.Approver != "tester" || !strings.Contains(*el.message.Load(), "files_write")) {
				t.Errorf("an elicited answer: approver %q (want the session's principal, tester), message %q", card.Approver, *el.message.Load())
			}
			if e := r.approvalEvent(); e.Decision != "allow" || e.Channel != string(wantChannel) || e.Approver != card.Approver {
				t.Errorf("approval event: %s by %q through %q; want allow by %q through %q", e.Decision, e.Approver, e.Channel, card.Approver, wantChannel)
			}
		})
	}
}

// TestElicitationDeclineAndCancel: a decline in the client denies the call; a cancel (the
// person dismissed the question) leaves the card to another channel.
func TestElicitationDeclineAndCancel(t *testing.T) {
	t.Run("decline denies", func(t *testing.T) {
		r := newRig(t, []byte(elicitPolicy), nil)
		el := &elicitor{action: "decline"}
		cs := r.connect(r.token("default", "person", ""), el.options())
		out, isErr := call(t, cs, "files_write", map[string]any{"path": "a.txt", "content": "x"})
		if !isErr || !strings.Contains(out, "approval_denied") || el.asked.Load() != 1 {
			t.Fatalf("a declined call: %v %s, asked %d times", isErr, out, el.asked.Load())
		}
		if e := r.approvalEvent(); e.Decision != "deny" || e.Channel != string(approval.ChannelElicitation) {
			t.Errorf("approval event: %s through %q; want deny through elicitation", e.Decision, e.Channel)
		}
	})

	t.Run("cancel leaves the card pending", func(t *testing.T) {
		r := newRig(t, []byte(elicitPolicy), nil)
		url, secret := r.api()
		answered := make(chan struct{})
		cs := r.connect(r.token("default", "person", ""), &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				defer close(answered)
				return &mcp.ElicitResult{Action: "cancel"}, nil
			},
		})
		done := callAsync(cs, "files_write", map[string]any{"path": "a.txt", "content": "x"})
		c := r.parked()
		select {
		case <-answered:
		case <-time.After(20 * time.Second):
			t.Fatal("the client was not asked")
		}
		// The handler has returned, but the gateway may read the dismissal a moment later: a
		// dismissal taken for a denial could then lose the race to the API's answer below, so
		// this case catches that mistake in the usual order of events, not in every one.
		if card, err := r.db.Card(context.Background(), "default", c.ID); err != nil || card.State != approval.Pending {
			t.Fatalf("the card after the client dismissed the question: %+v, %v; want pending", card, err)
		}
		if got := answerByAPI(t, url, secret, c, approval.AllowOnce); got["channel"] != "api" {
			t.Errorf("the card the API answered: %v; want channel api", got)
		}
		if res := <-done; res.err != nil || res.IsError {
			t.Errorf("the call after the API allowed it: %+v, %v", res.CallToolResult, res.err)
		}
	})
}
