// Package initproc is the sandbox's init process: the first process of a sandbox's
// namespaces, which builds the command's file system, confines a thread of its own (Landlock,
// no_new_privs, the capability drop, the seccomp filters it is given) and starts the command
// from it, then passes the proxy's connections to Run and reports the command's end.
//
// It is a package of its own, with few imports (the standard library, golang.org/x/sys and
// go-landlock), so that its init function, which recognises a process started as the init
// process and runs it there and then, comes early in a binary's package initialisation: Go
// initialises a package once its imports are, in the order of their import paths, so the
// heavy initialisation of the rest of a binary that imports the sandbox (policy languages,
// protocol buffers, tables of languages) never runs in an init process. Package sandbox
// starts it and speaks to it with the messages and configuration below; nothing else should
// import it.
package initproc

// The init process is a binary that imports this package, started with argv[0] Arg0 (and
// nothing else) and Env=1 as its whole environment. Both are needed, so neither a stray
// environment variable nor a stray program name turns a normal run into one.
const (
	Arg0 = "warden-sandbox-init"
	Env  = "WARDEN_SANDBOX_INIT"
)

// Its file descriptors: the control socket (SOCK_SEQPACKET) and the pipe its configuration
// arrives on.
const (
	CtlFD = 3
	CfgFD = 4
)

// Messages of the init process on the control socket, by their first byte.
const (
	MsgReady       = 'R' // the command started; the rest is the proxy's port
	MsgError       = 'E' // setup failed, the command did not start; the rest says why
	MsgUnavailable = 'U' // as MsgError, because the sandbox could not be applied
	MsgConn        = 'C' // a connection to the proxy, as the attached file descriptor
	MsgExit        = 'X' // the command ended; then its wait status (4 bytes, little-endian), 1 if nothing is left
	MsgExec        = 'N' // the command could not be started: an exit code byte (126, 127), then why
	MsgWaiting     = 'W' // the init process waits for a run (its first message)
	MsgNotify      = 'L' // the seccomp listener of the notifying filter, attached, before the command starts
)

// MsgStdio is the message Run sends the init process: its standard input, output and error,
// as the three attached file descriptors. Until then it waits, holding nothing of a run.
const MsgStdio = 'S'

// Plan is the file system the init process builds for a command and then makes its root:
// an empty tmpfs holding only the mounts below, the sandbox's own /tmp, /run, /dev and /proc,
// and nothing else of the host. A path the plan does not name is not there at all, so no
// socket, device or file of the host outside it can be reached, whatever Landlock governs.
// Every path is absolute, symlink-free, and the same inside as on the host.
type Plan struct {
	// Root is the host directory the new root's tmpfs is mounted on (the run's own
	// temporary directory), and Tmp the host directory mounted on /tmp (inside Root: the
	// init process takes a copy of its mount before it covers Root).
	Root string `json:"root"`
	Tmp  string `json:"tmp"`
	// Workspace is mounted read-write; Mounts read-only (directories or files).
	Workspace string   `json:"workspace"`
	Mounts    []string `json:"mounts,omitempty"`
	// Links are symbolic links of the host recreated as they are (/bin -> usr/bin).
	Links []Link `json:"links,omitempty"`
	// Hide are paths inside the mounts covered with an empty entry that nobody may read,
	// list or write: the hidden paths.
	Hide []string `json:"hide,omitempty"`
}

// A Link is a symbolic link made in the sandbox's root: Path, pointing to Target.
type Link struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}
