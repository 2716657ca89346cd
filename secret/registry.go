package secret

import (
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Scope is who a registry serves: managed references are checked against it, exactly.
type Scope struct {
	Agent, Session, Conversation string
}

// Options tune a Registry. The zero value is the default: no managed-reference issuer is
// supported (every managed reference is refused when used) and the default limits apply.
type Options struct {
	// Issuers maps each supported managed-reference issuer to its supported versions.
	Issuers map[string][]string
	// MaxValues bounds how many values and managed references one registry holds; a Protect
	// that would pass it fails with ErrLimit. Zero means DefaultMaxValues.
	MaxValues int
	// MaxBytes bounds the total length of the values one registry holds; a Protect that would
	// pass it fails with ErrLimit. Zero means DefaultMaxBytes.
	MaxBytes int
	// Shared is where the registry keeps its values for redaction, with the other registries
	// of the same Shared (the sessions of one tenant): each redacts the values of all. Nil
	// gives the registry a Shared of its own, which forgets a value when the registry does.
	Shared *Shared
}

// Default limits: a turn's registry holds a handful of values; these stop a producer that
// declares thousands from making every later Redact slow or the registry large.
const (
	DefaultMaxValues = 1024
	DefaultMaxBytes  = 256 << 10
)

// Handle syntax: HandlePrefix, the value's Type (or "managed" for a managed reference), a
// slash, the registry's id, a dot and the value's id; ids are random lower-case base32, so
// a handle never contains, or says anything about, its value. Example:
//
//	protected://token/k3v5q2xa.7fzq4m2c5h6k7n3p2r4t6w2y4a
//
// The registry id lets Resolve tell a handle of another session from an unknown one.
const (
	HandlePrefix = "protected://"
	kindManaged  = "managed"
)

// IsManaged reports whether a handle is the form of a managed reference's handle (it may
// still be unknown to a registry).
func IsManaged(handle string) bool {
	return strings.HasPrefix(handle, HandlePrefix+kindManaged+"/")
}

// Registry holds one session's protected values, in memory only: handles are never written
// anywhere and die with the registry or at Forget (P5). Its values are redacted by every
// registry of its Shared, and it redacts theirs. All methods are safe for concurrent use;
// Redact and RedactValue take no lock and never wait for the others. Use NewRegistry.
//
// A Registry prints and logs as its number of handles. Its state sits behind a pointer so
// that fmt, which cannot call methods on unexported fields, finds an address there instead
// of the maps that hold the values in the clear.
type Registry struct {
	st *state
}

type state struct {
	scope Scope
	opts  Options
	id    string

	shared *Shared

	mu      sync.Mutex
	entries map[string]*entry   // handle → entry
	byValue map[valueKey]string // plain value → its handle, so a value declared twice keeps one handle
	held    map[string]int32    // value → its id in the Shared, for the values this registry holds there
	redact  map[int32]string    // Shared id → the handle Redact writes for it (the first one)
	bytes   int                 // total length of the values held
	gen     uint64              // incremented by Forget

	view atomic.Pointer[view] // what Redact reads: replaced, never changed, under mu
}

// view is what Redact needs of the registry, without a lock: the handle to write for each
// value it holds, and its handles, which stay whole.
type view struct {
	redact  map[int32]string
	handles map[string]bool
}

type valueKey struct {
	t Type
	v string
}

// entry is what a handle stands for: a value, or a managed reference.
type entry struct {
	handle  string
	value   Secret
	managed *Managed
	// source is the server whose result declared the value (ProtectFrom); empty when unknown.
	source string
}

// NewRegistry returns an empty registry for scope with default Options.
func NewRegistry(scope Scope) *Registry { return NewRegistryWith(scope, Options{}) }

// NewRegistryWith returns an empty registry for scope with opts.
func NewRegistryWith(scope Scope, opts Options) *Registry {
	if opts.MaxValues <= 0 {
		opts.MaxValues = DefaultMaxValues
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	issuers := make(map[string][]string, len(opts.Issuers))
	for k, v := range opts.Issuers {
		issuers[k] = append([]string(nil), v...)
	}
	opts.Issuers = issuers
	shared := opts.Shared
	if shared == nil {
		shared = NewShared(SharedOptions{Lifetime: -1})
	}
	opts.Shared = nil
	r := &Registry{st: &state{scope: scope, opts: opts, id: randomID(8), shared: shared}}
	r.reset()
	return r
}

// Scope returns the scope the registry serves.
func (r *Registry) Scope() Scope { return r.st.scope }

// reset empties the registry and lets go of its values in the Shared; r.st.mu is held or r
// is new.
func (r *Registry) reset() {
	if len(r.st.held) > 0 {
		ids := make([]int32, 0, len(r.st.held))
		for _, id := range r.st.held {
			ids = append(ids, id)
		}
		r.st.shared.release(ids)
	}
	r.st.entries = map[string]*entry{}
	r.st.byValue = map[valueKey]string{}
	r.st.held = map[string]int32{}
	r.st.redact = map[int32]string{}
	r.st.bytes = 0
	r.publish()
}

// publish makes the registry's handles and values visible to Redact; r.st.mu is held.
func (r *Registry) publish() {
	v := &view{redact: maps.Clone(r.st.redact), handles: make(map[string]bool, len(r.st.entries))}
	for h := range r.st.entries {
		v.handles[h] = true
	}
	r.st.view.Store(v)
}

// Add registers a value obtained some other way, such as a credential Warden injects into an
// upstream, so that an upstream echoing it is redacted; it returns the value's handle. A
// value already known with the same type keeps its handle. Add ignores Options' limits: its
// callers are Warden's own code. It panics if t is not one of the five types.
func (r *Registry) Add(t Type, value Secret) string {
	if !t.Valid() {
		panic("secret: Add with unknown type " + string(t))
	}
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	s := r.stage()
	h := s.plain(t, value.Reveal())
	_ = s.commit(true) // a forced commit cannot fail
	return h
}

// Source returns the source a handle's value was declared by (see ProtectFrom): the server
// whose result held its envelope, or "" for a value protected without one (Protect, Add).
// ok is false for a handle the registry does not hold. A value declared by two sources keeps
// its first handle, and so its first source.
func (r *Registry) Source(handle string) (source string, ok bool) {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	e, err := r.lookup(handle)
	if err != nil {
		return "", false
	}
	return e.source, true
}

// Forget drops every value and handle: the end of a turn or a session. Handles issued before
// are unknown afterwards; the registry serves on, empty.
func (r *Registry) Forget() {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	r.st.gen++
	r.reset()
}

// String describes the registry without its values: the maps behind it hold them in the
// clear, so a registry must never be printed field by field.
func (r *Registry) String() string {
	return fmt.Sprintf("secret.Registry{handles: %d}", r.Len())
}

// Format writes String for every verb, so that %+v and %#v do not walk into the fields.
func (r *Registry) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, r.String()) }

// LogValue logs the number of handles, never the values.
func (r *Registry) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("handles", r.Len()))
}

var (
	_ fmt.Formatter  = (*Registry)(nil)
	_ slog.LogValuer = (*Registry)(nil)
)

// Len returns how many handles the registry holds.
func (r *Registry) Len() int {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	return len(r.st.entries)
}

// staging collects the entries one call creates, so that a call that fails leaves the
// registry as it was; r.st.mu is held from stage to commit.
type staging struct {
	r       *Registry
	source  string
	entries []*entry
	byValue map[valueKey]string
	bytes   int
}

func (r *Registry) stage() *staging { return &staging{r: r} }

// plain returns the handle of value v of type t: the known one, or a new staged one.
func (s *staging) plain(t Type, v string) string {
	k := valueKey{t, v}
	if h, ok := s.r.st.byValue[k]; ok {
		return h
	}
	if h, ok := s.byValue[k]; ok {
		return h
	}
	h := s.r.newHandle(string(t))
	if s.byValue == nil {
		s.byValue = map[valueKey]string{}
	}
	s.byValue[k] = h
	s.entries = append(s.entries, &entry{handle: h, value: New(v), source: s.source})
	s.bytes += len(v)
	return h
}

// managed returns a new staged handle for m.
func (s *staging) managed(m Managed) string {
	h := s.r.newHandle(kindManaged)
	s.entries = append(s.entries, &entry{handle: h, managed: &m, source: s.source})
	return h
}

// full reports whether one more value of n bytes would pass the registry's limits.
func (s *staging) full(n int) bool {
	r := s.r
	return len(r.st.entries)+len(s.entries)+1 > r.st.opts.MaxValues || r.st.bytes+s.bytes+n > r.st.opts.MaxBytes
}

// commit adds the staged entries to the registry and their values to the Shared. Unless
// forced, a Shared that has no room fails the commit with ErrLimit, and nothing is added.
func (s *staging) commit(force bool) error {
	r := s.r
	if len(s.entries) == 0 {
		return nil
	}
	var values, handles []string
	for _, e := range s.entries {
		if e.managed == nil {
			values, handles = append(values, e.value.Reveal()), append(handles, e.handle)
		}
	}
	if err := r.learn(values, handles, force); err != nil {
		return err
	}
	for _, e := range s.entries {
		r.st.entries[e.handle] = e
		if e.managed == nil {
			r.st.byValue[valueKey{kindOf(e.handle), e.value.Reveal()}] = e.handle
		}
	}
	r.st.bytes += s.bytes
	r.publish()
	return nil
}

// learn holds the values in the Shared, so that every registry of it redacts them, and makes
// this registry write handles[i] for values[i] unless it has a handle for it already; r.st.mu
// is held. Values shorter than MinRedactLen are not redacted. The caller publishes.
func (r *Registry) learn(values, handles []string, force bool) error {
	var newValues, newHandles []string
	for i, v := range values {
		if len(v) < MinRedactLen {
			continue
		}
		if _, ok := r.st.held[v]; ok || slices.Contains(newValues, v) {
			continue
		}
		newValues, newHandles = append(newValues, v), append(newHandles, handles[i])
	}
	if len(newValues) == 0 {
		return nil
	}
	ids, err := r.st.shared.hold(newValues, force)
	if err != nil {
		return err
	}
	for i, id := range ids {
		r.st.held[newValues[i]] = id
		if _, ok := r.st.redact[id]; !ok {
			r.st.redact[id] = newHandles[i]
		}
	}
	return nil
}

// newHandle returns a fresh handle of the given kind.
func (r *Registry) newHandle(kind string) string {
	return HandlePrefix + kind + "/" + r.st.id + "." + randomID(26)
}

// kindOf returns the kind part of a handle this registry made.
func kindOf(h string) Type {
	k, _, _ := strings.Cut(strings.TrimPrefix(h, HandlePrefix), "/")
	return Type(k)
}

// randomID returns n random lower-case base32 characters (5 bits each).
func randomID(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(strings.ToLower(rand.Text())) // 26 characters, 128 bits
	}
	return b.String()[:n]
}

// lookup finds the entry of handle h, or says why there is none: not a handle of this
// registry (ErrUnknownHandle) or a handle of another (ErrForeignHandle); r.st.mu is held.
func (r *Registry) lookup(h string) (*entry, error) {
	if e, ok := r.st.entries[h]; ok {
		return e, nil
	}
	rest, ok := strings.CutPrefix(h, HandlePrefix)
	if !ok {
		return nil, ErrUnknownHandle
	}
	kind, ids, ok := strings.Cut(rest, "/")
	if !ok || !(Type(kind).Valid() || kind == kindManaged) {
		return nil, ErrUnknownHandle
	}
	rid, eid, ok := strings.Cut(ids, ".")
	if !ok || !isID(rid, 8) || !isID(eid, 26) {
		return nil, ErrUnknownHandle
	}
	if rid != r.st.id {
		return nil, ErrForeignHandle
	}
	return nil, ErrUnknownHandle
}

// isID reports whether s is n characters of lower-case base32.
func isID(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}
