package review_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// corpusLine is one command of a corpus file.
type corpusLine struct {
	file    string
	line    int
	class   string
	command string
}

// readCorpus reads a corpus file: one command a line as class<TAB>command; lines starting
// with # and blank lines are skipped.
func readCorpus(t *testing.T, name string) []corpusLine {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusLine
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		text := sc.Text()
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		class, cmd, ok := strings.Cut(text, "\t")
		if !ok || class == "" || cmd == "" {
			t.Fatalf("%s:%d: not class<TAB>command: %q", name, n, text)
		}
		out = append(out, corpusLine{file: name, line: n, class: class, command: cmd})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// corpusSession is a person's session in the corpus workspace under the example hard blocks,
// where shell_exec runs without an approval gate: what the review decides is what the command
// deserves.
func corpusSession(t *testing.T) *review.Session {
	t.Helper()
	ws := corpusWorkspace(t)
	home := filepath.Join(filepath.Dir(ws), "home")
	data, err := os.ReadFile(filepath.Join("..", "examples", "boundaries.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := boundary.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := boundary.Compile(doc, boundary.Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	p := quickstart(t)
	// Approvals off: the corpus judges review (effects, hard blocks, what cannot be known), not
	// the quickstart's approval gates, which ask before a delete while approvals are on.
	sf, err := surface.Open(p.Env(policy.MapLookup(map[string]string{policy.SwitchRequireApproval: "false"})), surface.Spec{Role: "person", Tenant: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if g := sf.Gate("shell_exec"); g.Code != "" {
		t.Fatalf("shell_exec is gated (%s): the corpus needs a session where it can be allowed", g.Code)
	}
	paths, err := action.NewResolver(ws, home)
	if err != nil {
		t.Fatal(err)
	}
	return &review.Session{ID: "corpus", Surface: sf, Paths: paths, Boundaries: rules}
}

// TestCorpus reviews every command of the two corpora: each dodge must be asked about or
// denied, each ordinary command allowed.
func TestCorpus(t *testing.T) {
	s := corpusSession(t)
	r := newReviewer(t, nil)
	for _, tc := range []struct {
		file  string
		allow bool
		least int
	}{{"dodges.txt", false, 250}, {"ordinary.txt", true, 120}} {
		lines := readCorpus(t, tc.file)
		if len(lines) < tc.least {
			t.Errorf("%s has %d commands; want at least %d", tc.file, len(lines), tc.least)
		}
		for _, l := range lines {
			v := r.Review(s, "shell_exec", map[string]any{"command": l.command})
			allowed := v.Decision == verdict.Allow
			if allowed != tc.allow {
				t.Errorf("%s:%d [%s] %s\n\tgot %s %v", l.file, l.line, l.class, l.command, v.Summary(), details(v))
			}
		}
	}
}

func details(v review.Verdict) []string {
	var out []string
	for _, b := range v.Blockers {
		out = append(out, b.Detail)
	}
	return out
}
