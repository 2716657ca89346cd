package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/sandbox"
)

type execOptions struct {
	workspace  string
	allowlist  string
	mode       string
	hidden     []string
	readOnly   []string
	vars       []string
	timeout    time.Duration
	maxOutput  int64
	maxProcs   int
	noSandbox  bool
	boundaries string
}

func newExecCmd() *cobra.Command {
	o := &execOptions{}
	cmd := &cobra.Command{
		Use:   "exec --workspace DIR [--allowlist ...] [--mode allowlist|open] [--boundaries FILE] -- CMD ARGS...",
		Short: "Run one command in the sandbox",
		Long: `Run CMD in Warden's sandbox: it sees a file system of its own (DIR read-write, the system's
programs and libraries, the directories of PATH and --read-only paths read-only, a private
/tmp, /run and /dev; hidden paths unreadable; nothing else of this host, no socket of it),
with no_new_privs and no capabilities, in fresh network and PID namespaces whose only way out
is an egress proxy started here for the allowlist (HTTP_PROXY and HTTPS_PROXY point at it), in
a session of its own with no controlling terminal. Everything it starts is killed when it
ends. See docs/sandbox.md and docs/egress.md.

With --boundaries FILE (BURROW's stored format, {"version":1,"hardBlocks":[...]}, as warden
review takes it), the hard blocks are enforced on the command at the system call: every file
it or anything it starts opens, creates, removes, renames, links, changes or runs is checked
first, and a refused call fails with "Permission denied". Each refusal is listed on stderr
after the command ends. A file that does not validate is a usage error; where the kernel
cannot enforce the rules (seccomp user notification, Linux 5.14 or later), the command does
not run.

The list is --allowlist if given, else SANDBOX_EGRESS_ALLOWLIST, else the default list; the mode
is --mode if given, else SANDBOX_EGRESS. The command's environment is PATH, TERM, LANG and
LC_ALL from here, HOME set to DIR, and each --setenv (which wins). A relative DIR is taken
from the current directory.

The exit status is the command's (128+N when signal N ended it, 124 at the time limit); 127
when CMD is not found in the sandbox, 126 when it is found but cannot be run there; 125 when
the sandbox cannot be applied (the command did not run); 2 for a command line that cannot
run as written.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("exec: no command: want warden exec --workspace DIR -- CMD ARGS...")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.workspace, "workspace", "", "the directory the command runs in and may write (required; relative to the current directory)")
	f.StringVar(&o.allowlist, "allowlist", "", "the egress allowlist, entries separated by commas or spaces (default: SANDBOX_EGRESS_ALLOWLIST, else the default list)")
	f.StringVar(&o.mode, "mode", "", "allowlist or open (default: SANDBOX_EGRESS, else allowlist)")
	f.StringArrayVar(&o.hidden, "hidden", nil, "a path the command may not read (repeatable)")
	f.StringArrayVar(&o.readOnly, "read-only", nil, "a further path the command may read and execute (repeatable)")
	f.StringArrayVar(&o.vars, "setenv", nil, "KEY=VALUE for the command's environment (repeatable)")
	f.DurationVar(&o.timeout, "timeout", sandbox.DefaultTimeout, "the time limit")
	f.Int64Var(&o.maxOutput, "max-output", sandbox.DefaultMaxOutput, "bytes of output passed on, stdout and stderr together")
	f.IntVar(&o.maxProcs, "max-procs", sandbox.DefaultMaxProcs, "processes and threads the command's tree may hold at once, where a cgroup can hold it (-1: no limit)")
	f.StringVar(&o.boundaries, "boundaries", "", "hard-block rules in BURROW's stored format (a JSON file), enforced at the system call")
	f.BoolVar(&o.noSandbox, "no-sandbox", false, "run the command unconfined (the operator's explicit choice; says so on stderr)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	return cmd
}

func (o *execOptions) run(cmd *cobra.Command, args []string) error {
	lookup := os.LookupEnv
	ws, err := absDir("--workspace", o.workspace)
	if err != nil {
		return err
	}
	for i, p := range o.readOnly {
		if o.readOnly[i], err = absPath("--read-only", p); err != nil {
			return err
		}
	}
	for i, p := range o.hidden {
		if o.hidden[i], err = absPath("--hidden", p); err != nil {
			return err
		}
	}
	var rules *boundary.Set
	if o.boundaries != "" {
		if o.noSandbox {
			return usagef("--boundaries needs the sandbox: with --no-sandbox nothing could enforce them")
		}
		data, err := os.ReadFile(o.boundaries)
		if err != nil {
			return usagef("--boundaries: %v", err)
		}
		if err := boundary.Check(data, boundary.Options{Home: ws}); err != nil {
			return usagef("--boundaries %s does not validate:\n%v", o.boundaries, err)
		}
		rules = boundary.Load(data, boundary.Options{Home: ws})
	}
	var opts egress.Options
	modeRaw, _ := lookup(egress.EnvMode)
	if cmd.Flags().Changed("mode") {
		if o.mode == "" {
			return usagef("--mode %q: want allowlist or open", o.mode)
		}
		modeRaw = o.mode
	}
	if opts.Mode, err = egress.ParseMode(modeRaw); err != nil {
		if cmd.Flags().Changed("mode") {
			return usagef("--mode %q: want allowlist or open", o.mode)
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
			if err := listErrors(cmd, source, err); !errors.As(err, new(*exitError)) {
				return &usageError{err}
			}
			return &exitError{code: 2}
		}
	}
	for _, kv := range o.vars {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usagef("--setenv %q: want KEY=VALUE", kv)
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

	// HOME is the workspace, as for shell_exec: the caller's home is not in the sandbox, and
	// tools keep their caches under HOME. Each variable once; a --setenv wins.
	env := []string{"HOME=" + ws}
	for _, k := range []string{"PATH", "TERM", "LANG", "LC_ALL"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, kv := range o.vars {
		k, _, _ := strings.Cut(kv, "=")
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		env = append(env, kv)
	}
	if o.noSandbox {
		fmt.Fprintln(cmd.ErrOrStderr(), "warden exec: the sandbox is OFF (--no-sandbox): the command runs unconfined, with the network of this host")
	}
	spec := sandbox.Spec{
		Workspace: ws, Command: args, Env: env, Hidden: o.hidden, ReadOnly: o.readOnly,
		Proxy: ln.Handle, Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
		Timeout: o.timeout, MaxOutput: o.maxOutput, MaxProcs: o.maxProcs, Unconfined: o.noSandbox,
	}
	if rules != nil {
		spec.Boundaries = rules
	}
	res, err := sandbox.Run(ctx, spec)
	if err != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), "warden exec:", err)
		var ee *sandbox.ExecError
		if errors.As(err, &ee) {
			return &exitError{code: ee.Code}
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "warden exec: the command did not run")
		return &exitError{code: 125}
	}
	for _, r := range res.Refusals {
		fmt.Fprintf(cmd.ErrOrStderr(), "warden exec: %s\n", r)
	}
	if res.RefusalsDropped > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "warden exec: and %d more refusals\n", res.RefusalsDropped)
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

// absDir returns dir as an absolute path (relative ones from the current directory), which
// must be an existing directory: a usage error otherwise.
func absDir(flag, dir string) (string, error) {
	if dir == "" {
		return "", usagef("%s is required: the directory the command runs in and may write", flag)
	}
	abs, err := absPath(flag, dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", usagef("%s %s: %v", flag, dir, errors.Unwrap(err))
	}
	if !fi.IsDir() {
		return "", usagef("%s %s: not a directory", flag, dir)
	}
	return abs, nil
}

// absPath returns p as an absolute path, relative ones taken from the current directory.
func absPath(flag, p string) (string, error) {
	if p == "" {
		return "", usagef("%s: empty path", flag)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", usagef("%s %s: %v", flag, p, err)
	}
	return abs, nil
}
