package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/sandbox"
)

// sandboxFlags are serve's and mcp's flags for the sandbox of shell_exec, of git, and of connectors
// marked sandbox: true.
type sandboxFlags struct {
	off      bool
	readOnly []string
	hidden   []string
}

func (f *sandboxFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.off, "no-sandbox", false, "run shell_exec's commands, the git of git_status, git_diff and files_patch, and connectors marked sandbox: true, UNSANDBOXED, as this user with this host's network (the operator's explicit choice; the banner and /readyz say so)")
	fl.StringArrayVar(&f.readOnly, "sandbox-read-only", nil, "a further path sandboxed commands may read and execute, e.g. a toolchain in /opt (repeatable)")
	fl.StringArrayVar(&f.hidden, "sandbox-hidden", nil, "a path sandboxed commands may not read, besides Warden's database and other tenants' workspaces (repeatable)")
}

// sandboxState is what shell_exec's commands and the git tools' git run under, decided once at start-up: for the
// gateway, the banner and /readyz.
type sandboxState struct {
	// native is the executor's sandbox (its proxy is set per session by the gateway).
	native native.Sandbox
	// unavailable is why the sandbox cannot be applied here (nil when it can, or is off).
	unavailable error
	// procLimit is the process limit a command runs under (0: no cgroup can hold one here).
	procLimit int
	// egress is SANDBOX_EGRESS and SANDBOX_EGRESS_ALLOWLIST as read. A mode that is neither
	// open nor allowlist counts as allowlist; the policy's switch report says so.
	egress egress.Settings
}

// setup reads the egress switches and tries the sandbox once. A SANDBOX_EGRESS_ALLOWLIST with
// a bad entry is an error: the server does not start on a list it would not enforce as
// written. hidden are paths of Warden's own to hide (its database).
func (f *sandboxFlags) setup(ctx context.Context, lookup func(string) (string, bool), hidden []string) (*sandboxState, error) {
	st := &sandboxState{native: native.Sandbox{Off: f.off}}
	settings, err := egress.FromEnv(lookup)
	var le egress.ListError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("%s: %w", egress.EnvAllowlist, le)
	}
	st.egress = settings
	for _, p := range f.readOnly {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("--sandbox-read-only %q: want an absolute path", p)
		}
	}
	for _, p := range f.hidden {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("--sandbox-hidden %q: want an absolute path", p)
		}
	}
	st.native.ReadOnly = f.readOnly
	st.native.Hidden = append(append([]string(nil), f.hidden...), hidden...)
	if !f.off {
		res, err := sandbox.Probe(ctx)
		st.procLimit, st.unavailable = res.ProcessLimit, err
	}
	return st, nil
}

// catalog is the sandbox warden pin and warden discover start a connector marked
// sandbox: true in, as warden serve with the same flags would.
func (f *sandboxFlags) catalog(ctx context.Context) (gateway.CatalogSandbox, error) {
	st, err := f.setup(ctx, os.LookupEnv, nil)
	if err != nil {
		return gateway.CatalogSandbox{}, err
	}
	return gateway.CatalogSandbox{Native: st.native, Egress: st.checker()}, nil
}

// checker is what each session's egress proxy enforces.
func (st *sandboxState) checker() *egress.Checker { return egress.New(st.egress.Options()) }

// summary is the sandbox's state in a few words, for /readyz.
func (st *sandboxState) summary() string {
	switch {
	case st.native.Off:
		return "off: the operator turned it off (--no-sandbox); shell_exec runs commands, and the git tools git, unsandboxed"
	case st.unavailable != nil:
		return "unavailable: shell_exec refuses to run commands, and the git tools git (" + st.unavailable.Error() + ")"
	}
	return "on"
}

// egressSummary names the egress mode and list, for the banner and /readyz.
func (st *sandboxState) egressSummary() string {
	if st.egress.Mode == egress.ModeOpen {
		return "open: any public address on ports 80 and 443 (never private, loopback, link-local, metadata or this host's own ones), and no sandbox_allow_host cards"
	}
	list := "the default list"
	if st.egress.Replaced {
		list = egress.EnvAllowlist
	}
	return fmt.Sprintf("allowlist: %d entries from %s, plus the hosts a person allows (sandbox_allow_host)", len(st.egress.Allowlist.Entries()), list)
}
