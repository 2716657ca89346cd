//go:build linux

package sandbox

import (
	"context"
	"time"
)

// RunCold runs spec as Run does, but always with a new init process, leaving the pool alone.
func RunCold(ctx context.Context, spec Spec) (Result, error) {
	spec.cold = true
	return run(ctx, spec)
}

// WarmPid makes sure an init process waits in the pool and returns its pid (0 if none could
// be started).
func WarmPid() int {
	key, err := currentKey()
	if err != nil {
		return 0
	}
	w, err := pool.ready(key)
	if err != nil {
		return 0
	}
	return w.cmd.Process.Pid
}

// SetWarmIdle sets the idle timeout of the pool, the running one included, until the
// returned function is called.
func SetWarmIdle(d time.Duration) (restore func()) {
	pool.mu.Lock()
	old := warmIdle
	warmIdle = d
	if pool.timer != nil {
		pool.timer.Reset(d)
	}
	pool.mu.Unlock()
	return func() {
		pool.mu.Lock()
		warmIdle = old
		pool.mu.Unlock()
	}
}

// DrainWarm ends every waiting init process now, and waits for them and for the starts under
// way to end.
func DrainWarm() {
	pool.mu.Lock()
	for pool.starting > 0 {
		pool.cond.Wait()
	}
	idle := pool.waiting
	pool.waiting = nil
	pool.gen++
	pool.mu.Unlock()
	for _, w := range idle {
		w.discard()
	}
	SettleWarm()
}

// TakeWarmOtherUser takes from the pool as a run under another user would: it reports
// whether that run was given the waiting process, which the pool should have ended instead.
func TakeWarmOtherUser() (given bool) {
	key, err := currentKey()
	if err != nil {
		return false
	}
	key.uid++
	w, _ := pool.take(key)
	if w != nil {
		w.discard()
		return true
	}
	return false
}

// SettleWarm waits for the pool's starts under way and for the processes it is ending.
func SettleWarm() {
	pool.mu.Lock()
	for pool.starting > 0 || pool.ending > 0 {
		pool.cond.Wait()
	}
	pool.mu.Unlock()
}
