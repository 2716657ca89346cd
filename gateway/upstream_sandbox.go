package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/sandbox"
	"github.com/wardenhq/warden/secret"
)

// connectorSandbox is how a pool runs the stdio processes of connectors with sandbox: true.
// The zero value is the full sandbox whose egress proxy enforces egress's defaults (what
// Catalog's pool uses); New sets the gateway's.
type connectorSandbox struct {
	// checker is what each process's egress proxy enforces (nil: egress.New's defaults).
	checker *egress.Checker
	// native is the operator's sandbox for shell_exec: Off runs connectors unsandboxed too,
	// and ReadOnly and Hidden apply to connectors as to commands. Its Proxy is not used: each
	// connector process has an egress proxy of its own.
	native native.Sandbox
	// workspaces is the directory of the tenants' workspaces, hidden from connectors.
	workspaces string
	// refused, if set, is told of every connection a connector process's proxy refused.
	refused func(connector string, d egress.Decision)
	// rules, if set, returns a tenant's hard blocks (Gateway.rules): a process that serves a
	// tenant with some serves it alone, and enforces them at the system call (pool.get).
	rules func(tenant string) *boundary.Set
	// enforced, if set, is told of each system call such a process's hard blocks refused.
	enforced func(connector, tenant string, r sandbox.Refusal)
}

// stopGrace is how long a sandboxed connector process has to exit once its standard input is
// closed before it (and everything it started) is killed; the SDK gives an unsandboxed one as
// long before its SIGTERM.
const stopGrace = 5 * time.Second

// sandboxedProcess is a connector's stdio process running in the sandbox, with a directory and
// an egress proxy of its own. It is the write side of the MCP connection (its standard
// input); stdout is the read side. Close ends it.
type sandboxedProcess struct {
	proc      *sandbox.Process
	stdin     *os.File       // the write end of the process's standard input
	stdout    *io.PipeReader // its standard output; EOF once it has ended
	closeOnce sync.Once
	ended     chan struct{} // closed when it has ended and its directory and proxy are gone
}

// Write writes to the process's standard input.
func (p *sandboxedProcess) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close closes the process's standard input, which asks an MCP server to exit, and waits for
// it to end; after stopGrace it kills it, with everything it started, and waits for that.
func (p *sandboxedProcess) Close() error {
	p.closeOnce.Do(func() { p.stdin.Close() })
	select {
	case <-p.ended:
	case <-time.After(stopGrace):
		p.proc.Kill()
		<-p.ended
	}
	return nil
}

// startSandboxed starts the upstream's command in the sandbox: in a private directory (its
// workspace and HOME, removed when it ends), with the environment env gives and nothing else
// of Warden's, and an egress proxy of its own as its only way out. An error means it did not
// start, and names the connector and the reason.
func (u *upstream) startSandboxed() (_ *sandboxedProcess, err error) {
	id, up, sb := u.server.ID, u.server.Upstream, u.sandbox
	fail := func(err error) error {
		if errors.Is(err, sandbox.ErrUnavailable) {
			return fmt.Errorf("connector %s runs in the sandbox (sandbox: true), which cannot be applied on this host, so its process was not started (%w); an operator may turn the sandbox off explicitly (warden serve --no-sandbox)", id, err)
		}
		return fmt.Errorf("connector %s: its process could not be started in the sandbox: %w", id, err)
	}
	// The program as exec.Command finds it (a name without a slash in Warden's PATH), made
	// absolute: the process starts in its own directory, and may read and run that file.
	prog, err := exec.LookPath(up.Command[0])
	if err == nil {
		prog, err = filepath.Abs(prog)
	}
	if err != nil {
		return nil, fail(err)
	}

	var cleanup []func()
	defer func() {
		if err != nil {
			for _, f := range slices.Backward(cleanup) {
				f()
			}
		}
	}()
	dir, err := os.MkdirTemp("", "warden-connector-")
	if err != nil {
		return nil, fail(err)
	}
	cleanup = append(cleanup, func() { os.RemoveAll(dir) })

	proxy, err := egress.NewProxy(sb.checker, egress.ProxyOptions{OnDecision: func(d egress.Decision) {
		if !d.Allow {
			u.logger.Info("egress refused", "connector", id, "host", d.Host, "port", d.Port, "reason", d.Reason, "detail", d.Detail)
			if sb.refused != nil {
				sb.refused(id, d)
			}
		}
	}})
	if err != nil {
		return nil, fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ln := sandbox.NewListener()
	go proxy.Serve(ctx, ln)
	cleanup = append(cleanup, func() {
		cancel()
		ln.Close()
		proxy.Close()
	})

	// The connector's credentials, where its secrets declare hosts: placeholders, which its
	// proxy turns into the values toward those hosts only.
	env, subs := placeholdCredentials(u.server, u.env(), u.cred)
	var bundle []byte
	if len(subs) > 0 {
		if _, err := proxy.Substitute(subs); err != nil {
			return nil, fail(err)
		}
		// Released with the proxy, when the process has ended.
		if bundle, err = proxy.CABundle(); err != nil {
			return nil, fail(fmt.Errorf("its egress proxy's certificate authority: %w", err))
		}
	}

	stdinR, stdinW, err := os.Pipe() // a file, so the process reads it directly
	if err != nil {
		return nil, fail(err)
	}
	cleanup = append(cleanup, func() { stdinW.Close() })
	stdoutR, stdoutW := io.Pipe()
	var hidden []string
	if sb.workspaces != "" {
		hidden = append(hidden, sb.workspaces)
	}
	// The tenant's hard blocks, as they are now, for a process that serves one tenant alone.
	var blocks sandbox.HardBlocks
	var onRefusal func(sandbox.Refusal)
	if u.tenant != "" && sb.rules != nil {
		set := hardBlocks(sb.rules(u.tenant))
		if set != nil {
			blocks = set
			if sb.enforced != nil {
				tenant := u.tenant
				onRefusal = func(r sandbox.Refusal) { sb.enforced(id, tenant, r) }
			}
		}
		u.mu.Lock()
		u.enforcing = set
		u.mu.Unlock()
	}
	proc, err := sandbox.Start(context.Background(), sandbox.Spec{
		Workspace: dir,
		Command:   append([]string{prog}, up.Command[1:]...),
		Env:       sandboxEnv(env, dir),
		CABundle:  bundle,
		Hidden:    slices.Concat(sb.native.Hidden, hidden),
		ReadOnly:  slices.Concat(sb.native.ReadOnly, []string{prog}),
		Proxy:     ln.Handle,
		Stdin:     stdinR,
		Stdout:    stdoutW,
		Stderr:    &stderrLog{logger: u.logger, connector: id},
		NoLimits:  true,
		// Checked on the paths the process names, as it sees them: its own directory, its
		// /tmp and the read-only system paths.
		Boundaries: blocks,
		OnRefusal:  onRefusal,
	})
	stdinR.Close() // the process has its own
	if err != nil {
		return nil, fail(err)
	}
	p := &sandboxedProcess{proc: proc, stdin: stdinW, stdout: stdoutR, ended: make(chan struct{})}
	go func() {
		res, err := proc.Wait()
		u.logger.Debug("a sandboxed connector process ended", "connector", id, "exit", res.ExitCode, "signal", res.Signal, "err", err)
		// Its proxy and directory go first: when the connection sees the end, they are gone.
		cancel()
		ln.Close()
		proxy.Close()
		os.RemoveAll(dir)
		stdoutW.Close()
		p.closeOnce.Do(func() { stdinW.Close() })
		close(p.ended)
	}()
	return p, nil
}

// sandboxEnv is env with HOME set to home, and each variable once (the last value counts, as
// os/exec has it): the sandbox passes the environment to execve as it is.
func sandboxEnv(env []string, home string) []string {
	env = append(slices.Clone(env), "HOME="+home)
	seen := map[string]bool{}
	var out []string
	for _, kv := range slices.Backward(env) {
		k, _, _ := strings.Cut(kv, "=")
		if !seen[k] {
			seen[k] = true
			out = append(out, kv)
		}
	}
	slices.Reverse(out)
	return out
}

// placeholdCredentials returns env with a placeholder (egress.NewPlaceholder, fresh for each
// process) in place of each of the connector's credentials it holds (the variable its
// credential goes to, and its host variables), and the substitutions that its process's
// egress proxy makes: the value goes only toward the hosts the connector's secrets declare
// (secrets.hosts). A connector without such hosts, or with secrets.exposeToProcess, gets the
// values themselves (env unchanged): a value that goes nowhere would leave the connector
// without its credential.
func placeholdCredentials(srv *policy.Server, env []string, cred credential) ([]string, []egress.Substitution) {
	if srv.ExposeSecrets || srv.SecretHosts == nil || len(srv.SecretHosts.Entries()) == 0 {
		return env, nil
	}
	names := map[string]bool{}
	if n := srv.Upstream.CredentialEnv; n != "" {
		names[n] = true
	}
	for _, kv := range cred.host {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	out := slices.Clone(env)
	var subs []egress.Substitution
	for i, kv := range out {
		k, v, _ := strings.Cut(kv, "=")
		if !names[k] || v == "" {
			continue
		}
		ph := egress.NewPlaceholder()
		subs = append(subs, egress.Substitution{Name: k, Placeholder: ph, Value: secret.New(v), Hosts: srv.SecretHosts})
		out[i] = k + "=" + ph
	}
	return out, subs
}
