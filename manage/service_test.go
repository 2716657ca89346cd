package manage_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/manage"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/store/sqlite"
)

// scout is the Scout example: tenants acme and acme-eu, profiles, billing connectors.
func scout(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("../examples/scout/warden.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

type fixture struct {
	db      *sqlite.DB
	svc     *manage.Service
	applied chan *policy.Policy
}

func open(t *testing.T, path string, data []byte) *fixture {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.OpenWith(ctx, path, sqlite.Options{PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{db: db, applied: make(chan *policy.Policy, 100)}
	f.svc, err = manage.New(ctx, manage.Options{Store: db, Log: db, Name: "warden.yaml", Data: data,
		Apply: func(p *policy.Policy) { f.applied <- p }})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func newFixture(t *testing.T) *fixture {
	return open(t, filepath.Join(t.TempDir(), "w.db"), scout(t))
}

const (
	globex    = `{"name":"Globex","account":"globex"}`
	crawler   = `{"name":"Crawler","role":"specialist","tools":["Read","WebFetch"],"grant":{"connectors":["firecrawl"],"allowance":{"firecrawl":{"perRun":5,"perDay":20}}}}`
	firecrawl = `{"connector":"firecrawl","name":"Globex Firecrawl","secret":"env:WARDEN_SECRET_GLOBEX__FIRECRAWL"}`
)

func (f *fixture) put(t *testing.T, kind manage.Kind, tenant, id, data string) *manage.Item {
	t.Helper()
	it, err := f.svc.Put(context.Background(), kind, tenant, id, []byte(data), 0, "alice")
	if err != nil {
		t.Fatalf("put %s %s: %v", kind, id, err)
	}
	return it
}

func TestPutIsInForce(t *testing.T) {
	f := newFixture(t)
	f.put(t, manage.KindTenant, "globex", "globex", globex)
	f.put(t, manage.KindConnection, "globex", "globex-firecrawl", firecrawl)
	it := f.put(t, manage.KindProfile, "globex", "crawler", crawler)
	if it.Revision != 1 || it.Source != manage.SourceStore || it.By != "alice" || it.Updated == nil {
		t.Errorf("item %+v: want revision 1 from the store, by alice", it)
	}
	p := f.svc.Policy()
	g, ok := p.Tenant("globex")
	if !ok || len(g.Coworkers) != 1 || g.Coworkers[0].ID != "crawler" || len(g.Connections) != 1 {
		t.Fatalf("the policy in force does not hold the stored objects: %+v", g)
	}
	if len(f.applied) != 3 {
		t.Errorf("Apply was called %d times for 3 changes", len(f.applied))
	}
	var last *policy.Policy
	for len(f.applied) > 0 {
		last = <-f.applied
	}
	if last != p {
		t.Error("the last policy applied is not the one in force")
	}
	// The changes are in the audit trail, with who made them.
	events, err := f.db.Query(context.Background(), audit.Filter{Kind: audit.KindChange})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, e.Tool+" "+e.Outcome+" "+e.Principal+" "+e.Tenant)
	}
	want := []string{"tenant/globex put alice globex", "connection/globex-firecrawl put alice globex", "profile/crawler put alice globex"}
	if !slices.Equal(got, want) {
		t.Errorf("audit %q, want %q", got, want)
	}
}

func TestInvalidChangeIsRefusedWhole(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.Put(context.Background(), manage.KindProfile, "acme", "bad", []byte(
		`{"tools":["Read","mcp__nope__x"],"grant":{"connectors":["nope"]}}`), 0, "alice")
	var inv manage.Invalid
	if !errors.As(err, &inv) {
		t.Fatalf("err %v: want Invalid", err)
	}
	var fields []string
	for _, p := range inv {
		fields = append(fields, p.Field)
	}
	for _, want := range []string{"/tools/1", "/grant/connectors/0"} {
		if !slices.Contains(fields, want) {
			t.Errorf("problems %+v: none at %s", inv, want)
		}
	}
	items, _, err := f.svc.List(context.Background(), manage.KindProfile, "acme", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Source == manage.SourceStore {
			t.Errorf("an invalid profile was stored: %+v", it)
		}
	}
	for _, body := range []string{`not json`, `[1,2]`, `{"a":1} {"b":2}`} {
		if _, err := f.svc.Put(context.Background(), manage.KindProfile, "acme", "x", []byte(body), 0, "a"); !errors.As(err, &inv) {
			t.Errorf("%s: err %v, want Invalid", body, err)
		}
	}
}

func TestWriteConflicts(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.svc.Put(ctx, manage.KindProfile, "acme", "researcher", []byte(`{"tools":["Read"]}`), 0, "a"); !errors.Is(err, manage.ErrDeclared) {
		t.Errorf("a profile of the file: err %v, want ErrDeclared", err)
	}
	if err := f.svc.Delete(ctx, manage.KindTenant, "acme", manage.AnyRevision, "a"); !errors.Is(err, manage.ErrDeclared) {
		t.Errorf("deleting a tenant of the file: err %v, want ErrDeclared", err)
	}
	f.put(t, manage.KindTenant, "globex", "globex", globex)
	it := f.put(t, manage.KindProfile, "globex", "crawler", `{"role":"coworker","tools":["Read"]}`)
	if _, err := f.svc.Put(ctx, manage.KindProfile, "globex", "crawler", []byte(`{"role":"coworker","tools":["Read"]}`), 0, "a"); !errors.Is(err, manage.ErrExists) {
		t.Errorf("create again: err %v, want ErrExists", err)
	}
	if _, err := f.svc.Put(ctx, manage.KindProfile, "acme", "crawler", []byte(`{"role":"coworker","tools":["Read"]}`), 0, "a"); !errors.Is(err, manage.ErrExists) {
		t.Errorf("create in another tenant: err %v, want ErrExists", err)
	}
	if _, err := f.svc.Put(ctx, manage.KindProfile, "acme", "crawler", []byte(`{"role":"coworker","tools":["Read"]}`), it.Revision, "a"); !errors.Is(err, manage.ErrNotFound) {
		t.Errorf("update from another tenant: err %v, want ErrNotFound", err)
	}
	next, err := f.svc.Put(ctx, manage.KindProfile, "globex", "crawler", []byte(`{"role":"coworker","tools":["Read","Glob"]}`), it.Revision, "a")
	if err != nil || next.Revision != it.Revision+1 {
		t.Fatalf("update: %+v, %v", next, err)
	}
	if _, err := f.svc.Put(ctx, manage.KindProfile, "globex", "crawler", []byte(`{"role":"coworker","tools":["Read"]}`), it.Revision, "a"); !errors.Is(err, manage.ErrStale) {
		t.Errorf("stale update: err %v, want ErrStale", err)
	}
	// A tenant with a profile cannot go: the profile would name a tenant that does not exist.
	err = f.svc.Delete(ctx, manage.KindTenant, "globex", manage.AnyRevision, "a")
	var inv manage.Invalid
	if !errors.As(err, &inv) || !strings.Contains(inv.Error(), "profile crawler") {
		t.Fatalf("deleting a tenant with a profile: %v; want Invalid naming the profile", err)
	}
	if err := f.svc.Delete(ctx, manage.KindProfile, "crawler", it.Revision, "a"); !errors.Is(err, manage.ErrStale) {
		t.Errorf("stale delete: err %v, want ErrStale", err)
	}
	if err := f.svc.Delete(ctx, manage.KindProfile, "crawler", next.Revision, "a"); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Delete(ctx, manage.KindTenant, "globex", manage.AnyRevision, "a"); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.svc.Policy().Tenant("globex"); ok {
		t.Error("a deleted tenant is still in force")
	}
	// Created again, its revision goes on from the deleted one's: an old ETag cannot match.
	again := f.put(t, manage.KindTenant, "globex", "globex", globex)
	if again.Revision <= 1 {
		t.Errorf("re-created at revision %d: revisions must not repeat", again.Revision)
	}
}

// TestFileChangeLeavesStaleObjectsOut: a new policy file that a stored object no longer
// compiles with leaves that object out (shown with its problem); the rest stays in force.
func TestFileChangeLeavesStaleObjectsOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	f := open(t, path, scout(t))
	f.put(t, manage.KindTenant, "globex", "globex", globex)
	f.put(t, manage.KindConnection, "globex", "globex-firecrawl", firecrawl)
	f.put(t, manage.KindProfile, "globex", "crawler", crawler)
	// The new file has no firecrawl connector.
	changed := strings.Replace(string(scout(t)), "- id: firecrawl\n", "- id: firecrawl2\n", 1)
	if changed == string(scout(t)) {
		t.Fatal("the example changed: firecrawl is not declared as expected")
	}
	err := f.svc.SetFile(context.Background(), "warden.yaml", []byte(changed))
	if err != nil {
		// The file itself may not compile without firecrawl (its own profiles grant it).
		t.Skipf("the changed file does not compile on its own: %v", err)
	}
	g, _ := f.svc.Policy().Tenant("globex")
	if g == nil || len(g.Connections) != 0 || len(g.Coworkers) != 0 {
		t.Errorf("the stale objects are in force: %+v", g)
	}
	it, err := f.svc.Get(context.Background(), manage.KindProfile, "crawler")
	if err != nil || it.Problem == "" {
		t.Errorf("the left-out profile: %+v, %v; want its problem shown", it, err)
	}
}

func TestListPages(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i := range 25 {
		id := "p" + string(rune('a'+i))
		f.put(t, manage.KindProfile, "acme", id, `{"role":"coworker","tools":["Read"]}`)
	}
	var all []string
	after := ""
	for range 10 {
		items, next, err := f.svc.List(ctx, manage.KindProfile, "acme", after, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			all = append(all, it.ID)
		}
		if next == "" {
			break
		}
		after = next
	}
	if !slices.IsSorted(all) || len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Errorf("pages %q: want ids in order, each once", all)
	}
	// The file's coworkers of acme (3) and the 25 stored ones.
	if len(all) != 28 {
		t.Errorf("%d items over the pages, want 28: %q", len(all), all)
	}
}

// TestWatchAppliesAnotherHandlesChange: a change written through one service (one instance)
// is put in force by another on the same database.
func TestWatchAppliesAnotherHandlesChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	a := open(t, path, scout(t))
	b := open(t, path, scout(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.svc.Watch(ctx)
	}()
	defer func() { cancel(); <-done }()
	a.put(t, manage.KindTenant, "globex", "globex", globex)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case p := <-b.applied:
			if _, ok := p.Tenant("globex"); ok {
				if _, ok := b.svc.Policy().Tenant("globex"); !ok {
					t.Fatal("applied but not in force")
				}
				return
			}
		case <-deadline:
			t.Fatal("the other instance never applied the change")
		}
	}
}
