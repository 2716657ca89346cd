package sandbox_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The init process's entry runs before the binary's heavy package inits: this test binary
// imports the policy and review stack (cel-go, protocol buffers, x/text, the shell parser),
// and the init function of sandbox/internal/initproc must come before their package inits,
// so that an init process never runs them. Measured by what the inits before it allocate,
// from the runtime's own trace (deterministic for a binary, unlike their time): some 35 KB
// now, 1 MB when the entry was package sandbox's own init.
func TestInitProcessRunsEarly(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	const entry = "github.com/wardenhq/warden/sandbox/internal/initproc"
	const budget = 256 << 10
	// Lines read "init PACKAGE @T ms, C ms clock, B bytes, A allocs".
	total, found := 0, false
	var biggest string
	most := -1
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		if f[1] == entry {
			found = true
			break
		}
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("unexpected trace line %q", line)
		}
		total += n
		if n > most {
			most, biggest = n, f[1]
		}
	}
	if !found {
		t.Fatalf("no init of %s in the trace:\n%s", entry, out)
	}
	if total > budget {
		t.Errorf("the package inits before the init process's entry allocate %d bytes (budget %d; the most: %s, %d): an init process runs them; keep initproc's imports few", total, budget, biggest, most)
	}
}
