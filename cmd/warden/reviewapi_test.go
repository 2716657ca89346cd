package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
)

// reviewAnswer is the answer of POST /api/v1/review as a client reads it.
type reviewAnswer struct {
	Decision string `json:"decision"`
	Blockers []struct {
		Code, Rule, Detail string
	} `json:"blockers"`
	Rules []string `json:"rules"`
	Token string   `json:"token"`
	Call  string   `json:"call"`
	Card  *struct {
		ID, State, Answer string
	} `json:"card"`
}

func (a reviewAnswer) codes() []string {
	var out []string
	for _, b := range a.Blockers {
		out = append(out, b.Code)
	}
	return out
}

// apiDo sends a request with a JSON body and returns the status and the body.
func apiDo(t *testing.T, method, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// reviewAs posts a review with the token and decodes a 200 answer.
func (s *served) reviewAs(t *testing.T, token string, body map[string]any) reviewAnswer {
	t.Helper()
	b, _ := json.Marshal(body)
	code, out := apiDo(t, "POST", s.url+"/api/v1/review", token, string(b))
	if code != http.StatusOK {
		t.Fatalf("review %s: %d %s", b, code, out)
	}
	var a reviewAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("review %s: %v\n%s", b, err, out)
	}
	return a
}

// cardStream follows GET /api/v1/approvals/events and returns the next card event's card.
type cardStream struct {
	r    *bufio.Reader
	body io.Closer
}

func (s *served) cards(t *testing.T) *cardStream {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", s.url+"/api/v1/approvals/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	cs := &cardStream{r: bufio.NewReader(resp.Body), body: resp.Body}
	// The stream's first comment says it is subscribed: a card made from now on is sent.
	if line, err := cs.r.ReadString('\n'); err != nil || !strings.HasPrefix(line, ": approvals") {
		t.Fatalf("the card stream began with %q, %v", line, err)
	}
	return cs
}

type streamedCard struct {
	ID, State, Tool, Session, Digest string
}

func (cs *cardStream) next(t *testing.T) streamedCard {
	t.Helper()
	for {
		line, err := cs.r.ReadString('\n')
		if err != nil {
			t.Fatalf("the card stream ended: %v", err)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var c streamedCard
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
}

// events reads the audit events of a call.
func (s *served) events(t *testing.T, call string) []*audit.Event {
	t.Helper()
	code, out := apiDo(t, "GET", s.url+"/api/v1/audit?call="+call, s.admin, "")
	if code != http.StatusOK {
		t.Fatalf("audit: %d %s", code, out)
	}
	var body struct{ Events []*audit.Event }
	if err := json.Unmarshal(out, &body); err != nil {
		t.Fatal(err)
	}
	return body.Events
}

// The review API for an agent's own runtime: an allowed, a denied and an asked call, each a
// recorded decision naming the harness and its session; an ask's card answered over REST
// while the review waits, a card nobody answers in time, and a body that cannot pick a wider
// session than the token binds.
func TestReviewAPIForAgents(t *testing.T) {
	s := serveForTest(t)
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	call := func(tool string, input map[string]any, more map[string]any) map[string]any {
		b := map[string]any{"tool": tool, "input": input, "workspace": project, "harness": "claude-code", "session": "sess-1"}
		for k, v := range more {
			b[k] = v
		}
		return b
	}

	t.Run("allowed", func(t *testing.T) {
		a := s.reviewAs(t, s.agent, call("files_read", map[string]any{"path": "notes.txt"}, nil))
		if a.Decision != "allow" || a.Card != nil || a.Token != "" || a.Call == "" {
			t.Fatalf("%+v; want allow, no card, no token, a call id", a)
		}
		evs := s.events(t, a.Call)
		if len(evs) != 1 {
			t.Fatalf("events %+v; want one decision", evs)
		}
		e := evs[0]
		if e.Kind != audit.KindDecision || e.Decision != "allow" || e.Harness != "claude-code" || e.Session != "sess-1" ||
			e.Tenant != "default" || e.Role != "person" || e.Principal != "agent" || e.Tool != "files_read" ||
			e.Digest == "" || e.PolicyRevision == "" {
			t.Errorf("the decision recorded: %+v", e)
		}
	})

	t.Run("the audit trail by harness", func(t *testing.T) {
		code, out := apiDo(t, "GET", s.url+"/api/v1/audit?harness=claude-code", s.admin, "")
		var body struct{ Events []*audit.Event }
		if code != http.StatusOK || json.Unmarshal(out, &body) != nil || len(body.Events) == 0 {
			t.Fatalf("audit?harness=claude-code: %d %s", code, out)
		}
		for _, e := range body.Events {
			if e.Harness != "claude-code" {
				t.Errorf("audit?harness=claude-code gave %+v", e)
			}
		}
		if code, out := apiDo(t, "GET", s.url+"/api/v1/audit?harness=nobody", s.admin, ""); code != http.StatusOK || !bytes.Contains(out, []byte(`"events": []`)) {
			t.Errorf("audit?harness=nobody: %d %s", code, out)
		}
	})

	t.Run("denied by a hard block", func(t *testing.T) {
		a := s.reviewAs(t, s.agent, call("files_read", map[string]any{"path": ".env"}, nil))
		if a.Decision != "deny" || !slices.Contains(a.Rules, "dotenv") || a.Card != nil {
			t.Fatalf("%+v; want denied by the dotenv rule", a)
		}
		evs := s.events(t, a.Call)
		if len(evs) != 1 || evs[0].Decision != "deny" || !slices.Contains(evs[0].Rules, "dotenv") || evs[0].Harness != "claude-code" ||
			len(evs[0].Blockers) == 0 || evs[0].Blockers[0].Rule != "dotenv" {
			t.Errorf("the denial recorded: %+v", evs)
		}
	})

	t.Run("enforced only in the sandbox", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(project, ".env"), []byte("KEY=x"), 0o600); err != nil {
			t.Fatal(err)
		}
		grep := map[string]any{"command": "grep -r hello ."}
		// A hook's Bash runs in the runtime's own shell: a recursive read that would open .env
		// is judged on what lies below it.
		if a := s.reviewAs(t, s.agent, call("shell_exec", grep, nil)); a.Decision != "deny" || !slices.Contains(a.Rules, "dotenv") {
			t.Errorf("grep -r in the runtime's shell: %+v; want denied by dotenv", a)
		}
		// In Warden's sandbox the kernel's supervisor refuses the open of .env itself.
		if a := s.reviewAs(t, s.agent, call("shell_exec", grep, map[string]any{"sandboxed": true})); a.Decision != "allow" {
			t.Errorf("grep -r in the sandbox: %+v; want allow", a)
		}
	})

	t.Run("ask answered over REST", func(t *testing.T) {
		for _, tt := range []struct {
			answer, want, state string
		}{{"allow_once", "allow", "allowed"}, {"deny", "deny", "denied"}} {
			stream := s.cards(t)
			done := make(chan reviewAnswer, 1)
			go func() {
				b, _ := json.Marshal(call("shell_exec", map[string]any{"command": "rm -r build"}, map[string]any{"wait": 120}))
				code, out := apiDo(t, "POST", s.url+"/api/v1/review", s.agent, string(b))
				var a reviewAnswer
				if code != http.StatusOK || json.Unmarshal(out, &a) != nil {
					t.Errorf("review: %d %s", code, out)
				}
				done <- a
			}()
			c := stream.next(t)
			if c.State != "pending" || c.Tool != "shell_exec" || c.Session != "sess-1" {
				t.Fatalf("streamed card %+v; want the review's, pending", c)
			}
			code, out := apiDo(t, "GET", s.url+"/api/v1/approvals?state=pending", s.admin, "")
			if code != http.StatusOK || !bytes.Contains(out, []byte(c.ID)) {
				t.Errorf("the pending approvals: %d %s; want card %s", code, out, c.ID)
			}
			if code, out := apiDo(t, "POST", s.url+"/api/v1/approvals/"+c.ID, s.admin, `{"answer":"`+tt.answer+`"}`); code != http.StatusOK {
				t.Fatalf("answer: %d %s", code, out)
			}
			a := <-done
			if a.Decision != tt.want || a.Card == nil || a.Card.ID != c.ID || a.Card.State != tt.state || a.Card.Answer != tt.answer {
				t.Fatalf("answered %s: %+v; want %s with the card %s", tt.answer, a, tt.want, tt.state)
			}
			if tt.want == "deny" && !slices.Contains(a.codes(), "approval_denied") {
				t.Errorf("denied: blockers %v; want approval_denied", a.codes())
			}
			var kinds []string
			for _, e := range s.events(t, a.Call) {
				kinds = append(kinds, e.Kind+":"+e.Decision)
				if e.Harness != "claude-code" || e.Session != "sess-1" {
					t.Errorf("event %+v: want the harness and session", e)
				}
				if e.Kind == audit.KindApproval && (e.Approver != "admin" || e.Channel != "api") {
					t.Errorf("the approval recorded: %+v; want admin through the api", e)
				}
			}
			want := []string{"decision:ask", "approval:allow", "decision:allow"}
			if tt.want == "deny" {
				want = []string{"decision:ask", "approval:deny"}
			}
			if !slices.Equal(kinds, want) {
				t.Errorf("answered %s: events %v; want %v", tt.answer, kinds, want)
			}
		}
	})

	t.Run("nobody answers in time", func(t *testing.T) {
		for _, wait := range []float64{0, 0.05} {
			a := s.reviewAs(t, s.agent, call("shell_exec", map[string]any{"command": "rm -r dist"}, map[string]any{"wait": wait}))
			if a.Decision != "ask" || a.Card == nil || a.Card.State != "expired" || !slices.Contains(a.codes(), "approval_timeout") {
				t.Fatalf("wait %g: %+v; want ask with its card expired", wait, a)
			}
			code, out := apiDo(t, "GET", s.url+"/api/v1/approvals/"+a.Card.ID, s.admin, "")
			if code != http.StatusOK || !bytes.Contains(out, []byte(`"state": "expired"`)) || !bytes.Contains(out, []byte(`"channel": "deadline"`)) {
				t.Errorf("wait %g: the card after the wait: %d %s", wait, code, out)
			}
			var kinds []string
			for _, e := range s.events(t, a.Call) {
				kinds = append(kinds, e.Kind+":"+e.Decision)
			}
			if !slices.Equal(kinds, []string{"decision:ask", "approval:ask"}) {
				t.Errorf("wait %g: events %v", wait, kinds)
			}
		}
	})

	t.Run("the body cannot widen the token", func(t *testing.T) {
		reader := createToken(t, s.db, &auth.Token{Role: auth.RoleAgent, Tenant: "default", SessionRole: "coworker", Profile: "reviewer", Name: "reader"})
		for _, tt := range []struct {
			name string
			more map[string]any
			want int
		}{
			{"another role", map[string]any{"role": "person"}, http.StatusForbidden},
			{"another profile", map[string]any{"profile": "writer"}, http.StatusForbidden},
			{"another tenant", map[string]any{"tenant": "other"}, http.StatusNotFound},
			{"a bad harness", map[string]any{"harness": "claude code"}, http.StatusBadRequest},
			{"a negative wait", map[string]any{"wait": -1}, http.StatusBadRequest},
			{"a relative workspace", map[string]any{"workspace": "project"}, http.StatusBadRequest},
		} {
			b, _ := json.Marshal(call("files_write", map[string]any{"path": "x.txt", "content": "x"}, tt.more))
			if code, out := apiDo(t, "POST", s.url+"/api/v1/review", reader, string(b)); code != tt.want {
				t.Errorf("%s: %d %s; want %d", tt.name, code, out, tt.want)
			}
		}
		a := s.reviewAs(t, reader, call("files_write", map[string]any{"path": "x.txt", "content": "x"}, map[string]any{"role": "coworker"}))
		if a.Decision != "deny" || !slices.Contains(a.codes(), "permission_denied") {
			t.Errorf("a write by the read-only profile: %+v; want permission_denied", a)
		}
		evs := s.events(t, a.Call)
		if len(evs) != 1 || evs[0].Role != "coworker" || evs[0].Profile != "reviewer" || evs[0].Principal != "reader" {
			t.Errorf("the refusal recorded: %+v", evs)
		}
	})

	t.Run("the body cannot claim another model than the token binds", func(t *testing.T) {
		bound := createToken(t, s.db, &auth.Token{Role: auth.RoleAgent, Tenant: "default", SessionRole: "person", Name: "bound", Model: "model-a"})
		b, _ := json.Marshal(call("files_read", map[string]any{"path": "notes.txt"}, map[string]any{"model": "model-b"}))
		if code, out := apiDo(t, "POST", s.url+"/api/v1/review", bound, string(b)); code != http.StatusBadRequest || !bytes.Contains(out, []byte("binds the model model-a")) {
			t.Errorf("a body stating another model: %d %s; want 400 naming the token's model", code, out)
		}
		if a := s.reviewAs(t, bound, call("files_read", map[string]any{"path": "notes.txt"}, map[string]any{"model": "model-a"})); a.Decision != "allow" {
			t.Errorf("a body stating the token's own model: %+v; want allow", a)
		}
	})

	t.Run("the runtime reports the outcome under its own call id", func(t *testing.T) {
		a := s.reviewAs(t, s.agent, call("files_read", map[string]any{"path": "notes.txt"}, map[string]any{"call": "toolu_01Outcome"}))
		if a.Decision != "allow" || a.Call != "toolu_01Outcome" {
			t.Fatalf("the review: %+v; want allow under the runtime's id", a)
		}
		b, _ := json.Marshal(call("files_read", map[string]any{"path": "notes.txt"}, map[string]any{"call": "toolu_01Outcome"}))
		if code, out := apiDo(t, "POST", s.url+"/api/v1/review", s.agent, string(b)); code != http.StatusConflict {
			t.Errorf("a second review under the same id: %d %s; want 409", code, out)
		}
		other := createToken(t, s.db, &auth.Token{Role: auth.RoleAgent, Tenant: "default", SessionRole: "person", Name: "another-agent"})
		for _, tt := range []struct {
			token, body string
			want        int
		}{
			{other, `{"call":"toolu_01Outcome","outcome":"ok"}`, http.StatusNotFound},       // not its call
			{s.agent, `{"call":"toolu_01Nobody","outcome":"ok"}`, http.StatusNotFound},      // never judged
			{s.agent, `{"call":"toolu_01Outcome","outcome":"fine"}`, http.StatusBadRequest}, // no such outcome
			{s.agent, `{"call":"toolu_01Outcome","outcome":"error","error":"exit status 1"}`, http.StatusNoContent},
			{s.agent, `{"call":"toolu_01Outcome","outcome":"ok"}`, http.StatusConflict},  // once
			{s.admin, `{"call":"toolu_01Outcome","outcome":"ok"}`, http.StatusForbidden}, // agents only
		} {
			if code, out := apiDo(t, "POST", s.url+"/api/v1/review/outcome", tt.token, tt.body); code != tt.want {
				t.Errorf("outcome %s: %d %s; want %d", tt.body, code, out, tt.want)
			}
		}
		var outcomes []*audit.Event
		for _, e := range s.events(t, "toolu_01Outcome") {
			if e.Kind == audit.KindOutcome {
				outcomes = append(outcomes, e)
			}
		}
		if len(outcomes) != 1 || outcomes[0].Outcome != "error" || outcomes[0].Error != "exit status 1" || outcomes[0].Harness != "claude-code" || outcomes[0].Session != "sess-1" || outcomes[0].Tool != "files_read" {
			t.Errorf("the outcomes recorded: %+v", outcomes)
		}
	})

	t.Run("a person's review explores", func(t *testing.T) {
		before := len(s.events(t, ""))
		b, _ := json.Marshal(map[string]any{"tool": "shell_exec", "input": map[string]any{"command": "rm -r build"}, "role": "person", "workspace": project})
		code, out := apiDo(t, "POST", s.url+"/api/v1/review", s.admin, string(b))
		if code != http.StatusOK || !bytes.Contains(out, []byte(`"decision": "ask"`)) || bytes.Contains(out, []byte(`"card"`)) {
			t.Errorf("an admin's review: %d %s; want ask without a card", code, out)
		}
		if after := len(s.events(t, "")); after != before {
			t.Errorf("an admin's review recorded %d events", after-before)
		}
		b, _ = json.Marshal(map[string]any{"tool": "files_read", "input": map[string]any{"path": "notes.txt"}, "role": "person", "wait": 5})
		if code, out := apiDo(t, "POST", s.url+"/api/v1/review", s.admin, string(b)); code != http.StatusBadRequest || !bytes.Contains(out, []byte("wait is for an agent token")) {
			t.Errorf("an admin's review with a wait: %d %s; want 400", code, out)
		}
	})
}

// BenchmarkReviewAPIAllow is one allowed read judged for an agent's runtime over HTTP, as a
// hook with --server makes it: the request, the review, the decision made durable in the
// audit trail (SQLite), and the answer.
func BenchmarkReviewAPIAllow(b *testing.B) {
	s := serveForTest(b)
	project := b.TempDir()
	body, _ := json.Marshal(map[string]any{"tool": "files_read", "input": map[string]any{"path": "notes.txt"},
		"workspace": project, "harness": "claude-code", "session": "bench"})
	client := &http.Client{}
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest("POST", s.url+"/api/v1/review", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.agent)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
