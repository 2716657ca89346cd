package gate_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

type rig struct {
	t      *testing.T
	db     *sqlite.DB
	clock  *clock.Fake
	broker *approval.Broker
	gate   *gate.Gate
	rv     *review.Reviewer
	ws     string
}

var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newRig(t *testing.T, timeout time.Duration) *rig {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := clock.NewFake(start)
	rv, err := review.New(review.Options{Key: []byte("a test key of thirty-two bytes!!"), Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	broker := approval.NewBroker(approval.Options{Store: db, Clock: c, Timeout: timeout})
	g, err := gate.New(gate.Options{Reviewer: rv, Broker: broker, Ledger: db, Log: db, Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, db: db, clock: c, broker: broker, gate: g, rv: rv, ws: ws}
}

func (r *rig) session(src []byte, env map[string]string, spec surface.Spec, id string) *gate.Session {
	r.t.Helper()
	p, err := policy.Parse("p.yaml", src)
	if err != nil {
		r.t.Fatal(err)
	}
	if spec.Model == "" {
		// A session runs a model Scout certifies (a policy without models ignores it), so
		// that a customer's session keeps its role's tools rather than the read-only route.
		spec.Model = "google/gemini-3.8-flash"
	}
	sf, err := surface.Open(p.Env(policy.MapLookup(env)), spec)
	if err != nil {
		r.t.Fatal(err)
	}
	paths, err := action.NewResolver(r.ws, r.ws)
	if err != nil {
		r.t.Fatal(err)
	}
	s := &gate.Session{Review: &review.Session{ID: id, Surface: sf, Paths: paths}, Principal: "tester"}
	s.Run = gate.RunFor(sf, id+"-run", id, r.clock.Now())
	return s
}

// events returns the kinds and decisions of a call's audit events, in order.
func (r *rig) events(callID string) []string {
	r.t.Helper()
	if err := r.gate.Sync(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	evs, err := r.db.Query(context.Background(), audit.Filter{CallID: callID})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind+":"+e.Decision)
	}
	return out
}

func ok(context.Context, *action.Action) (map[string]any, error) {
	return map[string]any{"ok": true}, nil
}

func TestCallWithoutCardOrMoney(t *testing.T) {
	r := newRig(t, time.Minute)
	s := r.session(examples.Quickstart, nil, surface.Spec{Role: "person", Tenant: "default"}, "s1")
	asked := true
	out, err := r.gate.Call(context.Background(), s, "files_write", map[string]any{"path": "a.txt", "content": "x"}, func(ctx context.Context, a *action.Action) (map[string]any, error) {
		_, asked = gate.Answer(ctx)
		return ok(ctx, a)
	})
	if err != nil || !out.Ran || out.Verdict.Decision != verdict.Allow || asked {
		t.Fatalf("%+v, %v (a person was asked: %v)", out, err, asked)
	}
	if got := r.events(out.CallID); !slices.Equal(got, []string{"decision:allow", "outcome:allow"}) {
		t.Errorf("events %v", got)
	}
	out, err = r.gate.Call(context.Background(), s, "NotebookEdit", nil, func(context.Context, *action.Action) (map[string]any, error) {
		t.Fatal("ran")
		return nil, nil
	})
	if err != nil || out.Ran || out.Verdict.Decision != verdict.Deny {
		t.Fatalf("%+v, %v", out, err)
	}
	if got := r.events(out.CallID); !slices.Equal(got, []string{"decision:deny"}) {
		t.Errorf("a refused call's events %v", got)
	}
}

// waitCard waits until the broker has parked a card and started its timer.
func (r *rig) waitCard() *approval.Card {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		cards, err := r.db.Cards(context.Background(), approval.CardFilter{State: approval.Pending})
		if err != nil {
			r.t.Fatal(err)
		}
		if len(cards) > 0 && r.clock.Waiters() > 0 {
			return cards[0]
		}
		time.Sleep(time.Millisecond)
	}
	r.t.Fatal("no card was parked")
	return nil
}

func TestApprovals(t *testing.T) {
	tests := []struct {
		name    string
		answer  approval.Answer
		channel approval.Channel // the answer's, or (advance) the one the card must record
		advance bool             // let the card time out instead
		ran     bool
		code    verdict.Code
		events  []string
	}{
		{name: "allow once", answer: approval.AllowOnce, channel: approval.ChannelElicitation, ran: true,
			events: []string{"decision:ask", "approval:allow", "decision:allow", "outcome:allow"}},
		{name: "deny", answer: approval.Deny, channel: approval.ChannelAPI, code: verdict.ApprovalDenied,
			events: []string{"decision:ask", "approval:deny"}},
		{name: "time out", advance: true, channel: approval.ChannelDeadline, code: verdict.ApprovalTimeout,
			events: []string{"decision:ask", "approval:deny"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, time.Minute)
			s := r.session(examples.Scout, nil, surface.Spec{Role: "person", Tenant: "acme"}, "s1")
			args := map[string]any{"spreadsheet": "q3", "rows": []any{"a"}}
			var out *gate.Outcome
			var err error
			var answer approval.Answer
			done := make(chan struct{})
			go func() {
				defer close(done)
				out, err = r.gate.Call(context.Background(), s, "mcp__sheets__sheets_append", args, func(ctx context.Context, a *action.Action) (map[string]any, error) {
					answer, _ = gate.Answer(ctx)
					return ok(ctx, a)
				})
			}()
			card := r.waitCard()
			if card.Tool != "mcp__sheets__sheets_append" || card.Digest != action.Digest("mcp__sheets__sheets_append", args) || !strings.Contains(string(card.Args), "q3") {
				t.Errorf("card %+v", card)
			}
			if tt.advance {
				r.clock.Advance(time.Minute)
			} else if _, err := r.broker.Answer(context.Background(), "acme", card.ID, tt.answer, "alice", tt.channel, card.Digest); err != nil {
				t.Fatal(err)
			}
			<-done
			if err != nil || out.Ran != tt.ran {
				t.Fatalf("ran %v, err %v; want ran %v", out.Ran, err, tt.ran)
			}
			if tt.ran && answer != tt.answer {
				t.Errorf("the executor saw the answer %q; want %q", answer, tt.answer)
			}
			if tt.code != "" && !hasCode(out.Verdict, tt.code) {
				t.Errorf("verdict %s; want %s", out.Verdict.Summary(), tt.code)
			}
			if got := r.events(out.CallID); !slices.Equal(got, tt.events) {
				t.Errorf("events %v; want %v", got, tt.events)
			}
			// the approval event says how the card was answered or ended; no other event does
			evs, err := r.db.Query(context.Background(), audit.Filter{CallID: out.CallID})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				want := ""
				if e.Kind == audit.KindApproval {
					want = string(tt.channel)
				}
				if e.Channel != want {
					t.Errorf("%s event: channel %q; want %q", e.Kind, e.Channel, want)
				}
			}
			if _, err := r.broker.Answer(context.Background(), "acme", card.ID, approval.AllowOnce, "bob", approval.ChannelAPI, ""); !errors.Is(err, approval.ErrNotPending) {
				t.Errorf("a second answer: %v; want ErrNotPending", err)
			}
		})
	}
}

func hasCode(v review.Verdict, c verdict.Code) bool {
	for _, b := range v.Blockers {
		if b.Code == c {
			return true
		}
	}
	return false
}

func TestStandingApproval(t *testing.T) {
	r := newRig(t, time.Minute)
	s := r.session(examples.Scout, nil, surface.Spec{Role: "person", Tenant: "acme"}, "s1")
	args := map[string]any{"spreadsheet": "q3"}
	done := make(chan *gate.Outcome)
	go func() {
		out, _ := r.gate.Call(context.Background(), s, "mcp__sheets__sheets_append", args, ok)
		done <- out
	}()
	card := r.waitCard()
	if _, err := r.broker.Answer(context.Background(), "acme", card.ID, approval.AllowTenant, "alice", approval.ChannelAPI, ""); err != nil {
		t.Fatal(err)
	}
	if out := <-done; !out.Ran {
		t.Fatalf("first call: %s", out.Verdict.Summary())
	}
	// The same call again: allowed by the standing approval, without a card; the executor
	// sees it as allowed for the tenant.
	var answer approval.Answer
	out, err := r.gate.Call(context.Background(), s, "mcp__sheets__sheets_append", args, func(ctx context.Context, a *action.Action) (map[string]any, error) {
		answer, _ = gate.Answer(ctx)
		return ok(ctx, a)
	})
	if err != nil || !out.Ran || out.Approver != "alice" || answer != approval.AllowTenant {
		t.Fatalf("the same call: ran %v approver %q answer %q err %v", out.Ran, out.Approver, answer, err)
	}
	// Another call of the same tool needs its own card; the zero timeout below denies it.
	r2 := newRig(t, 0)
	s2 := r2.session(examples.Scout, nil, surface.Spec{Role: "person", Tenant: "acme"}, "s2")
	out, err = r2.gate.Call(context.Background(), s2, "mcp__sheets__sheets_append", map[string]any{"spreadsheet": "q4"}, ok)
	if err != nil || out.Ran || !hasCode(out.Verdict, verdict.ApprovalTimeout) {
		t.Fatalf("APPROVAL_TIMEOUT_MS=0 must deny at once: %s, %v", out.Verdict.Summary(), err)
	}
}

// specialist opens the Scout researcher: Firecrawl at 25 credits a run and 100 a day.
func (r *rig) specialist(id string) *gate.Session {
	r.t.Helper()
	s := r.session(examples.Scout, nil, surface.Spec{Role: "specialist", Tenant: "acme", Profile: "researcher"}, id)
	if s.Run == nil || len(s.Run.Allowances) != 1 || s.Run.Allowances[0].PerRun != 25 {
		r.t.Fatalf("run %+v", s.Run)
	}
	if err := r.gate.StartRun(context.Background(), s); err != nil {
		r.t.Fatal(err)
	}
	return s
}

func TestSpending(t *testing.T) {
	r := newRig(t, time.Minute)
	s := r.specialist("run1")
	ctx := context.Background()
	scrape := map[string]any{"url": "https://example.com"}
	for i := range 25 {
		out, err := r.gate.Call(ctx, s, "mcp__firecrawl__firecrawl_scrape", scrape, ok)
		if err != nil || !out.Ran {
			t.Fatalf("call %d: %s, %v", i, out.Verdict.Summary(), err)
		}
	}
	out, err := r.gate.Call(ctx, s, "mcp__firecrawl__firecrawl_scrape", scrape, ok)
	if err != nil || out.Ran || !hasCode(out.Verdict, verdict.RunAllowance) {
		t.Fatalf("the 26th credit: %s, %v; want allowance_exceeded", out.Verdict.Summary(), err)
	}
	st, err := r.db.RunStatus(ctx, "run1-run")
	if err != nil || st.Spent[0].Settled != 25 || st.Spent[0].Reserved != 0 {
		t.Fatalf("run status %+v, %v", st, err)
	}
	// A crawl priced above the per-run figure, and one above the threshold (which would ask,
	// and a specialist has nobody to ask).
	r2 := newRig(t, time.Minute)
	s2 := r2.specialist("run2")
	out, _ = r2.gate.Call(ctx, s2, "mcp__firecrawl__firecrawl_crawl", map[string]any{"url": "https://x", "limit": 30.0}, ok)
	if out.Ran || !hasCode(out.Verdict, verdict.RunAllowance) {
		t.Errorf("a 30-credit crawl on a 25-credit run: %s", out.Verdict.Summary())
	}
	out, _ = r2.gate.Call(ctx, s2, "mcp__firecrawl__firecrawl_crawl", map[string]any{"url": "https://x", "limit": 60.0}, ok)
	if out.Ran || !hasCode(out.Verdict, verdict.SpendAsk) || !hasCode(out.Verdict, verdict.NoApprovalChannel) {
		t.Errorf("a 60-credit crawl above the threshold, nobody to ask: %s", out.Verdict.Summary())
	}
	out, _ = r2.gate.Call(ctx, s2, "mcp__firecrawl__firecrawl_crawl", map[string]any{"url": "https://x", "limit": -1.0}, ok)
	if out.Ran || !hasCode(out.Verdict, verdict.Unpriced) {
		t.Errorf("a negative limit: %s", out.Verdict.Summary())
	}
	// A failed call gives its reservation back.
	out, _ = r2.gate.Call(ctx, s2, "mcp__firecrawl__firecrawl_scrape", scrape, func(context.Context, *action.Action) (map[string]any, error) {
		return nil, errors.New("upstream down")
	})
	if !out.Ran || out.Err == nil {
		t.Fatalf("failed call: %+v", out)
	}
	st, _ = r2.db.RunStatus(ctx, "run2-run")
	if st.Spent[0].Settled != 0 || st.Spent[0].Reserved != 0 {
		t.Errorf("after a failed call: %+v", st.Spent)
	}
}

func TestDayAllowance(t *testing.T) {
	r := newRig(t, time.Minute)
	ctx := context.Background()
	scrape := map[string]any{"url": "https://example.com"}
	// Four runs of 25 credits fill the 100-credit day; the fifth may not start.
	for i := range 4 {
		s := r.specialist("d" + string(rune('a'+i)))
		for range 25 {
			if out, _ := r.gate.Call(ctx, s, "mcp__firecrawl__firecrawl_scrape", scrape, ok); !out.Ran {
				t.Fatalf("run %d: %s", i, out.Verdict.Summary())
			}
		}
		if err := r.gate.EndRun(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	s := r.session(examples.Scout, nil, surface.Spec{Role: "specialist", Tenant: "acme", Profile: "researcher"}, "de")
	if err := r.gate.StartRun(ctx, s); !errors.Is(err, budget.ErrDayAllowance) {
		t.Fatalf("the fifth run: %v; want ErrDayAllowance", err)
	}
	// The next day it may.
	r.clock.Advance(24 * time.Hour)
	s = r.session(examples.Scout, nil, surface.Spec{Role: "specialist", Tenant: "acme", Profile: "researcher"}, "next")
	if err := r.gate.StartRun(ctx, s); err != nil {
		t.Fatalf("a run the next day: %v", err)
	}
}

func TestSettledFromTheResult(t *testing.T) {
	r := newRig(t, time.Minute)
	ctx := context.Background()
	s := r.session(examples.Scout, nil, surface.Spec{Role: "specialist", Tenant: "acme", Profile: "seo_analyst"}, "seo")
	if err := r.gate.StartRun(ctx, s); err != nil {
		t.Fatal(err)
	}
	out, err := r.gate.Call(ctx, s, "mcp__dataforseo__dataforseo_keyword_ideas", map[string]any{"keyword": "boots"},
		func(context.Context, *action.Action) (map[string]any, error) {
			return map[string]any{"cost": 0.02}, nil
		})
	if err != nil || !out.Ran || out.Spend == nil || out.Spend.Amount != 0.02 {
		t.Fatalf("%+v %v", out.Spend, err)
	}
	st, _ := r.db.RunStatus(ctx, "seo-run")
	if st.Spent[0].Settled != 0.02 || st.Spent[0].Reserved != 0 {
		t.Errorf("spent %+v; want 0.02 settled", st.Spent)
	}
}

func TestConcurrentSpendNeverOvershoots(t *testing.T) {
	r := newRig(t, time.Minute)
	s := r.specialist("race")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran := 0
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := r.gate.Call(context.Background(), s, "mcp__firecrawl__firecrawl_scrape", map[string]any{"url": "https://x"}, ok)
			if err != nil {
				t.Error(err)
				return
			}
			if out.Ran {
				mu.Lock()
				ran++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st, _ := r.db.RunStatus(context.Background(), "race-run")
	if ran != 25 || st.Spent[0].Settled != 25 {
		t.Fatalf("%d calls ran and %v settled; want exactly 25 of each", ran, st.Spent[0].Settled)
	}
}

func TestRunLimits(t *testing.T) {
	r := newRig(t, time.Minute)
	ctx := context.Background()
	s := r.specialist("limits")
	// The researcher's run may spend $0.50 on models and take ten turns.
	for i := range 10 {
		if err := r.gate.Turn(ctx, s); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
	}
	if err := r.gate.Turn(ctx, s); !errors.Is(err, gate.ErrLimit) {
		t.Fatalf("turn 11: %v; want ErrLimit", err)
	}
	out, _ := r.gate.Call(ctx, s, "Read", map[string]any{"file_path": "x"}, ok)
	if out.Ran || !hasCode(out.Verdict, verdict.RunLimit) {
		t.Errorf("a call after the turns ran out: %s", out.Verdict.Summary())
	}

	s2 := r.session(examples.Scout, nil, surface.Spec{Role: "specialist", Tenant: "acme", Profile: "researcher"}, "budget")
	if err := r.gate.StartRun(ctx, s2); !errors.Is(err, budget.ErrConcurrentRuns) {
		t.Fatalf("a second live researcher run: %v; want ErrConcurrentRuns", err)
	}
	if err := r.gate.EndRun(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := r.gate.StartRun(ctx, s2); err != nil {
		t.Fatal(err)
	}
	if err := r.gate.ModelSpend(ctx, s2, 0.30); err != nil {
		t.Fatal(err)
	}
	if err := r.gate.ModelSpend(ctx, s2, 0.30); !errors.Is(err, gate.ErrLimit) {
		t.Fatalf("$0.60 on a $0.50 run: %v; want ErrLimit", err)
	}
	out, _ = r.gate.Call(ctx, s2, "Read", map[string]any{"file_path": "x"}, ok)
	if out.Ran || !hasCode(out.Verdict, verdict.RunLimit) {
		t.Errorf("a call over budget: %s", out.Verdict.Summary())
	}
}

func TestMonthlyCap(t *testing.T) {
	src := strings.Replace(string(examples.Quickstart), "    owner: true", "    owner: true\n    monthlyModelCapUsd: 1", 1)
	r := newRig(t, time.Minute)
	ctx := context.Background()
	person := r.session([]byte(src), nil, surface.Spec{Role: "person", Tenant: "default"}, "chat")
	if err := r.gate.Turn(ctx, person); err != nil {
		t.Fatal(err)
	}
	if err := r.gate.ModelSpend(ctx, person, 1.25); !errors.Is(err, gate.ErrLimit) {
		t.Fatalf("person chat over the cap: %v; want ErrLimit", err)
	}
	if err := r.gate.Turn(ctx, person); !errors.Is(err, gate.ErrLimit) {
		t.Fatalf("a turn over the cap: %v", err)
	}
	// The cap is the tenant's: a coworker's run may not start either.
	co := r.session([]byte(src), nil, surface.Spec{Role: "coworker", Tenant: "default", Profile: "reviewer"}, "co")
	if err := r.gate.StartRun(ctx, co); !errors.Is(err, budget.ErrMonthlyCap) {
		t.Fatalf("a run over the tenant's cap: %v; want ErrMonthlyCap", err)
	}
}

// failingLog is an audit log that cannot write: nothing may run.
type failingLog struct{ audit.Log }

func (failingLog) Append(context.Context, *audit.Event) error { return errors.New("disk full") }

func TestUnrecordedDecisionsDoNotRun(t *testing.T) {
	r := newRig(t, time.Minute)
	s := r.specialist("norecord")
	g, err := gate.New(gate.Options{Reviewer: r.rv, Broker: r.broker, Ledger: r.db, Log: failingLog{r.db}, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Call(context.Background(), s, "mcp__firecrawl__firecrawl_scrape", map[string]any{"url": "https://x"},
		func(context.Context, *action.Action) (map[string]any, error) {
			t.Fatal("ran without a record")
			return nil, nil
		})
	if !errors.Is(err, gate.ErrNotRecorded) || out.Ran || !hasCode(out.Verdict, verdict.NotRecorded) {
		t.Fatalf("%v, %s", err, out.Verdict.Summary())
	}
	st, _ := r.db.RunStatus(context.Background(), "norecord-run")
	if st.Spent[0].Reserved != 0 || st.Spent[0].Settled != 0 {
		t.Errorf("the reservation was not given back: %+v", st.Spent)
	}
}

// A harness's report (the HTTP route and MCP's _meta take this path) records the dollars, then
// each turn until one is refused, and stops the session at a limit; a stopped session's later
// reports record nothing.
func TestReport(t *testing.T) {
	r := newRig(t, time.Minute)
	ctx := context.Background()
	s := r.specialist("report")
	if _, err := r.gate.Report(ctx, s, gate.Usage{Turns: -1, ModelUsd: math.NaN()}); !errors.Is(err, gate.ErrInvalidUsage) {
		t.Fatalf("a negative report: %v; want ErrInvalidUsage", err)
	}
	st, err := r.gate.Report(ctx, s, gate.Usage{Turns: 4, ModelUsd: 0.1})
	if err != nil || st.Turns != 4 || st.Recorded.Turns != 4 || st.ModelUsd != 0.1 || st.Stopped != "" || st.MaxTurns != 10 {
		t.Fatalf("4 turns of 10: %+v, %v", st, err)
	}
	st, err = r.gate.Report(ctx, s, gate.Usage{Turns: 10})
	if err != nil || st.Turns != 10 || st.Recorded.Turns != 6 || !strings.Contains(st.Stopped, "no turns left") {
		t.Fatalf("10 more turns of the 6 left: %+v, %v", st, err)
	}
	out, _ := r.gate.Call(ctx, s, "Read", map[string]any{"file_path": "x"}, ok)
	if out.Ran || !hasCode(out.Verdict, verdict.RunLimit) {
		t.Errorf("a call after the reported turns ran out: %s", out.Verdict.Summary())
	}
	st, err = r.gate.Report(ctx, s, gate.Usage{Turns: 1, ModelUsd: 0.2})
	if !errors.Is(err, gate.ErrStopped) || st == nil || st.ModelUsd != 0.1 {
		t.Fatalf("a report to a stopped run: %+v, %v; want ErrStopped and nothing recorded", st, err)
	}
	if err := r.gate.EndRun(ctx, s); err != nil {
		t.Fatal(err)
	}

	s2 := r.session(examples.Scout, nil, surface.Spec{Role: "specialist", Tenant: "acme", Profile: "researcher"}, "report-budget")
	if err := r.gate.StartRun(ctx, s2); err != nil {
		t.Fatal(err)
	}
	st, err = r.gate.Report(ctx, s2, gate.Usage{Turns: 1, ModelUsd: 0.6})
	if err != nil || st.Recorded.Turns != 0 || st.Recorded.ModelUsd != 0.6 || !strings.Contains(st.Stopped, "above its budget") {
		t.Fatalf("$0.60 on a $0.50 run: %+v, %v; want the money recorded, no turn, the run stopped", st, err)
	}
}

// A session rebound (a hard-block change, a reload) shares its stop with the session it was
// rebound from, so a stop made on the old one while a call rebinds it is not lost.
func TestRebindSharesTheStop(t *testing.T) {
	r := newRig(t, time.Minute)
	ctx := context.Background()
	s := r.specialist("rebind")
	n := s.Rebind(s.Review)
	if err := r.gate.ModelSpend(ctx, s, 0.6); !errors.Is(err, gate.ErrLimit) {
		t.Fatalf("$0.60 on a $0.50 run: %v; want ErrLimit", err)
	}
	out, _ := r.gate.Call(ctx, n, "Read", map[string]any{"file_path": "x"}, ok)
	if out.Ran || !hasCode(out.Verdict, verdict.RunLimit) {
		t.Errorf("a call of the rebound session after the old one was stopped: %s", out.Verdict.Summary())
	}
}
