package review_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
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

// benchRules builds n hard blocks in the mix of PERFORMANCE-ANCHORS.md (30% exact, 30% prefix,
// 25% glob, 10% contains, 5% regex) over server paths, none of which the benchmarked calls
// touch: the review's allow path, which is the common one.
func benchRules(tb testing.TB, n int) *boundary.Set {
	tb.Helper()
	r := rand.New(rand.NewPCG(7, 11))
	words := []string{"billing", "deploy", "ledger", "vault", "orders", "tokens", "backup", "media", "keys", "audit"}
	ops := []string{"read", "write", "delete", "execute", "delegate"}
	type rule struct {
		ID         string   `json:"id"`
		Enabled    bool     `json:"enabled"`
		Type       string   `json:"type"`
		Pattern    string   `json:"pattern"`
		Match      string   `json:"match"`
		Operations []string `json:"operations"`
	}
	var rules []rule
	for i := range n {
		w := words[r.IntN(len(words))]
		var match, pat string
		switch k := i * 100 / max(n, 1) % 100; {
		case k < 30:
			match, pat = "exact", fmt.Sprintf("/srv/app/%s/%s%d.conf", w, w, i)
		case k < 60:
			match, pat = "prefix", fmt.Sprintf("/srv/data/%s/%s%d/", w, w, i)
		case k < 85:
			match, pat = "glob", []string{"/home/*/%s/**/*.key", "**/%s%d.env", "/srv/*/%s/*.pem", "/var/lib/%s/**"}[i%4]
			if i%4 == 1 {
				pat = fmt.Sprintf(pat, w, i)
			} else {
				pat = fmt.Sprintf(pat, w)
			}
		case k < 95:
			match, pat = "contains", fmt.Sprintf("%s%dsecret", w, i)
		default:
			match, pat = "regex", fmt.Sprintf(`^/var/log/%s%d-[0-9]+\.log$`, w, i)
		}
		rules = append(rules, rule{ID: fmt.Sprint("r", i), Enabled: true, Type: "path", Pattern: pat, Match: match,
			Operations: []string{ops[i%len(ops)], ops[(i+1+r.IntN(len(ops)-1))%len(ops)]}})
	}
	// A few command rules, as a deployment would have.
	for i, pat := range []string{"rm -rf /*", "git push --force*", "curl * | sh"} {
		rules = append(rules, rule{ID: fmt.Sprint("c", i), Enabled: true, Type: "command", Pattern: pat, Match: "glob", Operations: []string{"execute"}})
	}
	data, err := json.Marshal(map[string]any{"version": 1, "hardBlocks": rules})
	if err != nil {
		tb.Fatal(err)
	}
	doc, err := boundary.Parse(data)
	if err != nil {
		tb.Fatal(err)
	}
	set, err := boundary.Compile(doc, boundary.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return set
}

// benchCommand is a 200-character command of the kind agents run.
const benchCommand = `cd src && grep -n 'TODO' main.go util.go | sort | uniq -c > /tmp/todo-count.txt && rm -f build/*.o && git status --short && head -n 20 README.md && cp notes.txt notes.bak && echo "done $(date +%H:%M)"`

// benchCommandWide is a 200-character command that reaches what issue 12 added: arithmetic
// whose variables must be inert, programs the table does not know (make, go), git's paths, and
// a recursive read that a glob rule could match below, so the tree is walked.
const benchCommandWide = `for ((i = 0; i < 3; i++)); do n=$((i * 2)); done; make -j4 build && go vet ./... && git log -p -- main.go | head -n 50 > /tmp/logs1.txt; tar -czvf /tmp/src.tgz src; find . -name '*.go' -type f | wc -l`

func BenchmarkReview(b *testing.B) {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range []string{"ws/src/build"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	p := quickstart(b)
	// Approvals off: the quickstart asks before a command that deletes (the benchmark's rm), and
	// the benchmark measures the allow path.
	env := policy.MapLookup(map[string]string{"REQUIRE_WRITE_APPROVAL": "false"})
	sf, err := surface.Open(p.Env(env), surface.Spec{Role: "person", Tenant: "default"})
	if err != nil {
		b.Fatal(err)
	}
	paths, err := action.NewResolver(dir+"/ws", dir+"/home")
	if err != nil {
		b.Fatal(err)
	}
	rv := newReviewer(b, nil)
	for _, c := range []string{benchCommand, benchCommandWide} {
		if len(c) != 200 {
			b.Fatalf("the benchmark command %q is %d characters, not 200", c, len(c))
		}
	}
	calls := []struct {
		name string
		tool string
		args map[string]any
		// mark, where set, is a part of the command that each review of the "first" form
		// replaces with a counter of the same length, so that each reviews a command seen for
		// the first time: neither its review nor its syntax tree is kept from before.
		mark string
	}{
		{"files_write", "files_write", map[string]any{"path": "src/main.go", "content": "package main\n"}, ""},
		{"shell_exec", "shell_exec", map[string]any{"command": benchCommand}, "count"},
		{"shell_exec_wide", "shell_exec", map[string]any{"command": benchCommandWide}, "logs1"},
	}
	for _, c := range calls {
		for _, n := range []int{10, 1000, 10000} {
			s := &review.Session{ID: "bench", Surface: sf, Paths: paths, Boundaries: benchRules(b, n)}
			if v := rv.Review(s, c.tool, c.args); v.Decision != verdict.Allow {
				b.Fatalf("%s with %d rules: %s; the benchmark reviews the allow path", c.name, n, v.Summary())
			}
			b.Run(fmt.Sprintf("%s/rules=%d", c.name, n), func(b *testing.B) {
				b.ReportAllocs()
				stop := cpuTimer(b)
				for b.Loop() {
					rv.Review(s, c.tool, c.args)
				}
				stop()
			})
			if c.mark == "" {
				continue
			}
			fresh := newCommands(b, c.args["command"].(string), c.mark)
			if v := rv.Review(s, c.tool, map[string]any{"command": fresh()}); v.Decision != verdict.Allow {
				b.Fatalf("%s (first) with %d rules: %s; the benchmark reviews the allow path", c.name, n, v.Summary())
			}
			b.Run(fmt.Sprintf("%s/first/rules=%d", c.name, n), func(b *testing.B) {
				b.ReportAllocs()
				stop := cpuTimer(b)
				for b.Loop() {
					rv.Review(s, c.tool, map[string]any{"command": fresh()})
				}
				stop()
			})
		}
	}
}

// newCommands returns a function that returns cmd with mark (which it must hold once) replaced
// by a counter of as many digits, a different command each call for 10^len(mark) calls: more
// than the reviewer and the parser keep, so that each is reviewed as a new command is.
func newCommands(tb testing.TB, cmd, mark string) func() string {
	tb.Helper()
	i := strings.Index(cmd, mark)
	if i < 0 || strings.Count(cmd, mark) != 1 {
		tb.Fatalf("%q is not once in the command %q", mark, cmd)
	}
	buf := []byte(cmd)
	n := 0
	return func() string {
		n++
		for k, v := i+len(mark)-1, n; k >= i; k, v = k-1, v/10 {
			buf[k] = byte('0' + v%10)
		}
		return string(buf)
	}
}
