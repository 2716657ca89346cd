package clock_test

import (
	"testing"
	"time"

	"github.com/wardenhq/warden/clock"
)

func TestFake(t *testing.T) {
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	c := clock.NewFake(start)
	soon, _ := c.After(time.Second)
	later, stopLater := c.After(time.Minute)
	never, stop := c.After(time.Hour)
	stop()
	if c.Waiters() != 2 {
		t.Fatalf("%d waiters; want 2 (one was stopped)", c.Waiters())
	}
	c.Advance(30 * time.Second)
	select {
	case at := <-soon:
		if !at.Equal(start.Add(30 * time.Second)) {
			t.Errorf("fired at %v", at)
		}
	default:
		t.Fatal("a due timer did not fire")
	}
	select {
	case <-later:
		t.Fatal("a timer fired early")
	default:
	}
	stopLater()
	c.Advance(2 * time.Hour)
	select {
	case <-later:
		t.Error("a stopped timer fired")
	case <-never:
		t.Error("a stopped timer fired")
	default:
	}
	if now, _ := c.After(0); len(now) != 1 {
		t.Error("a zero duration fires at once")
	}
	if !c.Now().Equal(start.Add(2*time.Hour + 30*time.Second)) {
		t.Errorf("Now %v", c.Now())
	}
}
