package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPlanHomes: a home directory on PATH is not made readable (it holds far more than
// programs); one made readable on purpose, or a toolchain under one, keeps its credentials
// hidden.
func TestPlanHomes(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	for _, f := range []string{"run-me", ".local/bin/tool", ".ssh/id_ed25519", ".local/share/keyrings/login.keyring", ".npmrc"} {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws := t.TempDir()
	path := home + ":" + filepath.Join(home, ".local/bin") + ":/usr/bin"

	p, err := planFS(t.TempDir(), ws, nil, nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.Mounts, home) {
		t.Errorf("a home directory on PATH is mounted: %v", p.Mounts)
	}
	if !slices.Contains(p.Mounts, filepath.Join(home, ".local")) {
		t.Errorf("the installation of a bin directory on PATH is not mounted: %v", p.Mounts)
	}
	if !slices.Contains(p.Hide, filepath.Join(home, ".local/share/keyrings")) {
		t.Errorf("the keyrings under a mounted installation are not hidden: %v", p.Hide)
	}

	p, err = planFS(t.TempDir(), ws, []string{home}, nil, "/usr/bin")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Mounts, home) {
		t.Fatalf("a read-only path is not mounted: %v", p.Mounts)
	}
	for _, h := range []string{".ssh", ".npmrc", ".local/share/keyrings"} {
		if !slices.Contains(p.Hide, filepath.Join(home, h)) {
			t.Errorf("%s of a home made readable is not hidden: %v", h, p.Hide)
		}
	}
	if _, err := planFS(t.TempDir(), ws, []string{"/"}, nil, ""); err == nil {
		t.Error("/ was accepted as a read-only path")
	}
	if _, err := planFS(t.TempDir(), ws, []string{"/dev/null"}, nil, ""); err == nil {
		t.Error("a path in the sandbox's own /dev was accepted as a read-only path")
	}
	if _, err := planFS(t.TempDir(), "/", nil, nil, ""); err == nil {
		t.Error("/ was accepted as the workspace")
	}
}
