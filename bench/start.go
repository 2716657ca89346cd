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
// the sandbox; sandboxErr says why the sandbox could not be measured, if it could not.
type startResult struct {
	runs       int
	plain      time.Duration
	sandboxed  time.Duration
	sandboxErr error
}

// runStart starts `true` runs times each way, alternating the two, and keeps the medians.
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
	var plain, boxed []float64
	for range runs {
		t0 := time.Now()
		if err := exec.CommandContext(ctx, "true").Run(); err != nil {
			return res, fmt.Errorf("plain start of true: %w", err)
		}
		plain = append(plain, float64(time.Since(t0)))
		if res.sandboxErr != nil {
			continue
		}
		t0 = time.Now()
		r, err := sandbox.Run(ctx, sandbox.Spec{Workspace: ws, Command: []string{"true"}})
		if err != nil || r.ExitCode != 0 {
			return res, fmt.Errorf("sandboxed start of true: status %d: %v", r.ExitCode, err)
		}
		boxed = append(boxed, float64(time.Since(t0)))
	}
	res.plain = time.Duration(median(plain))
	if res.sandboxErr == nil {
		res.sandboxed = time.Duration(median(boxed))
		logf("start of true: plain %v, sandboxed %v", res.plain, res.sandboxed)
	} else {
		logf("start of true: plain %v, sandboxed unavailable", res.plain)
	}
	return res, nil
}
