package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/wardenhq/warden/claudecode"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/verdict"
)

// reviewRequest is the body of POST /api/v1/review.
type reviewRequest struct {
	Tool      string         `json:"tool"`
	Input     map[string]any `json:"input"`
	Workspace string         `json:"workspace,omitempty"`
	Harness   string         `json:"harness,omitempty"`
	Session   string         `json:"session,omitempty"`
	Wait      int            `json:"wait,omitempty"`
	Sandboxed bool           `json:"sandboxed,omitempty"`
	Call      string         `json:"call,omitempty"`
}

// callID is the id the server records a call of a tool use under: Claude Code's tool_use_id
// for its first (or only) call, with .N after it for the others (MultiEdit's edits), so that
// PostToolUse can report the outcome under the same id. Empty (the server makes one) for an
// id the API would not take.
func callID(toolUseID string, i int) string {
	if toolUseID == "" {
		return ""
	}
	id := toolUseID
	if i > 0 {
		id = fmt.Sprintf("%s.%d", toolUseID, i)
	}
	if !server.ValidCallID(id) {
		return ""
	}
	return id
}

// reviewResponse is what the hook reads of the answer: warden review --json's shape, and the
// card of an ask.
type reviewResponse struct {
	Decision string `json:"decision"`
	Blockers []struct {
		Code   verdict.Code `json:"code"`
		Rule   string       `json:"rule"`
		Detail string       `json:"detail"`
	} `json:"blockers"`
	Card *struct {
		ID     string `json:"id"`
		State  string `json:"state"`
		Answer string `json:"answer"`
	} `json:"card"`
}

// hookClientMargin is how much longer than --wait the hook waits for the server's answer: the
// server answers an unanswered card at --wait, and the network takes its share.
const hookClientMargin = 3 * time.Second

// remote answers a PreToolUse event through warden serve's review API, waiting up to --wait
// for a person to answer a card. A server that cannot be reached, or answers with an error,
// blocks the call. PostToolUse reports the call's outcome (POST /api/v1/review/outcome): ok
// or error, never the result itself, which stays on this machine.
func (o *hookOptions) remote(ctx context.Context, ev *claudecode.Event) (*claudecode.Answer, error) {
	if o.token == "" {
		return nil, errors.New("--server needs an agent token: give --token or set WARDEN_TOKEN")
	}
	if ev.HookEventName == claudecode.PostToolUse {
		return o.remoteOutcome(ctx, ev), nil
	}
	if o.wait < 0 {
		return nil, fmt.Errorf("--wait %s: want a duration of zero or more", o.wait)
	}
	base := strings.TrimRight(o.server, "/")
	// The server reviews Warden's kinds: no tool is declared under Claude Code's names there.
	calls, err := claudecode.Map(ev.ToolName, ev.ToolInput, ev.Cwd, func(name string) (string, bool) {
		if _, mcp := claudecode.IsMCP(name); mcp {
			return "", true
		}
		return "", false
	})
	var unknown *claudecode.UnknownToolError
	switch {
	case errors.As(err, &unknown):
		return claudecode.Decide(o.unknownTool(err)), nil
	case err != nil:
		return claudecode.Decide(claudecode.Deny, "Warden: "+err.Error()), nil
	}
	sandboxed := o.sandbox && ev.ToolName == "Bash"
	var sb claudecode.Sandbox
	if sandboxed {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("--sandbox: the path of this warden binary: %w", err)
		}
		sb = claudecode.Sandbox{Warden: self, Workspace: o.workspace, Boundaries: o.boundaries}
	}
	deadline := time.Now().Add(o.wait)
	client := &http.Client{Timeout: o.wait + hookClientMargin}
	worst := verdict.Allow
	var lines []string
	for i, c := range calls {
		wait := max(0, time.Until(deadline))
		req := reviewRequest{Tool: c.Tool, Input: c.Input, Workspace: o.workspace, Harness: harnessClaudeCode,
			Session: ev.SessionID, Wait: int((wait + time.Second - 1) / time.Second),
			// The server judges a recursive read on the path it names only where the hard
			// blocks are enforced at the system call: here, by the rules given to the sandbox.
			Sandboxed: sandboxed && o.boundaries != "", Call: callID(ev.ToolUseID, i)}
		res, err := o.post(ctx, client, base, &req)
		var taken *callTakenError
		if errors.As(err, &taken) {
			// The id is on record already (a PreToolUse asked again for the same tool use):
			// judged again under an id of the server's, whose outcome is not reported.
			req.Call = ""
			res, err = o.post(ctx, client, base, &req)
		}
		if err != nil {
			return nil, err
		}
		d, reason := res.decision(o.wait)
		worst = min(worst, d)
		lines = append(lines, reason...)
		if worst == verdict.Deny {
			break
		}
	}
	word := map[verdict.Decision]string{verdict.Allow: "allowed by " + base, verdict.Ask: "asks you first", verdict.Deny: "denied"}[worst]
	ans := claudecode.Decide(worst.String(), reasonOf(word, lines))
	// An ask is rewritten too: the review judged the command as the sandbox runs it, and
	// Claude Code shows its user the command that will run.
	if worst != verdict.Deny && sandboxed {
		in, err := sb.SandboxInput(ev.ToolInput, ev.Cwd)
		if err != nil {
			return nil, err
		}
		ans.HookSpecificOutput.UpdatedInput = in
		ans.HookSpecificOutput.PermissionDecisionReason += " (runs in Warden's sandbox)"
	}
	return ans, nil
}

// decision is the answer a review response gives Claude Code: its decision, with an ask the
// server still holds pending past the wait turned into a deny.
func (r *reviewResponse) decision(wait time.Duration) (verdict.Decision, []string) {
	var lines []string
	for _, b := range r.Blockers {
		lines = append(lines, blockerLine(b.Code, b.Rule, b.Detail))
	}
	var d verdict.Decision
	if err := d.UnmarshalText([]byte(r.Decision)); err != nil {
		return verdict.Deny, append(lines, "the server's answer has no decision Warden knows ("+err.Error()+")")
	}
	if d == verdict.Ask {
		// The hook cannot hold the call longer than Claude Code waits for it.
		if r.Card != nil && r.Card.ID != "" {
			return verdict.Deny, append(lines, fmt.Sprintf("no answer from an approver within %s; card %s (state %s)", wait, r.Card.ID, r.Card.State))
		}
		return verdict.Deny, append(lines, fmt.Sprintf("no answer from an approver within %s, and the server opened no card", wait))
	}
	return d, lines
}

// callTakenError: the server has a call on record under the id the review gave.
type callTakenError struct{ call string }

func (e *callTakenError) Error() string { return "call " + e.call + " is on record already" }

// remoteOutcome reports a PostToolUse event's outcome under the call's id. The call has run:
// a report that fails blocks nothing, and says so to the user.
func (o *hookOptions) remoteOutcome(ctx context.Context, ev *claudecode.Event) *claudecode.Answer {
	id := callID(ev.ToolUseID, 0)
	if id == "" {
		return &claudecode.Answer{SystemMessage: "Warden: the outcome of " + ev.ToolName + " was not recorded: its tool_use_id is not one the server takes"}
	}
	body := map[string]string{"call": id, "outcome": "ok"}
	if failed(ev.ToolResponse) {
		body["outcome"] = "error"
		body["error"] = "the tool reported an error"
	}
	data, _ := json.Marshal(body)
	base := strings.TrimRight(o.server, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/review/outcome", bytes.NewReader(data))
	if err != nil {
		return &claudecode.Answer{SystemMessage: "Warden: the outcome of " + ev.ToolName + " was not recorded: " + err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+o.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return &claudecode.Answer{SystemMessage: fmt.Sprintf("Warden: the outcome of %s was not recorded: the server at %s did not answer: %v", ev.ToolName, base, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &claudecode.Answer{SystemMessage: fmt.Sprintf("Warden: the outcome of %s was not recorded: the server at %s answered %s: %s", ev.ToolName, base, resp.Status, strings.TrimSpace(string(raw)))}
	}
	return nil
}

// post sends one review and reads its answer; an HTTP error status is an error naming the
// server's code and message.
func (o *hookOptions) post(ctx context.Context, client *http.Client, base string, body *reviewRequest) (*reviewResponse, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/review", bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("--server %q: %w", o.server, err)
	}
	req.Header.Set("Authorization", "Bearer "+o.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the Warden server at %s did not answer: %w", base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("the Warden server at %s: read its answer: %w", base, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if resp.StatusCode == http.StatusConflict && body.Call != "" {
			return nil, &callTakenError{call: body.Call}
		}
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			return nil, fmt.Errorf("the Warden server at %s refused the review (%d %s): %s", base, resp.StatusCode, e.Error.Code, e.Error.Message)
		}
		return nil, fmt.Errorf("the Warden server at %s answered %s", base, resp.Status)
	}
	var r reviewResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("the Warden server at %s: its answer is not a review: %w", base, err)
	}
	return &r, nil
}
