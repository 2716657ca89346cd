// Package sandbox runs a command confined by Linux itself: a file system of its own (an empty
// root holding only its workspace, read-write, the system's programs and libraries, the
// directories of its PATH and further read-only paths, a private /tmp, /run and /dev/shm, a
// minimal /dev and its own /proc; configured hidden paths covered, and nothing else of the
// host, so no socket of it either), Landlock rules over that, no_new_privs, no capabilities
// and a seccomp filter against the kernel interfaces a command has no business with
// (TIOCSTI among them); a session of its own without a controlling terminal; no descriptor
// of the caller's but its standard streams;
// fresh network, PID, IPC, UTS and mount namespaces (and a user namespace when Warden is not root),
// whose only way out is Warden's egress proxy, reached through a port on the namespace's own
// loopback; a time limit, an output limit, a process limit (a cgroup's pids.max, where one can
// be made), and the whole process tree killed when the command ends, times out or is
// cancelled.
//
// Run does it by re-executing the current binary as a small init process inside the new
// namespaces. That process is recognised before main runs (the init function of
// sandbox/internal/initproc checks its argv[0] and an environment variable; that package
// imports little, so it comes early in the binary's package initialisation and the rest of
// the binary's never runs there), so any binary that imports sandbox can run sandboxes, test
// binaries included. It brings loopback up, builds the command's file system
// and pivots into it, listens on 127.0.0.1, starts the
// command from one of its threads that it has confined with Landlock, no_new_privs and the
// capability drop (the command inherits that thread's credentials; the init process's other
// threads stay outside its domain), and passes every connection the command makes to the
// listener back to Run, as a file descriptor over a unix socket, for Spec.Proxy to serve. When
// the command ends, the init process exits with its status, and the kernel kills everything
// else in the PID namespace. Start does the same for a command the caller talks to while it
// runs (a stdio MCP server).
//
// One init process is started ahead of the next run and waits, in its namespaces and cgroup,
// for a run to take it (Prestart makes one wait): a run then does not pay the start of a new
// Go process. It runs one command, only for a run that would start it the same way, and ends
// after 30 s without a run or with this process; a dead one is replaced by a new one.
//
// If the sandbox cannot be applied, the command does not run and Run returns an error wrapping
// ErrUnavailable, unless Spec.Unconfined says the operator turned the sandbox off; a program
// that is not there (or cannot be run there) is an ExecError with a shell's code, 127 or 126.
// See docs/sandbox.md.
package sandbox
