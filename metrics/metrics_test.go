package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wardenhq/warden/audit"
)

func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return fams
}

func find(f *dto.MetricFamily, labels map[string]string) *dto.Metric {
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if labels[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		return m
	}
	return nil
}

func counter(m *dto.Metric) float64 { return m.GetCounter().GetValue() }
func gauge(m *dto.Metric) float64   { return m.GetGauge().GetValue() }

// Each event kind moves its own metric; the live sources are read at the scrape; a source
// that fails leaves the rest of the scrape served.
func TestObserveAndSources(t *testing.T) {
	var pendingErr error
	m := New(Sources{
		Sessions:       func() map[string]int { return map[string]int{"acme": 2} },
		PendingCards:   func(context.Context) (map[string]int, error) { return map[string]int{"acme": 3}, pendingErr },
		UpstreamErrors: func() map[string]uint64 { return map[string]uint64{"github": 4} },
		SandboxStarts:  func() uint64 { return 5 },
	})
	spend := &audit.Spend{Connector: "serp", Unit: "credits", Amount: 2.5}
	m.Observe(&audit.Event{Kind: audit.KindDecision, Tool: "serp_search", Decision: "allow"}, 3*time.Millisecond)
	m.Observe(&audit.Event{Kind: audit.KindOutcome, Tool: "serp_search", Outcome: "ok", Spend: spend}, 0)
	m.Observe(&audit.Event{Kind: audit.KindOutcome, Tool: "serp_search", Outcome: "ok", Spend: spend}, 0)
	m.Observe(&audit.Event{Kind: audit.KindApproval, Decision: "deny", Channel: "canceled"}, time.Second)
	m.Observe(&audit.Event{Kind: audit.KindRun, Outcome: "started"}, 0) // not counted
	fams := scrape(t, m)
	checks := []struct {
		name   string
		labels map[string]string
		get    func(*dto.Metric) float64
		want   float64
	}{
		{"warden_decisions_total", map[string]string{"tool": "serp_search", "decision": "allow"}, counter, 1},
		{"warden_spend_total", map[string]string{"connector": "serp", "unit": "credits"}, counter, 5},
		{"warden_call_outcomes_total", map[string]string{"tool": "serp_search", "outcome": "ok"}, counter, 2},
		{"warden_approvals_total", map[string]string{"decision": "deny", "channel": "canceled"}, counter, 1},
		{"warden_decision_seconds", map[string]string{"decision": "allow"}, func(m *dto.Metric) float64 { return m.GetHistogram().GetSampleSum() }, 0.003},
		{"warden_sessions", map[string]string{"tenant": "acme"}, gauge, 2},
		{"warden_cards_pending", map[string]string{"tenant": "acme"}, gauge, 3},
		{"warden_upstream_errors_total", map[string]string{"connector": "github"}, counter, 4},
		{"warden_sandbox_starts_total", nil, counter, 5},
	}
	for _, c := range checks {
		mm := find(fams[c.name], c.labels)
		if mm == nil {
			t.Errorf("%s%v is missing", c.name, c.labels)
			continue
		}
		if got := c.get(mm); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	pendingErr = errors.New("the store is away")
	fams = scrape(t, m)
	if fams["warden_sessions"] == nil || fams["warden_decisions_total"] == nil {
		t.Error("a failing source took the rest of the scrape with it")
	}
}

// The gate calls Observe on every call's decision and outcome: its cost per call.
func BenchmarkObserve(b *testing.B) {
	m := New(Sources{})
	d := &audit.Event{Kind: audit.KindDecision, Tool: "files_read", Decision: "allow"}
	o := &audit.Event{Kind: audit.KindOutcome, Tool: "files_read", Outcome: "ok"}
	b.ReportAllocs()
	for b.Loop() {
		m.Observe(d, time.Millisecond)
		m.Observe(o, 0)
	}
}
