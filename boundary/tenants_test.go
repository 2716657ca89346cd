package boundary_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
)

// memStore is boundary.Store in memory.
type memStore struct {
	mu      sync.Mutex
	docs    map[string]*boundary.Stored
	waiting []chan struct{}
}

func (m *memStore) Boundaries(_ context.Context, tenant string) (*boundary.Stored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.docs[tenant], nil
}

func (m *memStore) ListBoundaries(context.Context) ([]*boundary.Stored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*boundary.Stored
	for _, d := range m.docs {
		out = append(out, d)
	}
	return out, nil
}

func (m *memStore) PutBoundaries(_ context.Context, s *boundary.Stored, ifRevision int64) (*boundary.Stored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var cur int64
	if d := m.docs[s.Tenant]; d != nil {
		cur = d.Revision
	}
	if ifRevision != boundary.AnyRevision && ifRevision != cur {
		return nil, boundary.ErrStale
	}
	n := *s
	n.Revision = cur + 1
	if m.docs == nil {
		m.docs = map[string]*boundary.Stored{}
	}
	m.docs[s.Tenant] = &n
	for _, ch := range m.waiting {
		close(ch)
	}
	m.waiting = nil
	return &n, nil
}

func (m *memStore) WatchBoundaries(context.Context) (<-chan struct{}, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := make(chan struct{})
	m.waiting = append(m.waiting, ch)
	return ch, nil
}

func mustDoc(t *testing.T, s string) *boundary.Document {
	t.Helper()
	d, err := boundary.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const (
	envRule   = `{"version":1,"hardBlocks":[{"id":"env","enabled":true,"type":"path","pattern":"**/.env","match":"glob","operations":["read"]}]}`
	plansRule = `{"version":1,"hardBlocks":[{"id":"plans","enabled":true,"type":"path","pattern":"**/plans.txt","match":"glob","operations":["read"]}]}`
)

func blockedBy(set *boundary.Set, path string) string {
	hits := set.CheckPath(action.OpRead, path, false, nil)
	if len(hits) == 0 {
		return ""
	}
	return hits[0].Rule.ID
}

func TestMerge(t *testing.T) {
	policy := mustDoc(t, envRule)
	set := boundary.Merge(policy, []byte(plansRule), boundary.Options{})
	if got := blockedBy(set, "/w/.env"); got != "env" {
		t.Errorf("the policy's rule after merging: %q", got)
	}
	if got := blockedBy(set, "/w/plans.txt"); got != "plans" {
		t.Errorf("the stored rule after merging: %q", got)
	}
	// The same id in both sources: each still blocks (hard blocks only add up).
	same := boundary.Merge(policy, []byte(`{"version":1,"hardBlocks":[{"id":"env","enabled":true,"type":"path","pattern":"/w/other","match":"exact","operations":["read"]}]}`), boundary.Options{})
	if blockedBy(same, "/w/.env") != "env" || blockedBy(same, "/w/other") != "env" {
		t.Error("a stored rule that reuses a policy rule's id replaced it or was dropped")
	}
	// A stored copy of a policy rule is kept once: one blocker, not two.
	if hits := boundary.Merge(policy, []byte(envRule), boundary.Options{}).CheckPath(action.OpRead, "/w/.env", false, nil); len(hits) != 1 {
		t.Errorf("a stored copy of the policy's rule: %d hits, want 1", len(hits))
	}
	// A stored document cannot lift the policy's rules, even an empty one.
	if got := blockedBy(boundary.Merge(policy, []byte(`{"version":1,"hardBlocks":[]}`), boundary.Options{}), "/w/.env"); got != "env" {
		t.Errorf("an empty stored document lifted the policy's rule: %q", got)
	}
	// Stored data that does not validate blocks everything.
	bad := boundary.Merge(policy, []byte(`{"version":1,"hardBlocks":[{"id":"x"}]}`), boundary.Options{})
	if bad.Invalid() == nil || blockedBy(bad, "/anything") != boundary.ConfigInvalidID {
		t.Errorf("invalid stored data: %v, blocks %q", bad.Invalid(), blockedBy(bad, "/anything"))
	}
	// "~/" without a home fails closed too.
	home := boundary.Merge(nil, []byte(`{"version":1,"hardBlocks":[{"id":"k","enabled":true,"type":"path","pattern":"~/.ssh/**","match":"glob","operations":["read"]}]}`), boundary.Options{})
	if home.Invalid() == nil {
		t.Error(`a "~/" rule with no home compiled`)
	}
	if got := blockedBy(boundary.Merge(nil, nil, boundary.Options{}), "/w/.env"); got != "" {
		t.Errorf("no rules at all blocked %q", got)
	}
}

func TestTenants(t *testing.T) {
	st := &memStore{}
	var policyDoc = mustDoc(t, envRule)
	var mu sync.Mutex
	tn := boundary.NewTenants(boundary.TenantsOptions{Store: st, Policy: func(string) *boundary.Document {
		mu.Lock()
		defer mu.Unlock()
		return policyDoc
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := tn.Load(ctx); err != nil {
		t.Fatal(err)
	}
	first := tn.Set("acme")
	if tn.Set("acme") != first {
		t.Error("Set compiled again with nothing changed: sessions would rebind on every call")
	}
	if blockedBy(first, "/w/.env") != "env" || blockedBy(first, "/w/plans.txt") != "" {
		t.Error("before any stored document: want the policy's rule only")
	}

	// A Put of this process is in force when it returns.
	if _, err := tn.Put(ctx, "acme", []byte(plansRule), 0, "alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	second := tn.Set("acme")
	if second == first || blockedBy(second, "/w/plans.txt") != "plans" || blockedBy(second, "/w/.env") != "env" {
		t.Error("after Put: want the policy's rule and the stored one, in a new Set")
	}
	if blockedBy(tn.Set("beta"), "/w/plans.txt") != "" {
		t.Error("another tenant meets acme's stored rule")
	}
	if _, err := tn.Put(ctx, "acme", []byte(plansRule), 0, "bob", time.Now()); !errors.Is(err, boundary.ErrStale) {
		t.Errorf("a stale Put: %v", err)
	}
	var ve boundary.ValidationError
	if _, err := tn.Put(ctx, "acme", []byte(`{"version":1,"hardBlocks":[{"id":"x"}]}`), 1, "bob", time.Now()); !errors.As(err, &ve) {
		t.Errorf("an invalid Put: %v; want a ValidationError", err)
	}

	// A write made elsewhere (straight to the store) is read by Watch.
	read := make(chan struct{}, 8)
	go tn.Watch(ctx, func() {
		select {
		case read <- struct{}{}:
		default: // a read is already reported
		}
	})
	<-read // the first read, right after the watch began
	if _, err := st.PutBoundaries(ctx, &boundary.Stored{Tenant: "acme", Data: []byte(`not json`)}, boundary.AnyRevision); err != nil {
		t.Fatal(err)
	}
	for tn.Stored("acme").Revision != 2 {
		<-read
	}
	if blockedBy(tn.Set("acme"), "/w/ok.txt") != boundary.ConfigInvalidID {
		t.Error("invalid stored data written elsewhere does not block everything")
	}

	// A new policy document (a reload) compiles the tenant's rules again.
	mu.Lock()
	policyDoc = mustDoc(t, `{"version":1,"hardBlocks":[]}`)
	mu.Unlock()
	if _, err := st.PutBoundaries(ctx, &boundary.Stored{Tenant: "acme", Data: []byte(plansRule)}, boundary.AnyRevision); err != nil {
		t.Fatal(err)
	}
	for tn.Stored("acme").Revision != 3 {
		<-read
	}
	if set := tn.Set("acme"); blockedBy(set, "/w/.env") != "" || blockedBy(set, "/w/plans.txt") != "plans" {
		t.Error("after the policy changed: want its new (empty) rules and the stored one")
	}
}

// BenchmarkTenantsSet is what every served call adds to find its tenant's rules unchanged:
// a lookup, no compiling, no allocation.
func BenchmarkTenantsSet(b *testing.B) {
	st := &memStore{}
	if _, err := st.PutBoundaries(context.Background(), &boundary.Stored{Tenant: "acme", Data: []byte(plansRule)}, 0); err != nil {
		b.Fatal(err)
	}
	d, err := boundary.Parse([]byte(envRule))
	if err != nil {
		b.Fatal(err)
	}
	tn := boundary.NewTenants(boundary.TenantsOptions{Store: st, Policy: func(string) *boundary.Document { return d }})
	if err := tn.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	first := tn.Set("acme")
	b.ReportAllocs()
	for b.Loop() {
		if tn.Set("acme") != first {
			b.Fatal("the Set changed")
		}
	}
}

// listedBefore is a store whose list was read before the latest writes: what a watch's Load
// sees when it read the store just before a Put of this process committed.
type listedBefore struct {
	*memStore
	list []*boundary.Stored
}

func (l *listedBefore) ListBoundaries(context.Context) ([]*boundary.Stored, error) {
	return l.list, nil
}

// TestLoadNeverForgetsANewerPut: a Load that read the store before a Put of this process does
// not take away the document the Put kept (a review right after a PUT missed its rules).
func TestLoadNeverForgetsANewerPut(t *testing.T) {
	st := &listedBefore{memStore: &memStore{}}
	tn := boundary.NewTenants(boundary.TenantsOptions{Store: st})
	ctx := context.Background()
	if _, err := tn.Put(ctx, "acme", []byte(plansRule), 0, "alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := tn.Load(ctx); err != nil { // the list it reads holds nothing yet
		t.Fatal(err)
	}
	if blockedBy(tn.Set("acme"), "/w/plans.txt") != "plans" {
		t.Error("a Load of a list read before the Put forgot the document the Put wrote")
	}
}
