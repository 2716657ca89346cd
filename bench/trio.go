package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/interop"
)

// The two ways of deploying Warden the trio section compares; the first is the baseline.
const (
	kindOne   = "one instance"
	kindThree = "three instances"
)

var trioKinds = []string{kindOne, kindThree}

// trioOptions say how much to measure: one number of clients, each kind in turn, round after
// round.
type trioOptions struct {
	clients, rounds, calls, warmup int
}

// trioResult is the trio section: the two kinds at o.clients, or why they were not measured.
type trioResult struct {
	kinds   []gatewayResult
	skipped string // why nothing was measured (no PostgreSQL given)
}

// runTrio measures echo calls through a round-robin proxy (interop.RoundRobin, no affinity)
// over one `warden serve` process and over three, all three on one PostgreSQL schema with
// the same policy: the deployment of several instances. The binary is built from the working
// tree; the echo upstream, the proxies and the clients run in this process, the instances in
// theirs. Without a PostgreSQL URL the section says so and nothing is measured; any other
// failure, a call that fails included, fails the run.
func runTrio(ctx context.Context, o trioOptions, pgURL, dir string, logf func(string, ...any)) (trioResult, error) {
	if pgURL == "" {
		logf("trio: skipped: no PostgreSQL (-postgres, or WARDEN_TEST_POSTGRES_URL)")
		return trioResult{skipped: "no PostgreSQL server was given (`-postgres URL`, or `WARDEN_TEST_POSTGRES_URL`)"}, nil
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	upURL, stopUp, err := echoServer(logger)
	if err != nil {
		return trioResult{}, err
	}
	defer stopUp()

	bin, err := buildWarden(ctx, dir)
	if err != nil {
		return trioResult{}, err
	}
	schema := fmt.Sprintf("warden_bench_%d", time.Now().UnixNano())
	defer dropSchema(pgURL, schema, logf)
	policy := filepath.Join(dir, "trio.yaml")
	if err := os.WriteFile(policy, fmt.Appendf(nil, benchPolicy, upURL), 0o600); err != nil {
		return trioResult{}, err
	}
	store := []string{"--postgres", pgURL, "--postgres-schema", schema, "-c", policy}
	out, err := exec.CommandContext(ctx, bin, append([]string{"token", "create", "--create", "--tenant", "default", "--role", "person"}, store...)...).CombinedOutput()
	if err != nil {
		return trioResult{}, fmt.Errorf("trio: warden token create: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	secret := lines[len(lines)-1]

	var bases []string
	for i := range 3 {
		inst, err := startInstance(ctx, bin, append(store, "--workspaces", filepath.Join(dir, "trio-ws")))
		if err != nil {
			return trioResult{}, fmt.Errorf("trio: instance %d: %w", i, err)
		}
		defer inst.stop()
		bases = append(bases, inst.base)
	}
	r := &rig{urls: map[string]string{}, tool: map[string]string{kindOne: "mcp__up__echo", kindThree: "mcp__up__echo"}, secret: secret}
	for kind, backends := range map[string][]string{kindOne: bases[:1], kindThree: bases} {
		p, err := interop.NewRoundRobin(backends, false)
		if err != nil {
			return trioResult{}, err
		}
		url, stop, err := serve(p)
		if err != nil {
			return trioResult{}, err
		}
		defer func() { stop(); p.Close() }()
		r.urls[kind] = url + "/mcp"
	}

	res := map[string]*gatewayResult{}
	durs := map[string][]time.Duration{}
	for round := range o.rounds {
		for k := range trioKinds {
			kind := trioKinds[(k+round)%len(trioKinds)] // each kind goes first in turn
			m, err := r.measure(ctx, kind, o.clients, o.calls, o.warmup)
			if err != nil {
				return trioResult{}, fmt.Errorf("trio, %s, %d clients: %w", kind, o.clients, err)
			}
			if res[kind] == nil {
				res[kind] = &gatewayResult{kind: kind, clients: o.clients}
			}
			res[kind].calls += len(m.durs)
			res[kind].wall += m.wall
			durs[kind] = append(durs[kind], m.durs...)
		}
	}
	var tr trioResult
	for _, kind := range trioKinds {
		g := res[kind]
		slices.Sort(durs[kind])
		g.p50, g.p99 = percentile(durs[kind], 0.50), percentile(durs[kind], 0.99)
		logf("trio: %s, %d clients: %.0f calls/s, p50 %v, p99 %v", kind, o.clients, g.callsPerSecond(), g.p50, g.p99)
		tr.kinds = append(tr.kinds, *g)
	}
	return tr, nil
}

// buildWarden builds cmd/warden from the module bench replaces Warden with (the working tree)
// into dir.
func buildWarden(ctx context.Context, dir string) (string, error) {
	root, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/wardenhq/warden").Output()
	if err != nil {
		return "", fmt.Errorf("trio: where Warden's module is: %w", err)
	}
	bin := filepath.Join(dir, "warden")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/warden")
	build.Dir = strings.TrimSpace(string(root))
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("trio: go build ./cmd/warden: %v\n%s", err, out)
	}
	return bin, nil
}

// instance is a running `warden serve`.
type instance struct {
	base string // http://host:port
	cmd  *exec.Cmd
	done chan struct{}
}

// startInstance starts `warden serve` on a loopback port with args and waits until it
// listens. Its output is read and dropped (the last lines are kept to say why it stopped).
func startInstance(ctx context.Context, bin string, args []string) (*instance, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--client-token=false"}, args...)...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	inst := &instance{cmd: cmd, done: make(chan struct{})}
	listening := make(chan string, 1)
	var mu sync.Mutex
	var tail []string
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			tail = append(tail, line)
			if len(tail) > 20 {
				tail = tail[1:]
			}
			mu.Unlock()
			if i := strings.Index(line, "listening on http://"); i >= 0 {
				select {
				case listening <- strings.Fields(line[i+len("listening on "):])[0]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() { _ = cmd.Wait(); pw.Close(); close(inst.done) }()
	select {
	case inst.base = <-listening:
		return inst, nil
	case <-inst.done:
		mu.Lock()
		defer mu.Unlock()
		return nil, fmt.Errorf("warden serve stopped before it listened:\n%s", strings.Join(tail, "\n"))
	case <-time.After(2 * time.Minute):
		inst.stop()
		return nil, fmt.Errorf("warden serve did not listen within 2 minutes")
	}
}

// stop ends the instance as a supervisor does (SIGTERM) and waits for it.
func (i *instance) stop() {
	_ = i.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-i.done:
	case <-time.After(30 * time.Second):
		_ = i.cmd.Process.Kill()
		<-i.done
	}
}

// dropSchema drops the schema the instances made.
func dropSchema(pgURL, schema string, logf func(string, ...any)) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		logf("trio: could not drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		logf("trio: could not drop schema %s: %v", schema, err)
	}
}
