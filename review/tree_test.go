package review_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/wardenhq/warden/boundary"
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

// TestEnforcedRecursiveReadsRunAroundBlockedFiles checks that a session whose commands run
// with the hard blocks enforced at each system call lets a recursive read of a tree that holds
// a blocked file run (the file is refused at its open), while a read that names the blocked
// file, and a recursive delete, are judged as before; and that a session without enforcement
// still refuses the tree.
func TestEnforcedRecursiveReadsRunAroundBlockedFiles(t *testing.T) {
	f := newFixture(t)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	rules, err := boundary.Compile(mustDoc(t, `{"version":1,"hardBlocks":[
	 {"id":"key-files","enabled":true,"type":"path","pattern":"**/*.key","match":"glob","operations":["read","write","delete"],"reason":"private keys"}]}`),
		boundary.Options{Home: f.dir + "/home"})
	if err != nil {
		t.Fatal(err)
	}
	s.Boundaries = rules
	r := newReviewer(t, nil)
	if err := os.MkdirAll(f.ws+"/keyed/b", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.ws+"/keyed/b/id.key", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.ws+"/keyed/notes.txt", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cmd                 string
		plain, withEnforced verdict.Decision
	}{
		{"grep -r x keyed", verdict.Deny, verdict.Allow},
		{"grep -r x .", verdict.Deny, verdict.Allow},
		{"cat keyed/b/id.key", verdict.Deny, verdict.Deny},
		{"grep -r x keyed/b/id.key", verdict.Deny, verdict.Deny},
		{"cat keyed/notes.txt", verdict.Allow, verdict.Allow},
	}
	enforced := *s
	enforced.Enforced = true
	for _, tt := range tests {
		if v := r.Review(s, "Bash", map[string]any{"command": tt.cmd}); v.Decision != tt.plain {
			t.Errorf("%s without enforcement: %s; want %s", tt.cmd, v.Summary(), tt.plain)
		}
		if v := r.Review(&enforced, "Bash", map[string]any{"command": tt.cmd}); v.Decision != tt.withEnforced {
			t.Errorf("%s with enforcement: %s; want %s", tt.cmd, v.Summary(), tt.withEnforced)
		}
	}
	// A recursive delete is not a read: what it would remove below is judged as before.
	plain := r.Review(s, "Bash", map[string]any{"command": "rm -r keyed"})
	withEnforced := r.Review(&enforced, "Bash", map[string]any{"command": "rm -r keyed"})
	if plain.Decision != withEnforced.Decision || fmt.Sprint(plain.Blockers) != fmt.Sprint(withEnforced.Blockers) {
		t.Errorf("rm -r keyed: %s without enforcement, %s with it; want the same", plain.Summary(), withEnforced.Summary())
	}
}
