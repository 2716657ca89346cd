package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/gate"
)

// Runs is what the run-usage route reaches: the runs of the gateway's live sessions, and the
// ledger for the rest. The gateway implements it (gateway.Gateway.RunUsage).
type Runs interface {
	// RunUsage records usage for a run and returns its standing. may says whether the caller
	// may see the run, given its tenant, profile and the id of the agent token whose session
	// runs it ("" when no session of this process holds it); budget.ErrNotFound when it may
	// not, or there is no such run. gate.ErrInvalidUsage, gate.ErrStopped (with the standing:
	// nothing recorded), budget.ErrRunEnded and gate.ErrNotHeld (with the standing, from the
	// ledger: nothing recorded).
	RunUsage(ctx context.Context, id string, u gate.Usage, may func(tenant, profile, token string) bool) (*gate.Standing, error)
}

// runUsers are the roles that may report a run's usage: the agent whose session runs it, and
// those who manage its tenant.
var runUsers = []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleAgent}

// maxUsageBody bounds a usage report.
const maxUsageBody = 1 << 12

// mayReport says whether a token may report usage for a run: an admin any, an operator its
// tenant's, an agent token only the run of a session it opened. For a run no session of this
// process holds (token ""), an agent token sees it when it names the run's tenant and profile,
// which is all that can be checked then: it learns only that run's counts, and records nothing.
func mayReport(t *auth.Token, tenant, profile, token string) bool {
	switch t.Role {
	case auth.RoleAdmin:
		return true
	case auth.RoleOperator:
		return t.Tenant == tenant
	case auth.RoleAgent:
		if token != "" {
			return t.ID == token
		}
		return t.Tenant == tenant && t.Profile == profile
	}
	return false
}

// runJSON is a run's standing as the API shows it.
type runJSON struct {
	Run            string    `json:"run"`
	Tenant         string    `json:"tenant"`
	Profile        string    `json:"profile"`
	Ended          bool      `json:"ended"`
	Stopped        bool      `json:"stopped"`
	StoppedBecause string    `json:"stoppedBecause,omitempty"`
	Turns          int       `json:"turns"`
	MaxTurns       int       `json:"maxTurns"`
	TurnsLeft      *int      `json:"turnsLeft"` // null: no limit
	ModelUsd       float64   `json:"modelUsd"`
	RunBudgetUsd   float64   `json:"runBudgetUsd"`
	BudgetLeftUsd  *float64  `json:"budgetLeftUsd"` // null: no limit
	Month          string    `json:"month"`
	MonthUsd       float64   `json:"monthUsd"`
	MonthlyCapUsd  float64   `json:"monthlyCapUsd"`
	Recorded       usageJSON `json:"recorded"`
	Held           *bool     `json:"held,omitempty"` // false: no session of this instance holds it
}

type usageJSON struct {
	Turns    int     `json:"turns"`
	ModelUsd float64 `json:"modelUsd"`
}

func toRunJSON(st *gate.Standing) runJSON {
	j := runJSON{Run: st.Run, Tenant: st.Tenant, Profile: st.Profile, Ended: st.Ended, Stopped: st.Stopped != "" || st.Ended,
		StoppedBecause: st.Stopped, Turns: st.Turns, MaxTurns: st.MaxTurns, ModelUsd: st.ModelUsd, RunBudgetUsd: st.BudgetUsd,
		Month: st.Month, MonthUsd: st.MonthUsd, MonthlyCapUsd: st.MonthlyCapUsd,
		Recorded: usageJSON{Turns: st.Recorded.Turns, ModelUsd: st.Recorded.ModelUsd}}
	if st.Ended && j.StoppedBecause == "" {
		j.StoppedBecause = "the run has ended"
	}
	if st.MaxTurns > 0 {
		left := max(0, st.MaxTurns-st.Turns)
		j.TurnsLeft = &left
	}
	if st.BudgetUsd > 0 {
		left := math.Max(0, st.BudgetUsd-st.ModelUsd)
		j.BudgetLeftUsd = &left
	}
	return j
}

// readUsage reads {"turns": N, "modelUsd": X} (both optional), with every problem.
func readUsage(w http.ResponseWriter, r *http.Request) (u gate.Usage, problems []fieldError, malformed error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxUsageBody))
	if err := dec.Decode(&raw); err != nil {
		return u, nil, err
	}
	if dec.More() {
		return u, nil, errors.New("the body holds more than one JSON value")
	}
	for k, v := range raw {
		switch k {
		case "turns":
			var n json.Number
			if json.Unmarshal(v, &n) != nil {
				problems = append(problems, fieldError{"turns", "must be a whole number, 0 or more"})
				continue
			}
			i, err := n.Int64()
			if err != nil || i < 0 || i > math.MaxInt32 {
				problems = append(problems, fieldError{"turns", fmt.Sprintf("must be a whole number, 0 or more (got %s)", n)})
				continue
			}
			u.Turns = int(i)
		case "modelUsd":
			var f float64
			if err := json.Unmarshal(v, &f); err != nil || f < 0 {
				problems = append(problems, fieldError{"modelUsd", fmt.Sprintf("must be a number of dollars, 0 or more (got %s)", v)})
				continue
			}
			u.ModelUsd = f
		default:
			problems = append(problems, fieldError{k, "unknown field: the fields are turns and modelUsd"})
		}
	}
	slices.SortFunc(problems, func(a, b fieldError) int {
		if a.Field < b.Field {
			return -1
		}
		if a.Field > b.Field {
			return 1
		}
		return 0
	})
	return u, problems, nil
}

// runUsage records a harness's usage for a run (POST /api/v1/runs/{id}/usage) and answers
// its standing: 200 when it was recorded (stopped says whether the run may go on), 409 with
// the standing when the run was stopped before, has ended, or is held by another instance
// (nothing recorded), 404 for a run the caller may not see, 422 with every problem of the body.
func (s *Server) runUsage(w http.ResponseWriter, r *http.Request) {
	if s.o.Runs == nil {
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "this server holds no runs"}, nil)
		return
	}
	u, problems, err := readUsage(w, r)
	if err != nil {
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", `the body must be a JSON object {"turns": N, "modelUsd": X}: ` + err.Error()}, nil)
		return
	}
	if len(problems) > 0 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": map[string]any{
			"code": "invalid_usage", "message": "the usage does not validate; nothing was recorded", "fields": problems}})
		return
	}
	tok := caller(r)
	st, err := s.o.Runs.RunUsage(r.Context(), r.PathValue("id"), u, func(tenant, profile, token string) bool {
		return mayReport(tok, tenant, profile, token)
	})
	conflict := func(code, msg string, held bool) {
		j := toRunJSON(st)
		if !held {
			j.Held = &held
		}
		writeJSON(w, http.StatusConflict, map[string]any{"error": apiError{Code: code, Message: msg}, "run": j})
	}
	switch {
	case errors.Is(err, budget.ErrNotFound):
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "no such run"}, nil)
	case errors.Is(err, gate.ErrInvalidUsage):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": map[string]any{
			"code": "invalid_usage", "message": err.Error() + "; nothing was recorded"}})
	case errors.Is(err, gate.ErrStopped) && st != nil:
		conflict("run_stopped", "the run was stopped before this report, so nothing of it was recorded: "+st.Stopped, true)
	case errors.Is(err, budget.ErrRunEnded) && st != nil:
		conflict("run_ended", "the run has ended, so nothing of this report was recorded", false)
	case errors.Is(err, gate.ErrNotHeld) && st != nil:
		conflict("run_elsewhere", "the run is live, but no session of this instance holds it (another instance serves its MCP session, "+
			"or a process that stopped left it open): nothing was recorded; report its usage to the instance that serves its session, "+
			"or in the _meta of its MCP calls", false)
	case err != nil:
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the usage could not be recorded"}, err)
	default:
		writeJSON(w, http.StatusOK, toRunJSON(st))
	}
}
