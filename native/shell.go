package native

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wardenhq/warden/action"
)

func (e *Executor) shellExec(ctx context.Context, a *action.Action, env map[string]string) (Result, error) {
	command := a.Inputs["command"]
	if command == "" {
		return Result{}, fmt.Errorf("%w: shell_exec without a command", ErrUnreviewed)
	}
	cwd, rel, err := e.path(a, "cwd")
	if err != nil {
		return Result{}, err
	}
	if err := e.checkDir(cwd, rel); err != nil {
		return Result{}, err
	}
	if e.shell == "" {
		return Result{}, failf("shell_exec is not available: neither bash nor sh is installed")
	}
	vars, err := mergeEnv(e.env, env)
	if err != nil {
		return Result{}, err
	}
	p := proc{path: e.shell, args: []string{e.shellName, "-c", command}, dir: cwd, env: vars}
	var o outcome
	if e.sandbox.Off {
		if o, err = e.run(ctx, p); err != nil {
			return Result{}, failf("the command could not be started: %v", err)
		}
	} else if o, err = e.runSandboxed(ctx, p, e.sandbox.Hidden, e.sandbox.Proxy); err != nil {
		return Result{}, sandboxFailure("the command", err)
	}
	var b strings.Builder
	out := o.output()
	b.WriteString(out)
	if out == "" {
		b.WriteString("(no output)")
	}
	if !strings.HasSuffix(out, "\n") {
		b.WriteByte('\n')
	}
	switch {
	case o.timedOut:
		fmt.Fprintf(&b, "[timed out after %s: the command and every process it started were killed]\n", e.timeout)
	case o.cancelled:
		b.WriteString("[cancelled: the command and every process it started were killed]\n")
	case o.signal != 0:
		fmt.Fprintf(&b, "[killed by signal %d (%s)]\n", int(o.signal), o.signal)
	default:
		fmt.Fprintf(&b, "[exit code %d]\n", o.exitCode)
	}
	if o.procLimit > 0 {
		fmt.Fprintf(&b, "[a fork was refused: the sandbox holds a command and everything it starts to %d processes and threads at once]\n", o.procLimit)
	}
	for _, r := range o.refusals {
		fmt.Fprintf(&b, "[refused at the system call: %s]\n", r)
	}
	if o.refusalsDropped > 0 {
		fmt.Fprintf(&b, "[and %d more calls refused]\n", o.refusalsDropped)
	}
	if o.lingered {
		b.WriteString("[a process the command started left its process group and still held the output open; it may still be running, and what it wrote after the command ended is not shown]\n")
	}
	structured := map[string]any{
		"exitCode": o.exitCode, "timedOut": o.timedOut, "truncated": o.dropped > 0,
		"cancelled": o.cancelled, "sandboxed": !e.sandbox.Off,
	}
	if len(o.refusals) > 0 {
		refused := make([]any, len(o.refusals))
		for i, r := range o.refusals {
			refused[i] = map[string]any{"rule": r.Rule, "op": string(r.Op), "path": r.Path, "command": r.Command, "pid": r.PID, "call": r.Call}
		}
		structured["refused"] = refused
	}
	return Result{
		Text:            b.String(),
		Structured:      structured,
		IsError:         o.exitCode != 0,
		Refusals:        o.refusals,
		RefusalsDropped: o.refusalsDropped,
	}, nil
}

// mergeEnv returns base with vars set over it, for one process. Warden's own environment is
// untouched.
func mergeEnv(base []string, vars map[string]string) ([]string, error) {
	out := slices.Clone(base)
	at := make(map[string]int, len(out))
	for i, kv := range out {
		k, _, _ := strings.Cut(kv, "=")
		at[k] = i
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, failf("%q cannot be the name of an environment variable", k)
		}
		if strings.ContainsRune(vars[k], 0) {
			return nil, failf("the value of %s holds a NUL byte, which an environment cannot carry", k)
		}
		kv := k + "=" + vars[k]
		if i, ok := at[k]; ok {
			out[i] = kv
		} else {
			at[k] = len(out)
			out = append(out, kv)
		}
	}
	return out, nil
}
