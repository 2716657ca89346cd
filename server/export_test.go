package server

import "time"

// SetEventPing sets how often the event streams of servers made from now on ping and read
// the store, for a test; it returns a function that restores it.
func SetEventPing(d time.Duration) func() {
	old := eventPing
	eventPing = d
	return func() { eventPing = old }
}
