package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/wardenhq/warden/manage"
)

// grantOf is the grant part of a profile's data ({} without one).
func grantOf(it *manage.Item) []byte {
	var prof struct {
		Grant json.RawMessage `json:"grant"`
	}
	if json.Unmarshal(it.Data, &prof) != nil || len(prof.Grant) == 0 || string(prof.Grant) == "null" {
		return []byte("{}")
	}
	return prof.Grant
}

// itemTag is an object's ETag ("": a policy object has none).
func itemTag(it *manage.Item) string {
	if it.Source == manage.SourcePolicy {
		return ""
	}
	return etag(it.Revision)
}

func (s *Server) getGrant(w http.ResponseWriter, r *http.Request) {
	if tenant, ok := s.dataTenant(w, r); ok {
		if it, ok := s.object(w, r, manage.KindProfile, tenant, r.PathValue("id")); ok {
			writeRaw(w, http.StatusOK, grantOf(it), itemTag(it))
		}
	}
}

// putGrant replaces the grant of a stored profile and nothing else of it. The ETag is the
// profile's: a change of any of it since it was read is stale.
func (s *Server) putGrant(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.dataTenant(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	rev, ok := s.writeRevision(w, r)
	if !ok {
		return
	}
	grant, ok := s.readObject(w, r, "the grant ({\"connectors\", \"skills\", \"allowance\"})")
	if !ok {
		return
	}
	cur, ok := s.object(w, r, manage.KindProfile, tenant, id)
	if !ok {
		return
	}
	switch {
	case cur.Source == manage.SourcePolicy:
		s.declared(w, r, manage.KindProfile, id)
		return
	case rev == manage.AnyRevision:
		// Whatever it is now, but no change made after this read.
		rev = cur.Revision
	case rev != cur.Revision:
		s.stale(w, r, manage.KindProfile, tenant, id)
		return
	}
	var prof map[string]json.RawMessage
	if err := json.Unmarshal(cur.Data, &prof); err != nil || prof == nil {
		s.fail(w, r, apiError{http.StatusInternalServerError, "corrupt", fmt.Sprintf("the stored profile %s is not a JSON object", id)}, err)
		return
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, grant)
	prof["grant"] = compact.Bytes()
	data, err := json.Marshal(prof)
	if err != nil {
		s.fail(w, r, apiError{http.StatusInternalServerError, "internal", "the profile could not be encoded"}, err)
		return
	}
	it, err := s.o.Data.Put(r.Context(), manage.KindProfile, tenant, id, data, rev, principal(caller(r)))
	var invalid manage.Invalid
	switch {
	case errors.As(err, &invalid):
		s.invalid(w, r, manage.KindProfile, id, grantProblems(id, invalid))
	case err != nil && it != nil:
		w.Header().Set("ETag", etag(it.Revision))
		s.fail(w, r, apiError{http.StatusInternalServerError, "not_recorded", fmt.Sprintf("the grant of profile %s was changed and is in force, but the change could not be recorded in the audit trail", id)}, err)
	case err != nil:
		s.writeFailed(w, r, manage.KindProfile, tenant, id, err)
	default:
		writeRaw(w, http.StatusOK, grantOf(it), itemTag(it))
	}
}

// grantProblems turns the problems of a profile into those of its grant: a pointer into the
// grant stays one (without /grant), and a problem elsewhere in the profile says where.
func grantProblems(id string, problems manage.Invalid) []manage.Problem {
	out := make([]manage.Problem, len(problems))
	for i, p := range problems {
		switch rest, ok := strings.CutPrefix(p.Field, "/grant"); {
		case ok && (rest == "" || strings.HasPrefix(rest, "/")):
			p.Field = rest
		case p.Field != "":
			p.Where, p.Field = "profile "+id+" "+p.Field, ""
		}
		out[i] = p
	}
	return out
}
