package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/sandbox"
)

type execOptions struct {
	workspace string
	allowlist string
	mode      string
	hidden    []string
	readOnly  []string
	vars      []string
	timeout   time.Duration
	maxOutput int64
	maxProcs  int
	noSandbox bool
}

func newExecCmd() *cobra.Command {
	o := &execOptions{}
	cmd := &cobra.Command{
		Use:   "exec --workspace DIR [--allowlist ...] [--mode allowlist|open] -- CMD ARGS...",
		Short: "Run one command in the sandbox",
		Long: `Run CMD in Warden's sandbox: Landlock lets it write only DIR (and a private TMPDIR), read
the system's programs and libraries, and not read hidden paths; it runs with no_new_privs in
fresh network and PID namespaces whose only way out is an egress proxy started here for the
allowlist (HTTP_PROXY and HTTPS_PROXY point at it). Everything it starts is killed when it
ends. See docs/sandbox.md and docs/egress.md.

The list is --allowlist if given, else SANDBOX_EGRESS_ALLOWLIST, else the default list; the mode
is --mode if given, else SANDBOX_EGRESS. The command's environment is PATH, TERM, LANG and LC_ALL
from here, plus each --setenv.

The exit status is the command's (128+N when signal N ended it, 124 at the time limit); if the
sandbox cannot be applied the command does not run and the status is 125.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.workspace, "workspace", "", "the directory the command runs in and may write (required)")
	f.StringVar(&o.allowlist, "allowlist", "", "the egress allowlist, entries separated by commas or spaces (default: SANDBOX_EGRESS_ALLOWLIST, else the default list)")
	f.StringVar(&o.mode, "mode", "", "allowlist or open (default: SANDBOX_EGRESS, else allowlist)")
	f.StringArrayVar(&o.hidden, "hidden", nil, "a path the command may not read (repeatable)")
	f.StringArrayVar(&o.readOnly, "read-only", nil, "a further path the command may read and execute (repeatable)")
	f.StringArrayVar(&o.vars, "setenv", nil, "KEY=VALUE for the command's environment (repeatable)")
	f.DurationVar(&o.timeout, "timeout", sandbox.DefaultTimeout, "the time limit")
	f.Int64Var(&o.maxOutput, "max-output", sandbox.DefaultMaxOutput, "bytes of output passed on, stdout and stderr together")
	f.IntVar(&o.maxProcs, "max-procs", sandbox.DefaultMaxProcs, "processes and threads the command's tree may hold at once, where a cgroup can hold it (-1: no limit)")
	f.BoolVar(&o.noSandbox, "no-sandbox", false, "run the command unconfined (the operator's explicit choice; says so on stderr)")
	_ = cmd.MarkFlagRequired("workspace")
	return cmd
}

func (o *execOptions) run(cmd *cobra.Command, args []string) error {
	lookup := os.LookupEnv
	var err error
	var opts egress.Options
	modeRaw, _ := lookup(egress.EnvMode)
	if cmd.Flags().Changed("mode") {
		if o.mode == "" {
			return fmt.Errorf("--mode %q: want allowlist or open", o.mode)
		}
		modeRaw = o.mode
	}
	if opts.Mode, err = egress.ParseMode(modeRaw); err != nil {
		if cmd.Flags().Changed("mode") {
			return fmt.Errorf("--mode %q: want allowlist or open", o.mode)
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "warden exec:", err)
	}
	list, source := o.allowlist, "--allowlist"
	if !cmd.Flags().Changed("allowlist") {
		list, source = "", egress.EnvAllowlist
		if v, ok := lookup(egress.EnvAllowlist); ok {
			list = v
		}
	}
	if list != "" {
		if opts.Allowlist, err = egress.ParseAllowlist(list); err != nil {
			return listErrors(cmd, source, err)
		}
	}
	for _, kv := range o.vars {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("--setenv %q: want KEY=VALUE", kv)
		}
	}
	proxy, err := egress.NewProxy(egress.New(opts), egress.ProxyOptions{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	ln := sandbox.NewListener()
	go proxy.Serve(ctx, ln)
	defer proxy.Close()

	var env []string
	for _, k := range []string{"PATH", "TERM", "LANG", "LC_ALL"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, o.vars...)
	if o.noSandbox {
		fmt.Fprintln(cmd.ErrOrStderr(), "warden exec: the sandbox is OFF (--no-sandbox): the command runs unconfined, with the network of this host")
	}
	res, err := sandbox.Run(ctx, sandbox.Spec{
		Workspace: o.workspace, Command: args, Env: env, Hidden: o.hidden, ReadOnly: o.readOnly,
		Proxy: ln.Handle, Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
		Timeout: o.timeout, MaxOutput: o.maxOutput, MaxProcs: o.maxProcs, Unconfined: o.noSandbox,
	})
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), "warden exec:", err)
		if errors.Is(err, sandbox.ErrUnavailable) {
			fmt.Fprintln(cmd.ErrOrStderr(), "warden exec: the command did not run")
		}
		return &exitError{code: 125}
	}
	if res.ProcessLimitHit {
		fmt.Fprintf(cmd.ErrOrStderr(), "warden exec: a fork was refused at the process limit (%d)\n", res.ProcessLimit)
	}
	if res.Truncated {
		fmt.Fprintf(cmd.ErrOrStderr(), "\nwarden exec: output cut at %d bytes\n", o.maxOutput)
	}
	switch {
	case res.TimedOut:
		fmt.Fprintf(cmd.ErrOrStderr(), "warden exec: killed at the time limit (%s)\n", o.timeout)
		return &exitError{code: 124}
	case res.SignalNumber != 0:
		return &exitError{code: 128 + res.SignalNumber}
	case res.ExitCode != 0:
		return &exitError{code: res.ExitCode}
	}
	return nil
}
