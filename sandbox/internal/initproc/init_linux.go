//go:build linux

package initproc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Config is what Run sends the init process, as JSON on its configuration pipe.
type Config struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	FS   Plan     `json:"fs"`
	// Deny is the seccomp filter against the kernel interfaces a command has no business
	// with, assembled by Run (once per process); empty where there is none for this
	// architecture.
	Deny []unix.SockFilter `json:"deny,omitempty"`
	// Enforce has the init process install Notify, the filter that passes the command's file
	// system calls to Run's supervisor, and send its listener to Run (MsgNotify). Without a
	// Notify filter, the command does not start.
	Enforce bool              `json:"enforce,omitempty"`
	Notify  []unix.SockFilter `json:"notify,omitempty"`
}

func init() {
	if len(os.Args) == 1 && os.Args[0] == Arg0 && os.Getenv(Env) == "1" && len(os.Environ()) == 1 {
		exit(initMain())
	}
}

// exit ends a sandbox stage at once. syscall.Exit, not os.Exit: os.Exit runs the runtime's
// exit hooks, and under the race detector those sleep a second before every exit.
func exit(code int) { syscall.Exit(code) }

// proxyVars are the variables the sandbox sets; any the caller passed are dropped first.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"}

// initMain runs inside the new namespaces: it sets them up, confines itself, starts the
// command, hands each proxy connection to Run, and returns when the command has ended. Its
// exit then kills whatever else is left in the PID namespace.
func initMain() int {
	// Every descriptor this process was given but its own two is closed at exec, whatever the
	// caller of Warden left open (descriptors inherited without close-on-exec would otherwise
	// pass into the command).
	closeErr := unix.CloseRange(CtlFD, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	send := func(kind byte, data []byte, rights []byte) error {
		return unix.Sendmsg(CtlFD, append([]byte{kind}, data...), rights, nil, 0)
	}
	fail := func(kind byte, format string, args ...any) int {
		send(kind, fmt.Appendf(nil, format, args...), nil)
		return 125
	}

	// Not dumpable: no process without CAP_SYS_PTRACE, the command included, may ptrace this
	// one or open its memory, not even through the thread that starts the command, which
	// shares the command's Landlock domain until it ends.
	if closeErr != nil {
		return fail(MsgUnavailable, "marking inherited descriptors close-on-exec: %v", closeErr)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(MsgUnavailable, "making the init process undumpable: %v", err)
	}
	// The network namespace is the same for every run.
	if err := loopbackUp(); err != nil {
		return fail(MsgUnavailable, "bringing up loopback in the network namespace: %v", err)
	}
	// Until a run takes this process (at once, or after it has waited in the pool), it holds
	// nothing of one: its standard streams are /dev/null, and the configuration comes after.
	if taken, err := awaitRun(send); err != nil {
		return fail(MsgError, "waiting for a run: %v", err)
	} else if !taken {
		return 0 // not needed after all (idle, or Warden ended): nothing ran
	}
	cfgFile := os.NewFile(CfgFD, "sandbox-config")
	data, err := io.ReadAll(cfgFile)
	cfgFile.Close()
	if err != nil {
		return fail(MsgError, "reading the configuration: %v", err)
	}
	var cfg Config
	if err := json.Unmarshal(data, &cfg); err != nil || len(cfg.Argv) == 0 {
		return fail(MsgError, "bad configuration (%v)", err)
	}

	rs, err := buildRoot(cfg.FS)
	if err != nil {
		return fail(MsgUnavailable, "building the sandbox's file system: %v", err)
	}
	ln, port, err := listenLoopback()
	if err != nil {
		return fail(MsgUnavailable, "listening for the proxy: %v", err)
	}

	env := make([]string, 0, len(cfg.Env)+8)
	for _, kv := range cfg.Env {
		k, _, _ := strings.Cut(kv, "=")
		if !isProxyVar(k) && k != "TMPDIR" {
			env = append(env, kv)
		}
	}
	proxy := "http://127.0.0.1:" + port
	env = append(env, "HTTP_PROXY="+proxy, "HTTPS_PROXY="+proxy, "http_proxy="+proxy, "https_proxy="+proxy, "NO_PROXY=", "no_proxy=", "TMPDIR=/tmp")

	path := cfg.Argv[0]
	if !strings.Contains(path, "/") {
		var ok bool
		if path, ok = FindProgram(path, env); !ok {
			return failExec(send, 127, "%s: command not found in the sandbox's PATH (%s)", cfg.Argv[0], EnvValue(env, "PATH"))
		}
	}
	p, kind, err := startConfined(execConfig{Path: path, Argv: cfg.Argv, Env: env, Rules: rs, Deny: cfg.Deny, Enforce: cfg.Enforce, Notify: cfg.Notify}, cfg.Dir)
	if err != nil {
		if kind == MsgExec {
			return failExec(send, ExecCode(err), "%v", err)
		}
		return fail(kind, "%v", err)
	}
	if err := send(MsgReady, []byte(port), nil); err != nil {
		p.Kill()
		return 125
	}

	go func() {
		for {
			fd, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNABORTED) {
				continue
			}
			if err != nil {
				return
			}
			send(MsgConn, nil, unix.UnixRights(fd))
			unix.Close(fd)
		}
	}()

	// As the namespace's first process, this one inherits every orphan: reap them all until
	// the command itself ends.
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fail(MsgError, "waiting for the command: %v", err)
		}
		if pid == p.Pid {
			// Everything else in the namespace ends now rather than when this process exits,
			// and this process lets go of the run's streams: MsgExit then says that nothing of
			// the run is left, and Run need not wait for the kernel to take the namespaces
			// down after this process (milliseconds: the mounts go with an RCU grace period).
			ended := byte(0)
			if killAll() {
				ended = 1
				for fd := range 3 {
					unix.Close(fd)
				}
			}
			send(MsgExit, append(binary.LittleEndian.AppendUint32(nil, uint32(ws)), ended), nil)
			return 0
		}
	}
}

// killAll kills every other process in the PID namespace, and reaps them (orphans come to
// this process): it returns true once none is left, false if one could not be signalled (then
// the end of this process kills them). Killing again until there is nothing to kill catches
// those forked meanwhile.
func killAll() bool {
	for {
		err := unix.Kill(-1, unix.SIGKILL) // all but this process, in its namespace only
		for {
			if _, werr := unix.Wait4(-1, nil, 0, nil); werr != nil && !errors.Is(werr, unix.EINTR) {
				break // ECHILD: no child left
			}
		}
		if errors.Is(err, unix.ESRCH) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// awaitRun says this process waits (MsgWaiting), then waits for Run to take it: Run sets the
// process limit of the cgroup this process is in, writes the configuration, then sends
// MsgStdio with the run's standard input, output and error, which become this process's 0, 1
// and 2, and so the command's. It returns false if Run closed the control socket instead.
func awaitRun(send func(byte, []byte, []byte) error) (bool, error) {
	send(MsgWaiting, nil, nil) // if Run is gone, the receive says so
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(CtlFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, nil
		}
		var fds []int
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if r, err := unix.ParseUnixRights(&m); err == nil {
					fds = append(fds, r...)
				}
			}
		}
		if buf[0] != MsgStdio || n != 1 || len(fds) != 3 {
			return false, fmt.Errorf("unexpected message %q with %d descriptors", buf[:n], len(fds))
		}
		for i, fd := range fds {
			if err := unix.Dup3(fd, i, 0); err != nil {
				return false, fmt.Errorf("standard stream %d: %v", i, err)
			}
		}
		for _, fd := range fds {
			unix.Close(fd)
		}
		return true, nil
	}
}

// failExec reports that the command could not be started (not found: 127; found but not
// executable or readable: 126), as a shell would, and returns the code.
func failExec(send func(byte, []byte, []byte) error, code int, format string, args ...any) int {
	send(MsgExec, append([]byte{byte(code)}, fmt.Sprintf(format, args...)...), nil)
	return code
}

// ExecCode is the exit code a shell gives a program that could not be started for err.
func ExecCode(err error) int {
	if errors.Is(err, fs.ErrNotExist) {
		return 127
	}
	return 126
}

// FindProgram looks name up in the PATH of env, as a shell would: the first executable
// regular file wins; if none is executable but one exists, that one is returned, so that the
// error names it.
func FindProgram(name string, env []string) (string, bool) {
	first := ""
	list := EnvValue(env, "PATH")
	if list == "" {
		return "", false
	}
	for _, dir := range strings.Split(list, ":") {
		if dir == "" {
			dir = "."
		}
		p := strings.TrimRight(dir, "/") + "/" + name
		if dir == "." {
			p = name // as filepath.Join has it
		}
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() {
			if first == "" && err != nil && !errors.Is(err, fs.ErrNotExist) {
				first = p
			}
			continue
		}
		if unix.Access(p, unix.X_OK) == nil {
			return p, true
		}
		if first == "" {
			first = p
		}
	}
	return first, first != ""
}

// EnvValue returns the value of key in env (the last one counts), or "".
func EnvValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, key+"="); ok {
			v = s
		}
	}
	return v
}

func isProxyVar(k string) bool {
	for _, v := range proxyVars {
		if k == v {
			return true
		}
	}
	return false
}

// listenLoopback listens on a free port of 127.0.0.1 for the command's proxy connections,
// and returns the socket and the port. A socket of its own, not the net package's: this
// package keeps its imports few (see the package comment).
func listenLoopback() (int, string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, "", err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return -1, "", err
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		unix.Close(fd)
		return -1, "", err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, "", err
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		unix.Close(fd)
		return -1, "", fmt.Errorf("unexpected socket address %T", sa)
	}
	return fd, strconv.Itoa(in4.Port), nil
}

// loopbackUp sets the namespace's loopback interface up: a fresh network namespace has it
// down, and nothing else.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// execConfig is the command the init process starts, confined.
type execConfig struct {
	Path  string
	Argv  []string
	Env   []string
	Rules rules
	// Deny is the seccomp filter installed on the command's thread (none if empty).
	Deny []unix.SockFilter
	// Enforce: the command's file system calls go to Run's supervisor (superviseCommand),
	// through the Notify filter.
	Enforce bool
	Notify  []unix.SockFilter
}

// startConfined starts the command from a thread of its own, which it confines first with
// confineThread: clone copies the calling thread's credentials, so the command is born in the
// Landlock domain, with no_new_privs and without capabilities, while the init process's other
// threads stay outside it (the command can neither signal nor ptrace the init process). The
// thread is locked to its goroutine and never unlocked, so it ends when the goroutine does,
// and the runtime starts no new thread from it. On failure it returns the message kind to
// report (MsgUnavailable when the confinement could not be applied).
func startConfined(c execConfig, dir string) (*os.Process, byte, error) {
	type started struct {
		p    *os.Process
		kind byte
		err  error
	}
	done := make(chan started, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		if err := confineThread(c.Rules, c.Deny); err != nil {
			done <- started{nil, MsgUnavailable, fmt.Errorf("confining the command (no_new_privs, Landlock, capabilities, seccomp): %v", err)}
			return
		}
		if c.Enforce {
			if err := superviseCommand(c.Notify); err != nil {
				done <- started{nil, MsgUnavailable, fmt.Errorf("hard blocks are set, and cannot be enforced at the system call: %v", err)}
				return
			}
		}
		p, err := os.StartProcess(c.Path, c.Argv, &os.ProcAttr{
			Dir:   dir,
			Env:   c.Env,
			Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		})
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = fmt.Errorf("%s: %w", c.Path, pe.Err)
			}
			done <- started{nil, MsgExec, err}
			return
		}
		done <- started{p, 0, nil}
	}()
	s := <-done
	return s.p, s.kind, s.err
}

// confineThread sets no_new_privs and applies Landlock to the calling thread: the file
// system rights of ABI 5 and the scopes of ABI 6 (signals, abstract unix sockets), with no
// best effort. A Landlock domain cannot be left or widened, and execve keeps it.
func confineThread(r rules, deny []unix.SockFilter) error {
	cfg := landlock.Config{HandledAccessFS: landlock.V7.HandledAccessFS, Scoped: landlock.V7.Scoped}
	var rs []landlock.Rule
	if len(r.RODirs) > 0 {
		rs = append(rs, landlock.RODirs(r.RODirs...))
	}
	if len(r.RWDirs) > 0 {
		rs = append(rs, landlock.RWDirs(r.RWDirs...).WithRefer())
	}
	if len(r.RWFiles) > 0 {
		rs = append(rs, landlock.RWFiles(r.RWFiles...).IgnoreIfMissing())
	}
	fd, flags, err := cfg.NewRulesetFD(rs...)
	if err != nil {
		return err
	}
	if fd < 0 {
		return errors.New("nothing to enforce: Landlock is not available")
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %v", err)
	}
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if len(deny) == 0 {
		return nil // no table of system calls for this architecture: no filter
	}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(program(deny))), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %v", err)
	}
	return nil
}

// program is filter as the kernel takes it.
func program(filter []unix.SockFilter) *unix.SockFprog {
	return &unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
}

// superviseCommand is the init process's side of the hard blocks at the system call: on the
// thread that will start the command, install the notifying filter and send its listener to
// Run, which supervises from then on.
func superviseCommand(notify []unix.SockFilter) error {
	if len(notify) == 0 {
		return errors.New("no notifying filter was given")
	}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(program(notify))))
	if errno != 0 {
		return fmt.Errorf("seccomp user notification: %v", errno)
	}
	defer unix.Close(int(fd))
	if err := unix.Sendmsg(CtlFD, []byte{MsgNotify}, unix.UnixRights(int(fd)), nil, 0); err != nil {
		return fmt.Errorf("passing the seccomp listener to the supervisor: %v", err)
	}
	return nil
}

// Secure bits (linux/securebits.h): with these set and locked, uid 0 gains no capabilities
// at execve, and nothing can turn that back.
const (
	secbitNoRoot                  = 1 << 0
	secbitNoRootLocked            = 1 << 1
	secbitNoSetuidFixup           = 1 << 2
	secbitNoSetuidFixupLocked     = 1 << 3
	secbitKeepCapsLocked          = 1 << 5
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7
)

// dropCapabilities leaves the calling thread, and so the command it becomes, with no
// capability at all, now or after execve, though it keeps uid 0 where Warden runs as root (so
// it can still write the workspace's files Warden made): the secure bits make root an
// ordinary user at execve, the bounding and ambient sets are emptied, and the thread's own
// sets cleared. Without this, a root command would keep CAP_SYS_MODULE, CAP_SYS_TIME and the
// rest, none of which Landlock governs.
func dropCapabilities() error {
	bits := secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return fmt.Errorf("secure bits: %v", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("ambient capabilities: %v", err)
	}
	for c := 0; ; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the last capability this kernel knows
		}
		if err != nil {
			return fmt.Errorf("bounding set, capability %d: %v", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capabilities: %v", err)
	}
	return nil
}
