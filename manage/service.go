package manage

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/internal/feed"
	"github.com/wardenhq/warden/policy"
)

// Source says where an item is declared.
type Source string

const (
	// SourcePolicy is an item the policy file declares: read-only through the API.
	SourcePolicy Source = "policy"
	// SourceStore is an item kept in the store, written through the API.
	SourceStore Source = "store"
)

// Item is an object as the API shows it: stored, or declared in the policy file.
type Item struct {
	Kind   Kind   `json:"kind"`
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	Source Source `json:"source"`
	// Revision is the stored revision (the ETag); 0 for an item of the policy file.
	Revision int64      `json:"revision"`
	By       string     `json:"updatedBy,omitempty"`
	Updated  *time.Time `json:"updated,omitempty"`
	// Data is the object, as a write takes it.
	Data json.RawMessage `json:"data"`
	// Problem is why the policy in force leaves a stored object out (a change of the policy
	// file since it was written made it invalid); empty when it is in force.
	Problem string `json:"problem,omitempty"`
}

// Problem is one problem of a change.
type Problem struct {
	// Field is the JSON pointer (RFC 6901) of the value in the object written; "" for the
	// object as a whole, or a problem elsewhere.
	Field string `json:"field,omitempty"`
	// Where names a problem's place outside the object written: another object and its
	// pointer, or the policy file's line and column.
	Where   string `json:"where,omitempty"`
	Message string `json:"message"`
}

// Invalid is the error of a change that does not validate: every problem it has. Nothing was
// changed.
type Invalid []Problem

func (v Invalid) Error() string {
	parts := make([]string, len(v))
	for i, p := range v {
		switch {
		case p.Where != "":
			parts[i] = p.Where + ": " + p.Message
		case p.Field != "":
			parts[i] = p.Field + ": " + p.Message
		default:
			parts[i] = p.Message
		}
	}
	return "the change does not validate: " + strings.Join(parts, "; ")
}

var (
	// ErrDeclared is matched when a change names an object the policy file declares: the
	// file is its only place.
	ErrDeclared = errors.New("the object is declared in the policy file: change it there")
	// ErrExists is matched when a create names an id that is taken (ids are unique across
	// tenants, as in the policy file).
	ErrExists = errors.New("an object of that kind and id exists")
	// ErrNotRecorded is matched when a change was written and is in force, but the audit
	// trail could not record it.
	ErrNotRecorded = errors.New("the change is in force, but the audit trail could not record it")
)

// KindAudit is the audit event kind of a change: see audit.KindChange.
const kindAudit = audit.KindChange

// Options configures a Service.
type Options struct {
	// Store keeps the objects.
	Store Store
	// Log records every change (nil: none are recorded).
	Log audit.Log
	// Name and Data are the policy file: its name for messages, and its text.
	Name string
	Data []byte
	// Apply puts a newly compiled policy in force (the gateway's Reload); it is called with
	// each new policy in the order they were compiled, never twice at once.
	Apply  func(*policy.Policy)
	Logger *slog.Logger
	// Now is the clock of the changes' times (time.Now when nil).
	Now func() time.Time
}

// Service is the management plane's data: it validates a change as if it were saved into the
// policy file, writes it, recompiles the policy with every stored object overlaid and puts it
// in force (Options.Apply), here at once and on every other instance when its Watch reads the
// store's change. It is safe for concurrent use.
type Service struct {
	o Options

	// mu serialises compiling and applying, so that an older policy is never applied after
	// a newer one.
	mu sync.Mutex
	// state is what is in force: the file, the objects, the policy compiled from them.
	state atomic.Pointer[state]
}

// state is one compiled state of the data.
type state struct {
	name string
	data []byte
	file *fileItems
	// objects are the stored objects read, by kind and id; changes is the store's change
	// count as they were read.
	objects []*Object
	changes int64
	pol     *policy.Policy
	// dropped are the stored objects the policy in force leaves out, and why.
	dropped map[objectKey]string
}

type objectKey struct {
	kind Kind
	id   string
}

// New reads the stored objects and compiles them over the policy file. A file with problems
// is an error (a policy.ErrorList); a stored object the file's policy refuses is left out,
// logged and shown with its problem (Item.Problem), so that a changed file never lets a stale
// object widen anything: every object only adds what it declares.
func New(ctx context.Context, o Options) (*Service, error) {
	if o.Store == nil {
		return nil, errors.New("manage: a store is required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Service{o: o}
	if err := s.reload(ctx, o.Name, o.Data, false); err != nil {
		return nil, err
	}
	return s, nil
}

// Policy returns the policy in force: the file with the stored objects overlaid.
func (s *Service) Policy() *policy.Policy { return s.state.Load().pol }

// SetFile puts a new policy file in force (a reload): the stored objects are compiled over it
// and the result applied. A file with problems is refused (a policy.ErrorList), and the one
// in force stays.
func (s *Service) SetFile(ctx context.Context, name string, data []byte) error {
	return s.reload(ctx, name, data, true)
}

// Watch keeps the policy up to date with the store until ctx ends: an object written through
// another instance is compiled and applied when the store's feed says it changed.
func (s *Service) Watch(ctx context.Context) {
	feed.Follow(ctx, s.o.Logger, "the management data", s.o.Store.WatchObjects, func(ctx context.Context) error {
		cur := s.state.Load()
		return s.reload(ctx, cur.name, cur.data, true)
	}, nil)
}

// reload reads the objects and compiles them over the file; apply puts the result in force.
// Nothing is compiled again when neither the file nor the store changed.
func (s *Service) reload(ctx context.Context, name string, data []byte, apply bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	objects, changes, err := s.o.Store.AllObjects(ctx)
	if err != nil {
		return fmt.Errorf("read the stored objects: %w", err)
	}
	cur := s.state.Load()
	if cur != nil && cur.changes == changes && cur.name == name && bytes.Equal(cur.data, data) {
		return nil
	}
	file, err := readFile(name, data)
	if err != nil {
		return err
	}
	next := &state{name: name, data: data, file: file, objects: objects, changes: changes}
	next.pol, next.dropped, err = compile(name, data, objects)
	if err != nil {
		return err
	}
	for k, why := range next.dropped {
		if cur == nil || cur.dropped[k] != why {
			s.o.Logger.Error("a stored object is left out: the policy in force refuses it", "kind", k.kind, "id", k.id, "problem", why)
		}
	}
	s.state.Store(next)
	if apply && s.o.Apply != nil {
		s.o.Apply(next.pol)
	}
	return nil
}

// compile compiles the objects over the file, leaving out the objects the compiler finds a
// problem in (and then those that named them), until the rest compiles. A problem of the
// file itself, with every object left out, is the error.
func compile(name string, data []byte, objects []*Object) (*policy.Policy, map[objectKey]string, error) {
	dropped := map[objectKey]string{}
	keep := slices.Clone(objects)
	for {
		p, err := policy.ParseOverlay(name, data, docs(keep))
		if err == nil {
			return p, dropped, nil
		}
		var list policy.ErrorList
		if !errors.As(err, &list) {
			return nil, nil, err
		}
		bad := map[int][]string{}
		inFile := false
		for _, e := range list {
			if e.Pos.Doc > 0 {
				bad[e.Pos.Doc-1] = append(bad[e.Pos.Doc-1], e.Error())
			} else {
				inFile = true
			}
		}
		if len(bad) == 0 {
			if !inFile || len(keep) == 0 {
				return nil, nil, err
			}
			// The file's own problem, in the presence of objects: try the file alone.
			for _, o := range keep {
				dropped[objectKey{o.Kind, o.ID}] = "the policy file does not compile with the stored objects: " + err.Error()
			}
			keep = nil
			continue
		}
		var rest []*Object
		for i, o := range keep {
			if why, ok := bad[i]; ok {
				dropped[objectKey{o.Kind, o.ID}] = strings.Join(why, "; ")
				continue
			}
			rest = append(rest, o)
		}
		keep = rest
	}
}

// docs are the objects as the policy compiler takes them.
func docs(objects []*Object) []policy.Doc {
	out := make([]policy.Doc, len(objects))
	for i, o := range objects {
		out[i] = policy.Doc{Kind: string(o.Kind), ID: o.ID, Tenant: o.Tenant, Data: o.Data}
	}
	return out
}

// find returns the stored object of a kind and id in a list, or nil.
func find(objects []*Object, kind Kind, id string) *Object {
	for _, o := range objects {
		if o.Kind == kind && o.ID == id {
			return o
		}
	}
	return nil
}

func validKind(k Kind) error {
	if slices.Contains(Kinds, k) {
		return nil
	}
	return fmt.Errorf("%q is not a kind of object (want one of tenant, connection, profile, egress)", k)
}

// Get returns an object, stored or declared in the policy file; ErrNotFound if neither.
func (s *Service) Get(ctx context.Context, kind Kind, id string) (*Item, error) {
	if err := validKind(kind); err != nil {
		return nil, err
	}
	st := s.state.Load()
	if it := st.file.get(kind, id); it != nil {
		return it, nil
	}
	o, err := s.o.Store.Object(ctx, kind, id)
	if err != nil {
		return nil, err
	}
	return st.item(o), nil
}

// item is a stored object as the API shows it.
func (st *state) item(o *Object) *Item {
	it := &Item{Kind: o.Kind, ID: o.ID, Tenant: o.Tenant, Source: SourceStore, Revision: o.Revision,
		By: o.By, Data: o.Data, Problem: st.dropped[objectKey{o.Kind, o.ID}]}
	if !o.Updated.IsZero() {
		u := o.Updated.UTC()
		it.Updated = &u
	}
	return it
}

// List returns the objects of a kind, stored and declared in the policy file, by id: those
// of one tenant ("": every tenant's), after the id after, at most limit (0: all). next is the
// cursor of the following page ("" at the end).
func (s *Service) List(ctx context.Context, kind Kind, tenant, after string, limit int) ([]*Item, string, error) {
	if err := validKind(kind); err != nil {
		return nil, "", err
	}
	st := s.state.Load()
	fetch := 0
	if limit > 0 {
		fetch = limit + 1
	}
	stored, err := s.o.Store.Objects(ctx, kind, tenant, after, fetch)
	if err != nil {
		return nil, "", err
	}
	var items []*Item
	for _, it := range st.file.list(kind, tenant) {
		if it.ID > after {
			items = append(items, it)
		}
	}
	for _, o := range stored {
		items = append(items, st.item(o))
	}
	slices.SortFunc(items, func(a, b *Item) int { return cmp.Compare(a.ID, b.ID) })
	if limit > 0 && len(items) > limit {
		items = items[:limit]
		return items, items[limit-1].ID, nil
	}
	return items, "", nil
}

// Put validates data as the object of a kind and id of a tenant, as if saved into the policy
// file with every other stored object, and writes it if its revision is still ifRevision (0:
// it does not exist yet; AnyRevision: whatever it is). The change is in force here when Put
// returns, and recorded as written by by.
//
// Errors: Invalid (every problem; nothing written), ErrDeclared, ErrExists (a create of an
// id that is taken), ErrNotFound (an update of an object that does not exist, or belongs to
// another tenant), ErrStale.
func (s *Service) Put(ctx context.Context, kind Kind, tenant, id string, data []byte, ifRevision int64, by string) (*Item, error) {
	if err := validKind(kind); err != nil {
		return nil, err
	}
	if kind == KindTenant || kind == KindEgress {
		if tenant == "" {
			tenant = id
		}
		if tenant != id {
			return nil, Invalid{{Message: fmt.Sprintf("a %s is stored under its tenant's id (%s), not %s", kind, tenant, id)}}
		}
	}
	data, err := normalize(data, id)
	if err != nil {
		return nil, err
	}
	st := s.state.Load()
	if st.file.get(kind, id) != nil {
		return nil, ErrDeclared
	}
	objects, _, err := s.o.Store.AllObjects(ctx)
	if err != nil {
		return nil, err
	}
	cur := find(objects, kind, id)
	switch {
	case cur != nil && cur.Tenant != tenant:
		if ifRevision == 0 {
			return nil, ErrExists
		}
		return nil, ErrNotFound
	case cur != nil && ifRevision == 0:
		return nil, ErrExists
	case cur == nil && ifRevision > 0:
		return nil, ErrNotFound
	}
	next := &Object{Kind: kind, ID: id, Tenant: tenant, Data: data, By: by, Updated: s.o.Now().UTC()}
	if err := validate(st, objects, next, nil); err != nil {
		return nil, err
	}
	stored, err := s.o.Store.PutObject(ctx, next, ifRevision)
	if err != nil {
		if errors.Is(err, ErrStale) && ifRevision == 0 {
			return nil, ErrExists
		}
		return nil, err
	}
	recErr := s.record(ctx, stored, "put")
	if err := s.reload(ctx, st.name, st.data, true); err != nil {
		s.o.Logger.Error("a stored change is not in force here yet; the store's feed brings it", "kind", kind, "id", id, "err", err)
	}
	return s.state.Load().item(stored), recErr
}

// Delete deletes a stored object if its revision is still ifRevision (AnyRevision: whatever it
// is). A deletion that other objects would not compile without (a tenant that still has
// connections or profiles) is Invalid, naming them.
func (s *Service) Delete(ctx context.Context, kind Kind, id string, ifRevision int64, by string) error {
	if err := validKind(kind); err != nil {
		return err
	}
	st := s.state.Load()
	if st.file.get(kind, id) != nil {
		return ErrDeclared
	}
	objects, _, err := s.o.Store.AllObjects(ctx)
	if err != nil {
		return err
	}
	cur := find(objects, kind, id)
	if cur == nil {
		return ErrNotFound
	}
	if err := validate(st, objects, nil, cur); err != nil {
		return err
	}
	at := s.o.Now().UTC()
	if err := s.o.Store.DeleteObject(ctx, kind, id, ifRevision, by, at); err != nil {
		return err
	}
	recErr := s.record(ctx, &Object{Kind: kind, ID: id, Tenant: cur.Tenant, By: by, Updated: at, Deleted: true}, "delete")
	if err := s.reload(ctx, st.name, st.data, true); err != nil {
		s.o.Logger.Error("a stored deletion is not in force here yet; the store's feed brings it", "kind", kind, "id", id, "err", err)
	}
	return recErr
}

// validate compiles the objects in force with one written (put) or removed (del). Objects the
// policy in force leaves out already stay out, so that only the change's own problems count.
func validate(st *state, objects []*Object, put, del *Object) error {
	var list []*Object
	idx := -1
	for _, o := range objects {
		switch {
		case put != nil && o.Kind == put.Kind && o.ID == put.ID:
			continue
		case del != nil && o.Kind == del.Kind && o.ID == del.ID:
			continue
		case st.dropped[objectKey{o.Kind, o.ID}] != "":
			continue
		}
		list = append(list, o)
	}
	if put != nil {
		idx = len(list)
		list = append(list, put)
	}
	_, err := policy.ParseOverlay(st.name, st.data, docs(list))
	if err == nil {
		return nil
	}
	var errs policy.ErrorList
	if !errors.As(err, &errs) {
		return err
	}
	var out Invalid
	for _, e := range errs {
		if e.Pos.Doc == idx+1 && idx >= 0 {
			out = append(out, Problem{Field: e.Pointer, Message: e.Msg})
			continue
		}
		where := e.Object
		if e.Pos.Doc == 0 {
			where = fmt.Sprintf("%s:%d:%d", e.File, e.Pos.Line, e.Pos.Col)
		} else if e.Pointer != "" {
			where += " " + e.Pointer
		}
		out = append(out, Problem{Where: where, Message: e.Msg})
	}
	return out
}

// normalize checks that data is one JSON object and compacts it, without an "id" that only
// repeats the id the object is stored under (the id is the object's key, not its content; one
// that differs stays, for the compiler to report).
func normalize(data []byte, id string) ([]byte, error) {
	data, err := compactJSON(data)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return data, nil
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return data, nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return data, nil
		}
		if k == "id" && string(v) == strconvQuote(id) {
			continue
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		out.Write(key)
		out.WriteByte(':')
		out.Write(v)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// strconvQuote is s as a JSON string.
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// compactJSON checks that data is one JSON object and compacts it.
func compactJSON(data []byte) ([]byte, error) {
	var probe any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&probe); err != nil {
		return nil, Invalid{{Message: "the body is not JSON: " + jsonProblem(data, err)}}
	}
	if dec.More() {
		return nil, Invalid{{Message: "the body holds more than one JSON value"}}
	}
	if _, ok := probe.(map[string]any); !ok {
		return nil, Invalid{{Message: "the body must be a JSON object"}}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, Invalid{{Message: "the body is not JSON: " + err.Error()}}
	}
	return buf.Bytes(), nil
}

// jsonProblem says where a JSON syntax error is.
func jsonProblem(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Sprintf("%v (line %d, byte %d)", se, line, se.Offset)
	}
	return err.Error()
}

// record writes a change to the audit trail (see audit.KindChange); ErrNotRecorded if it
// cannot.
func (s *Service) record(ctx context.Context, o *Object, what string) error {
	if s.o.Log == nil {
		return nil
	}
	e := &audit.Event{Time: o.Updated, Kind: kindAudit, Tenant: o.Tenant, Principal: o.By,
		Tool: string(o.Kind) + "/" + o.ID, Outcome: what}
	if !o.Deleted {
		sum := sha256.Sum256(o.Data)
		e.Digest = "sha256:" + hex.EncodeToString(sum[:])
	}
	if err := s.o.Log.Append(ctx, e); err != nil {
		s.o.Logger.Error("a change of the management data is in force but not recorded in the audit trail", "kind", o.Kind, "id", o.ID, "err", err)
		return errors.Join(ErrNotRecorded, err)
	}
	return nil
}
