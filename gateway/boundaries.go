package gateway

import (
	"context"
	"errors"
	"os"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/gate"
)

// invalidRules is what a tenant's policy rules are when the policy in force writes rules that
// do not validate (a reload the caller did not check): a document that fails validation, so
// that every call of every session is blocked with boundary_config_invalid until a good
// policy is loaded.
var invalidRules = &boundary.Document{}

// newTenants builds the gateway's hard blocks: the policy's rules for each tenant, then the
// document stored for it, read now and followed until Close.
func (g *Gateway) newTenants() (*boundary.Tenants, error) {
	home := g.o.Home
	if home == "" {
		home, _ = os.UserHomeDir() // none: a "~/" rule does not compile, and blocks everything
	}
	t := boundary.NewTenants(boundary.TenantsOptions{
		Store:   g.o.BoundaryStore,
		Policy:  func(tenant string) *boundary.Document { return g.snapshot.Load().rulesFor(tenant) },
		Compile: boundary.Options{Home: home},
		Logger:  g.logger,
	})
	if g.o.BoundaryStore == nil {
		return t, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := t.Load(ctx); err != nil {
		cancel()
		return nil, err
	}
	g.stopWatch = cancel
	g.watching.Add(1)
	go func() {
		defer g.watching.Done()
		t.Watch(ctx, g.o.BoundariesRead)
	}()
	return t, nil
}

func (s *snapshot) rulesFor(tenant string) *boundary.Document {
	if s.rulesErr != nil {
		return invalidRules
	}
	return s.rules.For(tenant)
}

// Boundaries returns a tenant's hard blocks in force: the policy's rules for it, then its
// stored document. A live session's next call reviews with what this returns.
func (g *Gateway) Boundaries(tenant string) *boundary.Set { return g.rules(tenant) }

// StoredBoundaries returns a tenant's stored document as this gateway last read it (nil: none).
func (g *Gateway) StoredBoundaries(ctx context.Context, tenant string) (*boundary.Stored, error) {
	if g.o.BoundaryStore == nil {
		return nil, ErrNoBoundaryStore
	}
	return g.o.BoundaryStore.Boundaries(ctx, tenant)
}

// ErrNoBoundaryStore is matched when hard blocks are read or written and the gateway has no
// store for them.
var ErrNoBoundaryStore = errors.New("this gateway keeps no stored hard blocks")

// PutBoundaries validates data (a boundary.ValidationError lists every field error) and
// stores it as the tenant's document if its revision is still ifRevision
// (boundary.AnyRevision: whatever it is; boundary.ErrStale if it changed). The change is in
// force for this gateway's sessions before it returns, for every other instance's when its
// watch reads it, and is recorded in the audit trail as written by principal.
func (g *Gateway) PutBoundaries(ctx context.Context, tenant string, data []byte, ifRevision int64, principal string) (*boundary.Stored, error) {
	if g.bounds == nil || g.o.BoundaryStore == nil {
		return nil, ErrNoBoundaryStore
	}
	st, err := g.bounds.Put(ctx, tenant, data, ifRevision, principal, g.o.Gate.Now())
	if err != nil {
		return nil, err
	}
	set := boundary.Merge(nil, st.Data, boundary.Options{Home: "/"})
	e := &audit.Event{Time: st.Updated, Kind: audit.KindBoundaries, Tenant: tenant, Principal: principal,
		Digest: set.Revision(), Outcome: "ok"}
	for _, r := range set.Rules() {
		e.Rules = append(e.Rules, r.ID)
	}
	if err := g.o.Store.Append(ctx, e); err != nil {
		// The rules are in force; only their record is missing. Say so rather than pretend
		// the write failed.
		return st, errors.Join(ErrChangeNotRecorded, err)
	}
	return st, nil
}

// ErrChangeNotRecorded is matched when a tenant's hard blocks were written and are in force,
// but the audit trail could not record the change.
var ErrChangeNotRecorded = errors.New("the hard blocks were changed, but the change could not be recorded")

// current returns the session as the gate should see it for a new call: with the tenant's hard
// blocks in force now. A change of the rules (a PUT here or on another instance, a policy
// reload) reaches a live session at its next call, and its subagents' (they are the same
// tenant's).
func (s *session) current() *gate.Session {
	for {
		gs := s.gs.Load()
		if gs == nil || s.g.rules == nil {
			return gs
		}
		set := s.g.rules(gs.Review.Surface.Tenant().ID)
		if set == gs.Review.Boundaries {
			return gs
		}
		rs := *gs.Review
		rs.Boundaries = set
		n := gs.Rebind(&rs)
		if s.gs.CompareAndSwap(gs, n) {
			return n
		}
	}
}

// KnowsTenant reports whether the policy in force names the tenant.
func (g *Gateway) KnowsTenant(tenant string) bool {
	_, ok := g.snapshot.Load().p.Tenant(tenant)
	return ok
}
