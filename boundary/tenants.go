package boundary

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/feed"
)

// Stored is a tenant's hard-block document as a store keeps it.
type Stored struct {
	// Tenant owns the document.
	Tenant string
	// Data is the document as written. Tenants.Put writes only documents that validate, but
	// the store holds bytes: whatever it returns is compiled with Load's rule (invalid data
	// blocks everything).
	Data []byte
	// Revision is 1 for the first write and grows by one with each; 0 means no document.
	// The HTTP API's ETag is made from it.
	Revision int64
	// By is who wrote it (a token's name, "cli:<user>").
	By string
	// Updated is when it was written.
	Updated time.Time
}

// AnyRevision, given to Store.PutBoundaries, writes whatever the current revision is.
const AnyRevision = -1

// ErrStale is matched by the error of a write that named a revision other than the current
// one: someone else changed the document since it was read.
var ErrStale = errors.New("the hard-block document changed since that revision")

// Store keeps each tenant's document. Implementations (store/sqlite, store/postgres) must be
// safe for concurrent use.
type Store interface {
	// Boundaries returns a tenant's document, or nil and no error when it has none.
	Boundaries(ctx context.Context, tenant string) (*Stored, error)
	// ListBoundaries returns every tenant's document.
	ListBoundaries(ctx context.Context) ([]*Stored, error)
	// PutBoundaries writes s.Data as s.Tenant's document, by s.By at s.Updated, if the
	// current revision is ifRevision (0: there is no document yet; AnyRevision: whatever it
	// is), and returns what was stored, with its new revision. Another revision is ErrStale.
	PutBoundaries(ctx context.Context, s *Stored, ifRevision int64) (*Stored, error)
	// WatchBoundaries returns a channel closed when any tenant's document may have changed
	// after the call, in this process or another sharing the store. When ctx ends the
	// channel stays open.
	WatchBoundaries(ctx context.Context) (<-chan struct{}, error)
}

// Tenants holds every tenant's hard blocks in force: the policy's rules for the tenant and
// its stored document, merged (see Merge), compiled once per change and kept up to date with
// the store by Watch. It is safe for concurrent use; Set takes no lock held by a writer for
// longer than a map update, and reads no store.
type Tenants struct {
	store  Store
	policy func(tenant string) *Document
	opt    Options
	logger *slog.Logger

	mu     sync.RWMutex
	stored map[string]*Stored // by tenant, as last read
	sets   map[string]*entry  // by tenant, compiled on first use after a change
}

type entry struct {
	policy   *Document
	revision int64
	set      *Set
}

// TenantsOptions configures Tenants.
type TenantsOptions struct {
	// Store holds the stored documents (nil: there are none, and Put fails).
	Store Store
	// Policy returns the policy's rules for a tenant (nil: none). It is called on every Set,
	// so it must be cheap; a new *Document (after a policy reload) compiles the tenant's
	// rules again.
	Policy func(tenant string) *Document
	// Compile are the options every Set is compiled with.
	Compile Options
	Logger  *slog.Logger
}

// NewTenants returns Tenants with nothing read yet: call Load before use.
func NewTenants(o TenantsOptions) *Tenants {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Policy == nil {
		o.Policy = func(string) *Document { return nil }
	}
	return &Tenants{store: o.Store, policy: o.Policy, opt: o.Compile, logger: o.Logger,
		stored: map[string]*Stored{}, sets: map[string]*entry{}}
}

// Load reads every tenant's stored document.
func (t *Tenants) Load(ctx context.Context) error {
	if t.store == nil {
		return nil
	}
	list, err := t.store.ListBoundaries(ctx)
	if err != nil {
		return fmt.Errorf("read the stored hard blocks: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Only newer revisions replace what is kept. A tenant missing from the list is not
	// forgotten: documents are never deleted from a store, so a list without it was read
	// before its first write, one that Put may have kept here meanwhile (forgetting it made a
	// review right after a PUT miss the rules the PUT had just written).
	for _, s := range list {
		t.storeLocked(s)
	}
	return nil
}

// storeLocked keeps s unless a newer revision is already kept; t.mu is held.
func (t *Tenants) storeLocked(s *Stored) {
	if old := t.stored[s.Tenant]; old != nil && old.Revision >= s.Revision {
		return
	}
	t.stored[s.Tenant] = s
}

// Watch keeps the documents up to date with the store until ctx ends: every change, made in
// this process or another, is read again. A watch that fails is tried again after a pause
// (the documents already read stay in force meanwhile). changed, if not nil, is called after
// each read, for tests and metrics.
func (t *Tenants) Watch(ctx context.Context, changed func()) {
	if t.store == nil {
		return
	}
	feed.Follow(ctx, t.logger, "the stored hard blocks", t.store.WatchBoundaries, t.Load, changed)
}

// Set returns the tenant's hard blocks in force. The same *Set is returned until the policy's
// rules for the tenant or its stored document change, so a caller may compare pointers.
func (t *Tenants) Set(tenant string) *Set {
	pd := t.policy(tenant)
	t.mu.RLock()
	s := t.stored[tenant]
	e := t.sets[tenant]
	t.mu.RUnlock()
	var rev int64
	if s != nil {
		rev = s.Revision
	}
	if e != nil && e.policy == pd && e.revision == rev {
		return e.set
	}
	var data []byte
	if s != nil {
		data = s.Data
	}
	n := &entry{policy: pd, revision: rev, set: Merge(pd, data, t.opt)}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Another caller may have compiled the same state first: keep one Set per state.
	if cur := t.sets[tenant]; cur != nil && cur.policy == pd && cur.revision == rev {
		return cur.set
	}
	if cur := t.stored[tenant]; cur != nil && cur.Revision != rev {
		return n.set // a newer document arrived meanwhile; the next Set compiles it
	}
	t.sets[tenant] = n
	return n.set
}

// Stored returns the tenant's document as last read (nil: none).
func (t *Tenants) Stored(tenant string) *Stored {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.stored[tenant]
}

// Put validates data (every field error at once, as a ValidationError) and writes it as the
// tenant's document if its revision is still ifRevision (ErrStale if not; AnyRevision writes
// over any). The tenant's Set changes in this process before Put returns, and in others when
// their Watch reads the change.
func (t *Tenants) Put(ctx context.Context, tenant string, data []byte, ifRevision int64, by string, now time.Time) (*Stored, error) {
	if t.store == nil {
		return nil, errors.New("no store for hard blocks")
	}
	if err := Check(data, t.opt); err != nil {
		return nil, err
	}
	s, err := t.store.PutBoundaries(ctx, &Stored{Tenant: tenant, Data: data, By: by, Updated: now}, ifRevision)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.storeLocked(s)
	t.mu.Unlock()
	return s, nil
}

// Check parses and validates data as a stored document would be, with opt's home for "~/",
// and returns every problem as a ValidationError, or nil.
func Check(data []byte, opt Options) error {
	d, err := Parse(data)
	if err != nil {
		return err
	}
	if errs := check(d, opt); len(errs) > 0 {
		return ValidationError(errs)
	}
	return nil
}
