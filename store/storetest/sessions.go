package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/instance"
)

func newSession(id string, at time.Time) *instance.Session {
	return &instance.Session{ID: id, Warden: "w-" + id, Token: "tok-1", Tenant: "acme", Principal: "bot", Profile: "triage", Model: "claude-x", Harness: "loop",
		Protocol: "2025-06-18", Init: []byte(`{"clientInfo":{"name":"c","version":"1"},"protocolVersion":"2025-06-18"}`),
		Run: "run-w-" + id, Instance: "i-1", Opened: at, Seen: at}
}

// testSessionLifecycle: a session is recorded, read back whole, touched (never back in time),
// marked initialized, and ended once.
func testSessionLifecycle(t *testing.T, o Opener) {
	s := o.New(t)
	ctx := context.Background()
	if _, err := s.Session(ctx, "nope"); !errors.Is(err, instance.ErrNoSession) {
		t.Fatalf("Session of an unknown id: %v, want ErrNoSession", err)
	}
	rec := newSession("m1", t0)
	if err := s.OpenSession(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.OpenSession(ctx, rec); err == nil {
		t.Fatal("a second OpenSession of one id succeeded")
	}
	if got, err := s.SessionOfRun(ctx, rec.Run); err != nil || got.ID != "m1" {
		t.Fatalf("SessionOfRun: %v %v", got, err)
	}
	if _, err := s.SessionOfRun(ctx, ""); !errors.Is(err, instance.ErrNoSession) {
		t.Fatalf("SessionOfRun of no run: %v, want ErrNoSession", err)
	}
	got, err := s.Session(ctx, "m1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(rec, got, cmp.Comparer(jsonEqual)); d != "" {
		t.Fatalf("read back (-put +got):\n%s", d)
	}
	if live, err := s.TouchSession(ctx, "m1", t0.Add(time.Minute), true); err != nil || !live {
		t.Fatalf("TouchSession: %v %v", live, err)
	}
	if live, err := s.TouchSession(ctx, "m1", t0.Add(30*time.Second), false); err != nil || !live {
		t.Fatalf("TouchSession back in time: %v %v", live, err)
	}
	got, _ = s.Session(ctx, "m1")
	if !got.Seen.Equal(t0.Add(time.Minute)) || !got.Initialized {
		t.Fatalf("after touches: seen %v initialized %v, want %v true", got.Seen, got.Initialized, t0.Add(time.Minute))
	}
	ended, err := s.EndSession(ctx, "m1", t0.Add(2*time.Minute), "deleted")
	if err != nil || !ended {
		t.Fatalf("EndSession: %v %v", ended, err)
	}
	if ended, err := s.EndSession(ctx, "m1", t0.Add(3*time.Minute), "again"); err != nil || ended {
		t.Fatalf("a second EndSession: %v %v, want false", ended, err)
	}
	got, _ = s.Session(ctx, "m1")
	if !got.Ended.Equal(t0.Add(2*time.Minute)) || got.Why != "deleted" {
		t.Fatalf("ended %v why %q", got.Ended, got.Why)
	}
	if live, err := s.TouchSession(ctx, "m1", t0.Add(time.Hour), false); err != nil || live {
		t.Fatalf("TouchSession of an ended session: %v %v, want false", live, err)
	}
	if got, _ = s.Session(ctx, "m1"); !got.Seen.Equal(t0.Add(time.Minute)) {
		t.Fatalf("an ended session was touched: seen %v", got.Seen)
	}
}

// testSessionExpire: sessions idle past the bound, or open past the maximum, end; others stay.
func testSessionExpire(t *testing.T, o Opener) {
	s := o.New(t)
	ctx := context.Background()
	for i, seen := range []time.Duration{0, 10 * time.Minute, 40 * time.Minute} {
		r := newSession(fmt.Sprint("m", i), t0)
		r.Seen = t0.Add(seen)
		if err := s.OpenSession(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	old := newSession("old", t0.Add(-13*time.Hour))
	old.Seen = t0.Add(40 * time.Minute)
	if err := s.OpenSession(ctx, old); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(45 * time.Minute)
	got, err := s.ExpireSessions(ctx, now.Add(-30*time.Minute), now.Add(-12*time.Hour), now, "idle", 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
		if !r.Ended.Equal(now) || r.Why != "idle" {
			t.Errorf("%s returned with ended %v why %q", r.ID, r.Ended, r.Why)
		}
	}
	if d := cmp.Diff([]string{"m0", "m1", "old"}, sortedCopy(ids)); d != "" {
		t.Fatalf("expired (-want +got):\n%s", d)
	}
	if got, _ := s.Session(ctx, "m2"); !got.Ended.IsZero() {
		t.Fatal("a session seen within the bound ended")
	}
	if again, err := s.ExpireSessions(ctx, now.Add(-30*time.Minute), now.Add(-12*time.Hour), now, "idle", 100); err != nil || len(again) != 0 {
		t.Fatalf("a second expiry returned %d sessions (%v)", len(again), err)
	}
}

// testRaceSessionExpire: two instances expiring at once return each session once.
func testRaceSessionExpire(t *testing.T, o Opener) {
	a := o.New(t)
	b := a
	if o.Another != nil {
		b = o.Another(t, a)
	}
	ctx := context.Background()
	const n = 40
	for i := range n {
		if err := a.OpenSession(ctx, newSession(fmt.Sprint("m", i), t0)); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(time.Hour)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for _, st := range []Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := st.ExpireSessions(ctx, now.Add(-30*time.Minute), now.Add(-12*time.Hour), now, "idle", 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, r := range got {
					seen[r.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d sessions expired, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("session %s returned by %d expiries", id, c)
		}
	}
}

// testSessionChildren: a subagent's token is found by its hash while its parent is live, and
// not after.
func testSessionChildren(t *testing.T, o Opener) {
	s := o.New(t)
	ctx := context.Background()
	if err := s.OpenSession(ctx, newSession("p", t0)); err != nil {
		t.Fatal(err)
	}
	c := &instance.Child{Hash: "h1", Token: "sub-1", Parent: "p", Tenant: "acme", Role: "coworker", Profile: "triage",
		Name: "bot/subagent", Spawned: "triage", Root: "/ws/acme/sub", Created: t0}
	if err := s.PutChild(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := s.Child(ctx, "h1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c, got); d != "" {
		t.Fatalf("read back (-put +got):\n%s", d)
	}
	if _, err := s.Child(ctx, "h2"); !errors.Is(err, instance.ErrNoSession) {
		t.Fatalf("an unknown hash: %v", err)
	}
	if _, err := s.EndSession(ctx, "p", t0.Add(time.Minute), "deleted"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Child(ctx, "h1"); !errors.Is(err, instance.ErrNoSession) {
		t.Fatalf("the token of an ended session's subagent: %v, want ErrNoSession", err)
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
