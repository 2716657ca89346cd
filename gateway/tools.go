package gateway

import (
	"github.com/wardenhq/warden/policy"
)

// The input schemas of Warden's own tools: each input role of the tool's kind, under the
// field name the tool uses (Read takes file_path), with what it means.
var roleDescriptions = map[string]string{
	"path":              "A path, relative to the workspace or absolute inside it.",
	"pattern":           "A glob pattern (doublestar: ** matches any number of directories).",
	"query":             "What to search for: a regular expression, or text.",
	"content":           "The whole content to write.",
	"old":               "The exact text to replace; it must occur exactly once.",
	"new":               "The text to put in its place.",
	"patch":             "A unified or git diff.",
	"cwd":               "The working directory, relative to the workspace.",
	"command":           "A shell command (bash).",
	"protectedBindings": "Environment variables for the command whose values are protected handles (protected://...), resolved for this process only.",
	"root":              "The directory the subagent works in.",
	"profile":           "The saved profile the subagent runs.",
	"task":              "What the subagent is asked to do.",
	"url":               "An http or https URL.",
	"host":              "The host the sandbox should reach: a name (example.com), *.domain, a public IP address, or a CIDR narrower than /8.",
	"reason":            "Why the command needs it, shown to the person who answers.",
}

// requiredRoles are the inputs a call of each kind must give.
var requiredRoles = map[string][]string{
	"files_read":     {"path"},
	"files_list":     {"path"},
	"files_find":     {"pattern"},
	"files_search":   {"query"},
	"files_inspect":  {"path"},
	"files_write":    {"path", "content"},
	"files_edit":     {"path", "old", "new"},
	"files_patch":    {"patch"},
	"files_delete":   {"path"},
	"shell_exec":     {"command"},
	"spawn_subagent": {"root", "task"},
	"net_fetch":      {"url"},
	"net_search":     {"query"},
	kindAllowHost:    {"host"},
}

// kindDescriptions say what each kind does, for tools that do not say themselves.
var kindDescriptions = map[string]string{
	"files_read":     "Read a file of the workspace.",
	"files_list":     "List a directory of the workspace.",
	"files_find":     "Find files of the workspace by glob pattern.",
	"files_search":   "Search the contents of the workspace's files.",
	"files_inspect":  "Describe a file: type, size, mode, time, link target.",
	"files_write":    "Write a file of the workspace (whole content).",
	"files_edit":     "Replace one exact piece of text in a file.",
	"files_patch":    "Apply a unified or git diff in the workspace.",
	"files_delete":   "Delete a file, or an empty directory.",
	"shell_exec":     "Run a shell command in the workspace.",
	"spawn_subagent": "Start a subagent with a narrower set of tools: returns a session token for it.",
	"git_status":     "git status of the workspace.",
	"git_diff":       "git diff of the workspace.",
	"net_fetch":      "Fetch a URL.",
	"net_search":     "Search the web.",
	kindAllowHost: "Ask a person to let this session's sandboxed commands reach a host that is not on the egress allowlist. " +
		"The person may allow it once (this session), for the whole tenant (saved), or not at all; a yes takes effect at once. " +
		"host is one egress allowlist entry: a name, *.domain, an IP address or a CIDR, with :port for a port other than 80 and 443 (git.example.com:22). " +
		"Private, loopback, link-local and metadata addresses, this host's own addresses and whole public suffixes (*.github.io) can never be allowed.",
}

// nativeSchema is the JSON Schema of a built-in tool's input.
func nativeSchema(t *policy.Tool) map[string]any {
	props := map[string]any{}
	var required []string
	for _, role := range policy.KindInputs[t.Kind] {
		field, ok := t.Input[role]
		if !ok {
			continue
		}
		prop := map[string]any{"type": "string", "description": roleDescriptions[role]}
		if role == "protectedBindings" {
			prop = map[string]any{"type": "object", "description": roleDescriptions[role],
				"additionalProperties": map[string]any{"type": "string", "pattern": "^protected://"}}
		}
		props[field] = prop
	}
	for _, role := range requiredRoles[t.Kind] {
		if field, ok := t.Input[role]; ok {
			required = append(required, field)
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	return schema
}

func nativeDescription(t *policy.Tool) string {
	if t.Description != "" {
		return t.Description
	}
	return kindDescriptions[t.Kind]
}
