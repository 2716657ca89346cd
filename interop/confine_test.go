package interop

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestServeConfinement: what a session's Bash cannot reach through a real warden serve,
// driven by the TypeScript SDK client: a descriptor serve inherited from its supervisor
// without close-on-exec (fd 251, onto a 0600 file the sandbox may not open), a unix socket
// listening in the host's /tmp, and the caller's terminal session.
func TestServeConfinement(t *testing.T) {
	peers(t)
	for _, p := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("needs %s", p)
		}
	}
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("inherited secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := "/tmp/warden-interop-" + strconv.Itoa(os.Getpid()) + ".sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					c.Write([]byte("HTTP/1.0 200 OK\r\n\r\nhost socket reached\n"))
				}
			}()
		}
	}()
	connect := "curl -sS --noproxy '*' --unix-socket " + sock + " http://localhost/"
	if out, err := exec.Command("sh", "-c", connect).CombinedOutput(); err != nil || !strings.Contains(string(out), "host socket reached") {
		t.Fatalf("outside the sandbox the socket is not reachable: %v %s", err, out)
	}
	// A supervisor that leaves fd 251 open, as the attack found.
	s := serveUnder(t, dir, nil, []string{"bash", "-c", `exec 251<"$0"; exec "$@"`, secret})
	if !strings.Contains(s.output(), "warden: sandbox on:") {
		t.Skipf("the sandbox is not on here:\n%s", s.output())
	}
	got := tsClient(t, s.url, s.clientToken,
		step{Op: "call", Name: "Bash", Arguments: map[string]any{"command": "ls /proc/self/fd | tr '\\n' ' '; echo; cat <&251"}},
		step{Op: "call", Name: "Bash", Arguments: map[string]any{"command": connect}},
		step{Op: "call", Name: "Bash", Arguments: map[string]any{"command": "cut -d' ' -f7 /proc/self/stat"}},
	)
	if r := got[0]; strings.Contains(r.Text, "inherited secret") || strings.Contains(r.Text, " 251 ") {
		t.Errorf("a sandboxed command reached serve's inherited descriptor: %+v", r)
	}
	if r := got[1]; !r.IsError || strings.Contains(r.Text, "host socket reached") {
		t.Errorf("a sandboxed command reached a unix socket in the host's /tmp: %+v", r)
	}
	if r := got[2]; !strings.HasPrefix(r.Text, "0\n") {
		t.Errorf("a sandboxed command has a controlling terminal: %+v", r)
	}
}
