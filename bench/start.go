package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/wardenhq/warden/sandbox"
)

// startResult is the median wall time of starting `true` and waiting for it, plain and in
// the sandbox: with an init process waiting for the run (sandboxed), and right after another
// run, whose replacement init process is still starting (next); sandboxErr says why the
// sandbox could not be measured, if it could not.
type startResult struct {
	runs       int
	plain      time.Duration
	sandboxed  time.Duration
	next       time.Duration
	sandboxErr error
}

// runStart starts `true` runs times each way, in turns, and keeps the medians. Before each
// turn it waits for an init process to wait for the sandboxed run (sandbox.Prestart, not
// timed); the third start of the turn follows the second at once.
func runStart(ctx context.Context, runs int, logf func(string, ...any)) (startResult, error) {
	res := startResult{runs: runs}
	ws, err := os.MkdirTemp("", "warden-bench-ws-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(ws)
	// Whatever keeps the probe from running confined makes the sandbox unavailable here, and
	// the page says why; the sandbox's own tests are where a broken sandbox fails.
	if _, err := sandbox.Probe(ctx); err != nil {
		res.sandboxErr = err
		logf("sandbox: unavailable: %v", err)
	}
	var plain, boxed, next []float64
	for range runs {
		if res.sandboxErr == nil {
			if err := sandbox.Prestart(ctx); err != nil {
				return res, fmt.Errorf("sandbox: %w", err)
			}
		}
		t0 := time.Now()
		if err := exec.CommandContext(ctx, "true").Run(); err != nil {
			return res, fmt.Errorf("plain start of true: %w", err)
		}
		plain = append(plain, float64(time.Since(t0)))
		if res.sandboxErr != nil {
			continue
		}
		for _, to := range []*[]float64{&boxed, &next} {
			t0 = time.Now()
			r, err := sandbox.Run(ctx, sandbox.Spec{Workspace: ws, Command: []string{"true"}})
			if err != nil || r.ExitCode != 0 {
				return res, fmt.Errorf("sandboxed start of true: status %d: %v", r.ExitCode, err)
			}
			*to = append(*to, float64(time.Since(t0)))
		}
	}
	res.plain = time.Duration(median(plain))
	if res.sandboxErr == nil {
		res.sandboxed, res.next = time.Duration(median(boxed)), time.Duration(median(next))
		logf("start of true: plain %v, sandboxed %v, right after another %v", res.plain, res.sandboxed, res.next)
	} else {
		logf("start of true: plain %v, sandboxed unavailable", res.plain)
	}
	return res, nil
}
