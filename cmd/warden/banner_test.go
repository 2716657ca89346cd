package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
)

// The banner says what shell_exec's commands run under (sandbox on, off by the operator's
// choice, or unavailable), the egress mode and list, and an unknown SANDBOX_EGRESS value.
func TestBannerReportsTheSandboxAndEgress(t *testing.T) {
	p, err := policy.Parse("quickstart.yaml", examples.Quickstart)
	if err != nil {
		t.Fatal(err)
	}
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	show := func(f sandboxFlags, lookup func(string) (string, bool), unavailable error) string {
		t.Helper()
		sb, err := f.setup(context.Background(), lookup, []string{"/srv/warden/w.db"})
		if err != nil {
			t.Fatal(err)
		}
		if !f.off {
			sb.unavailable = unavailable // the probe's own answer depends on this machine
		}
		var b strings.Builder
		banner(&b, p, p.Env(lookup), "sqlite w.db", "127.0.0.1:1", "/ws", sb)
		return b.String()
	}
	tests := []struct {
		name        string
		flags       sandboxFlags
		env         func(string) (string, bool)
		unavailable error
		want, not   []string
	}{
		{"on, the default list", sandboxFlags{}, env(), nil,
			[]string{"warden: sandbox on: shell_exec runs each command under Landlock", "warden: egress allowlist: ", "entries from the default list, plus the hosts a person allows (sandbox_allow_host)"},
			[]string{"SANDBOX OFF", "UNAVAILABLE", "switch: SANDBOX_EGRESS"}},
		{"approvals on: the banner names what asks", sandboxFlags{}, env(), nil,
			[]string{"warden: approvals are on (REQUIRE_WRITE_APPROVAL): a person is asked before files_patch (calls that delete), files_delete, shell_exec (calls that delete), sandbox_allow_host, Bash (calls that delete)"},
			[]string{"approvals are OFF"}},
		{"approvals off", sandboxFlags{}, env("REQUIRE_WRITE_APPROVAL", "no"), nil,
			[]string{"warden: approvals are OFF (", "gated calls run unasked: files_patch (calls that delete), files_delete"},
			[]string{"approvals are on"}},
		{"off by the operator", sandboxFlags{off: true}, env(), nil,
			[]string{"warden: SANDBOX OFF (--no-sandbox): shell_exec runs commands UNSANDBOXED"},
			[]string{"sandbox on"}},
		{"unavailable", sandboxFlags{}, env(), errors.New("sandbox: cannot be applied: Landlock ABI 0"),
			[]string{"warden: SANDBOX UNAVAILABLE: sandbox: cannot be applied: Landlock ABI 0", "shell_exec refuses to run commands", "--no-sandbox"},
			[]string{"sandbox on"}},
		{"a mode typo", sandboxFlags{}, env("SANDBOX_EGRESS", "closed"), nil,
			[]string{`warden: switch: SANDBOX_EGRESS="closed" is not one of its modes (allowlist, open), so it counts as "allowlist"`, "warden: egress allowlist: "},
			nil},
		{"open in any case", sandboxFlags{}, env("SANDBOX_EGRESS", "OPEN"), nil,
			[]string{"warden: egress open: any public address", "no sandbox_allow_host cards"},
			[]string{"switch: SANDBOX_EGRESS"}},
		{"a replaced list", sandboxFlags{}, env("SANDBOX_EGRESS_ALLOWLIST", "example.com, *.example.org"), nil,
			[]string{"warden: egress allowlist: 2 entries from SANDBOX_EGRESS_ALLOWLIST"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := show(tt.flags, tt.env, tt.unavailable)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("the banner lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("the banner says %q:\n%s", n, out)
				}
			}
		})
	}
}

// A SANDBOX_EGRESS_ALLOWLIST with a bad entry, or a relative sandbox path, stops the start
// with the entry's position: the server does not run on a list it would not enforce as written.
func TestSandboxSetupRefusesBadSettings(t *testing.T) {
	lookup := func(list string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == "SANDBOX_EGRESS_ALLOWLIST" {
				return list, true
			}
			return "", false
		}
	}
	tests := []struct {
		flags sandboxFlags
		list  string
		want  string
	}{
		{sandboxFlags{}, "example.com, 10.0.0.0/8", `SANDBOX_EGRESS_ALLOWLIST: allowlist entry 2 ("10.0.0.0/8"): never allowed`},
		{sandboxFlags{}, "*.com", `SANDBOX_EGRESS_ALLOWLIST: allowlist entry 1 ("*.com")`},
		{sandboxFlags{readOnly: []string{"opt/tools"}}, "", `--sandbox-read-only "opt/tools": want an absolute path`},
		{sandboxFlags{hidden: []string{"secrets"}}, "", `--sandbox-hidden "secrets": want an absolute path`},
	}
	for _, tt := range tests {
		_, err := tt.flags.setup(context.Background(), lookup(tt.list), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("setup(%+v, %q) = %v, want an error holding %q", tt.flags, tt.list, err, tt.want)
		}
	}
}

// The banner says how many hard blocks the policy gives every tenant, and each tenant that
// has more, and how an operator adds rules.
func TestBannerReportsHardBlocks(t *testing.T) {
	quick, err := policy.Parse("quickstart.yaml", examples.Quickstart)
	if err != nil {
		t.Fatal(err)
	}
	none, err := policy.Parse("none.yaml", []byte("version: 1\nbuiltins: [{name: files_read}]\ntenants: [{id: acme}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	more, err := policy.Parse("more.yaml", []byte(`version: 1
builtins: [{name: files_read}]
boundaries:
  version: 1
  hardBlocks:
    - {id: dotenv, enabled: true, type: path, pattern: "**/.env", match: glob, operations: [read]}
    - {id: off, enabled: false, type: path, pattern: "/srv/", match: prefix, operations: [read]}
tenants:
  - id: acme
    boundaries:
      version: 1
      hardBlocks:
        - {id: srv, enabled: true, type: path, pattern: "/srv/", match: prefix, operations: [write]}
  - id: other
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		p    *policy.Policy
		want string
	}{
		{quick, "12 rules from the policy for every tenant; a tenant's stored rules add to them"},
		{none, "none in the policy for every tenant; a tenant's stored rules add to them"},
		{more, "1 rule from the policy for every tenant, 2 for tenant acme; a tenant's stored rules add to them"},
	}
	for _, tt := range tests {
		if got := hardBlocksSummary(tt.p); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: hardBlocksSummary = %q; want it to begin %q", tt.p.File, got, tt.want)
		}
	}
}
