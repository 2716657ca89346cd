package secret

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Shared holds the protected values of the registries made with it (Options.Shared), so that
// each of them redacts every value any of them knows: a value protected in one session of a
// tenant is redacted in all of them. Warden makes one Shared per tenant, and another tenant's
// registries never see it.
//
// A registry that holds a handle for a value writes its handle in its place; a registry that
// does not (another session found the value) writes Redacted, which resolves to nothing: a
// session never learns, nor can bind, a value another session protected.
//
// Values are kept in memory only, never written anywhere, and held by the registries that
// know them. A value no registry holds any more is still redacted for SharedOptions.Lifetime
// (the upstream that returned it may return it again in a later session), and then forgotten.
// At most SharedOptions.MaxValues values and MaxBytes bytes are kept: to make room, the values
// no registry holds are forgotten first, least recently used first; when every value is held,
// Protect fails with ErrLimit (the result is withheld) rather than leave a value unredacted.
// Registry.Add, for Warden's own credentials, is never refused and may pass the limits.
//
// The redaction index grows when values are added (a copy of its filters and the new values'
// grams: a couple of milliseconds with a thousand values held) and is built again when values
// are forgotten (some tens of milliseconds for a thousand). A thousand 40-byte values take
// about fifteen megabytes.
//
// A Shared is safe for concurrent use. It prints and logs as its number of values.
type Shared struct {
	opts SharedOptions

	mu     sync.Mutex
	byVal  map[string]*sharedValue
	byID   map[int32]*sharedValue
	nextID int32
	bytes  int
	tick   uint64 // use counter, for least recently used

	m atomic.Pointer[matcher] // nil while nothing is to be found
}

// SharedOptions tune a Shared. The zero value is the default.
type SharedOptions struct {
	// MaxValues and MaxBytes bound the values kept; zero means DefaultSharedMaxValues and
	// DefaultSharedMaxBytes.
	MaxValues, MaxBytes int
	// Lifetime is how long a value no registry holds is still redacted. Zero means
	// DefaultSharedLifetime; a negative lifetime forgets a value as soon as no registry holds
	// it.
	Lifetime time.Duration
	// Now tells the time; nil means time.Now.
	Now func() time.Time
}

// Defaults for SharedOptions.
const (
	DefaultSharedMaxValues = 2048
	DefaultSharedMaxBytes  = 256 << 10
	DefaultSharedLifetime  = 24 * time.Hour
)

// Redacted is what a registry writes in place of a value that another registry of its
// Shared holds. It is not a handle of any registry: Resolve refuses it.
const Redacted = HandlePrefix + "redacted"

type sharedValue struct {
	id      int32
	v       string
	holders int
	used    uint64    // tick of the last hold
	freed   time.Time // when the last holder let go
}

// NewShared returns an empty Shared.
func NewShared(opts SharedOptions) *Shared {
	if opts.MaxValues <= 0 {
		opts.MaxValues = DefaultSharedMaxValues
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultSharedMaxBytes
	}
	if opts.Lifetime == 0 {
		opts.Lifetime = DefaultSharedLifetime
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Shared{opts: opts, byVal: map[string]*sharedValue{}, byID: map[int32]*sharedValue{}}
}

// Len returns how many values the Shared keeps.
func (s *Shared) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byVal)
}

// String describes the Shared without its values.
func (s *Shared) String() string { return fmt.Sprintf("secret.Shared{values: %d}", s.Len()) }

// Format writes String for every verb, so that %+v and %#v do not walk into the fields.
func (s *Shared) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, s.String()) }

// LogValue logs the number of values, never the values.
func (s *Shared) LogValue() slog.Value { return slog.GroupValue(slog.Int("values", s.Len())) }

var (
	_ fmt.Formatter  = (*Shared)(nil)
	_ slog.LogValuer = (*Shared)(nil)
)

// hold makes the values known, each held once more, and returns their ids in order. With
// force the limits do not apply; without, a value that finds no room fails the whole call with
// ErrLimit and holds nothing. The index is built again once for all of them.
func (s *Shared) hold(values []string, force bool) ([]int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	removed := s.expire()
	var added []*sharedValue
	ids := make([]int32, len(values))
	for i, v := range values {
		sv, ok := s.byVal[v]
		if !ok {
			if !force {
				made, evicted := s.makeRoom(len(v))
				removed = removed || evicted
				if !made {
					for _, a := range added {
						s.remove(a)
					}
					for _, id := range ids[:i] {
						if sv := s.byID[id]; sv != nil && s.unhold(sv) {
							removed = true
						}
					}
					if removed {
						s.rebuild()
					}
					return nil, ErrLimit
				}
			}
			sv = &sharedValue{id: s.nextID, v: v}
			s.nextID++
			s.byVal[v], s.byID[sv.id] = sv, sv
			s.bytes += len(v)
			added = append(added, sv)
		}
		s.tick++
		sv.used = s.tick
		sv.holders++
		ids[i] = sv.id
	}
	switch {
	case removed:
		s.rebuild()
	case len(added) > 0:
		// only additions: the index grows (see matcher.with)
		values := make(map[int32]string, len(added))
		for _, sv := range added {
			values[sv.id] = sv.v
		}
		s.m.Store(s.m.Load().with(values))
	}
	return ids, nil
}

// release lets go of one hold of each id.
func (s *Shared) release(ids []int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, id := range ids {
		if sv := s.byID[id]; sv != nil && s.unhold(sv) {
			changed = true
		}
	}
	if s.expire() {
		changed = true
	}
	if changed {
		s.rebuild()
	}
}

// unhold drops one hold of sv and reports whether that forgot it; s.mu is held.
func (s *Shared) unhold(sv *sharedValue) bool {
	sv.holders--
	if sv.holders > 0 {
		return false
	}
	sv.freed = s.opts.Now()
	if s.opts.Lifetime < 0 {
		s.remove(sv)
		return true
	}
	return false
}

// expire forgets the values no registry has held for a lifetime, and reports whether there
// were any; s.mu is held.
func (s *Shared) expire() bool {
	if s.opts.Lifetime < 0 {
		return false
	}
	now := s.opts.Now()
	changed := false
	for _, sv := range s.byVal {
		if sv.holders == 0 && now.Sub(sv.freed) >= s.opts.Lifetime {
			s.remove(sv)
			changed = true
		}
	}
	return changed
}

// makeRoom forgets unheld values, least recently used first, until a value of n bytes fits,
// and reports whether it does, and whether it forgot any; s.mu is held.
func (s *Shared) makeRoom(n int) (made, forgot bool) {
	for len(s.byVal)+1 > s.opts.MaxValues || s.bytes+n > s.opts.MaxBytes {
		var oldest *sharedValue
		for _, sv := range s.byVal {
			if sv.holders == 0 && (oldest == nil || sv.used < oldest.used) {
				oldest = sv
			}
		}
		if oldest == nil {
			return false, forgot
		}
		s.remove(oldest)
		forgot = true
	}
	return true, forgot
}

func (s *Shared) remove(sv *sharedValue) {
	delete(s.byVal, sv.v)
	delete(s.byID, sv.id)
	s.bytes -= len(sv.v)
}

// rebuild indexes the values again; s.mu is held.
func (s *Shared) rebuild() {
	values := make(map[int32]string, len(s.byID))
	for id, sv := range s.byID {
		values[id] = sv.v
	}
	s.m.Store(buildMatcher(values))
}
