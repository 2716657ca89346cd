package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/boundary"
)

const (
	docA = `{"version":1,"hardBlocks":[{"id":"keys","enabled":true,"type":"path","pattern":"/keys/**","match":"glob","operations":["read"]}]}`
	docB = `{"version":1,"hardBlocks":[]}`
)

func testBoundariesPutAndGet(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	if got, err := s.Boundaries(ctx, "t1"); err != nil || got != nil {
		t.Fatalf("Boundaries of a tenant with none = %v, %v; want nil, nil", got, err)
	}
	put := func(tenant, data string, ifRev int64, by string, when time.Time) (*boundary.Stored, error) {
		return s.PutBoundaries(ctx, &boundary.Stored{Tenant: tenant, Data: []byte(data), By: by, Updated: when}, ifRev)
	}
	first, err := put("t1", docA, 0, "alice", t0)
	if err != nil {
		t.Fatalf("first PutBoundaries with revision 0: %v", err)
	}
	want := &boundary.Stored{Tenant: "t1", Data: []byte(docA), Revision: 1, By: "alice", Updated: t0}
	if diff := cmp.Diff(want, first, cmpOpts...); diff != "" {
		t.Errorf("PutBoundaries returned (-want +got):\n%s", diff)
	}
	got, err := s.Boundaries(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("Boundaries after the first write (-want +got):\n%s", diff)
	}
	// A writer that read nothing (0) or an older revision is stale: it would overwrite a
	// change it never saw.
	for _, rev := range []int64{0, 2, 7} {
		if _, err := put("t1", docB, rev, "bob", at(time.Second)); !errors.Is(err, boundary.ErrStale) {
			t.Errorf("PutBoundaries with revision %d over revision 1 = %v, want ErrStale", rev, err)
		}
	}
	if got, _ := s.Boundaries(ctx, "t1"); got == nil || got.Revision != 1 || string(got.Data) != docA {
		t.Errorf("a stale write changed the document: %+v", got)
	}
	if second, err := put("t1", docB, 1, "bob", at(time.Second)); err != nil || second.Revision != 2 {
		t.Fatalf("PutBoundaries with the current revision = %+v, %v; want revision 2", second, err)
	}
	if third, err := put("t1", docA, boundary.AnyRevision, "carol", at(2*time.Second)); err != nil || third.Revision != 3 {
		t.Fatalf("PutBoundaries with AnyRevision = %+v, %v; want revision 3", third, err)
	}
	if _, err := put("t2", "not even JSON", boundary.AnyRevision, "", at(3*time.Second)); err != nil {
		t.Fatalf("the store keeps bytes (validation is the caller's): %v", err)
	}
	list, err := s.ListBoundaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantList := []*boundary.Stored{
		{Tenant: "t1", Data: []byte(docA), Revision: 3, By: "carol", Updated: at(2 * time.Second)},
		{Tenant: "t2", Data: []byte("not even JSON"), Revision: 1, Updated: at(3 * time.Second)},
	}
	if diff := cmp.Diff(wantList, list, cmpOpts...); diff != "" {
		t.Errorf("ListBoundaries (-want +got):\n%s", diff)
	}
}

// testBoundariesRace: writers on every instance race from the same revision; exactly one wins.
func testBoundariesRace(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	ctx := t.Context()
	const writers = 16
	errs := make(chan error, writers)
	for i := range writers {
		st := all[i%len(all)]
		go func() {
			_, err := st.PutBoundaries(ctx, &boundary.Stored{Tenant: "t1", Data: []byte(docA), Updated: t0}, 0)
			errs <- err
		}()
	}
	won := 0
	for range writers {
		switch err := <-errs; {
		case err == nil:
			won++
		case !errors.Is(err, boundary.ErrStale):
			t.Errorf("a losing writer got %v, want ErrStale", err)
		}
	}
	if won != 1 {
		t.Errorf("%d writers won from revision 0, want 1", won)
	}
	if got, err := s.Boundaries(ctx, "t1"); err != nil || got.Revision != 1 {
		t.Errorf("after the race: %+v, %v; want revision 1", got, err)
	}
}

// testBoundariesWatch: a write on any instance fires every instance's watch.
func testBoundariesWatch(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	ctx := t.Context()
	for i, writer := range all {
		var chans []<-chan struct{}
		for _, st := range all {
			ch, err := st.WatchBoundaries(ctx)
			if err != nil {
				t.Fatalf("WatchBoundaries: %v", err)
			}
			chans = append(chans, ch)
		}
		if _, err := writer.PutBoundaries(ctx, &boundary.Stored{Tenant: "t1", Data: []byte(docA), Updated: t0}, boundary.AnyRevision); err != nil {
			t.Fatal(err)
		}
		for j, ch := range chans {
			if !closedWithin(ch, waitFor) {
				t.Fatalf("a write on instance %d did not fire the watch of instance %d within %v", i, j, waitFor)
			}
		}
	}
}
