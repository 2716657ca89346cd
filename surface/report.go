package surface

import "github.com/wardenhq/warden/policy"

// Report is a surface as `warden surface --json` and GET /api/v1/surface print it. The shape
// {"role","tools","absent":[{"tool","filter","reason"}]} is a fixed interface; the other fields
// are additions.
type Report struct {
	Role    string       `json:"role"`
	Tools   []string     `json:"tools"`
	Absent  []ReportTool `json:"absent"`
	Tenant  string       `json:"tenant"`
	Profile string       `json:"profile,omitempty"`
	Harness string       `json:"harness"`
	// Model is the model the session states; ReadOnlyRoute says why the session runs the
	// read-only route, when it does.
	Model         string             `json:"model,omitempty"`
	ReadOnlyRoute string             `json:"readOnlyRoute,omitempty"`
	Owner         bool               `json:"owner"`
	Revision      string             `json:"revision"`
	Gates         []ReportGate       `json:"gates"`
	Credentials   []ReportCredential `json:"credentials"`
	Limits        *policy.Limits     `json:"limits,omitempty"`
	Switches      []string           `json:"switchReports,omitempty"`

	// ApprovalChannel: a person can answer the session's cards. ApprovalByElicitation: the
	// session's own MCP client is asked to answer them too, where it supports elicitation.
	ApprovalChannel       bool `json:"approvalChannel"`
	ApprovalByElicitation bool `json:"approvalByElicitation"`
}

// ReportTool is a tool's explanation in a Report: the filter that removed it and why, or why
// it is given.
type ReportTool struct {
	Tool   string `json:"tool"`
	Filter string `json:"filter,omitempty"`
	Reason string `json:"reason"`
}

// ReportGate is the static gate of a given tool whose calls are not plainly allowed.
type ReportGate struct {
	Tool     string          `json:"tool"`
	Decision string          `json:"decision"`
	Code     string          `json:"code,omitempty"`
	Reason   string          `json:"reason"`
	Billing  *policy.Billing `json:"billing,omitempty"`
	Note     string          `json:"note,omitempty"`
}

// ReportCredential says where a connector's credentials come from in the session.
type ReportCredential struct {
	Connector  string `json:"connector"`
	Source     string `json:"source"`
	Connection string `json:"connection,omitempty"`
}

// NewReport describes s under env (whose switch reports it carries).
func NewReport(s *Surface, env *policy.Env) Report {
	out := Report{
		Role: s.Role().ID, Tools: s.Tools(), Absent: []ReportTool{},
		Tenant: s.Tenant().ID, Harness: s.Harness().ID, Owner: s.Owner(),
		Revision: s.Policy().Revision, Gates: []ReportGate{}, Credentials: []ReportCredential{},
		Switches:        env.Reports(),
		ApprovalChannel: s.ApprovalChannel(), ApprovalByElicitation: s.ApprovalByElicitation(),
	}
	if pr := s.Profile(); pr != nil {
		out.Profile = pr.ID
	}
	out.Model = s.Model()
	if ro, why := s.ReadOnly(); ro {
		out.ReadOnlyRoute = why
	}
	for _, e := range s.Absent() {
		out.Absent = append(out.Absent, ReportTool{Tool: e.Tool, Filter: string(e.Filter), Reason: e.Reason})
	}
	for _, name := range out.Tools {
		if g := s.Gate(name); g.Code != "" || g.Billing != nil || g.Note != "" {
			out.Gates = append(out.Gates, ReportGate{Tool: name, Decision: g.Decision.String(), Code: string(g.Code),
				Reason: g.Reason, Billing: g.Billing, Note: g.Note})
		}
	}
	for _, c := range s.Credentials() {
		cj := ReportCredential{Connector: c.Connector.ID, Source: string(c.Source)}
		if c.Connection != nil {
			cj.Connection = c.Connection.ID
		}
		out.Credentials = append(out.Credentials, cj)
	}
	if l, ok := s.Limits(); ok {
		out.Limits = &l
	}
	return out
}
