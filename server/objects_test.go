package server_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/manage"
)

// memObjects keeps manage's objects in memory for the server's tests, until the SQLite store
// keeps them on main.
type memObjects struct {
	mu      sync.Mutex
	objects map[string]*manage.Object // kind/id → the latest revision, deleted or not
	changes int64
}

var _ manage.Store = (*memObjects)(nil)

func (m *memObjects) live(kind manage.Kind, tenant, after string) []*manage.Object {
	var out []*manage.Object
	for _, o := range m.objects {
		if !o.Deleted && (kind == "" || o.Kind == kind) && (tenant == "" || o.Tenant == tenant) && o.ID > after {
			c := *o
			out = append(out, &c)
		}
	}
	slices.SortFunc(out, func(a, b *manage.Object) int {
		return strings.Compare(string(a.Kind)+"/"+a.ID, string(b.Kind)+"/"+b.ID)
	})
	return out
}

func (m *memObjects) Objects(_ context.Context, kind manage.Kind, tenant, after string, limit int) ([]*manage.Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.live(kind, tenant, after)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *memObjects) AllObjects(context.Context) ([]*manage.Object, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*manage.Object
	for _, k := range manage.Kinds {
		out = append(out, m.live(k, "", "")...)
	}
	return out, m.changes, nil
}

func (m *memObjects) Object(_ context.Context, kind manage.Kind, id string) (*manage.Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[string(kind)+"/"+id]
	if !ok || o.Deleted {
		return nil, manage.ErrNotFound
	}
	c := *o
	return &c, nil
}

func (m *memObjects) PutObject(_ context.Context, o *manage.Object, ifRevision int64) (*manage.Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := string(o.Kind) + "/" + o.ID
	cur, ok := m.objects[key]
	var rev int64
	live := ok && !cur.Deleted
	if ok {
		rev = cur.Revision
	}
	switch {
	case live && cur.Tenant != o.Tenant:
		return nil, manage.ErrStale
	case ifRevision == 0 && live, ifRevision > 0 && (!live || rev != ifRevision):
		return nil, manage.ErrStale
	}
	c := *o
	c.Revision, c.Deleted = rev+1, false
	if m.objects == nil {
		m.objects = map[string]*manage.Object{}
	}
	m.objects[key] = &c
	m.changes++
	out := c
	return &out, nil
}

func (m *memObjects) DeleteObject(_ context.Context, kind manage.Kind, id string, ifRevision int64, by string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.objects[string(kind)+"/"+id]
	switch {
	case !ok || cur.Deleted:
		return manage.ErrNotFound
	case ifRevision != manage.AnyRevision && cur.Revision != ifRevision:
		return manage.ErrStale
	}
	c := *cur
	c.Revision, c.Deleted, c.By, c.Updated = cur.Revision+1, true, by, at
	m.objects[string(kind)+"/"+id] = &c
	m.changes++
	return nil
}

func (m *memObjects) WatchObjects(ctx context.Context) (<-chan struct{}, error) {
	ch := make(chan struct{})
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}
