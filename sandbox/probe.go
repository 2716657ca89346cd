package sandbox

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Probe runs a trial command in the sandbox, in a workspace of its own that it removes
// after: nil means commands can run confined on this host (an error wrapping ErrUnavailable
// means they cannot), and the Result says, among the rest, the process limit they run under.
// A server calls it once at start-up, to say in its banner what commands will meet.
func Probe(ctx context.Context) (Result, error) {
	dir, err := os.MkdirTemp("", "warden-probe-")
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	defer os.RemoveAll(dir)
	res, err := Run(ctx, Spec{Workspace: dir, Command: []string{"true"}, Timeout: DefaultProbeTimeout})
	if err != nil {
		return Result{}, err
	}
	if res.ExitCode != 0 {
		return res, fmt.Errorf("sandbox: a trial command ended with status %d %s", res.ExitCode, res.Signal)
	}
	return res, nil
}

// DefaultProbeTimeout bounds Probe's trial command.
const DefaultProbeTimeout = 10 * time.Second
