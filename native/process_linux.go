package native

import (
	"os/exec"
	"syscall"
	"unsafe"
)

// pPID is waitid's P_PID: wait for the one process named.
const pPID = 1

// wait waits for the group's first process to end, kills what it left in the group while
// that process is still a zombie (so the group id cannot have been reused), then reaps it.
func (g *group) wait(cmd *exec.Cmd) error {
	var info [128]byte // siginfo_t, not read
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(g.pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			break
		}
	}
	g.kill()
	g.reaping()
	return cmd.Wait()
}
