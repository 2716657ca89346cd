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
	if code != 3 || out != "hello\n" || !strings.Contains(errOut, "ermission denied") {
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

func TestExecBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"exec", "--workspace", t.TempDir(), "--allowlist", "10.0.0.0/8", "--", "true"},
		{"exec", "--workspace", t.TempDir(), "--mode", "closed", "--", "true"},
		{"exec", "--workspace", t.TempDir(), "--setenv", "NOEQUALS", "--", "true"},
		{"exec", "--", "true"},
	} {
		if _, _, code := run(t, args...); code == 0 {
			t.Errorf("%q: status 0", args)
		}
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
