// Package claudecode speaks Claude Code's hook protocol and maps its built-in tools onto
// Warden's native kinds, so one policy reviews Claude Code's own tools (Bash, Read, Edit, ...)
// and the MCP tools the gateway serves.
//
// Claude Code runs a command hook before each tool call (PreToolUse) and after it
// (PostToolUse), with the event as one JSON object on stdin. A PreToolUse hook answers on
// stdout with hookSpecificOutput.permissionDecision (allow, deny or ask) and a reason, and may
// replace the call's input (updatedInput); exit status 2 blocks the call with stderr as the
// reason. Event and Answer are those objects.
//
// Map turns one call into the calls Warden reviews. Where the policy declares a built-in by
// Claude Code's name (the quickstart's Bash, Read, Write, Edit, Glob, Grep, WebFetch,
// WebSearch), the call is reviewed under that name with Claude Code's own input, and the
// policy's input mapping reads it; otherwise it is reviewed as the native kind (Read as
// files_read {path}). MultiEdit is one Edit per edit, NotebookEdit a Write of the notebook,
// Task a spawn_subagent rooted at the project. A tool this package does not know, and the
// policy does not declare, maps to nothing: the caller asks or denies, never allows.
//
// SandboxCommand is the Bash command line that runs the original command through `warden
// exec` in the project directory, for the --sandbox rewrite.
package claudecode
