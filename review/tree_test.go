package review_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// TestRecursiveEffectsLookAtTheTree checks that a recursive effect is judged by what is really
// below its path, and by what could be there where that cannot be seen.
func TestRecursiveEffectsLookAtTheTree(t *testing.T) {
	f := newFixture(t)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	r := newReviewer(t, nil)
	for _, d := range []string{"clean/a", "keyed/b", "linked"} {
		if err := os.MkdirAll(f.ws+"/"+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"clean/a/x.txt", "keyed/b/id.key"} {
		if err := os.WriteFile(f.ws+"/"+p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(f.secret, f.ws+"/linked/s"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cmd  string
		want verdict.Decision
	}{
		{"grep -r x clean", verdict.Allow},
		{"cp -r clean clean2", verdict.Allow},
		{"chmod -R u+w clean", verdict.Allow},
		{"grep -r x link", verdict.Deny}, // link is the secret
		{"rm -r linked", verdict.Ask},    // rm -r removes the link, not what it reaches: no hard block, only the quickstart's gate on deletes
		{"grep -r x missing", verdict.Allow},
	}
	for _, tt := range tests {
		v := r.Review(s, "Bash", map[string]any{"command": tt.cmd})
		if v.Decision != tt.want {
			t.Errorf("%s: %s; want %s", tt.cmd, v.Summary(), tt.want)
		}
	}
}

// TestGitInitIsJudgedOnTheRepositoryThere checks git init as a change in place of the
// repository: a new one (git's inert hook samples, its default configuration) is allowed,
// while initialising the existing one rewrites the .git/config the hard blocks guard.
func TestGitInitIsJudgedOnTheRepositoryThere(t *testing.T) {
	s := corpusSession(t)
	r := newReviewer(t, nil)
	tests := []struct {
		cmd  string
		want verdict.Decision
	}{
		{"git init", verdict.Deny},
		{"git init .", verdict.Deny},
		{"git init fresh", verdict.Allow},
		{"git -C sub init", verdict.Allow},
		{"git init --bare b.git", verdict.Allow},
		{"git init --bare .git", verdict.Deny},
		{"git status && git commit -m x", verdict.Allow},
	}
	for _, tt := range tests {
		v := r.Review(s, "Bash", map[string]any{"command": tt.cmd})
		if v.Decision != tt.want {
			t.Errorf("%s: %s; want %s", tt.cmd, v.Summary(), tt.want)
		}
	}
}

// TestListingCountsDirectories checks that a listing of a tree with more files than the walk
// checks, in a few directories, is seen whole (a listing reads directories, not files), as a
// real repository's find or git status needs; a recursive read of the same tree is past the
// bound and keeps the conservative answer.
func TestListingCountsDirectories(t *testing.T) {
	s := corpusSession(t)
	r := newReviewer(t, nil)
	ws := s.Paths.Root
	for d := range 3 {
		dir := fmt.Sprintf("%s/many/d%d", ws, d)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range 2000 { // 6,000 files in all: more than the walk checks
			if err := os.WriteFile(fmt.Sprintf("%s/f%d.go", dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		cmd  string
		want verdict.Decision
	}{
		{"find many -name '*.go'", verdict.Allow},
		{"ls -R many", verdict.Allow},
		{"grep -r x many", verdict.Deny},
	}
	for _, tt := range tests {
		v := r.Review(s, "Bash", map[string]any{"command": tt.cmd})
		if v.Decision != tt.want {
			t.Errorf("%s: %s; want %s", tt.cmd, v.Summary(), tt.want)
		}
	}
}
