package action_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
)

func TestDigest(t *testing.T) {
	a := action.Digest("files_write", map[string]any{"path": "a", "content": "x", "n": 1.0, "l": []any{"a", true, nil}})
	b := action.Digest("files_write", map[string]any{"l": []any{"a", true, nil}, "n": 1.0, "content": "x", "path": "a"})
	if a != b {
		t.Error("the digest depends on the order of the keys")
	}
	for _, other := range []string{
		action.Digest("files_edit", map[string]any{"path": "a", "content": "x", "n": 1.0, "l": []any{"a", true, nil}}),
		action.Digest("files_write", map[string]any{"path": "a", "content": "x", "n": "1", "l": []any{"a", true, nil}}),
		action.Digest("files_write", map[string]any{"path": "a", "content": "x", "n": 1.0, "l": []any{"a", true}}),
		action.Digest("files_write", map[string]any{"path": "ax", "content": "", "n": 1.0, "l": []any{"a", true, nil}}),
		action.Digest("files_write", map[string]any{"path": "a", "content": "x", "n": 1.0, "l": []any{[]any{"a"}, true, nil}}),
	} {
		if other == a {
			t.Error("two different calls share a digest")
		}
	}
}

func quickstartTool(t *testing.T, name string) *policy.Tool {
	t.Helper()
	p, err := policy.Parse("quickstart.yaml", examples.Quickstart)
	if err != nil {
		t.Fatal(err)
	}
	tool, ok := p.Tool(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tool
}

func TestNormalize(t *testing.T) {
	dir := tree(t)
	ws := dir + "/ws"
	if err := os.WriteFile(ws+"/src/file.txt", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &action.Resolver{Root: ws, Home: dir + "/home/u"}
	tests := []struct {
		name     string
		tool     string
		args     map[string]any
		effects  []action.Effect
		problems []string
		unknowns int
	}{
		{name: "Read takes file_path", tool: "Read", args: map[string]any{"file_path": "abs/key"},
			effects: []action.Effect{{Op: action.OpRead, Path: dir + "/etc/secret/key"}}},
		{name: "Glob reads the pattern's literal directory, recursively", tool: "Glob", args: map[string]any{"pattern": "src/**/*.go"},
			effects: []action.Effect{{Op: action.OpRead, Path: ws + "/src", Recursive: true}}},
		{name: "Glob with an absolute pattern", tool: "Glob", args: map[string]any{"pattern": "/etc/*.conf", "path": "src"},
			effects: []action.Effect{{Op: action.OpRead, Path: "/etc", Recursive: true}}},
		{name: "Write without its path", tool: "Write", args: map[string]any{"content": "x"},
			problems: []string{action.ProblemInput}},
		{name: "a path that is not a string", tool: "files_read", args: map[string]any{"path": 3.0},
			problems: []string{action.ProblemInput}},
		{name: "a loop of links", tool: "files_read", args: map[string]any{"path": "loop1/x"},
			problems: []string{action.ProblemPath}},
		{name: "a recursive delete of a plain file is plain", tool: "Bash", args: map[string]any{"command": "rm -r src/file.txt"},
			effects: []action.Effect{{Op: action.OpExecute, Path: ws}, {Op: action.OpDelete, Path: ws + "/src/file.txt"}}},
		{name: "a recursive delete of a directory stays recursive", tool: "Bash", args: map[string]any{"command": "rm -r src"},
			effects: []action.Effect{{Op: action.OpExecute, Path: ws}, {Op: action.OpDelete, Path: ws + "/src", Recursive: true}}},
		{name: "a shell glob expands", tool: "Bash", args: map[string]any{"command": "cat src/*.txt"},
			effects: []action.Effect{{Op: action.OpExecute, Path: ws}, {Op: action.OpRead, Path: ws + "/src"}, {Op: action.OpRead, Path: ws + "/src/file.txt"}}},
		{name: "a patch that makes a symbolic link asks", tool: "files_patch",
			args:     map[string]any{"patch": "diff --git a/l b/l\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n"},
			effects:  []action.Effect{{Op: action.OpWrite, Path: ws + "/l"}},
			unknowns: 1},
		{name: "a plain diff naming two files writes both", tool: "files_patch",
			args:    map[string]any{"patch": "--- src/old.txt\n+++ src/new.txt\n@@ -1 +1 @@\n-a\n+b\n"},
			effects: []action.Effect{{Op: action.OpWrite, Path: ws + "/src/new.txt"}, {Op: action.OpWrite, Path: ws + "/src/old.txt"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := action.Normalize(quickstartTool(t, tt.tool), tt.args, action.Context{Resolver: r})
			var problems []string
			for _, p := range a.Problems {
				problems = append(problems, p.Code)
			}
			if !slices.Equal(problems, tt.problems) {
				t.Errorf("problems %+v; want %v", a.Problems, tt.problems)
			}
			if tt.problems == nil {
				if diff := cmp.Diff(tt.effects, a.Effects); diff != "" {
					t.Errorf("effects (-want +got):\n%s", diff)
				}
			}
			if len(a.Unknowns) != tt.unknowns {
				t.Errorf("unknowns %+v; want %d", a.Unknowns, tt.unknowns)
			}
			if a.Digest != action.Digest(tt.tool, tt.args) {
				t.Error("the action's digest is not the call's")
			}
		})
	}
}

func TestNormalizeConnectorCall(t *testing.T) {
	p, err := policy.Parse("scout.yaml", examples.Scout)
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := p.Tool("mcp__shopify__shopify_admin_graphql")
	a := action.Normalize(tool, map[string]any{"query": "{ shop { name } }"}, action.Context{})
	if a.Kind != action.KindConnectorCall || a.Server != "shopify" || len(a.Effects) != 0 || len(a.Problems) != 0 {
		t.Errorf("%+v", a)
	}
}

func TestNormalizeWithoutWorkspace(t *testing.T) {
	a := action.Normalize(quickstartTool(t, "files_read"), map[string]any{"path": "x"}, action.Context{})
	if len(a.Problems) != 1 || a.Problems[0].Code != action.ProblemPath {
		t.Errorf("no workspace: %+v; want a path problem", a.Problems)
	}
}

// TestNormalizeAllowHost checks the host a sandbox_allow_host call asks for: one egress
// allowlist entry the list would take, in its canonical spelling; anything a yes could never
// add (a list, a private, loopback or metadata address, a whole public suffix) is a problem, so
// the review denies it before a person is asked.
func TestNormalizeAllowHost(t *testing.T) {
	r := &action.Resolver{Root: t.TempDir()}
	tool := quickstartTool(t, "sandbox_allow_host")
	tests := []struct {
		give any
		want string // the canonical entry; empty: a problem
		why  string // a part of the problem's detail
	}{
		{give: "example.com", want: "example.com"},
		{give: "Example.COM.", want: "example.com"},
		{give: "*.example.org", want: "*.example.org"},
		{give: "api.github.com", want: "api.github.com"},
		{give: "8.8.8.8", want: "8.8.8.8"},
		{give: "203.0.113.7", want: "203.0.113.7"}, // documentation ranges are listable
		{give: "198.51.100.0/24", want: "198.51.100.0/24"},
		{give: "2001:db8::/48", want: "2001:db8::/48"},
		{give: "[2606:4700::1111]", want: "2606:4700::1111"},
		{give: "bücher.example", want: "xn--bcher-kva.example"},
		{give: "octocat.github.io", want: "octocat.github.io"}, // one registrant below a suffix
		// A port other than 80 and 443 is asked for as host:port.
		{give: "Git.Example.com:22", want: "git.example.com:22"},
		{give: "*.example.org:8443", want: "*.example.org:8443"},
		{give: "[2001:db8::1]:8443", want: "[2001:db8::1]:8443"},
		{give: "203.0.113.0/24:8443", want: "203.0.113.0/24:8443"},

		{give: "169.254.169.254", why: `host "169.254.169.254" cannot be allowed: never allowed: 169.254.169.254 is cloud instance metadata`},
		{give: "127.1", why: `host "127.1" cannot be allowed: never allowed: 127.0.0.1 is loopback`},
		{give: "localhost", why: "never allowed"},
		{give: "metadata.google.internal", why: "never allowed"},
		{give: "10.0.0.0/8", why: `host "10.0.0.0/8" cannot be allowed: never allowed: it lies in 10.0.0.0/8, private (RFC 1918)`},
		{give: "192.168.1.10", why: "never allowed"},
		{give: "::1", why: "never allowed"},
		{give: "fd00::/8", why: "never allowed"},
		{give: "a.com,b.com", why: `host "a.com,b.com" must be one host, not a list`},
		{give: "a.com b.com", why: "must be one host, not a list"},
		{give: "a.com,a.com", why: "must be one host, not a list"},
		{give: " example.com", why: "must be one host, not a list"},
		{give: "", why: "sandbox_allow_host: host is empty"},
		{give: nil, why: "sandbox_allow_host needs host"},
		{give: 3.0, why: "host must be a string"},
		{give: "*.com", why: `host "*.com" cannot be allowed: too broad`},
		{give: "*.co.uk", why: "too broad: co.uk is a public suffix"},
		{give: "*.github.io", why: `host "*.github.io" cannot be allowed: too broad: github.io is a public suffix (private section): anyone can register names under it`},
		{give: "*.ngrok.io", why: "ngrok.io is a public suffix (private section)"},
		{give: "*.workers.dev", why: "workers.dev is a public suffix (private section)"},
		{give: "*.trycloudflare.com", why: "trycloudflare.com is a public suffix (private section)"},
		{give: "*.amazonaws.com", why: "below amazonaws.com lies the public suffix s3.amazonaws.com (private section)"},
		{give: "github.io", why: "github.io is a public suffix (private section)"},
		{give: "*", why: "too broad"},
		{give: "8.0.0.0/8", why: "too broad"},
		{give: "https://example.com/x", why: "malformed entry: an entry is a host"},
		{give: "example.com:0", why: "malformed entry: port \"0\" is not a number from 1 to 65535"},
		{give: "*.github.io:8443", why: "github.io is a public suffix (private section)"},
		{give: "exa mple", why: "must be one host"},
		{give: "foo*.example.com", why: "malformed entry"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.give), func(t *testing.T) {
			args := map[string]any{"reason": "the build downloads from it"}
			if tt.give != nil {
				args["host"] = tt.give
			}
			a := action.Normalize(tool, args, action.Context{Resolver: r})
			if a.Kind != "sandbox_allow_host" || len(a.Effects) != 0 || a.Inputs["reason"] != "the build downloads from it" {
				t.Errorf("action %+v", a)
			}
			if tt.want != "" {
				if len(a.Problems) != 0 || a.Inputs["host"] != tt.want {
					t.Errorf("host %q, problems %+v; want %q and no problem", a.Inputs["host"], a.Problems, tt.want)
				}
				return
			}
			if len(a.Problems) != 1 || a.Problems[0].Code != action.ProblemInput || !strings.Contains(a.Problems[0].Detail, tt.why) {
				t.Errorf("problems %+v; want one %s mentioning %q", a.Problems, action.ProblemInput, tt.why)
			}
		})
	}

	// The reason may be left out.
	a := action.Normalize(tool, map[string]any{"host": "example.com"}, action.Context{Resolver: r})
	if len(a.Problems) != 0 || a.Inputs["host"] != "example.com" {
		t.Errorf("without a reason: %+v", a)
	}
}
