//go:build race

package boundary

// The race detector makes sync.Pool drop items at random, so regexp allocates its matchers
// again: allocation counts mean nothing under it.
func init() { raceEnabled = true }
