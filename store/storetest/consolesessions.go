package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/server/console/consolesession"
)

// consoleBounds are the console's default bounds at t0 plus d.
func consoleBounds(d time.Duration, max int) consolesession.Bounds {
	return consolesession.Bounds{Now: at(d), Idle: 30 * time.Minute, MaxAge: 12 * time.Hour, Max: max}
}

// consoleToken stores a good approver token for console sessions and returns its id.
func consoleToken(t *testing.T, s Store, id string) string {
	t.Helper()
	if err := s.CreateToken(t.Context(), &auth.Token{ID: id, Hash: auth.Hash("wdn_" + id), Role: auth.RoleApprover,
		Tenant: "t1", Name: id, Created: t0}); err != nil {
		t.Fatalf("CreateToken(%s): %v", id, err)
	}
	return id
}

// newConsoleSession stores a session of the token signed in at t0 plus d, within b.
func newConsoleSession(t *testing.T, s Store, name, token string, d time.Duration, b consolesession.Bounds) *consolesession.Record {
	t.Helper()
	r := &consolesession.Record{IDHash: consolesession.HashID("id-" + name), TokenID: token, CSRF: "csrf-" + name,
		Name: name, Tenant: "t1", Role: auth.RoleApprover, Created: at(d), Seen: at(d)}
	if err := s.CreateConsoleSession(t.Context(), r, b); err != nil {
		t.Fatalf("CreateConsoleSession(%s): %v", name, err)
	}
	return r
}

// testConsoleSessions: a session round-trips, use marks it seen (never back), and it stops being
// live on every instance when it idles, ages, is ended, or its token is revoked or expires.
func testConsoleSessions(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	other := all[len(all)-1]
	ctx := t.Context()
	tok := consoleToken(t, s, "tok-console")
	want := newConsoleSession(t, s, "alice", tok, 0, consoleBounds(0, 10))

	for i, st := range all {
		got, err := st.ConsoleSession(ctx, want.IDHash, consoleBounds(time.Minute, 10))
		if err != nil {
			t.Fatalf("ConsoleSession on instance %d: %v", i, err)
		}
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Errorf("ConsoleSession on instance %d (-want +got):\n%s", i, diff)
		}
	}
	// Used on one instance at 29 minutes, it is live on the other at 58 (29 after the use).
	got, err := s.UseConsoleSession(ctx, want.IDHash, consoleBounds(29*time.Minute, 10))
	if err != nil || !got.Seen.Equal(at(29*time.Minute)) {
		t.Fatalf("UseConsoleSession at 29 min = %+v, %v; want it seen at 29 min", got, err)
	}
	if _, err := other.ConsoleSession(ctx, want.IDHash, consoleBounds(58*time.Minute, 10)); err != nil {
		t.Errorf("ConsoleSession 29 min after a use = %v; want it live", err)
	}
	// The suite's reading: a use by a clock a little behind leaves Seen where it is.
	if got, err := other.UseConsoleSession(ctx, want.IDHash, consoleBounds(28*time.Minute, 10)); err != nil || !got.Seen.Equal(at(29*time.Minute)) {
		t.Errorf("UseConsoleSession by a clock behind = %+v, %v; want Seen kept at 29 min", got, err)
	}
	// Looking is not using: 30 minutes after the last use, it has ended.
	if _, err := s.ConsoleSession(ctx, want.IDHash, consoleBounds(59*time.Minute, 10)); !errors.Is(err, consolesession.ErrNotFound) {
		t.Errorf("ConsoleSession 30 min after the last use = %v; want ErrNotFound", err)
	}
	if _, err := s.UseConsoleSession(ctx, want.IDHash, consoleBounds(59*time.Minute, 10)); !errors.Is(err, consolesession.ErrNotFound) {
		t.Errorf("UseConsoleSession 30 min after the last use = %v; want ErrNotFound", err)
	}

	// Used every 20 minutes, a session still ends 12 hours after sign-in.
	b := newConsoleSession(t, s, "bob", tok, time.Hour, consoleBounds(time.Hour, 10))
	for d := time.Hour + 20*time.Minute; d < 13*time.Hour; d += 20 * time.Minute {
		if _, err := all[int(d/time.Minute)%len(all)].UseConsoleSession(ctx, b.IDHash, consoleBounds(d, 10)); err != nil {
			t.Fatalf("UseConsoleSession %v after sign-in: %v", d-time.Hour, err)
		}
	}
	if _, err := s.UseConsoleSession(ctx, b.IDHash, consoleBounds(13*time.Hour, 10)); !errors.Is(err, consolesession.ErrNotFound) {
		t.Errorf("UseConsoleSession 12 h after sign-in = %v; want ErrNotFound", err)
	}

	// Ended on one instance, it is ended on every one; ending it again, or an unknown one, is
	// no error.
	c := newConsoleSession(t, s, "carol", tok, 14*time.Hour, consoleBounds(14*time.Hour, 10))
	if err := other.EndConsoleSession(ctx, c.IDHash, at(14*time.Hour+time.Minute)); err != nil {
		t.Fatalf("EndConsoleSession: %v", err)
	}
	for i, st := range all {
		if _, err := st.UseConsoleSession(ctx, c.IDHash, consoleBounds(14*time.Hour+2*time.Minute, 10)); !errors.Is(err, consolesession.ErrNotFound) {
			t.Errorf("UseConsoleSession of an ended session on instance %d = %v; want ErrNotFound", i, err)
		}
	}
	for _, h := range []string{c.IDHash, consolesession.HashID("never")} {
		if err := s.EndConsoleSession(ctx, h, at(15*time.Hour)); err != nil {
			t.Errorf("EndConsoleSession of an ended or unknown session = %v; want nil", err)
		}
	}

	// A session whose token is revoked, or expires, is no longer live.
	d := newConsoleSession(t, s, "dave", tok, 15*time.Hour, consoleBounds(15*time.Hour, 10))
	if err := other.RevokeToken(ctx, tok, at(15*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UseConsoleSession(ctx, d.IDHash, consoleBounds(15*time.Hour+time.Minute, 10)); !errors.Is(err, consolesession.ErrNotFound) {
		t.Errorf("UseConsoleSession of a revoked token's session = %v; want ErrNotFound", err)
	}
	if err := s.CreateToken(ctx, &auth.Token{ID: "tok-brief", Hash: auth.Hash("wdn_brief"), Role: auth.RoleViewer,
		Tenant: "t1", Created: t0, Expires: at(16*time.Hour + 10*time.Minute)}); err != nil {
		t.Fatal(err)
	}
	e := newConsoleSession(t, s, "erin", "tok-brief", 16*time.Hour, consoleBounds(16*time.Hour, 10))
	if _, err := other.UseConsoleSession(ctx, e.IDHash, consoleBounds(16*time.Hour+9*time.Minute, 10)); err != nil {
		t.Errorf("UseConsoleSession before its token expires = %v", err)
	}
	if _, err := other.UseConsoleSession(ctx, e.IDHash, consoleBounds(16*time.Hour+10*time.Minute, 10)); !errors.Is(err, consolesession.ErrNotFound) {
		t.Errorf("UseConsoleSession when its token expires = %v; want ErrNotFound", err)
	}
}

// testConsoleSessionsBounded: at the bound, a new session ends the one unused longest; ones
// no longer live make room first.
func testConsoleSessionsBounded(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	ctx := t.Context()
	tok := consoleToken(t, s, "tok-console")
	live := func(d time.Duration, rs ...*consolesession.Record) []bool {
		t.Helper()
		var out []bool
		for _, r := range rs {
			_, err := s.ConsoleSession(ctx, r.IDHash, consoleBounds(d, 3))
			if err != nil && !errors.Is(err, consolesession.ErrNotFound) {
				t.Fatal(err)
			}
			out = append(out, err == nil)
		}
		return out
	}
	a := newConsoleSession(t, all[0], "a", tok, 0, consoleBounds(0, 3))
	b := newConsoleSession(t, all[len(all)-1], "b", tok, time.Minute, consoleBounds(time.Minute, 3))
	c := newConsoleSession(t, all[0], "c", tok, 2*time.Minute, consoleBounds(2*time.Minute, 3))
	if _, err := s.UseConsoleSession(ctx, a.IDHash, consoleBounds(3*time.Minute, 3)); err != nil {
		t.Fatal(err)
	}
	d := newConsoleSession(t, all[len(all)-1], "d", tok, 3*time.Minute, consoleBounds(3*time.Minute, 3))
	if got, want := live(3*time.Minute, a, b, c, d), []bool{true, false, true, true}; !cmp.Equal(got, want) {
		t.Errorf("after a fourth session, a b c d live: %v; want %v (b, unused longest, ended)", got, want)
	}
	// 31 minutes on, every one has idled out: a new one takes their room, and ends nothing live.
	e := newConsoleSession(t, s, "e", tok, 34*time.Minute, consoleBounds(34*time.Minute, 3))
	f := newConsoleSession(t, s, "f", tok, 35*time.Minute, consoleBounds(35*time.Minute, 3))
	g := newConsoleSession(t, s, "g", tok, 36*time.Minute, consoleBounds(36*time.Minute, 3))
	if got, want := live(36*time.Minute, e, f, g), []bool{true, true, true}; !cmp.Equal(got, want) {
		t.Errorf("after the others idled out, e f g live: %v; want %v", got, want)
	}
	if err := s.CreateConsoleSession(ctx, &consolesession.Record{IDHash: "x", TokenID: tok}, consoleBounds(0, 0)); err == nil {
		t.Error("CreateConsoleSession with a bound of 0 stored a session")
	}
}

// testConsoleSessionsRace: sign-ins at once on every instance never leave more than the bound
// live.
func testConsoleSessionsRace(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	tok := consoleToken(t, s, "tok-console")
	const n, max = 40, 5
	var wg sync.WaitGroup
	errs := make(chan error, n)
	recs := make([]*consolesession.Record, n)
	for i := range n {
		recs[i] = &consolesession.Record{IDHash: consolesession.HashID(fmt.Sprint("race-", i)), TokenID: tok, CSRF: "c",
			Name: "n", Tenant: "t1", Role: auth.RoleViewer, Created: at(time.Duration(i) * time.Microsecond), Seen: at(time.Duration(i) * time.Microsecond)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- all[i%len(all)].CreateConsoleSession(t.Context(), recs[i], consoleBounds(time.Minute, max))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("CreateConsoleSession: %v", err)
		}
	}
	liveCount := 0
	for _, r := range recs {
		if _, err := s.ConsoleSession(t.Context(), r.IDHash, consoleBounds(time.Minute, max)); err == nil {
			liveCount++
		} else if !errors.Is(err, consolesession.ErrNotFound) {
			t.Fatal(err)
		}
	}
	if liveCount != max {
		t.Errorf("%d sign-ins at once with a bound of %d: %d live", n, max, liveCount)
	}
}
