package manage

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Kind is the kind of a stored object.
type Kind string

// The kinds of object the management plane keeps in the store. Each is written as the policy
// file would write it (the same fields, in JSON), and overlaid on the policy file's own.
const (
	// KindTenant is a tenant: a brand or account (policy.TenantConfig without its
	// connections and hard blocks, which are objects and documents of their own). Its ID is
	// the tenant's id, and so is its Tenant.
	KindTenant Kind = "tenant"
	// KindConnection is a tenant's connection to a connector (policy.ConnectionConfig).
	KindConnection Kind = "connection"
	// KindProfile is a tenant's saved coworker: requested tools, a grant (connectors, skills,
	// allowances) and limits (policy.ProfileConfig). The tenant lists it as a coworker.
	KindProfile Kind = "profile"
	// KindEgress is the hosts a tenant's sandboxes may reach beyond the deployment's
	// allowlist (policy.TenantEgressConfig). Its ID is the tenant's id.
	KindEgress Kind = "egress"
)

// Kinds are every kind, in the order they are overlaid: a connection or a profile names its
// tenant, so tenants come first.
var Kinds = []Kind{KindTenant, KindConnection, KindProfile, KindEgress}

// Object is one stored object.
type Object struct {
	Kind Kind
	// ID is unique within the kind, across tenants (as ids are in the policy file).
	ID string
	// Tenant is the tenant the object belongs to.
	Tenant string
	// Data is the object as JSON, as the API took it.
	Data json.RawMessage
	// Revision is 1 for the first write and one more with each write after it, a deletion
	// included; it never repeats for a kind and id, so an ETag read before a deletion does not
	// match the object created again after it.
	Revision int64
	// Deleted marks an object that was deleted (kept so that its revision goes on counting).
	Deleted bool
	// By is who wrote the revision; Updated is when.
	By      string
	Updated time.Time
}

// AnyRevision, given to Store.PutObject or Store.DeleteObject, writes whatever the current
// revision is.
const AnyRevision = -1

var (
	// ErrStale is matched by the error of a write that named a revision other than the
	// object's current one (0 names an object that does not exist, or was deleted).
	ErrStale = errors.New("the object changed since that revision")
	// ErrNotFound is matched when there is no such object (or it was deleted).
	ErrNotFound = errors.New("no such object")
)

// Store keeps the objects. The SQLite and PostgreSQL stores implement it (store/storetest
// checks both).
type Store interface {
	// Objects returns the live (not deleted) objects of a kind, by id, after the id after
	// ("": from the first), at most limit of them (0: all). A tenant other than "" returns
	// only that tenant's.
	Objects(ctx context.Context, kind Kind, tenant, after string, limit int) ([]*Object, error)
	// AllObjects returns every live object of every kind, by kind and id, and the store's
	// change count as they were read (see WatchObjects).
	AllObjects(ctx context.Context) ([]*Object, int64, error)
	// Object returns one live object; ErrNotFound if there is none.
	Object(ctx context.Context, kind Kind, id string) (*Object, error)
	// PutObject writes o (its Kind, ID, Tenant, Data, By and Updated) if the object's current
	// revision is ifRevision (0: it does not exist or was deleted; AnyRevision: whatever it
	// is), and returns what was stored, with its new revision. Another revision is ErrStale.
	// An object may not move to another tenant: that too is ErrStale.
	PutObject(ctx context.Context, o *Object, ifRevision int64) (*Object, error)
	// DeleteObject deletes an object if its revision is ifRevision (AnyRevision: whatever it
	// is), recording by and at; ErrNotFound if there is none, ErrStale for another revision.
	DeleteObject(ctx context.Context, kind Kind, id string, ifRevision int64, by string, at time.Time) error
	// WatchObjects returns a channel closed when any object may have changed: at once after
	// a write of this process, and within the store's poll interval (or notification) for one
	// of another process or instance. Each call returns a new channel; the caller reads
	// AllObjects again, then watches again. It ends (closes) with ctx.
	WatchObjects(ctx context.Context) (<-chan struct{}, error)
}
