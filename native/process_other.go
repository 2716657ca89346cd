//go:build !linux

package native

import (
	"os/exec"
)

// wait waits for the group's first process to end and reaps it, then kills what it left in
// the group. Without Linux's waitid(WNOWAIT) the first process is reaped before the group is
// signalled: the group id stays taken while any process is left in it, so the kill reaches
// them; when none is left, a new group could in principle have taken the id in between, which
// is why Linux, Warden's platform, does it the other way round.
func (g *group) wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	g.kill()
	g.reaping()
	return err
}
