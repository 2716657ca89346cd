package native_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/wardenhq/warden/native"
)

func TestFilesRead(t *testing.T) {
	ws, e := workspace(t, native.Options{MaxRead: 16})
	writeFile(t, ws+"/short.txt", "hello\nworld\n")
	writeFile(t, ws+"/long.txt", strings.Repeat("abcdefgh", 10))
	writeFile(t, ws+"/utf8.txt", "aaaaaaaaaaaaaaaé and more") // é straddles byte 16
	writeFile(t, ws+"/bin.dat", "PK\x03\x04\x00\x00binary")
	writeFile(t, ws+"/empty.txt", "")
	if err := os.Mkdir(ws+"/dir", 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		give    string
		isError bool
		want    []string
	}{
		{give: "short.txt", want: []string{"hello\nworld\n"}},
		{give: "long.txt", want: []string{"abcdefghabcdefgh\n", "[truncated: long.txt holds 80 bytes; the first 16 are shown]"}},
		{give: "utf8.txt", want: []string{"aaaaaaaaaaaaaaa\n", "the first 15 are shown"}},
		{give: "bin.dat", want: []string{"bin.dat is a binary file of 12 bytes"}},
		{give: "empty.txt", want: []string{"empty"}},
		{give: "dir", isError: true, want: []string{"dir is a directory", "files_list"}},
		{give: "missing.txt", isError: true, want: []string{"missing.txt does not exist"}},
		{give: "nodir/missing.txt", isError: true, want: []string{"nodir/missing.txt does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			r := call(t, e, ws, "files_read", map[string]any{"path": tt.give})
			want(t, r, tt.isError, tt.want...)
			if strings.Contains(r.Text, "\x00") || strings.Contains(r.Text, "\uFFFD") {
				t.Errorf("raw or broken bytes in the text: %q", r.Text)
			}
		})
	}
}

func TestFilesList(t *testing.T) {
	ws, e := workspace(t, native.Options{})
	writeFile(t, ws+"/b.txt", "12345")
	writeFile(t, ws+"/a/inner.txt", "x")
	if err := os.Symlink("b.txt", ws+"/c"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws+"/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 1005 {
		writeFile(t, fmt.Sprintf("%s/many/f%04d", ws, i), "")
	}
	tests := []struct {
		give    string
		isError bool
		want    []string
	}{
		{give: ".", want: []string{"a/ (directory)\nb.txt (file, 5 bytes)\nc -> b.txt (symlink)\nempty/ (directory)\nmany/ (directory)\n"}},
		{give: "empty", want: []string{"(empty directory)"}},
		{give: "many", want: []string{"f0000 (file, 0 bytes)\n", "f0999", "[showing the first 1000 of 1005 entries, by name]"}},
		{give: "b.txt", isError: true, want: []string{"b.txt is not a directory", "files_read"}},
		{give: "missing", isError: true, want: []string{"missing does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			r := call(t, e, ws, "files_list", map[string]any{"path": tt.give})
			want(t, r, tt.isError, tt.want...)
			if tt.give == "many" && (strings.Contains(r.Text, "f1000") || r.Structured["truncated"] != true) {
				t.Errorf("not capped at 1000: %v", r.Structured["truncated"])
			}
		})
	}
}

func TestFilesFind(t *testing.T) {
	ws, e := workspace(t, native.Options{})
	writeFile(t, ws+"/main.go", "")
	writeFile(t, ws+"/src/a.go", "")
	writeFile(t, ws+"/src/deep/b.go", "")
	writeFile(t, ws+"/src/c.txt", "")
	for i := range 1005 {
		writeFile(t, fmt.Sprintf("%s/many/f%04d.log", ws, i), "")
	}
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"recursive", map[string]any{"pattern": "**/*.go"}, false, "main.go\nsrc/a.go\nsrc/deep/b.go\n"},
		{"under a literal directory", map[string]any{"pattern": "src/*.go"}, false, "src/a.go\n"},
		{"under a base path", map[string]any{"pattern": "*.go", "path": "src"}, false, "src/a.go\n"},
		{"an absolute pattern", map[string]any{"pattern": "/WS/src/**/*.go"}, false, "src/a.go\nsrc/deep/b.go\n"},
		{"directories end in a slash", map[string]any{"pattern": "src/*"}, false, "src/a.go\nsrc/c.txt\nsrc/deep/\n"},
		{"alternatives", map[string]any{"pattern": "src/*.{go,txt}"}, false, "src/a.go\nsrc/c.txt\n"},
		{"no match", map[string]any{"pattern": "**/*.rs"}, false, `no files match "**/*.rs"`},
		{"a bad pattern", map[string]any{"pattern": "src/[a-"}, true, "not a valid glob"},
		{"a missing directory", map[string]any{"pattern": "nowhere/*.go"}, true, "nowhere does not exist"},
		{"capped", map[string]any{"pattern": "many/*.log"}, false, "[more than 1000 matches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if p, ok := tt.args["pattern"].(string); ok {
				tt.args["pattern"] = strings.Replace(p, "/WS", ws, 1)
			}
			r := call(t, e, ws, "files_find", tt.args)
			want(t, r, tt.isError, tt.want)
			if tt.name == "capped" {
				if n := len(r.Structured["matches"].([]string)); n != 1000 {
					t.Errorf("%d matches kept, want 1000", n)
				}
			}
		})
	}
}

func TestFilesSearch(t *testing.T) {
	ws, e := workspace(t, native.Options{})
	writeFile(t, ws+"/a.go", "package a\n\nfunc Hello() {}\n// hello(\n")
	writeFile(t, ws+"/sub/b.txt", "say Hello\r\nbye")
	writeFile(t, ws+"/.git/config", "Hello in git")
	writeFile(t, ws+"/bin.dat", "Hello\x00binary")
	writeFile(t, ws+"/long.txt", "Hello "+strings.Repeat("x", 1000)+"\n")
	if err := os.Symlink("a.go", ws+"/link.go"); err != nil {
		t.Fatal(err)
	}
	var many strings.Builder
	for range 1100 {
		many.WriteString("needle\n")
	}
	writeFile(t, ws+"/many/n.txt", many.String())
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    []string
		not     []string
	}{
		{"a regular expression", map[string]any{"query": `func \w+\(`}, false, []string{"a.go:3: func Hello() {}\n"}, nil},
		{"everywhere but .git, binaries and links", map[string]any{"query": "Hello"}, false,
			[]string{"a.go:3: func Hello() {}\n", "sub/b.txt:1: say Hello\n", "long.txt:1: Hello xxx"},
			[]string{".git", "bin.dat", "link.go"}},
		{"a long line is cut", map[string]any{"query": "Hello x", "path": "long.txt"}, false, []string{"…\n"}, nil},
		{"not a regular expression: literal", map[string]any{"query": "hello("}, false,
			[]string{"a.go:4: // hello(\n", "searched for as plain text"}, nil},
		{"one file", map[string]any{"query": "Hello", "path": "sub/b.txt"}, false, []string{"sub/b.txt:1: say Hello\n"}, []string{"a.go"}},
		{"no match", map[string]any{"query": "absent"}, false, []string{`no matches for "absent" in the workspace`}, nil},
		{"a binary file named", map[string]any{"query": "Hello", "path": "bin.dat"}, true, []string{"bin.dat is a binary file"}, nil},
		{"a missing path", map[string]any{"query": "Hello", "path": "missing"}, true, []string{"missing does not exist"}, nil},
		{"capped", map[string]any{"query": "needle", "path": "many"}, false,
			[]string{"many/n.txt:1000: needle\n", "[more than 1000 matching lines"}, []string{"many/n.txt:1001:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, e, ws, "files_search", tt.args)
			want(t, r, tt.isError, tt.want...)
			for _, n := range tt.not {
				if strings.Contains(r.Text, n) {
					t.Errorf("the text holds %q:\n%s", n, r.Text)
				}
			}
		})
	}
}

func TestFilesInspect(t *testing.T) {
	ws, e := workspace(t, native.Options{})
	writeFile(t, ws+"/a.txt", "12345")
	if err := os.Chmod(ws+"/a.txt", 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", ws+"/link"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		give    string
		isError bool
		want    []string
	}{
		{give: "a.txt", want: []string{"path: a.txt\n", "type: file\n", "size: 5 bytes\n", "mode: -rw-r----- (0640)\n", "modified: "}},
		{give: ".", want: []string{"path: the workspace\n", "type: directory\n"}},
		{give: "link", want: []string{"link is a symbolic link to a.txt, which resolves to a.txt\n", "type: file\n"}},
		{give: "missing", isError: true, want: []string{"missing does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			want(t, call(t, e, ws, "files_inspect", map[string]any{"path": tt.give}), tt.isError, tt.want...)
		})
	}
}
