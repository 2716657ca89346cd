package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/manage"
	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/sandbox"
	"github.com/wardenhq/warden/server"
	"github.com/wardenhq/warden/server/console"
)

type serveOptions struct {
	addr        string
	sessions    sessionFlags
	store       storeOptions
	sandbox     sandboxFlags
	workspaces  string
	clientToken bool
	clientTTL   time.Duration
	bounds      httpBounds
	logs        logOptions
	metricsAddr string
	// checkpointEvery is --audit-checkpoint-every.
	checkpointEvery int
}

func newServeCmd(root *rootOptions) *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8640] [--db FILE | --postgres URL] [--workspaces DIR]",
		Short: "Run Warden's server: the MCP gateway at /mcp, health, readiness, the approvals and audit API",
		Long: `Run Warden's server on the embedded SQLite store (./warden.db) or a shared PostgreSQL one.

Agents connect to /mcp (MCP over streamable HTTP) with a bearer token from warden token create:
each session lists exactly the tools of its surface, and every call is reviewed, gated,
recorded and protected. Each tenant works in <workspaces>/<tenant>.

On its first start against a store, it creates an admin token, prints it once and keeps only its
hash; on every start it prints a fresh agent token for tenant default, role person, with a
ready-to-paste client configuration (--client-token=false to skip); the token expires after
--client-token-ttl. It serves /healthz, /readyz
and the REST API under /api/v1 (approvals, standing approvals, the audit trail). SIGHUP reloads
the policy: every session's tools are computed again, and clients are told when they change.
SIGINT or SIGTERM shut it down gracefully: requests in flight finish first.` + envHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.clientToken && o.clientTTL <= 0 {
				// a banner token that never expires is what this flag exists to end
				return usagef("%s %s: want a lifetime above 0 (or --client-token=false for no token)", flagOrigin(cmd.Flags(), "client-token-ttl"), o.clientTTL)
			}
			p, err := root.load(cmd)
			if err != nil {
				return err
			}
			o.sessions.fromPolicy(cmd, p)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd.ErrOrStderr(), root, p)
		},
	}
	cmd.Flags().StringVar(&o.addr, "addr", "127.0.0.1:8640", "the address to listen on")
	cmd.Flags().StringVar(&o.workspaces, "workspaces", "workspaces", "the directory of the tenants' workspaces (<dir>/<tenant>)")
	cmd.Flags().IntVar(&o.checkpointEvery, "audit-checkpoint-every", audit.DefaultCheckpointEvery,
		"sign a checkpoint of a tenant's audit chain every this many of its events appended here (and at shutdown)")
	cmd.Flags().StringVar(&o.metricsAddr, "metrics-addr", "", "also serve /metrics, with no token, on this address (for a Prometheus on a private network; on --addr /metrics needs an admin token)")
	cmd.Flags().BoolVar(&o.clientToken, "client-token", true, "print a fresh agent token for tenant default, role person, with a client configuration")
	cmd.Flags().DurationVar(&o.clientTTL, "client-token-ttl", 24*time.Hour, "how long the token printed by --client-token stays good (each start prints a new one)")
	o.store.register(cmd)
	o.store.creates = true
	o.store.journal = true
	o.sandbox.register(cmd)
	o.bounds.register(cmd)
	o.logs.register(cmd, "info")
	o.sessions.register(cmd)
	return cmd
}

// sessionFlags bound the MCP sessions of serve.
type sessionFlags struct {
	idle                time.Duration
	perToken, perTenant int
}

func (f *sessionFlags) register(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.idle, "idle-timeout", 30*time.Minute,
		"end an MCP session that sends no request for this long (its calls, its run); 0 never (default: the policy's sessions.idleTimeout, else 30m)")
	cmd.Flags().IntVar(&f.perToken, "max-sessions-per-token", 64, "the live MCP sessions one agent token may hold at once; 0 no cap (default: the policy's sessions.maxPerToken, else 64)")
	cmd.Flags().IntVar(&f.perTenant, "max-sessions-per-tenant", 1024, "the live MCP sessions one tenant may hold at once; 0 no cap (default: the policy's sessions.maxPerTenant, else 1024)")
}

// fromPolicy takes what the policy's sessions block sets for each flag not given.
func (f *sessionFlags) fromPolicy(cmd *cobra.Command, p *policy.Policy) {
	ps := p.Sessions()
	if ps.IdleSet && !cmd.Flags().Changed("idle-timeout") {
		f.idle = ps.IdleTimeout
	}
	if ps.MaxPerToken >= 0 && !cmd.Flags().Changed("max-sessions-per-token") {
		f.perToken = ps.MaxPerToken
	}
	if ps.MaxPerTenant >= 0 && !cmd.Flags().Changed("max-sessions-per-tenant") {
		f.perTenant = ps.MaxPerTenant
	}
}

// apply sets the gateway's options from the flags (whose 0 means none, the gateway's a default).
func (f *sessionFlags) apply(o *gateway.Options) {
	none := func(v int) int {
		if v <= 0 {
			return -1
		}
		return v
	}
	o.IdleTimeout = f.idle
	if f.idle <= 0 {
		o.IdleTimeout = -1
	}
	o.MaxSessionsPerToken, o.MaxSessionsPerTenant = none(f.perToken), none(f.perTenant)
}

func (o *serveOptions) run(ctx context.Context, out io.Writer, root *rootOptions, p *policy.Policy) error {
	logger, err := o.logs.logger(out)
	if err != nil {
		return err
	}
	if err := o.bounds.check(); err != nil {
		return err
	}
	if o.checkpointEvery < 1 {
		return usagef("--audit-checkpoint-every %d: want a number of events from 1", o.checkpointEvery)
	}
	sb, err := o.sandbox.setup(ctx, os.LookupEnv, o.store.files())
	if err != nil {
		return err
	}
	db, kind, err := o.store.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()

	started := time.Now()
	// The audit checkpoints' signer is set once this instance has its id; its last checkpoints
	// are signed after everything else that appends has stopped, before the store closes.
	var signer *audit.Signer
	defer func() {
		if signer == nil {
			return
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := signer.Flush(fctx); err != nil {
			logger.Error("could not sign the audit trail's last checkpoints", "err", err)
		}
	}()
	// What processes that stopped without saying so left held (runs, cards, reservations) is
	// freed now and on every heartbeat; closed last, this one's own is freed at once.
	keeper, err := o.store.keep(ctx, db, logger)
	if err != nil {
		return err
	}
	defer closeKeeper(context.WithoutCancel(ctx), keeper, logger)
	if signer, err = audit.NewSigner(ctx, db, keeper.ID(), o.checkpointEvery); err != nil {
		return err
	}
	db.SetSigner(signer)
	if err := bootstrapAdmin(ctx, db, out, started); err != nil {
		return err
	}
	st, err := newStack(p, db, o.workspaces, sb, logger, keeper.ID(), o.sessions.apply, func(g *gateway.Options) {
		g.Bounds = o.bounds.gateway()
		// Every session is kept in the store: any instance sharing it serves any session, and
		// this one, started again, serves the sessions it had.
		g.Sessions, g.Instance = db, keeper.ID()
	})
	if err != nil {
		return err
	}
	defer st.close()
	if name, data, err := root.policyBytes(); err != nil {
		return err
	} else if err := st.withData(ctx, db, name, data, logger); err != nil {
		return err
	}
	p = st.data.Policy()
	srv := newServer(st, db, logger, map[string]any{"policy": p.Revision, "store": kind,
		"sandbox": sb.summary(), "egress": sb.egressSummary()})
	mux := http.NewServeMux()
	mux.Handle("/mcp", st.gateway.Handler())
	mux.Handle("/", srv)

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	banner(out, p, st.env, kind, ln.Addr().String(), st.workspaces, sb)
	if o.clientToken {
		if err := clientConfig(ctx, db, out, p, url, time.Now().UTC(), o.clientTTL); err != nil {
			return err
		}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			st.reload(root, logger)
		}
	}()

	hs, conns := o.bounds.server(mux, logger)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(conns.listener(ln)) }()
	if o.metricsAddr != "" {
		ms, err := serveMetrics(o.metricsAddr, st.metrics, logger)
		if err != nil {
			_ = hs.Close()
			return err
		}
		defer ms.Close()
		fmt.Fprintf(out, "warden: metrics at http://%s/metrics, with no token\n", ms.addr)
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(out, "warden: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// The gateway cancels the calls waiting for a person at once (no card is left pending for
	// an answer that could run nothing), lets running calls finish, and then ends the
	// sessions, whose open event streams would otherwise hold the server's shutdown.
	drained := make(chan struct{})
	go func() {
		st.gateway.Shutdown(sctx)
		close(drained)
	}()
	err = hs.Shutdown(sctx)
	<-drained
	if err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// A stack is the engine behind the server and `warden mcp`: the reviewer, the approvals
// broker, the gate and the gateway, on one store.
type stack struct {
	env        *policy.Env
	broker     *approval.Broker
	gate       *gate.Gate
	gateway    *gateway.Gateway
	workspaces string
	// metrics counts what the gate decides and reads the gateway's live state, for /metrics.
	metrics *metrics.Metrics
	// cards carries card changes to the API's event stream (and so to the console's inbox).
	cards *server.CardFeed
	// data is the management data overlaid on the policy file (nil until withData); stopData
	// ends following the store, and following waits for it.
	data      *manage.Service
	stopData  func()
	following sync.WaitGroup
}

// instanceID is this process's instance (instance.Keeper.ID), recorded on its runs and cards;
// tune changes the gateway's options before it starts.
func newStack(p *policy.Policy, db appStore, workspaces string, sb *sandboxState, logger *slog.Logger, instanceID string, tune ...func(*gateway.Options)) (*stack, error) {
	env := p.Env(os.LookupEnv)
	reviewer, err := review.New(review.Options{})
	if err != nil {
		return nil, err
	}
	st := &stack{env: env, cards: &server.CardFeed{}}
	var gw atomic.Pointer[gateway.Gateway]
	st.metrics = metrics.New(metrics.Sources{
		Sessions: func() map[string]int {
			if g := gw.Load(); g != nil {
				return g.LiveSessions()
			}
			return nil
		},
		UpstreamErrors: func() map[string]uint64 {
			if g := gw.Load(); g != nil {
				return g.UpstreamErrors()
			}
			return nil
		},
		PendingCards:  func(ctx context.Context) (map[string]int, error) { return pendingCards(ctx, db) },
		SandboxStarts: sandbox.Starts,
		Logger:        logger,
	})
	st.broker = approval.NewBroker(approval.Options{Store: db, Instance: instanceID,
		Timeout: time.Duration(env.ApprovalTimeoutMS()) * time.Millisecond,
		OnCard: func(c *approval.Card) {
			if g := gw.Load(); g != nil {
				g.OnCard(c)
			}
			st.cards.Publish(c)
		}})
	if st.gate, err = gate.New(gate.Options{Reviewer: reviewer, Broker: st.broker, Ledger: db, Log: db, Logger: logger,
		Instance: instanceID, Observe: st.metrics.Observe}); err != nil {
		return nil, err
	}
	gwo := gateway.Options{Policy: p, Env: env, Store: db, Gate: st.gate, Reviewer: reviewer,
		Broker: st.broker, Workspaces: workspaces, Logger: logger, TokenTTL: tokenTTL,
		Native: native.Options{Sandbox: sb.native}, Egress: sb.checker(), Approvals: db, BoundaryStore: db}
	for _, t := range tune {
		t(&gwo)
	}
	st.gateway, err = gateway.New(gwo)
	if err != nil {
		st.gate.Close()
		return nil, err
	}
	gw.Store(st.gateway)
	st.workspaces = st.gateway.Workspaces()
	return st, nil
}

// newServer is the REST API, health, /metrics and the web console of a stack, as warden serve
// serves them. The console calls the API in process, as the person signed in.
func newServer(st *stack, db appStore, logger *slog.Logger, info map[string]any) *server.Server {
	var data server.Data // a nil *manage.Service would be a Data that is not nil
	if st.data != nil {
		data = st.data
	}
	o := server.Options{
		Store: revokeThrough{appStore: db, gw: st.gateway}, Broker: st.broker, Logger: logger,
		Info:          info,
		Boundaries:    st.gateway,
		Runs:          st.gateway,
		Metrics:       st.metrics.Handler(),
		ValidateToken: tokenValidator(st.gateway.Policy),
		Data:          data,
		Explorer:      st.gateway,
		Agents:        st.gateway,
		Cards:         st.cards,
	}
	c, err := console.New(console.Options{API: server.New(o), Logger: logger})
	if err != nil {
		// The templates are embedded and parsed by the tests: this is a build gone wrong.
		panic(err)
	}
	o.Console = c
	return server.New(o)
}

// pendingCards counts the cards waiting for an answer in the store, by tenant.
func pendingCards(ctx context.Context, db appStore) (map[string]int, error) {
	cards, err := db.Cards(ctx, approval.CardFilter{State: approval.Pending})
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, c := range cards {
		out[c.Tenant]++
	}
	return out, nil
}

// tokenTTL is how long the gateway trusts an agent token it found good without looking it up
// again. A token revoked through this process (revokeThrough) is refused at once; one revoked
// by another process or instance on the same store, within tokenTTL.
const tokenTTL = time.Second

// revokeThrough is the store as the REST API sees it: a token revoked through it is revoked
// through the gateway, which forgets it at once instead of trusting it for up to tokenTTL.
type revokeThrough struct {
	appStore
	gw *gateway.Gateway
}

// RevokeToken revokes the token in the store and in the gateway's memory.
func (s revokeThrough) RevokeToken(ctx context.Context, id string, at time.Time) error {
	return s.gw.RevokeToken(ctx, id, at)
}

// reload reads the policy again and puts it in force; a policy with problems is not loaded.
func (st *stack) reload(root *rootOptions, logger *slog.Logger) {
	name, data, err := root.policyBytes()
	if err == nil {
		var p *policy.Policy
		if p, err = parsePolicy(name, data); err == nil {
			if st.data == nil {
				st.apply(p)
				logger.Info("policy reloaded", "file", name, "revision", p.Revision)
				return
			}
			// The stored objects are compiled over the new file; one it refuses is left out.
			if err = st.data.SetFile(context.Background(), name, data); err == nil {
				logger.Info("policy reloaded", "file", name, "revision", st.data.Policy().Revision)
				return
			}
		}
	}
	logger.Error("the policy was not reloaded; the one in force stays", "err", err)
}

func (st *stack) close() {
	if st.stopData != nil {
		st.stopData()
		st.following.Wait()
	}
	st.gateway.Close()
	st.gate.Close()
}

// hardBlocksSummary says which hard blocks the policy gives its tenants, and how more are added.
func hardBlocksSummary(p *policy.Policy) string {
	rules, err := boundary.FromPolicy(p)
	if err != nil { // parsePolicy has refused such a policy already; say so if one gets here
		return "the policy's rules do not validate, so every call is blocked: " + err.Error()
	}
	count := func(d *boundary.Document) int {
		n := 0
		if d != nil {
			for _, r := range d.HardBlocks {
				if r.Enabled {
					n++
				}
			}
		}
		return n
	}
	var b strings.Builder
	def := count(rules.For(""))
	if def == 0 {
		b.WriteString("none in the policy for every tenant")
	} else {
		fmt.Fprintf(&b, "%d %s from the policy for every tenant", def, plural(def, "rule", "rules"))
	}
	for t := range p.Tenants() {
		if n := count(rules.For(t.ID)); n != def {
			fmt.Fprintf(&b, ", %d for tenant %s", n, t.ID)
		}
	}
	b.WriteString("; a tenant's stored rules add to them (warden boundaries set, PUT /api/v1/tenants/{tenant}/boundaries)")
	return b.String()
}

// banner prints what the server runs with, and what is off.
func banner(out io.Writer, p *policy.Policy, env *policy.Env, store, addr, workspaces string, sb *sandboxState) {
	name := p.Name
	if name == "" {
		name = "policy"
	}
	fmt.Fprintf(out, "warden: %s (%s, revision %s)\n", name, p.File, p.Revision)
	fmt.Fprintf(out, "warden: store %s\n", store)
	fmt.Fprintf(out, "warden: workspaces %s (each tenant works in its own directory there)\n", workspaces)
	switch {
	case sb.native.Off:
		fmt.Fprintln(out, "warden: SANDBOX OFF (--no-sandbox): shell_exec runs commands UNSANDBOXED, as this user, with this host's network, in the tenant's workspace; so do git_status, git_diff and files_patch their git, and connectors marked sandbox: true")
	case sb.unavailable != nil:
		fmt.Fprintf(out, "warden: SANDBOX UNAVAILABLE: %v\n", sb.unavailable)
		fmt.Fprintln(out, "warden: shell_exec refuses to run commands, git_status, git_diff and files_patch refuse to run git, and connectors marked sandbox: true do not start, until the sandbox can be applied (or the operator starts Warden with --no-sandbox)")
	default:
		procs := fmt.Sprintf("at most %d processes at once", sb.procLimit)
		if sb.procLimit == 0 {
			procs = "with no process limit (no cgroup can be made here)"
		}
		fmt.Fprintf(out, "warden: sandbox on: shell_exec runs each command under Landlock (its workspace read-write, system paths read-only, nothing else), with no_new_privs and no capabilities, in its own network and PID namespaces, %s; git_status, git_diff and files_patch run git the same way, with no network at all\n", procs)
	}
	// (A SANDBOX_EGRESS that is neither mode is among the switch reports below: the policy
	// and the proxy read it alike.)
	fmt.Fprintf(out, "warden: egress %s\n", sb.egressSummary())
	if !env.ApprovalsOn() {
		st, _ := env.Switch(policy.SwitchRequireApproval)
		fmt.Fprintf(out, "warden: approvals are OFF (%s): gated calls run unasked: %s\n", st.Describe(), gatedSummary(p))
	} else {
		fmt.Fprintf(out, "warden: approvals are on (%s): a person is asked before %s\n", policy.SwitchRequireApproval, gatedSummary(p))
	}
	fmt.Fprintf(out, "warden: a pending approval waits %d ms before it denies\n", env.ApprovalTimeoutMS())
	fmt.Fprintf(out, "warden: hard blocks: %s\n", hardBlocksSummary(p))
	for _, s := range env.Switches() {
		fmt.Fprintln(out, "warden: switch", s.Describe())
	}
	for _, r := range env.Reports() {
		fmt.Fprintln(out, "warden: switch:", r)
	}
	fmt.Fprintf(out, "warden: listening on http://%s (MCP at /mcp)\n", addr)
	fmt.Fprintf(out, "warden: console at http://%s/ (sign in with an API token: the admin token printed when the store was made, or one of warden token create --access approver --tenant default)\n", addr)
	fmt.Fprintf(out, "warden: approvals: GET http://%s/api/v1/approvals lists the approval cards (an approver, viewer, operator or admin token), POST /api/v1/approvals/{id} answers one (an approver or admin token: warden token create --access approver --tenant T); on this host, warden approvals list|answer\n", addr)
}

// gatedMax is how many approval-gated tools the banner names before it counts the rest.
const gatedMax = 12

// gatedSummary names the tools whose calls ask a person while approvals are on, with the calls
// a narrowed gate covers: "files_delete, shell_exec (calls that delete)".
func gatedSummary(p *policy.Policy) string {
	var names []string
	for t := range p.Tools() {
		g := t.Gate
		if g == nil || !g.Approval {
			continue
		}
		name := t.Name
		if len(g.Effects) > 0 {
			ops := make([]string, len(g.Effects))
			for i, e := range g.Effects {
				ops[i] = string(e)
			}
			name += " (calls that " + strings.Join(ops, " or ") + ")"
		}
		names = append(names, name)
	}
	switch {
	case len(names) == 0:
		return "no tool (the policy gates none)"
	case len(names) > gatedMax:
		return fmt.Sprintf("%s and %d more (warden surface --role R shows each tool's gate)", strings.Join(names[:gatedMax], ", "), len(names)-gatedMax)
	}
	return strings.Join(names, ", ")
}

// clientConfig creates a fresh agent token for tenant default, role person, good for ttl from
// now, and prints how to connect a client with it.
func clientConfig(ctx context.Context, db appStore, out io.Writer, p *policy.Policy, url string, now time.Time, ttl time.Duration) error {
	if _, ok := p.Tenant("default"); !ok {
		fmt.Fprintln(out, "warden: the policy has no tenant default: create an agent token with warden token create")
		return nil
	}
	if _, ok := p.Role("person"); !ok {
		fmt.Fprintln(out, "warden: the policy has no role person: create an agent token with warden token create")
		return nil
	}
	secret, hash, err := auth.NewSecret()
	if err != nil {
		return err
	}
	t := &auth.Token{ID: newTokenID(), Hash: hash, Role: auth.RoleAgent, Tenant: "default", SessionRole: "person",
		Name: "serve banner", Created: now, Expires: now.Add(ttl)}
	if err := db.CreateToken(ctx, t); err != nil {
		return fmt.Errorf("create the client token: %w", err)
	}
	cfg, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"warden": map[string]any{
		"type": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer " + secret}}}}, "", "  ")
	fmt.Fprintf(out, `warden: connect an MCP client as tenant default, role person (token %s, shown only now; it expires in %s, at %s: --client-token-ttl sets how long, warden token create makes others):
  URL:    %s
  Header: Authorization: Bearer %s
  Claude Code (.mcp.json):
%s
`, t.ID, ttl, t.Expires.Format(time.RFC3339), url, secret, indent(string(cfg), "  "))
	return nil
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// bootstrapAdmin creates the first admin token of a store, and prints it once.
func bootstrapAdmin(ctx context.Context, db appStore, out io.Writer, now time.Time) error {
	tokens, err := db.Tokens(ctx)
	if err != nil {
		return fmt.Errorf("read tokens: %w", err)
	}
	for _, t := range tokens {
		if t.Role == auth.RoleAdmin && t.Revoked.IsZero() {
			return nil
		}
	}
	secret, hash, err := auth.NewSecret()
	if err != nil {
		return err
	}
	if err := db.CreateToken(ctx, &auth.Token{ID: newTokenID(), Hash: hash, Role: auth.RoleAdmin, Name: "first admin", Created: now}); err != nil {
		return fmt.Errorf("create the admin token: %w", err)
	}
	fmt.Fprintf(out, "warden: created an admin token; it is shown only now and stored only as a hash:\n%s\n", secret)
	return nil
}

// plural picks the word for n things.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
