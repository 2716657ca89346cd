package sandbox

import (
	"fmt"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
)

// HardBlocks is what the sandbox needs of a tenant's hard blocks to enforce them at the
// system call: the compiled index review uses (a *boundary.Set). Paths are checked as the
// command sees them, which for the workspace and every read-only path is the host's own path
// (the sandbox mounts each at its own place); /tmp, /run and /dev/shm are the sandbox's own
// and are checked as /tmp/..., /run/... and /dev/shm/....
type HardBlocks interface {
	CheckPath(op action.Op, path string, recursive bool, hits []boundary.Hit) []boundary.Hit
	MayBlock(op action.Op, path string, recursive bool, scratch []boundary.Hit) (bool, []boundary.Hit)
	CheckCommand(raw string, normalized []string, hits []boundary.Hit) []boundary.Hit
	Rules() []boundary.Rule
	Invalid() error
}

var _ HardBlocks = (*boundary.Set)(nil)

// A Refusal is one system call of the command that a hard block refused (it failed with
// EACCES).
type Refusal struct {
	// Rule is the ID of the rule that refused it (boundary.ConfigInvalidID when the rules do
	// not validate); Reason is that rule's reason.
	Rule   string `json:"rule"`
	Reason string `json:"reason,omitempty"`
	// Op is the operation refused: read, write, delete or execute.
	Op action.Op `json:"op"`
	// Path is the path as the command sees it, resolved as the call would resolve it; for a
	// command rule it is the program's path.
	Path string `json:"path"`
	// Command is the command text a command rule matched (execve only).
	Command string `json:"command,omitempty"`
	// PID is the process's id in the sandbox's PID namespace, and Call the system call.
	PID  int    `json:"pid"`
	Call string `json:"call"`
}

func (r Refusal) String() string {
	what := r.Path
	if r.Command != "" {
		what = r.Command
	}
	s := fmt.Sprintf("%s %s refused by hard block %s (%s, pid %d)", r.Op, what, r.Rule, r.Call, r.PID)
	if r.Reason != "" {
		s += ": " + r.Reason
	}
	return s
}

// MaxRefusals is how many refusals a Result lists; Result.RefusalsDropped counts the rest.
const MaxRefusals = 256
