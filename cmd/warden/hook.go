package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/claudecode"
	"github.com/wardenhq/warden/surface"
)

// harnessClaudeCode names Claude Code in the audit trail, and is the policy's harness the
// hook's session runs on when the policy declares one of that id.
const harnessClaudeCode = "claude-code"

// defaultHookWait is how long, by default, the hook waits for a person to answer a card: under
// Claude Code's default hook timeout of 60 seconds, so the hook answers before it is killed.
const defaultHookWait = 55 * time.Second

// hookOptions are the flags of warden hook claude-code.
type hookOptions struct {
	spec       surface.Spec
	policy     string
	boundaries string
	store      storeOptions
	workspace  string
	home       string
	unconfined bool
	sandbox    bool
	unknown    string
	gateway    string

	server string
	token  string
	wait   time.Duration
}

func newHookCmd(root *rootOptions) *cobra.Command {
	hook := &cobra.Command{
		Use:   "hook",
		Short: "Answer an agent harness's hooks with Warden's review",
		Args:  cobra.NoArgs,
	}
	o := &hookOptions{}
	cmd := &cobra.Command{
		Use:   "claude-code [--server URL [--token T] [--wait D] | --policy FILE [--db FILE]] [--sandbox]",
		Short: "A Claude Code PreToolUse/PostToolUse hook: review each built-in tool call against the policy",
		Long: `Read one Claude Code hook event (PreToolUse or PostToolUse) on stdin and answer it on stdout.

PreToolUse: the call of Claude Code's tool is mapped onto Warden's kinds (Bash is shell_exec,
Read files_read, Write files_write, Edit and MultiEdit files_edit, Glob files_find, Grep
files_search, WebFetch net_fetch, WebSearch net_search, NotebookEdit a files_write of the
notebook, Task spawn_subagent, mcp__server__tool that tool) and reviewed as the session the
flags describe would make it: its surface, the tenant's hard blocks, argument constraints and
gates. The answer is Claude Code's permissionDecision: allow, ask (Claude Code asks its user)
or deny, with the blockers as the reason. A tool Warden cannot review is asked about (or
denied, --unknown deny), never allowed.

Standalone (the default), the policy is --policy (else -c, else ./warden.yaml, else the
quickstart policy), the hard blocks the policy's, the tenant's document stored in the store
and --boundaries; every decision is recorded in the store's audit trail (--db, default
warden.db next to the policy file, or .claude/warden.db in the project without one; made if
missing), with Claude Code's session id and tool_use_id. With --server URL the review is
warden serve's (POST /api/v1/review with --token): an ask becomes a card answered in the
console or over the API, and the hook waits up to --wait for it, denying past that.

With --sandbox an allowed or asked Bash call is answered with updatedInput that runs the command through
warden exec in the project directory (the hard blocks enforced at every system call), so Claude
Code's shell runs it in Warden's sandbox and egress proxy.

PostToolUse: the result is recorded as the call's outcome, and a protected value the session
knows (a connector's host credential) found in it is reported; a hook cannot rewrite the result
of a built-in tool.

The hook fails closed: bad input, an unreadable policy, a store or server that fails: exit
status 2 with the reason on stderr, which Claude Code takes for a block. See docs/claude-code.md.` + envHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, root)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.spec.Role, "role", "person", "role id of the session")
	f.StringVar(&o.spec.Profile, "profile", "", "profile id (default: the role's default profile)")
	f.StringVar(&o.spec.Tenant, "tenant", "", "tenant id (default: the policy's only tenant, or the one named default)")
	f.StringVar(&o.spec.Harness, "harness", "", "the policy's harness id (default: "+harnessClaudeCode+" where the policy declares it, else default)")
	f.BoolVar(&o.spec.Owner, "owner", false, "treat the tenant as the deployment owner's")
	f.StringVar(&o.spec.Model, "model", "", "the model Claude Code runs on, where the policy routes by model (models:); none stated is not certified")
	f.StringVar(&o.policy, "policy", "", "the policy file (default: -c, else ./"+defaultConfig+", else the built-in quickstart policy)")
	f.StringVar(&o.boundaries, "boundaries", "", "hard-block rules in BURROW's stored format (a JSON file), in place of the tenant's stored document")
	o.store.register(cmd)
	f.StringVar(&o.workspace, "workspace", "", "the project directory: the base of relative paths and the sandbox's workspace (default: $CLAUDE_PROJECT_DIR, else the event's cwd)")
	f.StringVar(&o.home, "home", "", "what ~ stands for (default: the home directory of the user running warden)")
	f.BoolVar(&o.unconfined, "unconfined", false, "let the file tools act outside the project directory (hard blocks still apply)")
	f.BoolVar(&o.sandbox, "sandbox", false, "run allowed and asked Bash calls through warden exec in the project directory (updatedInput)")
	f.StringVar(&o.unknown, "unknown", claudecode.Ask, "the answer for a tool Warden cannot review: ask or deny")
	f.StringVar(&o.gateway, "gateway", "warden", "the name of Warden's gateway among Claude Code's MCP servers: its tools are reviewed there, and allowed here")
	f.StringVar(&o.server, "server", "", "review through this warden serve (its base URL) instead of a local policy")
	f.StringVar(&o.token, "token", "", "the agent token for --server")
	f.DurationVar(&o.wait, "wait", defaultHookWait, "with --server, how long to wait for a person to answer a card (keep it under the hook's timeout in Claude Code's settings)")
	hook.AddCommand(cmd)
	return hook
}

func (o *hookOptions) run(cmd *cobra.Command, root *rootOptions) error {
	ans, err := o.answer(cmd, root)
	if err != nil {
		// Fail closed: Claude Code blocks a call whose PreToolUse hook exits 2, and shows it
		// the reason on stderr.
		fmt.Fprintln(cmd.ErrOrStderr(), "Warden blocked this call: "+err.Error())
		return &exitError{code: 2}
	}
	if ans == nil {
		return nil
	}
	data, err := json.Marshal(ans)
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), "Warden blocked this call: encode the answer: "+err.Error())
		return &exitError{code: 2}
	}
	_, err = cmd.OutOrStdout().Write(append(data, '\n'))
	return err
}

// answer reads the event and answers it.
func (o *hookOptions) answer(cmd *cobra.Command, root *rootOptions) (*claudecode.Answer, error) {
	if o.unknown != claudecode.Ask && o.unknown != claudecode.Deny {
		return nil, fmt.Errorf("--unknown %q: want ask or deny", o.unknown)
	}
	data, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 64<<20+1))
	if err != nil {
		return nil, fmt.Errorf("read the hook event on stdin: %w", err)
	}
	ev, err := claudecode.ParseEvent(data)
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(ev.Cwd) {
		return nil, fmt.Errorf("hook event: cwd %q is not an absolute path", ev.Cwd)
	}
	if o.workspace == "" {
		o.workspace = os.Getenv("CLAUDE_PROJECT_DIR")
	}
	if o.workspace == "" {
		o.workspace = ev.Cwd
	}
	if o.workspace, err = filepath.Abs(o.workspace); err != nil {
		return nil, fmt.Errorf("--workspace: %w", err)
	}
	if o.home == "" {
		o.home, _ = os.UserHomeDir()
	}
	if srv, ok := claudecode.IsMCP(ev.ToolName); ok && srv == o.gateway {
		if ev.HookEventName == claudecode.PostToolUse {
			return nil, nil
		}
		// Warden's own gateway reviews, asks about and records its tools' calls itself. This
		// trusts the name: Claude Code's MCP server called --gateway is taken to be Warden's
		// (warden init claude-code names it so); another server must not be given that name.
		return claudecode.Decide(claudecode.Allow, "Warden: served by Warden's gateway, which reviews this call"), nil
	}
	ctx := cmd.Context()
	if o.server != "" {
		return o.remote(ctx, ev)
	}
	l, err := o.openLocal(ctx, cmd, root, ev)
	if err != nil {
		return nil, err
	}
	defer l.close()
	if ev.HookEventName == claudecode.PostToolUse {
		return l.outcome(ctx, ev)
	}
	return l.decide(ctx, ev)
}

// unknownTool answers a call no review can be made of: ask or deny, never allow.
func (o *hookOptions) unknownTool(err error) (string, string) {
	return o.unknown, err.Error() + "; " + map[string]string{
		claudecode.Ask:  "asking you instead",
		claudecode.Deny: "denied (--unknown deny)",
	}[o.unknown]
}

// reasonOf is the reason given with a decision: the blockers, one a line.
func reasonOf(decision string, blockers []string) string {
	if len(blockers) == 0 {
		return "Warden: " + decision
	}
	return "Warden: " + decision + ": " + strings.Join(blockers, "; ")
}
