//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

func run(ctx context.Context, spec Spec) (Result, error) {
	return Result{}, fmt.Errorf("%w: %s has no Landlock", ErrUnavailable, runtime.GOOS)
}

func prestart(ctx context.Context) error {
	return fmt.Errorf("%w: %s has no Landlock", ErrUnavailable, runtime.GOOS)
}

// CloseInherited does nothing where the sandbox does not run.
func CloseInherited() {}
