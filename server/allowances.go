package server

import (
	"net/http"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/clock"
)

// allowanceJSON is one allowance of a profile of a tenant, with what it spent today.
type allowanceJSON struct {
	Profile   string  `json:"profile"`
	Connector string  `json:"connector"`
	Unit      string  `json:"unit"`
	PerRun    float64 `json:"perRun"`
	PerDay    float64 `json:"perDay"`
	// SpentToday is summed from the outcomes of today's (UTC) calls that ran and carry a
	// spend: an outcome records what a call cost once it is settled, so a reservation is not
	// counted twice.
	SpentToday float64 `json:"spentToday"`
}

// now is the server's time.
func (s *Server) now() time.Time {
	if s.o.Clock == nil {
		return clock.Real{}.Now()
	}
	return s.o.Clock.Now()
}

// listAllowances answers the allowances of every profile of a tenant, per billing connector,
// with what each spent today.
func (s *Server) listAllowances(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.dataTenant(w, r)
	if !ok {
		return
	}
	now := s.now().UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	out := []allowanceJSON{}
	if t, ok := s.o.Data.Policy().Tenant(tenant); ok {
		type key struct{ profile, connector string }
		spent := map[key]float64{}
		f := audit.Filter{Tenant: tenant, Kind: audit.KindOutcome, Decision: "allow", Since: day, Limit: 1000}
		for {
			events, err := s.o.Store.Query(r.Context(), f)
			if err != nil {
				s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "today's spending cannot be read right now"}, err)
				return
			}
			for _, e := range events {
				if e.Spend != nil {
					spent[key{e.Profile, e.Spend.Connector}] += e.Spend.Amount
				}
			}
			if len(events) < f.Limit {
				break
			}
			f.AfterID = events[len(events)-1].ID
		}
		for _, prof := range t.Coworkers {
			if prof.Grant == nil {
				continue
			}
			for _, c := range prof.Grant.ConnectorList {
				a, ok := prof.Grant.Allowances[c.ID]
				if !ok || c.Billing == nil {
					continue
				}
				out = append(out, allowanceJSON{Profile: prof.ID, Connector: c.ID, Unit: c.Billing.Unit, PerRun: a.PerRun,
					PerDay: a.PerDay, SpentToday: spent[key{prof.ID, c.ID}]})
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tenant": tenant, "day": day.Format(time.DateOnly), "allowances": out})
}
