package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/surface"
)

// Explorer answers the explorer routes: GET /api/v1/surface computes a session's surface as
// `warden surface --json` prints it, and POST /api/v1/review reviews one call as `warden
// review --json` does, under the policy, switches and hard blocks in force. Nothing runs. The
// gateway implements it.
type Explorer interface {
	// Surface computes the surface q describes; an error says what of q is wrong (an unknown
	// tenant, role or profile), or is surface.ErrRefused for a session its role refuses.
	Surface(ctx context.Context, q SurfaceQuery) (*SurfaceReport, error)
	// Review reviews one call in the session q describes, with the tenant's hard blocks in force.
	Review(ctx context.Context, q ReviewQuery) (*review.Verdict, error)
}

// SurfaceQuery describes a session to explore.
type SurfaceQuery struct {
	Tenant, Role, Profile, Harness string
	// Model is the model the session states (see surface.Spec.Model).
	Model string
	Owner bool
	// Env stands in for the host environment's variables of these names (the operator switches).
	Env map[string]string
}

// SurfaceReport is the answer of GET /api/v1/surface: the surface, and why each tool it holds
// is given (each absent tool's explanation is in Absent).
type SurfaceReport struct {
	surface.Report
	Given []surface.ReportTool `json:"given"`
}

// ReviewQuery is one call to review: the body of POST /api/v1/review.
type ReviewQuery struct {
	Tool  string         `json:"tool"`
	Input map[string]any `json:"input"`
	// Tenant, Role and Profile describe the session (the tenant defaults to the caller's,
	// or the policy's only one; the role to the policy's default role).
	Tenant  string `json:"tenant,omitempty"`
	Role    string `json:"role,omitempty"`
	Profile string `json:"profile,omitempty"`
	// Model is the model the session states (see surface.Spec.Model). An agent token's
	// session runs on the model its token binds; a body that states another is refused.
	Model string `json:"model,omitempty"`
	// Workspace is the base of relative paths (default: the tenant's workspace). For an
	// agent's runtime it is where the runtime runs the call: the project directory.
	Workspace string `json:"workspace,omitempty"`

	// The fields below are an agent token's (AgentReviewer): a person's review records
	// nothing and waits for nobody, so it refuses them.

	// Harness names the agent's runtime that will run the call itself (claude-code, ...): a
	// label recorded on the audit events, which selects nothing.
	Harness string `json:"harness,omitempty"`
	// Session is the runtime's own session id (Claude Code's session_id), kept on the events
	// and the card.
	Session string `json:"session,omitempty"`
	// Sandboxed says the call will run in Warden's sandbox (warden exec), where the hard
	// blocks are enforced at every system call (review.Session.Enforced); false by default,
	// for a runtime's own shell.
	Sandboxed bool `json:"sandboxed,omitempty"`
	// Call is the id to record the call under (Claude Code's tool_use_id), so that the
	// runtime can report its outcome later (POST /api/v1/review/outcome); empty: the server
	// makes one. Letters, digits, '.', '_', ':' and '-', at most 128; one already on record in
	// the tenant is refused (409).
	Call string `json:"call,omitempty"`
	// Wait is how many seconds the request may be held for an ask's card to be answered (0:
	// not at all; at most MaxReviewWait).
	Wait float64 `json:"wait,omitempty"`
}

// MaxReviewWait bounds how long POST /api/v1/review holds a request for an answer; a longer
// wait asked for is cut to it (and the broker's approval timeout bounds it too).
const MaxReviewWait = 300 * time.Second

// AgentReviewer judges calls that an agent's own runtime runs (POST /api/v1/review with an
// agent token): the token binds the tenant, session role and profile, the decision is
// recorded as a gateway call's is, and an ask opens a card that may be waited for. The
// gateway implements it; implementations are safe for concurrent use.
type AgentReviewer interface {
	// ReviewFor judges q for the agent token tok, waiting at most wait for an ask's card.
	ReviewFor(ctx context.Context, tok *auth.Token, q ReviewQuery, wait time.Duration) (*ReviewAnswer, error)
	// OutcomeFor records how a call ReviewFor judged for the same token ended, as its runtime
	// reports it. A call the token's session did not judge is ErrNoSuchCall; one whose outcome
	// is on record already, ErrOutcomeRecorded.
	OutcomeFor(ctx context.Context, tok *auth.Token, q OutcomeReport) error
}

// OutcomeReport is the body of POST /api/v1/review/outcome: how a call an agent's runtime ran
// itself ended.
type OutcomeReport struct {
	// Call is the call's id, as the review answered it (or as the review's body gave it).
	Call string `json:"call"`
	// Outcome is "ok" or "error".
	Outcome string `json:"outcome"`
	// Error says what went wrong, for an error (at most 4,096 characters).
	Error string `json:"error,omitempty"`
}

// Errors of OutcomeFor, and of ReviewFor for a call id already on record.
var (
	ErrNoSuchCall      = errors.New("no call of this token's session has that id")
	ErrOutcomeRecorded = errors.New("the call's outcome is on record already")
	ErrCallTaken       = errors.New("a call with that id is on record already")
)

// ReviewAnswer is an agent token's answer of POST /api/v1/review: the verdict as `warden
// review --json` prints it, the call's id on its audit events, and for an ask the card.
type ReviewAnswer struct {
	Verdict review.Verdict
	// Call is the id the call's audit events carry (audit.Event.CallID).
	Call string
	// Card is the card an ask opened, as it was when the answer was written; nil when none
	// was opened.
	Card *ReviewCard
}

// ReviewCard is the card of an ask, as POST /api/v1/review shows it.
type ReviewCard struct {
	ID     string          `json:"id"`
	State  approval.State  `json:"state"`
	Answer approval.Answer `json:"answer,omitempty"`
}

// MarshalJSON writes the verdict's fields, then call and card.
func (a *ReviewAnswer) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(a.Verdict)
	if err != nil {
		return nil, err
	}
	extra := map[string]any{"call": a.Call}
	if a.Card != nil {
		extra["card"] = a.Card
	}
	more, err := json.Marshal(extra)
	if err != nil {
		return nil, err
	}
	return append(append(b[:len(b)-1], ','), more[1:]...), nil
}

// the roles of the explorer routes.
var (
	surfaceReaders = []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleApprover, auth.RoleViewer}
	reviewers      = []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleViewer, auth.RoleAgent}
)

// exploreTenant is the tenant a caller may explore: its own when it names none; another's is
// 404, as everywhere in the API.
func (s *Server) exploreTenant(w http.ResponseWriter, r *http.Request, asked string) (string, bool) {
	own := tenantOf(caller(r))
	switch {
	case asked == "":
		return own, true
	case own != "" && asked != own:
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "no such tenant"}, nil)
		return "", false
	}
	return asked, true
}

// ErrUnavailable is matched by an error of an Explorer or AgentReviewer that is not the
// request's fault (the server shutting down): the API answers 503.
var ErrUnavailable = errors.New("the server cannot review calls now")

// explorerFailed answers an error of the Explorer or the AgentReviewer.
func (s *Server) explorerFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrUnavailable):
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", err.Error()}, nil)
	case errors.Is(err, surface.ErrRefused):
		s.fail(w, r, apiError{http.StatusUnprocessableEntity, "refused", err.Error()}, nil)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the request ended before an answer"}, err)
	default:
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", err.Error()}, nil)
	}
}

func (s *Server) getSurface(w http.ResponseWriter, r *http.Request) {
	if s.o.Explorer == nil {
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "this server explores no surfaces"}, nil)
		return
	}
	q := r.URL.Query()
	tenant, ok := s.exploreTenant(w, r, q.Get("tenant"))
	if !ok {
		return
	}
	sq := SurfaceQuery{Tenant: tenant, Role: q.Get("role"), Profile: q.Get("profile"), Harness: q.Get("harness"), Model: q.Get("model"), Env: map[string]string{}}
	switch v := q.Get("owner"); v {
	case "", "false", "0":
	case "true", "1":
		sq.Owner = true
	default:
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf("owner %q: want true or false", v)}, nil)
		return
	}
	for _, kv := range q["env"] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf("env %q: want NAME=value", kv)}, nil)
			return
		}
		sq.Env[k] = v
	}
	rep, err := s.o.Explorer.Surface(r.Context(), sq)
	if err != nil {
		s.explorerFailed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) reviewCall(w http.ResponseWriter, r *http.Request) {
	tok := caller(r)
	agent := tok.Role == auth.RoleAgent
	switch {
	case agent && s.o.Agents == nil:
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "this server reviews no calls for agents"}, nil)
		return
	case !agent && s.o.Explorer == nil:
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "this server reviews no calls"}, nil)
		return
	}
	var q ReviewQuery
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request",
			`the body must be {"tool", "input": {...}, "workspace", "harness", "session", "sandboxed", "wait"} (and for a person's token "tenant", "role", "profile"): ` + err.Error()}, nil)
		return
	}
	if q.Tool == "" {
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", "tool is required: the tool called, as the model names it"}, nil)
		return
	}
	if q.Input == nil {
		q.Input = map[string]any{}
	}
	tenant, ok := s.exploreTenant(w, r, q.Tenant)
	if !ok {
		return
	}
	q.Tenant = tenant
	if agent {
		s.agentReview(w, r, tok, q)
		return
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"harness", q.Harness != ""}, {"session", q.Session != ""}, {"wait", q.Wait != 0}, {"sandboxed", q.Sandboxed}} {
		if f.set {
			s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf(
				"%s is for an agent token's review, which is recorded and may wait for a card; %s token's review only explores, records nothing and waits for nobody",
				f.name, auth.A(tok.Role))}, nil)
			return
		}
	}
	v, err := s.o.Explorer.Review(r.Context(), q)
	if err != nil {
		s.explorerFailed(w, r, err)
		return
	}
	v.Token = "" // nothing may run on a verdict of this route
	writeJSON(w, http.StatusOK, v)
}

// agentReview judges a call for an agent token: the session it binds, never one the body
// names, a decision recorded, and an ask's card waited for as long as the body asks.
func (s *Server) agentReview(w http.ResponseWriter, r *http.Request, tok *auth.Token, q ReviewQuery) {
	bad := func(msg string) { s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", msg}, nil) }
	for _, f := range []struct{ name, asked, bound string }{{"role", q.Role, tok.SessionRole}, {"profile", q.Profile, tok.Profile}} {
		if f.asked != "" && f.asked != f.bound {
			s.fail(w, r, apiError{http.StatusForbidden, "forbidden", fmt.Sprintf(
				"an agent token reviews as the session it binds: %s %q, not %q", f.name, f.bound, f.asked)}, nil)
			return
		}
	}
	switch {
	case len(q.Tool) > 256:
		bad("tool: want a tool's name, at most 256 characters")
		return
	case !validHarness(q.Harness):
		bad(fmt.Sprintf("harness %q: want a name of letters, digits, '.', '_' and '-', at most 64 long (such as claude-code)", q.Harness))
		return
	case len(q.Session) > 256 || strings.IndexFunc(q.Session, func(c rune) bool { return c < 0x20 || c == 0x7f }) >= 0:
		bad("session: want the runtime's session id, at most 256 characters, without control characters")
		return
	case q.Wait < 0:
		bad(fmt.Sprintf("wait %g: want the seconds to wait for an answer, from 0 (at most %g)", q.Wait, MaxReviewWait.Seconds()))
		return
	case q.Call != "" && !ValidCallID(q.Call):
		bad(fmt.Sprintf("call %q: want an id of letters, digits, '.', '_', ':' and '-', at most 128 long (such as Claude Code's tool_use_id)", clip(q.Call)))
		return
	}
	wait := MaxReviewWait
	if q.Wait < MaxReviewWait.Seconds() {
		wait = time.Duration(q.Wait * float64(time.Second))
	}
	ans, err := s.o.Agents.ReviewFor(r.Context(), tok, q, wait)
	if errors.Is(err, ErrCallTaken) {
		s.fail(w, r, apiError{http.StatusConflict, "conflict", err.Error()}, nil)
		return
	}
	if ans == nil {
		s.explorerFailed(w, r, err)
		return
	}
	if err != nil {
		// A failure of the gate (the audit trail unreachable): the verdict is a deny that
		// says so, and the cause goes to the log.
		s.o.Logger.Error("an agent's review failed", "tenant", tok.Tenant, "tool", q.Tool, "err", err)
	}
	writeJSON(w, http.StatusOK, ans)
}

// reportOutcome records how a call an agent's runtime ran itself ended (POST
// /api/v1/review/outcome): a call the same token's session judged, once.
func (s *Server) reportOutcome(w http.ResponseWriter, r *http.Request) {
	tok := caller(r)
	if s.o.Agents == nil {
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "this server reviews no calls for agents"}, nil)
		return
	}
	var q OutcomeReport
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", `the body must be {"call", "outcome": "ok" or "error", "error"}: ` + err.Error()}, nil)
		return
	}
	bad := func(msg string) { s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", msg}, nil) }
	switch {
	case !ValidCallID(q.Call):
		bad(fmt.Sprintf("call %q: want the id the review answered", clip(q.Call)))
		return
	case q.Outcome != "ok" && q.Outcome != "error":
		bad(fmt.Sprintf("outcome %q: want ok or error", clip(q.Outcome)))
		return
	case len(q.Error) > 4096:
		bad("error: at most 4,096 characters")
		return
	case q.Error != "" && q.Outcome != "error":
		bad("error is for an outcome of error")
		return
	}
	switch err := s.o.Agents.OutcomeFor(r.Context(), tok, q); {
	case errors.Is(err, ErrNoSuchCall):
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", fmt.Sprintf("call %s: %v", q.Call, err)}, nil)
	case errors.Is(err, ErrOutcomeRecorded):
		s.fail(w, r, apiError{http.StatusConflict, "conflict", fmt.Sprintf("call %s: %v", q.Call, err)}, nil)
	case err != nil:
		s.explorerFailed(w, r, err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// validCallID reports whether id is a call id a runtime may give (Claude Code's tool_use_id).
func ValidCallID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// validHarness reports whether h is a harness's name as the audit trail records it.
func validHarness(h string) bool {
	if len(h) > 64 {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// clip bounds a value quoted back in an error (an id can be megabytes long in a bad body).
func clip(s string) string {
	const n = 140
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
