package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/sandboxtest"
)

func TestExec(t *testing.T) {
	sandboxtest.Need(t)
	ws := t.TempDir()
	out, errOut, code := run(t, "exec", "--workspace", ws, "--setenv", "GREETING=hello", "--",
		"sh", "-c", `echo "$GREETING" > f; cat f; echo x > /etc/warden-exec-test; exit 3`)
	if code != 3 || out != "hello\n" || !denied(errOut) {
		t.Errorf("status %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f")); string(b) != "hello\n" {
		t.Errorf("the workspace file holds %q", b)
	}
}

func TestExecProxyDenies(t *testing.T) {
	sandboxtest.Need(t)
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("needs curl")
	}
	out, _, code := run(t, "exec", "--workspace", t.TempDir(), "--allowlist", "example.com", "--", "curl", "-sS", "-i", "http://203.0.113.9/")
	if code != 0 || !strings.Contains(out, "403") || !strings.Contains(out, "not_allowed") {
		t.Errorf("status %d, output %q; want the proxy's 403", code, out)
	}
}

// TestExecBadInput: a command line that cannot run as written exits 2, saying why.
func TestExecBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"exec", "--workspace", t.TempDir(), "--allowlist", "10.0.0.0/8", "--", "true"},
		{"exec", "--workspace", t.TempDir(), "--mode", "closed", "--", "true"},
		{"exec", "--workspace", t.TempDir(), "--setenv", "NOEQUALS", "--", "true"},
		{"exec", "--", "true"},
		{"exec", "--workspace", t.TempDir()},
		{"exec", "--workspace", filepath.Join(t.TempDir(), "missing"), "--", "true"},
		{"exec", "--no-such-flag", "--workspace", t.TempDir(), "--", "true"},
	} {
		if _, errOut, code := run(t, args...); code != 2 || errOut == "" {
			t.Errorf("%q: status %d, stderr %q; want 2 and why", args, code, errOut)
		}
	}
}

// TestExecCodes: 127 for a program that is not in the sandbox, 126 for one that cannot be run
// there, each naming it; a relative workspace is taken from the current directory.
func TestExecCodes(t *testing.T) {
	sandboxtest.Need(t)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "script"), "#!/bin/sh\necho ran\n")
	outside := filepath.Join(t.TempDir(), "prog")
	writeFile(t, outside, "#!/bin/sh\necho ran\n")
	if err := os.Chmod(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"no-such-program-here"}, 127, "no-such-program-here"},
		{[]string{outside}, 127, outside},
		{[]string{filepath.Join(ws, "script")}, 126, "script"},
		{[]string{"/etc/shadow"}, 126, "/etc/shadow"},
	}
	for _, tt := range tests {
		_, errOut, code := run(t, append([]string{"exec", "--workspace", ws, "--"}, tt.args...)...)
		if code != tt.code || !strings.Contains(errOut, tt.says) {
			t.Errorf("%q: status %d, stderr %q; want %d naming %s", tt.args, code, errOut, tt.code, tt.says)
		}
	}
	t.Chdir(ws)
	if out, errOut, code := run(t, "exec", "--workspace", ".", "--", "sh", "-c", "pwd"); code != 0 || out != ws+"\n" {
		t.Errorf("a relative workspace: status %d, %q %q", code, out, errOut)
	}
}

func TestExecProcessLimit(t *testing.T) {
	if sandboxtest.Need(t).ProcessLimit == 0 {
		t.Skip("no cgroup can hold the process limit on this host (CI, as root, has one)")
	}
	_, errOut, _ := run(t, "exec", "--workspace", t.TempDir(), "--max-procs", "16", "--timeout", "20s", "--",
		"sh", "-c", "for i in $(seq 40); do sleep 1 & done 2>/dev/null; wait")
	if !strings.Contains(errOut, "warden exec: a fork was refused at the process limit (16)") {
		t.Errorf("stderr: %q", errOut)
	}
}

// denied reports whether a command's error output says the file system refused it.
func denied(s string) bool {
	return strings.Contains(s, "ermission denied") || strings.Contains(s, "Read-only file system")
}

// TestExecBoundaries: with --boundaries, a blocked file is refused at its open however the
// command reaches it, and each refusal is named on stderr; a file that does not validate is a
// usage error, and so is --no-sandbox with it.
func TestExecBoundaries(t *testing.T) {
	sandboxtest.Need(t)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, ".env"), "TOKEN=hunter2\n")
	writeFile(t, filepath.Join(ws, "notes"), "plain\n")
	rules := filepath.Join(t.TempDir(), "b.json")
	writeFile(t, rules, `{"version":1,"hardBlocks":[{"id":"no-env","enabled":true,"type":"path",
	  "pattern":"**/.env","match":"glob","operations":["read"],"reason":"secrets stay put"}]}`)
	out, errOut, code := run(t, "exec", "--workspace", ws, "--boundaries", rules, "--",
		"bash", "-c", `f=.e; cat notes "${f}nv"; x=$(<.env); echo "[$x]"`)
	if strings.Contains(out, "hunter2") || !strings.Contains(out, "plain") || code != 0 {
		t.Errorf("status %d, stdout %q", code, out)
	}
	if !strings.Contains(errOut, "read "+ws+"/.env refused by hard block no-env") || !strings.Contains(errOut, "secrets stay put") {
		t.Errorf("stderr does not name the refusal: %q", errOut)
	}
	writeFile(t, rules, `{"version":1,"hardBlocks":[{"id":"x","enabled":true,"type":"path","pattern":"*.env","match":"glob","operations":["read"]}]}`)
	for _, args := range [][]string{
		{"exec", "--workspace", ws, "--boundaries", rules, "--", "true"},
		{"exec", "--workspace", ws, "--boundaries", filepath.Join(ws, "missing.json"), "--", "true"},
		{"exec", "--workspace", ws, "--boundaries", rules, "--no-sandbox", "--", "true"},
	} {
		if _, errOut, code := run(t, args...); code != 2 || !strings.Contains(errOut, "--boundaries") {
			t.Errorf("%q: status %d, stderr %q; want 2 and why", args, code, errOut)
		}
	}
}
