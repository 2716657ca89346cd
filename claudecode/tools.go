package claudecode

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
)

// Call is one call Warden reviews for a Claude Code tool call: a tool name as the policy knows
// it and its input.
type Call struct {
	Tool  string
	Input map[string]any
}

// Declared reports the kind of the policy's tool of that name ("" for a connector's tool),
// and whether the policy declares it at all.
type Declared func(name string) (kind string, ok bool)

// UnknownToolError is a tool this package cannot map and the policy does not declare: no
// review can be made of it.
type UnknownToolError struct{ Tool string }

func (e *UnknownToolError) Error() string {
	if server, ok := IsMCP(e.Tool); ok {
		return fmt.Sprintf("Warden cannot review %s: the policy declares no tool of that name for the MCP server %s", e.Tool, server)
	}
	return fmt.Sprintf("Warden cannot review Claude Code's tool %s: it does not know what it touches, and the policy declares no built-in of that name", e.Tool)
}

// builtin is how one of Claude Code's tools is reviewed.
type builtin struct {
	// kind is the native kind it maps to.
	kind string
	// calls turns the call into the calls of its Claude Code name (named) and of the native
	// kind (native); each returns one call per reviewed action.
	named, native func(in map[string]any, cwd string) ([]map[string]any, error)
	// alias is the Claude Code name its named calls are reviewed under, when not its own
	// (MultiEdit is reviewed as one Edit per edit).
	alias string
	// paths are the fields of Claude Code's input that name files: a relative one is taken
	// from the directory the call is made in.
	paths []string
}

// filePath is the path field of Claude Code's file tools.
var filePath = []string{"file_path"}

// builtins are Claude Code's tools, as its documentation gives their input.
var builtins = map[string]builtin{
	"Bash": {kind: "shell_exec", named: same, native: fields(map[string]string{"command": "command"}, "cwd")},
	"Read": {kind: "files_read", paths: filePath, named: same, native: fields(map[string]string{"path": "file_path"}, "")},
	"Write": {kind: "files_write", paths: filePath, named: same,
		native: fields(map[string]string{"path": "file_path", "content": "content"}, "")},
	"Edit": {kind: "files_edit", paths: filePath, named: same,
		native: fields(map[string]string{"path": "file_path", "old": "old_string", "new": "new_string"}, "")},
	"MultiEdit": {kind: "files_edit", alias: "Edit", paths: filePath, named: multiEdit(false), native: multiEdit(true)},
	"Glob": {kind: "files_find", paths: []string{"path"}, named: withPath("path"),
		native: fields(map[string]string{"path": "path", "pattern": "pattern"}, "path")},
	"Grep": {kind: "files_search", paths: []string{"path"}, named: withPath("path"),
		native: fields(map[string]string{"path": "path", "query": "pattern"}, "path")},
	"WebFetch":  {kind: "net_fetch", named: same, native: fields(map[string]string{"url": "url"}, "")},
	"WebSearch": {kind: "net_search", named: same, native: fields(map[string]string{"query": "query"}, "")},
	// A notebook cell's edit writes the notebook file.
	"NotebookEdit": {kind: "files_write", alias: "Write", paths: []string{"notebook_path"},
		named:  rename(map[string]string{"file_path": "notebook_path", "content": "new_source"}),
		native: fields(map[string]string{"path": "notebook_path", "content": "new_source"}, "")},
	// A subagent works in the project: its root is the session's directory; Claude Code's
	// subagent_type is not a Warden profile, so no profile is named.
	"Task": {kind: "spawn_subagent", named: subagent, native: subagent},
}

// subagent is a Task as spawn_subagent's input, under any name: Claude Code's Task has no
// field for the root.
func subagent(in map[string]any, cwd string) ([]map[string]any, error) {
	out := map[string]any{"root": cwd}
	if v, ok := in["prompt"]; ok {
		out["task"] = v
	}
	return []map[string]any{out}, nil
}

// Map returns the calls Warden reviews for a Claude Code tool call in the directory cwd.
// The call is allowed only when every one of them is. An error is an *UnknownToolError, or
// an input that does not have the shape Claude Code documents, naming the field.
func Map(tool string, input map[string]any, cwd string, declared Declared) ([]Call, error) {
	b, known := builtins[tool]
	if !known {
		// An MCP tool (mcp__server__tool) is the connector's tool of that name, and a policy may
		// declare a built-in under any other name Claude Code uses: review it as given.
		if _, ok := declared(tool); ok {
			return []Call{{Tool: tool, Input: maps.Clone(input)}}, nil
		}
		return nil, &UnknownToolError{Tool: tool}
	}
	name, conv := b.kind, b.native
	alias := tool
	if b.alias != "" {
		alias = b.alias
	}
	if kind, ok := declared(alias); ok && kind == b.kind {
		name, conv = alias, b.named
	}
	if len(b.paths) > 0 {
		input = maps.Clone(input)
		for _, f := range b.paths {
			if p, ok := input[f].(string); ok && p != "" && !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") {
				input[f] = filepath.Join(cwd, p)
			}
		}
	}
	inputs, err := conv(input, cwd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	calls := make([]Call, len(inputs))
	for i, in := range inputs {
		calls[i] = Call{Tool: name, Input: in}
	}
	return calls, nil
}

// same reviews the input as it is.
func same(in map[string]any, _ string) ([]map[string]any, error) {
	return []map[string]any{maps.Clone(in)}, nil
}

// withPath reviews the input with field set to cwd when Claude Code left it out (Glob and Grep
// search the session's directory then).
func withPath(field string) func(map[string]any, string) ([]map[string]any, error) {
	return func(in map[string]any, cwd string) ([]map[string]any, error) {
		out := maps.Clone(in)
		if v, ok := out[field]; !ok || v == nil || v == "" {
			out[field] = cwd
		}
		return []map[string]any{out}, nil
	}
}

// rename reviews the input under other field names: to[new] = in[old].
func rename(to map[string]string) func(map[string]any, string) ([]map[string]any, error) {
	return func(in map[string]any, _ string) ([]map[string]any, error) {
		out := map[string]any{}
		for nw, old := range to {
			if v, ok := in[old]; ok {
				out[nw] = v
			}
		}
		return []map[string]any{out}, nil
	}
}

// fields maps Claude Code's fields onto a native kind's roles (role: field), adding cwd under
// the role cwdRole when the input does not give it.
func fields(roles map[string]string, cwdRole string) func(map[string]any, string) ([]map[string]any, error) {
	return func(in map[string]any, cwd string) ([]map[string]any, error) {
		out := map[string]any{}
		for role, field := range roles {
			if v, ok := in[field]; ok {
				out[role] = v
			}
		}
		if cwdRole != "" {
			if v, ok := out[cwdRole]; !ok || v == nil || v == "" {
				out[cwdRole] = cwd
			}
		}
		return []map[string]any{out}, nil
	}
}

// multiEdit is one edit per entry of MultiEdit's edits, as Edit's input (native false) or
// files_edit's (native true).
func multiEdit(native bool) func(map[string]any, string) ([]map[string]any, error) {
	return func(in map[string]any, _ string) ([]map[string]any, error) {
		list, ok := in["edits"].([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("edits must be a non-empty list of {old_string, new_string}, not %s", describe(in["edits"]))
		}
		out := make([]map[string]any, 0, len(list))
		for i, raw := range list {
			ed, ok := raw.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("edits[%d] must be an object {old_string, new_string}, not %s", i, describe(raw))
			}
			if native {
				out = append(out, map[string]any{"path": in["file_path"], "old": ed["old_string"], "new": ed["new_string"]})
			} else {
				out = append(out, map[string]any{"file_path": in["file_path"], "old_string": ed["old_string"], "new_string": ed["new_string"]})
			}
		}
		return out, nil
	}
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "missing"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// IsMCP reports whether the tool is an MCP server's, as Claude Code names them
// (mcp__<server>__<tool>), and of which server.
func IsMCP(tool string) (server string, ok bool) {
	rest, ok := strings.CutPrefix(tool, "mcp__")
	if !ok {
		return "", false
	}
	server, _, ok = strings.Cut(rest, "__")
	return server, ok && server != ""
}
