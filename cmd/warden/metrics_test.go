package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/store/sqlite"
)

// A served stack, as warden serve wires it: /mcp, the API and /metrics, on a real SQLite store.
type served struct {
	url   string
	st    *stack
	db    *sqlite.DB
	admin string
	agent string
	ws    string
}

func serveForTest(t testing.TB) *served {
	t.Helper()
	dir := t.TempDir()
	db, err := sqlite.Open(t.Context(), filepath.Join(dir, "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p, err := policy.Parse("quickstart.yaml", examples.Quickstart)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := newStack(p, db, filepath.Join(dir, "ws"), &sandboxState{}, logger, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.close)
	srv := newServer(st, db, logger, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", st.gateway.Handler())
	mux.Handle("/", srv)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	s := &served{url: hs.URL, st: st, db: db, ws: st.workspaces}
	s.admin = createToken(t, db, &auth.Token{Role: auth.RoleAdmin, Name: "admin"})
	s.agent = createToken(t, db, &auth.Token{Role: auth.RoleAgent, Tenant: "default", SessionRole: "person", Name: "agent"})
	return s
}

func createToken(t testing.TB, db appStore, tok *auth.Token) string {
	t.Helper()
	secret, hash, err := auth.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	tok.ID, tok.Hash, tok.Created = newTokenID(), hash, time.Now().UTC()
	if err := db.CreateToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	return secret
}

func (s *served) connect(t *testing.T, secret string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{secret}}}
	cs, err := c.Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

// scrape reads /metrics with the token and parses it with Prometheus's text parser.
func (s *served) scrape(t *testing.T, secret string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the /metrics body does not parse: %v", err)
	}
	return fams
}

// value is the metric's value with exactly these labels (and no others), or -1.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		for _, l := range m.Label {
			if labels[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// After real calls through the gateway, /metrics says what they were: decisions by tool and
// decision, their latency, outcomes, the live session; and only an admin token may read it.
func TestMetricsAfterRealCalls(t *testing.T) {
	s := serveForTest(t)
	ws := filepath.Join(s.ws, "default")
	if err := os.MkdirAll(ws, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := s.scrape(t, s.admin)
	if v := value(before, "warden_sessions", map[string]string{"tenant": "default"}); v > 0 {
		t.Fatalf("sessions before any: %v", v)
	}
	if before["go_goroutines"] == nil || before["process_start_time_seconds"] == nil {
		t.Errorf("the Go and process collectors are missing")
	}

	cs := s.connect(t, s.agent)
	defer cs.Close()
	const reads = 3
	for range reads {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "files_read", Arguments: map[string]any{"path": "notes.txt"}})
		if err != nil || res.IsError {
			t.Fatalf("files_read: %v %+v", err, res)
		}
	}
	// Outside the workspace: refused by review, so denied before anything runs.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "files_read", Arguments: map[string]any{"path": "/etc/shadow"}})
	if err != nil || !res.IsError {
		t.Fatalf("files_read /etc/shadow: %v %+v, want a refusal", err, res)
	}

	after := s.scrape(t, s.admin)
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"warden_decisions_total", map[string]string{"tool": "files_read", "decision": "allow"}, reads},
		{"warden_decisions_total", map[string]string{"tool": "files_read", "decision": "deny"}, 1},
		{"warden_decision_seconds", map[string]string{"decision": "allow"}, reads},
		{"warden_decision_seconds", map[string]string{"decision": "deny"}, 1},
		{"warden_call_outcomes_total", map[string]string{"tool": "files_read", "outcome": "ok"}, reads},
		{"warden_sessions", map[string]string{"tenant": "default"}, 1},
	}
	for _, c := range checks {
		if got := value(after, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, name := range []string{"warden_sandbox_starts_total"} {
		if after[name] == nil {
			t.Errorf("%s is missing", name)
		}
	}

	// /metrics spans every tenant: no token, or a tenant's token, gets nothing.
	for _, secret := range []string{"", s.agent, createToken(t, s.db, &auth.Token{Role: auth.RoleViewer, Tenant: "default"})} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+"/metrics", nil)
		if secret != "" {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET /metrics with %q: HTTP %d, want 401 or 403", secret, resp.StatusCode)
		}
	}
}
