// Package sandboxtest holds what the tests of several packages need of the sandbox.
package sandboxtest

import (
	"context"
	"errors"
	"testing"

	"github.com/wardenhq/warden/sandbox"
)

// Need skips tb unless the sandbox can run here (it needs Landlock ABI 6 or later and
// namespaces; CI runs as root on a kernel with ABI 7), and returns the trial run's result. Any
// other failure of the trial fails tb.
func Need(tb testing.TB) sandbox.Result {
	tb.Helper()
	res, err := sandbox.Probe(context.Background())
	if errors.Is(err, sandbox.ErrUnavailable) {
		tb.Skipf("the sandbox cannot run here (needs Landlock ABI 6+ and namespaces; CI has both): %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return res
}
