// Package clock is the time Warden's deadlines, expiries and daily allowances are measured
// by: the real clock in production, a fake one that tests move by hand, so that no test
// sleeps.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers. Implementations are safe for concurrent use.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed, and a function that stops it.
	After(d time.Duration) (<-chan time.Time, func())
}

// Real is the system clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// After is a time.Timer.
func (Real) After(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// Fake is a clock that moves only when told to. Its zero value starts at the zero time; use
// NewFake for a set time.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*waiter
}

type waiter struct {
	at time.Time
	c  chan time.Time
}

// NewFake returns a fake clock set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After fires when Advance moves the clock to or past now+d. A d of zero or less fires at once.
func (f *Fake) After(d time.Duration) (<-chan time.Time, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &waiter{at: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		w.c <- f.now
		return w.c, func() {}
	}
	f.waiters = append(f.waiters, w)
	return w.c, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, x := range f.waiters {
			if x == w {
				f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
				return
			}
		}
	}
}

// Advance moves the clock forward and fires every timer that is due, earliest first.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	sort.SliceStable(f.waiters, func(i, j int) bool { return f.waiters[i].at.Before(f.waiters[j].at) })
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if !w.at.After(f.now) {
			w.c <- f.now
			continue
		}
		kept = append(kept, w)
	}
	f.waiters = kept
}

// Waiters reports how many timers are pending: tests use it to know a goroutine has started
// waiting before they advance the clock.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}
