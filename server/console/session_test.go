package console

import (
	"testing"
	"time"

	"github.com/wardenhq/warden/clock"
)

// At the bound, a new session ends the one unused longest; expired ones go first.
func TestSessionsBounded(t *testing.T) {
	c := clock.NewFake(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))
	s := newSessions(c, 30*time.Minute, 12*time.Hour, 3)
	a := s.create("a", "", "t", "viewer")
	c.Advance(time.Minute)
	b := s.create("b", "", "t", "viewer")
	c.Advance(time.Minute)
	s.create("c", "", "t", "viewer")
	c.Advance(time.Minute)
	if s.get(a.id) == nil { // a is now the most recently used
		t.Fatal("session a ended early")
	}
	s.create("d", "", "t", "viewer")
	if s.len() != 3 || s.get(b.id) != nil || s.get(a.id) == nil {
		t.Errorf("after a fourth session: %d held, b live %v, a live %v; want 3, b (unused longest) ended", s.len(), s.get(b.id) != nil, s.get(a.id) != nil)
	}
	c.Advance(31 * time.Minute)
	s.create("e", "", "t", "viewer")
	if s.len() != 1 {
		t.Errorf("after 31 idle minutes and one more sign-in: %d sessions held; want 1", s.len())
	}
	if tokenEqual("", "") || tokenEqual("a", "") || !tokenEqual("x", "x") {
		t.Error("tokenEqual: an empty token matched, or an equal one did not")
	}
}
