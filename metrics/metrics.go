// Package metrics is Warden's Prometheus face (`warden serve`'s /metrics): what its calls were
// decided and how long that took, what ran and failed, what was spent, and the live state of
// the server (sessions, pending approval cards, sandboxed commands started, upstream
// failures), with the Go runtime's and the process's own collectors.
//
// Everything is on a registry of its own, never Prometheus's global one. The packages that do
// the work know nothing of Prometheus: the gate tells a gate.Observer of each event it
// records (Metrics.Observe is one), and the live state is read through Sources when a scrape
// asks for it, so a gauge is never out of date and nothing is counted twice.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wardenhq/warden/audit"
)

// Sources are where the live state is read at each scrape. A nil source's metrics are left
// out.
type Sources struct {
	// Sessions returns the live MCP sessions of this instance, by tenant.
	Sessions func() map[string]int
	// PendingCards returns the approval cards waiting for an answer in the store (every
	// instance's), by tenant.
	PendingCards func(ctx context.Context) (map[string]int, error)
	// UpstreamErrors returns the tool calls that failed at each connector's upstream, by
	// connector, since the process started.
	UpstreamErrors func() map[string]uint64
	// SandboxStarts returns how many commands the process has started in the sandbox.
	SandboxStarts func() uint64
	// ScrapeTimeout bounds the reads of one scrape (default 5 s).
	ScrapeTimeout time.Duration
	// Logger reports a source that failed during a scrape (default slog's).
	Logger *slog.Logger
}

// Metrics holds the collectors of one server. It is safe for concurrent use.
type Metrics struct {
	reg       *prometheus.Registry
	decisions *prometheus.CounterVec
	approvals *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	outcomes  *prometheus.CounterVec
	spend     *prometheus.CounterVec
	logger    *slog.Logger
}

// LatencyBuckets are the decision latency histogram's upper bounds, in seconds: from a
// millisecond (a call reviewed and recorded at once) to a few minutes (a call that waited for
// a person's answer).
var LatencyBuckets = prometheus.ExponentialBuckets(0.001, 4, 10)

// New returns the collectors, registered on a registry of their own.
func New(src Sources) *Metrics {
	if src.ScrapeTimeout <= 0 {
		src.ScrapeTimeout = 5 * time.Second
	}
	if src.Logger == nil {
		src.Logger = slog.Default()
	}
	m := &Metrics{
		reg:    prometheus.NewRegistry(),
		logger: src.Logger,
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_decisions_total",
			Help: "Calls decided and recorded, by tool and decision (allow, ask, deny). A call that asked is counted at ask, and again at allow once a person allowed it. A call judged for an agent's own runtime (POST /api/v1/review) whose tool the policy does not know is counted under the tool (unknown).",
		}, []string{"tool", "decision"}),
		approvals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_approvals_total",
			Help: "Answers to approval cards recorded, by decision and channel (api, cli, elicitation, deadline, canceled; empty for a standing approval). A card of an agent's own runtime that expired unanswered is counted at ask: its runtime may ask its user.",
		}, []string{"decision", "channel"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "warden_decision_seconds",
			Help:    "Time from a call reaching the gate to its decision being durable, by decision; an allowed call that asked includes its wait for the answer.",
			Buckets: LatencyBuckets,
		}, []string{"decision"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_call_outcomes_total",
			Help: "Calls that were let through the gate, by tool and outcome (ok, error, refused at the second review).",
		}, []string{"tool", "outcome"}),
		spend: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_spend_total",
			Help: "What billed calls spent, as settled, by connector and unit.",
		}, []string{"connector", "unit"}),
	}
	m.reg.MustRegister(m.decisions, m.approvals, m.latency, m.outcomes, m.spend,
		&live{src: src},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Observe counts an event the gate recorded (it is a gate.Observer): a decision with its
// latency, an answer, an outcome with what it spent.
func (m *Metrics) Observe(e *audit.Event, elapsed time.Duration) {
	switch e.Kind {
	case audit.KindDecision:
		m.decisions.WithLabelValues(e.Tool, e.Decision).Inc()
		m.latency.WithLabelValues(e.Decision).Observe(elapsed.Seconds())
	case audit.KindApproval:
		m.approvals.WithLabelValues(e.Decision, e.Channel).Inc()
	case audit.KindOutcome:
		m.outcomes.WithLabelValues(e.Tool, e.Outcome).Inc()
		if e.Spend != nil && e.Spend.Amount > 0 {
			m.spend.WithLabelValues(e.Spend.Connector, e.Spend.Unit).Add(e.Spend.Amount)
		}
	}
}

// Registry is the registry the collectors are on, for a caller that adds its own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition formats. A source that fails is
// left out of that scrape (and logged); the rest is still served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(m.logger.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      m.reg,
	})
}

// live reads the server's live state at each scrape.
type live struct{ src Sources }

var (
	sessionsDesc = prometheus.NewDesc("warden_sessions", "Live MCP sessions on this instance, by tenant.", []string{"tenant"}, nil)
	pendingDesc  = prometheus.NewDesc("warden_cards_pending", "Approval cards waiting for an answer in the store (every instance's), by tenant.", []string{"tenant"}, nil)
	upstreamDesc = prometheus.NewDesc("warden_upstream_errors_total", "Tool calls that failed at a connector's upstream (no answer in time, a broken or garbled connection), by connector.", []string{"connector"}, nil)
	sandboxDesc  = prometheus.NewDesc("warden_sandbox_starts_total", "Commands this process started in the sandbox (shell_exec, git, sandboxed connectors).", nil, nil)
)

func (l *live) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsDesc
	ch <- pendingDesc
	ch <- upstreamDesc
	ch <- sandboxDesc
}

func (l *live) Collect(ch chan<- prometheus.Metric) {
	if f := l.src.Sessions; f != nil {
		for tenant, n := range f() {
			ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(n), tenant)
		}
	}
	if f := l.src.PendingCards; f != nil {
		ctx, cancel := context.WithTimeout(context.Background(), l.src.ScrapeTimeout)
		byTenant, err := f(ctx)
		cancel()
		if err != nil {
			l.src.Logger.Warn("metrics: the pending cards could not be read", "err", err)
			ch <- prometheus.NewInvalidMetric(pendingDesc, err)
		}
		for tenant, n := range byTenant {
			ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n), tenant)
		}
	}
	if f := l.src.UpstreamErrors; f != nil {
		for connector, n := range f() {
			ch <- prometheus.MustNewConstMetric(upstreamDesc, prometheus.CounterValue, float64(n), connector)
		}
	}
	if f := l.src.SandboxStarts; f != nil {
		ch <- prometheus.MustNewConstMetric(sandboxDesc, prometheus.CounterValue, float64(f()))
	}
}
