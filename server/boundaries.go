package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/boundary"
)

// Boundaries is what the hard-block routes read and write: each tenant's stored document
// (BURROW's {"version":1,"hardBlocks":[...]}). The gateway implements it, so that a write is
// in force for live sessions at once and recorded in the audit trail.
type Boundaries interface {
	// StoredBoundaries returns the tenant's stored document, or nil when it has none.
	StoredBoundaries(ctx context.Context, tenant string) (*boundary.Stored, error)
	// PutBoundaries validates data and writes it if the revision is still ifRevision
	// (boundary.AnyRevision: whatever it is); boundary.ErrStale if not, a
	// boundary.ValidationError for a document with errors.
	PutBoundaries(ctx context.Context, tenant string, data []byte, ifRevision int64, principal string) (*boundary.Stored, error)
	// KnowsTenant reports whether the policy in force names the tenant.
	KnowsTenant(tenant string) bool
}

// maxBoundaries bounds a hard-block document sent to the API.
const maxBoundaries = 1 << 20

// emptyBoundaries is what a tenant with no stored document has: revision 0.
const emptyBoundaries = `{"version":1,"hardBlocks":[]}`

// etag is the ETag of a revision: the number, quoted.
func etag(rev int64) string { return `"` + strconv.FormatInt(rev, 10) + `"` }

// fieldError is one problem of a document, as boundary.Parse names it.
type fieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// boundariesTenant returns the tenant a request names, or answers 404 when the caller may not
// see it or the policy does not name it (nothing says which).
func (s *Server) boundariesTenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	tenant := r.PathValue("tenant")
	if s.o.Boundaries == nil {
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "this server keeps no hard blocks"}, nil)
		return "", false
	}
	if own := tenantOf(caller(r)); (own != "" && own != tenant) || !s.o.Boundaries.KnowsTenant(tenant) {
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "no such tenant"}, nil)
		return "", false
	}
	return tenant, true
}

func (s *Server) getBoundaries(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.boundariesTenant(w, r)
	if !ok {
		return
	}
	st, err := s.o.Boundaries.StoredBoundaries(r.Context(), tenant)
	if err != nil {
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the hard blocks cannot be read right now"}, err)
		return
	}
	writeDocument(w, http.StatusOK, st)
}

// writeDocument answers with a stored document as it is (or the empty one) and its ETag.
func writeDocument(w http.ResponseWriter, status int, st *boundary.Stored) {
	data, rev := []byte(emptyBoundaries), int64(0)
	if st != nil {
		data, rev = st.Data, st.Revision
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", etag(rev))
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// ifMatch reads the If-Match header: a quoted revision, or * for any. It is required
// (missing is true without it), so that an editor cannot overwrite a change it never saw by
// forgetting it.
func ifMatch(h string) (rev int64, missing bool, problem string) {
	h = strings.TrimSpace(h)
	switch {
	case h == "":
		return 0, true, "a write needs If-Match: the ETag of the document it replaces (\"0\" when there is none), or * to replace whatever is there"
	case h == "*":
		return boundary.AnyRevision, false, ""
	}
	inner, quoted := strings.CutPrefix(h, `"`)
	inner, closed := strings.CutSuffix(inner, `"`)
	n, err := strconv.ParseInt(inner, 10, 64)
	if !quoted || !closed || err != nil || n < 0 {
		return 0, false, fmt.Sprintf("If-Match %q is not an ETag of this API (a quoted revision, like \"3\") or *", h)
	}
	return n, false, ""
}

func (s *Server) putBoundaries(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.boundariesTenant(w, r)
	if !ok {
		return
	}
	rev, missing, problem := ifMatch(r.Header.Get("If-Match"))
	switch {
	case missing:
		s.fail(w, r, apiError{http.StatusPreconditionRequired, "precondition_required", problem}, nil)
		return
	case problem != "":
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", problem}, nil)
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBoundaries))
	if err != nil {
		s.fail(w, r, apiError{http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("a hard-block document is at most %d bytes", maxBoundaries)}, nil)
		return
	}
	tok := caller(r)
	who := tok.Name
	if who == "" {
		who = "token:" + tok.ID
	}
	st, err := s.o.Boundaries.PutBoundaries(r.Context(), tenant, data, rev, who)
	var invalid boundary.ValidationError
	switch {
	case errors.As(err, &invalid):
		fields := make([]fieldError, len(invalid))
		for i, fe := range invalid {
			fields[i] = fieldError{Field: fe.Field, Message: fe.Msg}
		}
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": map[string]any{
			"code": "invalid_boundaries", "message": "the document does not validate; nothing was changed", "fields": fields}})
	case errors.Is(err, boundary.ErrStale):
		if cur, err := s.o.Boundaries.StoredBoundaries(r.Context(), tenant); err == nil {
			if cur == nil {
				w.Header().Set("ETag", etag(0))
			} else {
				w.Header().Set("ETag", etag(cur.Revision))
			}
		}
		s.fail(w, r, apiError{http.StatusPreconditionFailed, "stale", "the hard blocks changed since that revision was read; read them again and redo the change"}, nil)
	case err != nil && st != nil:
		// In force, but not recorded: say so rather than pretend nothing happened.
		w.Header().Set("ETag", etag(st.Revision))
		s.fail(w, r, apiError{http.StatusInternalServerError, "not_recorded", "the hard blocks were changed and are in force, but the change could not be recorded in the audit trail"}, err)
	case err != nil:
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", "the hard blocks could not be written"}, err)
	default:
		writeDocument(w, http.StatusOK, st)
	}
}

// the roles of the hard-block routes: anyone who manages a tenant reads; only an admin writes.
var (
	boundaryReaders = []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleViewer}
	boundaryWriters = []string{auth.RoleAdmin}
)
