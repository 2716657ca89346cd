package native_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wardenhq/warden/native"
)

// inode returns the inode number of p.
func inode(t *testing.T, p string) uint64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// noTemporaries fails when a temporary file of an atomic write is left in dir.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	names, err := filepath.Glob(dir + "/.*.warden-*")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) > 0 {
		t.Errorf("temporary files left: %v", names)
	}
}

func TestFilesWrite(t *testing.T) {
	ws, e := workspace(t, native.Options{})
	writeFile(t, ws+"/script.sh", "old")
	if err := os.Chmod(ws+"/script.sh", 0o750); err != nil {
		t.Fatal(err)
	}
	writeFile(t, ws+"/private.txt", "old")
	if err := os.Chmod(ws+"/private.txt", 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws+"/dir", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, ws+"/file", "")
	tests := []struct {
		name     string
		path     string
		content  string
		isError  bool
		want     string
		wantMode os.FileMode // 0: a new file's
	}{
		{"a new file", "new.txt", "hello", false, "created new.txt (5 bytes)", 0},
		{"a new file in new directories", "a/b/c.txt", "deep", false, "created a/b/c.txt", 0},
		{"an executable keeps its mode", "script.sh", "#!/bin/sh\n", false, "wrote script.sh", 0o750},
		{"a private file keeps its mode", "private.txt", "new", false, "wrote private.txt", 0o600},
		{"an empty content", "empty.txt", "", false, "created empty.txt (0 bytes)", 0},
		{"a directory", "dir", "x", true, "dir is a directory", 0},
		{"below a file", "file/x.txt", "x", true, "file/x.txt", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before uint64
			if _, err := os.Stat(ws + "/" + tt.path); err == nil && !tt.isError {
				before = inode(t, ws+"/"+tt.path)
			}
			r := call(t, e, ws, "files_write", map[string]any{"path": tt.path, "content": tt.content})
			want(t, r, tt.isError, tt.want)
			if tt.isError {
				return
			}
			p := ws + "/" + tt.path
			if got := readFile(t, p); got != tt.content {
				t.Errorf("content %q, want %q", got, tt.content)
			}
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			wantMode := tt.wantMode
			if wantMode == 0 {
				wantMode = newMode(t)
			}
			if st.Mode().Perm() != wantMode {
				t.Errorf("mode %v, want %v", st.Mode().Perm(), wantMode)
			}
			if before != 0 && inode(t, p) == before {
				t.Error("the file was written in place, not replaced by a rename")
			}
			noTemporaries(t, filepath.Dir(p))
		})
	}
}

// newMode is the mode a new file made with 0o644 gets under the process's umask.
func newMode(t *testing.T) os.FileMode {
	t.Helper()
	p := t.TempDir() + "/probe"
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestFilesEdit(t *testing.T) {
	ws, e := workspace(t, native.Options{})
	tests := []struct {
		name     string
		content  string
		old, new string
		isError  bool
		want     string
		after    string
	}{
		{"once", "a\nfunc f() {}\nb\n", "func f() {}", "func g() {}", false, "replaced 1 occurrence at line 2", "a\nfunc g() {}\nb\n"},
		{"to nothing", "keep drop keep", " drop", "", false, "replaced 1 occurrence", "keep keep"},
		{"not found", "abc", "xyz", "q", true, "the old text was not found in f.txt", "abc"},
		{"twice", "x = 1\nx = 1\n", "x = 1", "x = 2", true, "the old text occurs 2 times in f.txt; it must occur exactly once", "x = 1\nx = 1\n"},
		{"overlapping", "aaa", "aa", "b", true, "occurs 2 times", "aaa"},
		{"empty old text", "abc", "", "x", true, "the old text is empty", "abc"},
		{"no change", "abc", "b", "b", true, "the same", "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ws + "/f.txt"
			writeFile(t, p, tt.content)
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
			r := call(t, e, ws, "files_edit", map[string]any{"path": "f.txt", "old": tt.old, "new": tt.new})
			want(t, r, tt.isError, tt.want)
			if got := readFile(t, p); got != tt.after {
				t.Errorf("content %q, want %q", got, tt.after)
			}
			if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o755 {
				t.Errorf("mode not kept: %v %v", st.Mode(), err)
			}
			noTemporaries(t, ws)
		})
	}
	t.Run("a missing file", func(t *testing.T) {
		want(t, call(t, e, ws, "files_edit", map[string]any{"path": "none.txt", "old": "a", "new": "b"}), true, "none.txt does not exist")
	})
}

func TestFilesDelete(t *testing.T) {
	ws, e := workspace(t, native.Options{})
	writeFile(t, ws+"/a.txt", "x")
	writeFile(t, ws+"/full/inner.txt", "x")
	if err := os.Mkdir(ws+"/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("full", ws+"/link"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		give    string
		isError bool
		want    string
		gone    string
	}{
		{give: "a.txt", want: "deleted a.txt", gone: "a.txt"},
		{give: "empty", want: "deleted the empty directory empty", gone: "empty"},
		{give: "full", isError: true, want: "full is a directory that is not empty"},
		{give: "link", isError: true, want: "full is a directory that is not empty"}, // the review resolved the link
		{give: "missing", isError: true, want: "missing does not exist"},
		{give: ".", isError: true, want: "cannot delete the workspace itself"},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			want(t, call(t, e, ws, "files_delete", map[string]any{"path": tt.give}), tt.isError, tt.want)
			if tt.gone != "" {
				if _, err := os.Lstat(ws + "/" + tt.gone); err == nil {
					t.Errorf("%s is still there", tt.gone)
				}
			}
		})
	}
	if got := readFile(t, ws+"/full/inner.txt"); !strings.Contains(got, "x") {
		t.Error("the tree was touched")
	}
}
