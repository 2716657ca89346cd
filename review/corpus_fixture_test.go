package review_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// corpusWorkspace builds the workspace the corpus commands run in, and a fake home directory
// beside it: dir/ws and dir/home. It returns dir/ws. The workspace holds ordinary sources and
// the secrets the example hard blocks guard (.env, config/.env.local, keys/id.pem), and is a
// git repository, so .git/hooks and .git/config exist.
func corpusWorkspace(t testing.TB) (dir string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	files := map[string]string{
		ws + "/main.go":            "package main\n\nfunc main() {}\n",
		ws + "/README.md":          "# corpus\n",
		ws + "/go.mod":             "module example.com/corpus\n\ngo 1.22\n",
		ws + "/sub/a.txt":          "a\n",
		ws + "/sub/b.go":           "package sub\n",
		ws + "/docs/x.md":          "# x\n",
		ws + "/.env":               "SECRET=1\n",
		ws + "/config/.env.local":  "SECRET=2\n",
		ws + "/keys/id.pem":        "-----BEGIN PRIVATE KEY-----\n",
		home + "/.ssh/id_ed25519":  "-----BEGIN OPENSSH PRIVATE KEY-----\n",
		home + "/.aws/credentials": "[default]\n",
		home + "/.bash_history":    "ls\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("git", "init", "-q", ws)
	cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	for _, p := range []string{ws + "/.git/hooks", ws + "/.git/config"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("git init made no %s: %v", p, err)
		}
	}
	return ws
}
