package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

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
	// Model is the model the session states (see surface.Spec.Model).
	Model string `json:"model,omitempty"`
	// Workspace is the base of relative paths (default: the tenant's workspace).
	Workspace string `json:"workspace,omitempty"`
}

// the roles of the explorer routes.
var (
	surfaceReaders = []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleApprover, auth.RoleViewer}
	reviewers      = []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleViewer}
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

// explorerFailed answers an error of the Explorer.
func (s *Server) explorerFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
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
	if s.o.Explorer == nil {
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "this server reviews no calls"}, nil)
		return
	}
	var q ReviewQuery
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request",
			`the body must be {"tool", "input": {...}, "tenant", "role", "profile", "workspace"}: ` + err.Error()}, nil)
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
	v, err := s.o.Explorer.Review(r.Context(), q)
	if err != nil {
		s.explorerFailed(w, r, err)
		return
	}
	v.Token = "" // nothing may run on a verdict of this route
	writeJSON(w, http.StatusOK, v)
}
