package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/manage"
	"github.com/wardenhq/warden/policy"
)

// Data is the management plane's data as the routes under /api/v1/tenants read and write it:
// tenants, connections, profiles (with their grants and allowances) and egress allowlists.
// manage.Service implements it: a write is validated as if saved into the policy file, applied
// to live sessions on every instance and recorded in the audit trail.
type Data interface {
	// Policy returns the policy in force: the file with the stored objects overlaid.
	Policy() *policy.Policy
	// List returns a kind's objects by id after the id after ("": from the first), at most
	// limit of them, and the cursor of the next page ("" at the end). A tenant other than ""
	// lists only that tenant's.
	List(ctx context.Context, kind manage.Kind, tenant, after string, limit int) ([]*manage.Item, string, error)
	// Get returns one object; manage.ErrNotFound if there is none.
	Get(ctx context.Context, kind manage.Kind, id string) (*manage.Item, error)
	// Put validates and writes an object if its revision is still ifRevision (0: create;
	// manage.AnyRevision: whatever it is): manage.Invalid with every problem,
	// manage.ErrStale, manage.ErrDeclared or manage.ErrExists when it cannot.
	Put(ctx context.Context, kind manage.Kind, tenant, id string, data []byte, ifRevision int64, by string) (*manage.Item, error)
	// Delete deletes an object if its revision is still ifRevision; manage.ErrNotFound,
	// manage.ErrStale or manage.ErrDeclared when it cannot.
	Delete(ctx context.Context, kind manage.Kind, id string, ifRevision int64, by string) error
}

var _ Data = (*manage.Service)(nil)

// the roles of the management routes (H1): anyone of a tenant reads it; an operator also writes
// its connections, profiles, grants and egress allowlist; only an admin writes tenants.
var (
	dataReaders       = []string{auth.RoleAdmin, auth.RoleOperator, auth.RoleApprover, auth.RoleViewer}
	dataWriters       = []string{auth.RoleAdmin, auth.RoleOperator}
	tenantWriters     = []string{auth.RoleAdmin}
	maxObject     int = 1 << 20
)

// kindNames are what messages call each kind.
var kindNames = map[manage.Kind]string{manage.KindTenant: "tenant", manage.KindConnection: "connection",
	manage.KindProfile: "profile", manage.KindEgress: "egress allowlist"}

// collections are the path segments of each kind's collection under a tenant (tenants are the
// collection /api/v1/tenants itself).
var collections = map[manage.Kind]string{manage.KindConnection: "connections", manage.KindProfile: "profiles"}

// emptyEgress is the allowlist of a tenant that has none: revision 0.
const emptyEgress = `{"allow":[]}`

// itemList is the body of a list.
type itemList struct {
	Items []*manage.Item `json:"items"`
	Next  string         `json:"next,omitempty"`
}

// dataError is an error of the management routes that may carry every problem of a write.
type dataError struct {
	apiError
	Problems []manage.Problem `json:"problems,omitempty"`
}

// principal is who a token's writes are recorded as.
func principal(tok *auth.Token) string {
	if tok.Name != "" {
		return tok.Name
	}
	return "token:" + tok.ID
}

// hasData answers 404 for a server without management data.
func (s *Server) hasData(w http.ResponseWriter, r *http.Request) bool {
	if s.o.Data == nil {
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "this server keeps no management data"}, nil)
		return false
	}
	return true
}

// dataTenant returns the tenant a request's path names, or answers 404 when the caller may not
// see it or there is no such tenant: nothing says which.
func (s *Server) dataTenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	if !s.hasData(w, r) {
		return "", false
	}
	tenant := r.PathValue("tenant")
	if own := tenantOf(caller(r)); own != "" && own != tenant {
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "no such tenant: " + tenant}, nil)
		return "", false
	}
	if _, err := s.o.Data.Get(r.Context(), manage.KindTenant, tenant); err != nil {
		s.readFailed(w, r, manage.KindTenant, tenant, err)
		return "", false
	}
	return tenant, true
}

// readFailed answers the error of a read: 404 for no such object, else 503.
func (s *Server) readFailed(w http.ResponseWriter, r *http.Request, kind manage.Kind, id string, err error) {
	if errors.Is(err, manage.ErrNotFound) {
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", fmt.Sprintf("no such %s: %s", kindNames[kind], id)}, nil)
		return
	}
	s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", fmt.Sprintf("the %s %s cannot be read right now", kindNames[kind], id)}, err)
}

// object returns a tenant's object, or answers 404 when it is another tenant's (as when there
// is none).
func (s *Server) object(w http.ResponseWriter, r *http.Request, kind manage.Kind, tenant, id string) (*manage.Item, bool) {
	it, err := s.o.Data.Get(r.Context(), kind, id)
	if err == nil && it.Tenant != tenant {
		err = manage.ErrNotFound
	}
	if err != nil {
		s.readFailed(w, r, kind, id, err)
		return nil, false
	}
	return it, true
}

// writeItem answers with an object and, for a stored one, its ETag.
func writeItem(w http.ResponseWriter, status int, it *manage.Item) {
	if it.Source != manage.SourcePolicy {
		w.Header().Set("ETag", etag(it.Revision))
	}
	writeJSON(w, status, it)
}

// writeRaw answers with a JSON document as it is, and its ETag (none: "").
func writeRaw(w http.ResponseWriter, status int, data []byte, tag string) {
	w.Header().Set("Content-Type", "application/json")
	if tag != "" {
		w.Header().Set("ETag", tag)
	}
	w.WriteHeader(status)
	_, _ = w.Write(data)
	if !bytes.HasSuffix(data, []byte("\n")) {
		_, _ = w.Write([]byte("\n"))
	}
}

// page reads a list's ?limit (1 to 1000, 100 when not given) and ?after.
func (s *Server) page(w http.ResponseWriter, r *http.Request) (after string, limit int, ok bool) {
	q := r.URL.Query()
	limit = 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf("limit %q: want a whole number from 1 to 1000", v)}, nil)
			return "", 0, false
		}
		limit = n
	}
	return q.Get("after"), limit, true
}

// list answers a page of a kind's objects of a tenant ("": every tenant's).
func (s *Server) list(w http.ResponseWriter, r *http.Request, kind manage.Kind, tenant string) {
	after, limit, ok := s.page(w, r)
	if !ok {
		return
	}
	items, next, err := s.o.Data.List(r.Context(), kind, tenant, after, limit)
	if err != nil {
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", fmt.Sprintf("the %ss cannot be listed right now", kindNames[kind])}, err)
		return
	}
	if items == nil {
		items = []*manage.Item{}
	}
	writeJSON(w, http.StatusOK, itemList{Items: items, Next: next})
}

// writeRevision reads a write's If-Match: required, a quoted revision ("0" creates) or * for
// any. It answers 428 or 400 when it cannot be used.
func (s *Server) writeRevision(w http.ResponseWriter, r *http.Request) (int64, bool) {
	rev, missing, problem := ifMatch(r.Header.Get("If-Match"))
	switch {
	case missing:
		s.fail(w, r, apiError{http.StatusPreconditionRequired, "precondition_required",
			"a write needs If-Match: the ETag of the object it replaces (\"0\" to create it), or * to replace whatever is there"}, nil)
		return 0, false
	case problem != "":
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", problem}, nil)
		return 0, false
	case rev == boundary.AnyRevision:
		return manage.AnyRevision, true
	}
	return rev, true
}

// readObject reads a write's body: one JSON object of at most 1 MiB. What it holds is the
// validator's business.
func (s *Server) readObject(w http.ResponseWriter, r *http.Request, what string) ([]byte, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(maxObject)))
	if err != nil {
		s.fail(w, r, apiError{http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("%s is at most %d bytes", what, maxObject)}, nil)
		return nil, false
	}
	var obj map[string]json.RawMessage
	err = json.Unmarshal(data, &obj)
	if err == nil && obj == nil {
		err = errors.New("it is null")
	}
	if err != nil {
		s.fail(w, r, apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf("the body must be %s, as a JSON object: %v", what, err)}, nil)
		return nil, false
	}
	return data, true
}

// put writes an object of a tenant and answers with it, or with why not. An object of another
// tenant is 404 as if there were none, but for a create: ids are unique across tenants, so a
// taken id is 409 whoever holds it. A PUT with If-Match "0" over an object of the tenant is
// stale (412, with its ETag), as for any other revision that is not the current one; a POST
// (post) over one is 409.
func (s *Server) put(w http.ResponseWriter, r *http.Request, kind manage.Kind, tenant, id string, data []byte, rev int64, post bool) (*manage.Item, bool) {
	ctx := r.Context()
	cur, err := s.o.Data.Get(ctx, kind, id)
	switch {
	case errors.Is(err, manage.ErrNotFound):
		cur = nil
	case err != nil:
		s.readFailed(w, r, kind, id, err)
		return nil, false
	case cur.Tenant != tenant && rev == 0:
		s.fail(w, r, apiError{http.StatusConflict, "exists", fmt.Sprintf("the %s id %s is taken: ids are unique across tenants; choose another", kindNames[kind], id)}, nil)
		return nil, false
	case cur.Tenant != tenant:
		s.readFailed(w, r, kind, id, manage.ErrNotFound)
		return nil, false
	case cur.Source == manage.SourcePolicy:
		s.declared(w, r, kind, id)
		return nil, false
	}
	it, err := s.o.Data.Put(ctx, kind, tenant, id, data, rev, principal(caller(r)))
	if err == nil || it != nil {
		if err != nil {
			// In force, but not recorded: say so rather than pretend nothing happened.
			w.Header().Set("ETag", etag(it.Revision))
			s.fail(w, r, apiError{http.StatusInternalServerError, "not_recorded", fmt.Sprintf("the %s %s was changed and is in force, but the change could not be recorded in the audit trail", kindNames[kind], id)}, err)
			return nil, false
		}
		return it, true
	}
	if !post && errors.Is(err, manage.ErrExists) {
		err = manage.ErrStale
	}
	s.writeFailed(w, r, kind, tenant, id, err)
	return nil, false
}

// declared answers 409 for a write of an object the policy file declares.
func (s *Server) declared(w http.ResponseWriter, r *http.Request, kind manage.Kind, id string) {
	s.fail(w, r, apiError{http.StatusConflict, "declared_in_policy", fmt.Sprintf("the %s %s is declared in the policy file; change it there", kindNames[kind], id)}, nil)
}

// writeFailed answers the error of a write.
func (s *Server) writeFailed(w http.ResponseWriter, r *http.Request, kind manage.Kind, tenant, id string, err error) {
	var invalid manage.Invalid
	switch {
	case errors.As(err, &invalid):
		s.invalid(w, r, kind, id, invalid)
	case errors.Is(err, manage.ErrDeclared):
		s.declared(w, r, kind, id)
	case errors.Is(err, manage.ErrExists):
		s.fail(w, r, apiError{http.StatusConflict, "exists", fmt.Sprintf("the %s id %s is taken: ids are unique across tenants; choose another", kindNames[kind], id)}, nil)
	case errors.Is(err, manage.ErrStale):
		s.stale(w, r, kind, tenant, id)
	case errors.Is(err, manage.ErrNotFound):
		s.readFailed(w, r, kind, id, err)
	default:
		s.fail(w, r, apiError{http.StatusServiceUnavailable, "unavailable", fmt.Sprintf("the %s %s could not be written", kindNames[kind], id)}, err)
	}
}

// invalid answers 422 with every problem of a write.
func (s *Server) invalid(w http.ResponseWriter, r *http.Request, kind manage.Kind, id string, problems []manage.Problem) {
	if problems == nil {
		problems = []manage.Problem{}
	}
	msg := fmt.Sprintf("the %s %s does not validate (%d problems); nothing was changed", kindNames[kind], id, len(problems))
	if len(problems) == 1 {
		msg = fmt.Sprintf("the %s %s does not validate: %s; nothing was changed", kindNames[kind], id, problems[0].Message)
	}
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": dataError{
		apiError{http.StatusUnprocessableEntity, "invalid", msg}, problems}})
}

// stale answers 412 with the object's current ETag ("0": there is none), when it is the
// tenant's.
func (s *Server) stale(w http.ResponseWriter, r *http.Request, kind manage.Kind, tenant, id string) {
	cur, err := s.o.Data.Get(r.Context(), kind, id)
	switch {
	case errors.Is(err, manage.ErrNotFound):
		w.Header().Set("ETag", etag(0))
	case err == nil && cur.Tenant == tenant && cur.Source != manage.SourcePolicy:
		w.Header().Set("ETag", etag(cur.Revision))
	}
	s.fail(w, r, apiError{http.StatusPreconditionFailed, "stale", fmt.Sprintf("the %s %s changed since that revision was read; read it again and redo the change", kindNames[kind], id)}, nil)
}

// remove deletes an object of a tenant.
func (s *Server) remove(w http.ResponseWriter, r *http.Request, kind manage.Kind, tenant, id string) {
	rev, ok := s.writeRevision(w, r)
	if !ok {
		return
	}
	cur, ok := s.object(w, r, kind, tenant, id)
	if !ok {
		return
	}
	if cur.Source == manage.SourcePolicy {
		s.declared(w, r, kind, id)
		return
	}
	err := s.o.Data.Delete(r.Context(), kind, id, rev, principal(caller(r)))
	switch {
	case errors.Is(err, manage.ErrNotRecorded):
		// Deleted and in force, but not recorded: say so rather than pretend nothing happened.
		s.fail(w, r, apiError{http.StatusInternalServerError, "not_recorded", fmt.Sprintf("the %s %s was deleted and that is in force, but the deletion could not be recorded in the audit trail", kindNames[kind], id)}, err)
	case err != nil:
		s.writeFailed(w, r, kind, tenant, id, err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// newID reads the id of an object a POST creates.
func (s *Server) newID(w http.ResponseWriter, r *http.Request, kind manage.Kind, data []byte) (string, bool) {
	var obj struct {
		ID any `json:"id"`
	}
	_ = json.Unmarshal(data, &obj)
	id, _ := obj.ID.(string)
	if id == "" {
		s.invalid(w, r, kind, "", []manage.Problem{{Field: "/id", Message: fmt.Sprintf("a new %s needs an id: a string, unique across tenants", kindNames[kind])}})
		return "", false
	}
	return id, true
}

// create answers a POST on a collection: 201 with the object, its Location and its ETag.
func (s *Server) create(w http.ResponseWriter, r *http.Request, kind manage.Kind, tenant string) {
	data, ok := s.readObject(w, r, "the new "+kindNames[kind])
	if !ok {
		return
	}
	id, ok := s.newID(w, r, kind, data)
	if !ok {
		return
	}
	if kind == manage.KindTenant {
		tenant = id
	}
	it, ok := s.put(w, r, kind, tenant, id, data, 0, true)
	if !ok {
		return
	}
	w.Header().Set("Location", itemPath(it))
	writeItem(w, http.StatusCreated, it)
}

// replace answers a PUT of a whole object.
func (s *Server) replace(w http.ResponseWriter, r *http.Request, kind manage.Kind, tenant, id string) {
	rev, ok := s.writeRevision(w, r)
	if !ok {
		return
	}
	data, ok := s.readObject(w, r, "the "+kindNames[kind])
	if !ok {
		return
	}
	it, ok := s.put(w, r, kind, tenant, id, data, rev, false)
	if !ok {
		return
	}
	status := http.StatusOK
	if rev == 0 {
		w.Header().Set("Location", itemPath(it))
		status = http.StatusCreated
	}
	writeItem(w, status, it)
}

// itemPath is where the API serves an object.
func itemPath(it *manage.Item) string {
	base := "/api/v1/tenants/" + url.PathEscape(it.Tenant)
	switch it.Kind {
	case manage.KindTenant:
		return base
	case manage.KindEgress:
		return base + "/egress"
	}
	return base + "/" + collections[it.Kind] + "/" + url.PathEscape(it.ID)
}

// Tenants.

func (s *Server) listTenants(w http.ResponseWriter, r *http.Request) {
	if s.hasData(w, r) {
		s.list(w, r, manage.KindTenant, tenantOf(caller(r)))
	}
}

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request) {
	if s.hasData(w, r) {
		s.create(w, r, manage.KindTenant, "")
	}
}

func (s *Server) getTenant(w http.ResponseWriter, r *http.Request) {
	if tenant, ok := s.dataTenant(w, r); ok {
		if it, ok := s.object(w, r, manage.KindTenant, tenant, tenant); ok {
			writeItem(w, http.StatusOK, it)
		}
	}
}

func (s *Server) putTenant(w http.ResponseWriter, r *http.Request) {
	// A PUT may create a tenant, so it need not exist yet (only an admin writes tenants).
	if s.hasData(w, r) {
		tenant := r.PathValue("tenant")
		s.replace(w, r, manage.KindTenant, tenant, tenant)
	}
}

func (s *Server) deleteTenant(w http.ResponseWriter, r *http.Request) {
	if s.hasData(w, r) {
		tenant := r.PathValue("tenant")
		s.remove(w, r, manage.KindTenant, tenant, tenant)
	}
}

// A tenant's connections and profiles.

func (s *Server) listConnections(w http.ResponseWriter, r *http.Request) {
	s.listObjects(w, r, manage.KindConnection)
}

func (s *Server) createConnection(w http.ResponseWriter, r *http.Request) {
	s.createObject(w, r, manage.KindConnection)
}

func (s *Server) putConnection(w http.ResponseWriter, r *http.Request) {
	s.putObject(w, r, manage.KindConnection)
}

func (s *Server) deleteConnection(w http.ResponseWriter, r *http.Request) {
	s.deleteObject(w, r, manage.KindConnection)
}

func (s *Server) listProfiles(w http.ResponseWriter, r *http.Request) {
	s.listObjects(w, r, manage.KindProfile)
}

func (s *Server) createProfile(w http.ResponseWriter, r *http.Request) {
	s.createObject(w, r, manage.KindProfile)
}

func (s *Server) getProfile(w http.ResponseWriter, r *http.Request) {
	if tenant, ok := s.dataTenant(w, r); ok {
		if it, ok := s.object(w, r, manage.KindProfile, tenant, r.PathValue("id")); ok {
			writeItem(w, http.StatusOK, it)
		}
	}
}

func (s *Server) putProfile(w http.ResponseWriter, r *http.Request) {
	s.putObject(w, r, manage.KindProfile)
}

func (s *Server) deleteProfile(w http.ResponseWriter, r *http.Request) {
	s.deleteObject(w, r, manage.KindProfile)
}

func (s *Server) listObjects(w http.ResponseWriter, r *http.Request, kind manage.Kind) {
	if tenant, ok := s.dataTenant(w, r); ok {
		s.list(w, r, kind, tenant)
	}
}

func (s *Server) createObject(w http.ResponseWriter, r *http.Request, kind manage.Kind) {
	if tenant, ok := s.dataTenant(w, r); ok {
		s.create(w, r, kind, tenant)
	}
}

func (s *Server) putObject(w http.ResponseWriter, r *http.Request, kind manage.Kind) {
	if tenant, ok := s.dataTenant(w, r); ok {
		s.replace(w, r, kind, tenant, r.PathValue("id"))
	}
}

func (s *Server) deleteObject(w http.ResponseWriter, r *http.Request, kind manage.Kind) {
	if tenant, ok := s.dataTenant(w, r); ok {
		s.remove(w, r, kind, tenant, r.PathValue("id"))
	}
}

// Egress allowlists.

func (s *Server) getEgress(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.dataTenant(w, r)
	if !ok {
		return
	}
	it, err := s.o.Data.Get(r.Context(), manage.KindEgress, tenant)
	switch {
	case errors.Is(err, manage.ErrNotFound):
		writeRaw(w, http.StatusOK, []byte(emptyEgress), etag(0))
	case err != nil:
		s.readFailed(w, r, manage.KindEgress, tenant, err)
	default:
		writeRaw(w, http.StatusOK, it.Data, itemTag(it))
	}
}

func (s *Server) putEgress(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.dataTenant(w, r)
	if !ok {
		return
	}
	rev, ok := s.writeRevision(w, r)
	if !ok {
		return
	}
	data, ok := s.readObject(w, r, "the egress allowlist ({\"allow\": [\"host\", \"*.domain\"]})")
	if !ok {
		return
	}
	if it, ok := s.put(w, r, manage.KindEgress, tenant, tenant, data, rev, false); ok {
		writeRaw(w, http.StatusOK, it.Data, itemTag(it))
	}
}
