package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/manage"
)

// Objects of the management plane, as the API takes them. profileA is spaced and ordered as a
// person wrote it: the store keeps the bytes.
const (
	profileA = `{"description": "writes briefs",  "grant": {"connectors": ["gdrive"]}, "tools": ["docs.read"]}`
	profileB = `{"description":"edits","grant":{"connectors":["gdrive","slack"]}}`
)

// putObject writes a kind's object through s.
func putObject(t *testing.T, s Store, kind manage.Kind, tenant, id, data string, ifRev int64, by string, when time.Time) (*manage.Object, error) {
	t.Helper()
	return s.PutObject(t.Context(), &manage.Object{Kind: kind, ID: id, Tenant: tenant, Data: []byte(data), By: by, Updated: when}, ifRev)
}

// mustPutObject is putObject that must succeed.
func mustPutObject(t *testing.T, s Store, kind manage.Kind, tenant, id, data string, ifRev int64) *manage.Object {
	t.Helper()
	o, err := putObject(t, s, kind, tenant, id, data, ifRev, "tester", t0)
	if err != nil {
		t.Fatalf("PutObject(%s %s, revision %d): %v", kind, id, ifRev, err)
	}
	return o
}

// testObjectsPutAndGet: create, update, stale writes, AnyRevision, and the bytes kept.
func testObjectsPutAndGet(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	if got, err := s.Object(ctx, manage.KindProfile, "writer"); !errors.Is(err, manage.ErrNotFound) {
		t.Fatalf("Object of nothing = %+v, %v; want ErrNotFound", got, err)
	}
	first, err := putObject(t, s, manage.KindProfile, "t1", "writer", profileA, 0, "alice", t0)
	if err != nil {
		t.Fatalf("create with revision 0: %v", err)
	}
	want := &manage.Object{Kind: manage.KindProfile, ID: "writer", Tenant: "t1", Data: []byte(profileA), Revision: 1, By: "alice", Updated: t0}
	if diff := cmp.Diff(want, first, cmpOpts...); diff != "" {
		t.Errorf("PutObject returned (-want +got):\n%s", diff)
	}
	got, err := s.Object(ctx, manage.KindProfile, "writer")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("Object after the create (-want +got):\n%s", diff)
	}
	if string(got.Data) != profileA {
		t.Errorf("Data = %s, want the bytes written: %s", got.Data, profileA)
	}
	// The same id in another kind is another object.
	if _, err := s.Object(ctx, manage.KindConnection, "writer"); !errors.Is(err, manage.ErrNotFound) {
		t.Errorf("Object of another kind with the same id: %v, want ErrNotFound", err)
	}
	// A second create, or a writer that read an older or a later revision, is stale.
	for _, rev := range []int64{0, 2, 7} {
		if _, err := putObject(t, s, manage.KindProfile, "t1", "writer", profileB, rev, "bob", at(time.Second)); !errors.Is(err, manage.ErrStale) {
			t.Errorf("PutObject with revision %d over revision 1 = %v, want ErrStale", rev, err)
		}
	}
	if got, _ := s.Object(ctx, manage.KindProfile, "writer"); got == nil || got.Revision != 1 || string(got.Data) != profileA {
		t.Errorf("a stale write changed the object: %+v", got)
	}
	second, err := putObject(t, s, manage.KindProfile, "t1", "writer", profileB, 1, "bob", at(time.Second))
	if err != nil || second.Revision != 2 {
		t.Fatalf("PutObject with the current revision = %+v, %v; want revision 2", second, err)
	}
	third, err := putObject(t, s, manage.KindProfile, "t1", "writer", profileA, manage.AnyRevision, "carol", at(2*time.Second))
	if err != nil || third.Revision != 3 {
		t.Fatalf("PutObject with AnyRevision = %+v, %v; want revision 3", third, err)
	}
	want = &manage.Object{Kind: manage.KindProfile, ID: "writer", Tenant: "t1", Data: []byte(profileA), Revision: 3, By: "carol", Updated: at(2 * time.Second)}
	if got, err := s.Object(ctx, manage.KindProfile, "writer"); err != nil {
		t.Fatal(err)
	} else if diff := cmp.Diff(want, got, cmpOpts...); diff != "" || string(got.Data) != profileA {
		t.Errorf("Object after three writes (-want +got):\n%s\ndata %s", diff, got.Data)
	}
	// AnyRevision creates too.
	if created, err := putObject(t, s, manage.KindEgress, "t1", "t1", `{"allow":["*.example.com"]}`, manage.AnyRevision, "", t0); err != nil || created.Revision != 1 {
		t.Errorf("create with AnyRevision = %+v, %v; want revision 1", created, err)
	}
}

// testObjectsTenantMove: an object may not move to another tenant, whatever the revision.
func testObjectsTenantMove(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	mustPutObject(t, s, manage.KindConnection, "t1", "drive", `{"connector":"gdrive"}`, 0)
	for _, rev := range []int64{1, manage.AnyRevision} {
		if _, err := putObject(t, s, manage.KindConnection, "t2", "drive", `{"connector":"gdrive"}`, rev, "mallory", t0); !errors.Is(err, manage.ErrStale) {
			t.Errorf("a write moving the object to another tenant with revision %d = %v, want ErrStale", rev, err)
		}
	}
	if got, err := s.Object(ctx, manage.KindConnection, "drive"); err != nil || got.Tenant != "t1" || got.Revision != 1 {
		t.Errorf("after the refused moves: %+v, %v; want tenant t1, revision 1", got, err)
	}
	if list, err := s.Objects(ctx, manage.KindConnection, "t2", "", 0); err != nil || len(list) != 0 {
		t.Errorf("tenant t2's connections after the refused moves: %d, %v; want none", len(list), err)
	}
}

// testObjectsDelete: deletion with the right, a stale and any revision; a deleted object is
// gone from every read, and created again it goes on counting its revisions.
func testObjectsDelete(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	if err := s.DeleteObject(ctx, manage.KindProfile, "writer", manage.AnyRevision, "alice", t0); !errors.Is(err, manage.ErrNotFound) {
		t.Errorf("DeleteObject of nothing = %v, want ErrNotFound", err)
	}
	mustPutObject(t, s, manage.KindProfile, "t1", "writer", profileA, 0)
	mustPutObject(t, s, manage.KindProfile, "t1", "writer", profileB, 1)
	for _, rev := range []int64{0, 1, 3} {
		if err := s.DeleteObject(ctx, manage.KindProfile, "writer", rev, "alice", t0); !errors.Is(err, manage.ErrStale) {
			t.Errorf("DeleteObject with revision %d of revision 2 = %v, want ErrStale", rev, err)
		}
	}
	if got, err := s.Object(ctx, manage.KindProfile, "writer"); err != nil || got.Revision != 2 {
		t.Fatalf("a stale deletion changed the object: %+v, %v", got, err)
	}
	if err := s.DeleteObject(ctx, manage.KindProfile, "writer", 2, "alice", at(time.Second)); err != nil {
		t.Fatalf("DeleteObject with the current revision: %v", err)
	}
	if got, err := s.Object(ctx, manage.KindProfile, "writer"); !errors.Is(err, manage.ErrNotFound) {
		t.Errorf("Object after the deletion = %+v, %v; want ErrNotFound", got, err)
	}
	if list, err := s.Objects(ctx, manage.KindProfile, "", "", 0); err != nil || len(list) != 0 {
		t.Errorf("Objects after the deletion: %d, %v; want none", len(list), err)
	}
	if all, _, err := s.AllObjects(ctx); err != nil || len(all) != 0 {
		t.Errorf("AllObjects after the deletion: %d, %v; want none", len(all), err)
	}
	for _, rev := range []int64{manage.AnyRevision, 3} {
		if err := s.DeleteObject(ctx, manage.KindProfile, "writer", rev, "alice", t0); !errors.Is(err, manage.ErrNotFound) {
			t.Errorf("DeleteObject of a deleted object with revision %d = %v, want ErrNotFound", rev, err)
		}
	}
	// Writing over the deleted object with its last revisions is stale: that ETag was read
	// before the deletion.
	for _, rev := range []int64{2, 3} {
		if _, err := putObject(t, s, manage.KindProfile, "t1", "writer", profileA, rev, "bob", t0); !errors.Is(err, manage.ErrStale) {
			t.Errorf("PutObject over a deleted object with revision %d = %v, want ErrStale", rev, err)
		}
	}
	again, err := putObject(t, s, manage.KindProfile, "t1", "writer", profileA, 0, "bob", at(2*time.Second))
	if err != nil {
		t.Fatalf("create again after the deletion: %v", err)
	}
	if again.Revision != 4 {
		t.Errorf("created again after revisions 1, 2 and the deletion (3): revision %d, want 4 (a revision never repeats)", again.Revision)
	}
	if got, err := s.Object(ctx, manage.KindProfile, "writer"); err != nil || got.Revision != 4 || got.Deleted || string(got.Data) != profileA {
		t.Errorf("Object created again = %+v, %v; want revision 4, live, the new data", got, err)
	}
	// The suite's reading: a deleted object may be created again in another tenant (nothing
	// of it is left to move), and AnyRevision deletes whatever the revision.
	if err := s.DeleteObject(ctx, manage.KindProfile, "writer", manage.AnyRevision, "bob", t0); err != nil {
		t.Fatalf("DeleteObject with AnyRevision: %v", err)
	}
	if moved, err := putObject(t, s, manage.KindProfile, "t2", "writer", profileB, 0, "bob", t0); err != nil || moved.Revision != 6 || moved.Tenant != "t2" {
		t.Errorf("created again in another tenant = %+v, %v; want revision 6 in t2", moved, err)
	}
}

// testObjectsList: by kind and tenant, in id order, paged with after and limit.
func testObjectsList(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	// Written out of order, with ids that sort differently by byte and by a locale's rules.
	ids := map[string][]string{
		"t1": {"b-writer", "Z-editor", "a_reader", "a-reader", "c"},
		"t2": {"b", "d", "a"},
	}
	for tenant, list := range ids {
		for _, id := range list {
			mustPutObject(t, s, manage.KindProfile, tenant, id, fmt.Sprintf(`{"description":%q}`, id), 0)
		}
	}
	mustPutObject(t, s, manage.KindConnection, "t1", "drive", `{"connector":"gdrive"}`, 0)
	mustPutObject(t, s, manage.KindProfile, "t2", "gone", profileA, 0)
	if err := s.DeleteObject(ctx, manage.KindProfile, "gone", 1, "", t0); err != nil {
		t.Fatal(err)
	}
	idsOf := func(list []*manage.Object) []string {
		out := []string{}
		for _, o := range list {
			out = append(out, o.ID)
		}
		return out
	}
	tests := []struct {
		name          string
		kind          manage.Kind
		tenant, after string
		limit         int
		want          []string
	}{
		{"every tenant", manage.KindProfile, "", "", 0, []string{"Z-editor", "a", "a-reader", "a_reader", "b", "b-writer", "c", "d"}},
		{"one tenant", manage.KindProfile, "t1", "", 0, []string{"Z-editor", "a-reader", "a_reader", "b-writer", "c"}},
		{"other tenant", manage.KindProfile, "t2", "", 0, []string{"a", "b", "d"}},
		{"first page", manage.KindProfile, "", "", 3, []string{"Z-editor", "a", "a-reader"}},
		{"second page", manage.KindProfile, "", "a-reader", 3, []string{"a_reader", "b", "b-writer"}},
		{"last page", manage.KindProfile, "", "b-writer", 3, []string{"c", "d"}},
		{"after the end", manage.KindProfile, "", "d", 3, []string{}},
		{"after an id that is not there", manage.KindProfile, "t1", "a", 2, []string{"a-reader", "a_reader"}},
		{"tenant paged", manage.KindProfile, "t2", "a", 1, []string{"b"}},
		{"another kind", manage.KindConnection, "", "", 0, []string{"drive"}},
		{"a tenant with none of the kind", manage.KindConnection, "t2", "", 0, []string{}},
		{"a kind with none", manage.KindEgress, "", "", 0, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Objects(ctx, tt.kind, tt.tenant, tt.after, tt.limit)
			if err != nil {
				t.Fatalf("Objects: %v", err)
			}
			if diff := cmp.Diff(tt.want, idsOf(got)); diff != "" {
				t.Errorf("Objects(%s, %q, after %q, limit %d) ids (-want +got):\n%s", tt.kind, tt.tenant, tt.after, tt.limit, diff)
			}
			for _, o := range got {
				if o.Kind != tt.kind || (tt.tenant != "" && o.Tenant != tt.tenant) || o.Deleted {
					t.Errorf("Objects returned %+v", o)
				}
				if want := fmt.Sprintf(`{"description":%q}`, o.ID); o.Kind == manage.KindProfile && string(o.Data) != want {
					t.Errorf("%s's data = %s, want %s", o.ID, o.Data, want)
				}
			}
		})
	}
	// Walking the pages finds every object once.
	var walked []string
	after := ""
	for range 10 {
		page, err := s.Objects(ctx, manage.KindProfile, "", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		walked = append(walked, idsOf(page)...)
		after = page[len(page)-1].ID
	}
	if diff := cmp.Diff(tests[0].want, walked); diff != "" {
		t.Errorf("every page of 2 (-want +got):\n%s", diff)
	}
	all, _, err := s.AllObjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var gotAll []string
	for _, o := range all {
		gotAll = append(gotAll, string(o.Kind)+" "+o.ID)
	}
	wantAll := []string{"connection drive"}
	for _, id := range tests[0].want {
		wantAll = append(wantAll, "profile "+id)
	}
	if diff := cmp.Diff(wantAll, gotAll); diff != "" {
		t.Errorf("AllObjects, by kind and id (-want +got):\n%s", diff)
	}
}

// testObjectsChangeCount: AllObjects' count grows with every write and deletion, and not
// with a refused one.
func testObjectsChangeCount(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	count := func() int64 {
		t.Helper()
		_, n, err := s.AllObjects(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	last := count()
	grew := func(what string) {
		t.Helper()
		if n := count(); n <= last {
			t.Errorf("after %s the change count is %d, was %d: want it to grow", what, n, last)
		} else {
			last = n
		}
	}
	mustPutObject(t, s, manage.KindTenant, "t1", "t1", `{"name":"Brand one"}`, 0)
	grew("a create")
	mustPutObject(t, s, manage.KindTenant, "t1", "t1", `{"name":"Brand 1"}`, 1)
	grew("an update")
	mustPutObject(t, s, manage.KindProfile, "t1", "writer", profileA, 0)
	grew("a create of another kind")
	if err := s.DeleteObject(ctx, manage.KindProfile, "writer", 1, "", t0); err != nil {
		t.Fatal(err)
	}
	grew("a deletion")
	if _, err := putObject(t, s, manage.KindTenant, "t1", "t1", `{}`, 1, "", t0); !errors.Is(err, manage.ErrStale) {
		t.Fatalf("stale write: %v", err)
	}
	if n := count(); n != last {
		t.Errorf("a refused write changed the count from %d to %d", last, n)
	}
	mustPutObject(t, s, manage.KindProfile, "t1", "writer", profileB, 0)
	grew("a create after a deletion")
}

// testObjectsRace: writers on every instance race from the same revision, to create and to
// update; exactly one wins each race.
func testObjectsRace(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	ctx := t.Context()
	const writers = 16
	race := func(ifRev int64, del bool) {
		t.Helper()
		errs := make(chan error, writers)
		for i := range writers {
			st := all[i%len(all)]
			go func() {
				if del {
					errs <- st.DeleteObject(ctx, manage.KindProfile, "writer", ifRev, fmt.Sprint("w", i), t0)
					return
				}
				_, err := st.PutObject(ctx, &manage.Object{Kind: manage.KindProfile, ID: "writer", Tenant: "t1",
					Data: fmt.Appendf(nil, `{"description":"writer %d"}`, i), By: fmt.Sprint("w", i), Updated: t0}, ifRev)
				errs <- err
			}()
		}
		// A losing writer finds a revision it did not name; a losing deleter finds nothing.
		lost := manage.ErrStale
		if del {
			lost = manage.ErrNotFound
		}
		won := 0
		for range writers {
			switch err := <-errs; {
			case err == nil:
				won++
			case !errors.Is(err, lost):
				t.Errorf("a losing writer from revision %d got %v, want %v", ifRev, err, lost)
			}
		}
		if won != 1 {
			t.Errorf("%d writers won from revision %d, want 1", won, ifRev)
		}
	}
	race(0, false)
	race(1, false)
	if got, err := s.Object(ctx, manage.KindProfile, "writer"); err != nil || got.Revision != 2 {
		t.Fatalf("after the races to create and to update: %+v, %v; want revision 2", got, err)
	}
	race(2, true)
	race(0, false) // to create again after the deletion
	if got, err := s.Object(ctx, manage.KindProfile, "writer"); err != nil || got.Revision != 4 {
		t.Errorf("after the races to delete and to create again: %+v, %v; want revision 4", got, err)
	}
}

// testObjectsWatch: a write or a deletion on any instance fires every instance's watch.
func testObjectsWatch(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	ctx := t.Context()
	for i, writer := range all {
		for _, del := range []bool{false, true} {
			var chans []<-chan struct{}
			for _, st := range all {
				ch, err := st.WatchObjects(ctx)
				if err != nil {
					t.Fatalf("WatchObjects: %v", err)
				}
				chans = append(chans, ch)
			}
			what := "a write"
			if del {
				what = "a deletion"
				if err := writer.DeleteObject(ctx, manage.KindProfile, "writer", manage.AnyRevision, "", t0); err != nil {
					t.Fatal(err)
				}
			} else {
				mustPutObject(t, writer, manage.KindProfile, "t1", "writer", profileA, 0)
			}
			if !closed(chans[i]) {
				t.Errorf("%s on instance %d did not fire its own watch at once", what, i)
			}
			for j, ch := range chans {
				if !closedWithin(ch, waitFor) {
					t.Fatalf("%s on instance %d did not fire the watch of instance %d within %v", what, i, j, waitFor)
				}
			}
		}
	}
}

// testObjectsWatchEndsWithContext: a watch's channel closes when its context ends, and
// nothing is left running for it.
func testObjectsWatchEndsWithContext(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	// The first watch starts what the store runs for every watch (a listener, say).
	for _, st := range all {
		if _, err := st.WatchObjects(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	before := goroutines()
	for i, st := range all {
		for range 20 {
			ctx, cancel := context.WithCancel(t.Context())
			ch, err := st.WatchObjects(ctx)
			if err != nil {
				t.Fatalf("WatchObjects: %v", err)
			}
			if closed(ch) {
				t.Fatalf("instance %d: a watch fired with nothing written", i)
			}
			cancel()
			if !closedWithin(ch, waitFor) {
				t.Fatalf("instance %d: the watch did not close within %v of its context ending", i, waitFor)
			}
		}
	}
	if n, ok := goroutinesBackTo(before, waitFor); !ok {
		t.Errorf("%d goroutines run after the watches ended, %d before", n, before)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.WatchObjects(ctx); err == nil {
		t.Errorf("WatchObjects with an ended context: no error")
	}
}
