package claudecode

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Hook event names this package answers.
const (
	PreToolUse  = "PreToolUse"
	PostToolUse = "PostToolUse"
)

// Permission decisions a PreToolUse answer may carry.
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"
)

// Event is the JSON object Claude Code writes on a command hook's stdin for PreToolUse and
// PostToolUse (PostToolUse adds ToolResponse).
type Event struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path,omitempty"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode,omitempty"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      map[string]any  `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	ToolResponse   json.RawMessage `json:"tool_response,omitempty"`
}

// maxEvent bounds the event read from stdin: a tool result can be large, but not unbounded.
const maxEvent = 64 << 20

// ParseEvent decodes one hook event and checks the fields every event needs. Its errors name
// the field at fault.
func ParseEvent(data []byte) (*Event, error) {
	if len(data) > maxEvent {
		return nil, fmt.Errorf("hook event: %d bytes, more than the %d this hook reads", len(data), maxEvent)
	}
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("hook event: not a JSON object of Claude Code's hook input: %v", err)
	}
	switch {
	case e.HookEventName == "":
		return nil, errors.New("hook event: hook_event_name is missing")
	case e.HookEventName != PreToolUse && e.HookEventName != PostToolUse:
		return nil, fmt.Errorf("hook event: hook_event_name %q: this hook answers PreToolUse and PostToolUse", e.HookEventName)
	case e.ToolName == "":
		return nil, errors.New("hook event: tool_name is missing")
	case e.ToolInput == nil:
		return nil, fmt.Errorf("hook event: tool_input of %s is missing or not an object", e.ToolName)
	case e.Cwd == "":
		return nil, errors.New("hook event: cwd is missing")
	}
	return &e, nil
}

// Answer is what a hook writes on stdout.
type Answer struct {
	HookSpecificOutput *Specific `json:"hookSpecificOutput,omitempty"`
	// SystemMessage is shown to the user (PostToolUse reports go here).
	SystemMessage string `json:"systemMessage,omitempty"`
}

// Specific is an answer's hookSpecificOutput.
type Specific struct {
	HookEventName            string         `json:"hookEventName"`
	PermissionDecision       string         `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string         `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             map[string]any `json:"updatedInput,omitempty"`
	AdditionalContext        string         `json:"additionalContext,omitempty"`
}

// Decide is a PreToolUse answer.
func Decide(decision, reason string) *Answer {
	return &Answer{HookSpecificOutput: &Specific{HookEventName: PreToolUse, PermissionDecision: decision, PermissionDecisionReason: reason}}
}
