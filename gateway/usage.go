package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/verdict"
)

// The _meta keys of Warden's run limits over MCP: the initialize result names the session's
// run (metaRun), and a tools/call may carry the harness's usage (metaUsage), recorded before
// the call is judged.
const (
	metaRun   = "warden/run"
	metaUsage = "warden/usage"
)

// RunHeader is the response header of an MCP initialize that names the session's run, for
// POST /api/v1/runs/{id}/usage.
const RunHeader = "Warden-Run"

// RunUsage records a harness's usage for a run (POST /api/v1/runs/{id}/usage) and returns its
// standing. may says whether the caller may see the run, given its tenant, profile and the id
// of the agent token whose session runs it ("" when this process holds no session of it):
// budget.ErrNotFound when it may not, as when there is no such run. A run held by a live
// session of this process is reported through the gate (gate.Gate.Report: gate.ErrStopped
// for a stopped one). A run the ledger has but no session here holds is not changed: its
// standing comes with budget.ErrRunEnded when it has ended, gate.ErrNotHeld when another
// instance (or a process that died) holds it.
func (g *Gateway) RunUsage(ctx context.Context, id string, u gate.Usage, may func(tenant, profile, token string) bool) (*gate.Standing, error) {
	var s *session
	if sid, ok := strings.CutPrefix(id, "run-"); ok {
		g.mu.Lock()
		s = g.sessions[sid]
		g.mu.Unlock()
	}
	if s == nil && g.shared() {
		// The run of a session another instance holds (or held): built again here, so that
		// the usage is checked and recorded as there.
		s = g.sessionOfRun(ctx, id)
	}
	if s != nil {
		if gs := s.gs.Load(); gs != nil && gs.Run != nil && gs.Run.ID == id {
			if !may(gs.Run.Tenant, gs.Run.Profile, s.token.ID) {
				return nil, budget.ErrNotFound
			}
			return g.o.Gate.Report(ctx, gs, u)
		}
	}
	st, err := g.o.Gate.StoredStanding(ctx, id)
	if err != nil {
		return nil, err
	}
	if !may(st.Tenant, st.Profile, "") {
		return nil, budget.ErrNotFound
	}
	if t, ok := g.snapshot.Load().p.Tenant(st.Tenant); ok {
		st.MonthlyCapUsd = t.MonthlyModelCapUsd
	}
	if st.Ended {
		return st, budget.ErrRunEnded
	}
	return st, gate.ErrNotHeld
}

// initialized adds the session's run to the initialize result's _meta, so that a client
// learns which run to report usage for.
func (s *session) initialized(res mcp.Result) {
	r, ok := res.(*mcp.InitializeResult)
	gs := s.gs.Load()
	if !ok || gs == nil || gs.Run == nil {
		return
	}
	if r.Meta == nil {
		r.Meta = mcp.Meta{}
	}
	run := map[string]any{"id": gs.Run.ID, "usage": "/api/v1/runs/" + gs.Run.ID + "/usage"}
	if gs.Run.MaxTurns > 0 {
		run["maxTurns"] = gs.Run.MaxTurns
	}
	if gs.Run.BudgetUsd > 0 {
		run["runBudgetUsd"] = gs.Run.BudgetUsd
	}
	r.Meta[metaRun] = run
}

// reportMeta records the usage a tools/call carries in its _meta ("warden/usage": {"turns",
// "modelUsd"}) before the call is judged, so that a call past the run's limits is refused
// (run_limit) by the gate as the library's runtime would have it. It returns a refusal when
// the usage is malformed or cannot be recorded (the call does not run), else nil.
func (s *session) reportMeta(ctx context.Context, name string, meta mcp.Meta) *mcp.CallToolResult {
	raw, ok := meta[metaUsage]
	if !ok {
		return nil
	}
	u, problems := usageOf(raw)
	if len(problems) > 0 {
		detail := "_meta." + metaUsage + ": " + strings.Join(problems, "; ")
		s.record(ctx, name, nil, verdict.InvalidInput, detail)
		return refusal([]review.Blocker{{Code: verdict.InvalidInput, Detail: detail, Decision: verdict.Deny}})
	}
	_, err := s.g.o.Gate.Report(ctx, s.current(), u)
	if err == nil || errors.Is(err, gate.ErrStopped) {
		return nil // a stopped session's call is refused by the gate, with why
	}
	detail := "the usage in _meta." + metaUsage + " could not be recorded, so the call was not run: " + err.Error()
	s.record(ctx, name, nil, verdict.NotRecorded, detail)
	return refusal([]review.Blocker{{Code: verdict.NotRecorded, Detail: detail, Decision: verdict.Deny}})
}

// usageOf reads a usage object as JSON decoded it: {"turns": whole number >= 0, "modelUsd":
// number >= 0}, both optional, nothing else. It returns every problem.
func usageOf(raw any) (gate.Usage, []string) {
	var u gate.Usage
	m, ok := raw.(map[string]any)
	if !ok {
		return u, []string{`it must be an object {"turns": N, "modelUsd": X}`}
	}
	var problems []string
	for k, v := range m {
		switch k {
		case "turns":
			f, ok := v.(float64)
			if !ok || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
				problems = append(problems, fmt.Sprintf("turns must be a whole number, 0 or more (got %v)", v))
				continue
			}
			u.Turns = int(f)
		case "modelUsd":
			f, ok := v.(float64)
			if !ok || f < 0 {
				problems = append(problems, fmt.Sprintf("modelUsd must be a number of dollars, 0 or more (got %v)", v))
				continue
			}
			u.ModelUsd = f
		default:
			problems = append(problems, fmt.Sprintf("unknown field %q (the fields are turns and modelUsd)", k))
		}
	}
	slices.Sort(problems) // map order is random; the message is not
	return u, problems
}
