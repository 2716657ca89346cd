package main

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
)

// The workload of PERFORMANCE-ANCHORS.md, "hard blocks over paths", generated exactly as
// boundary's own benchmarks generate it (boundary/bench_test.go: same seed, same words, same
// draws), so that the figures here and there are of the same rules and queries: 30% exact
// (/srv/app/<w>/<w><i>.conf), 30% prefix (/srv/data/<w>/<w><i>/), 25% glob
// (/home/*/<w>/**/*.key, **/<w>.env, /srv/*/<w>/*.pem, /var/lib/<w>/**), 10% contains
// (<w><i>secret), 5% regex (^/var/log/<w><i>-[0-9]+\.log$); 64 queries, half matching a rule
// and half ordinary work that matches none.

var words = []string{
	"alpha", "billing", "cache", "deploy", "edge", "forms", "gateway", "hooks", "ingest",
	"jobs", "kafka", "ledger", "mailer", "notify", "orders", "payments", "queue", "reports",
	"search", "tenant", "users", "vault", "webhook", "xray", "yard", "zones", "audit", "batch",
	"config", "dns", "events", "feeds", "graph", "health", "images", "jira", "keys", "logs",
	"metrics", "nodes", "oauth", "pipeline", "quota", "redis", "sessions", "tokens", "upload",
	"video", "worker", "export", "analytics", "backup", "catalog", "docs", "email", "files",
	"geo", "http", "invoice", "journal", "kiosk", "lambda", "media", "network",
}

// query is one decision to make: may op be done on path?
type query struct {
	op   action.Op
	path string
}

// kinds are the rule kinds, with their share in percent.
var kinds = []struct {
	match string
	share int
}{{boundary.MatchExact, 30}, {boundary.MatchPrefix, 30}, {boundary.MatchGlob, 25}, {boundary.MatchContains, 10}, {boundary.MatchRegex, 5}}

// workload returns n rules and the 64 queries. It panics if a query meant to match matches
// nothing, or one meant to match nothing matches: the generator is wrong then, not a
// evaluator.
func workload(n int) (*boundary.Document, []query) {
	r := rand.New(rand.NewPCG(20260101, 64))
	word := func() string { return words[r.IntN(len(words))] }

	// The exact mix: shares rounded down, the rest to the kinds furthest below their share.
	counts := make([]int, len(kinds))
	total := 0
	for k, kind := range kinds {
		counts[k] = n * kind.share / 100
		total += counts[k]
	}
	for ; total < n; total++ {
		best := 0
		for k := range kinds {
			if n*kinds[k].share-100*counts[k] >= n*kinds[best].share-100*counts[best] {
				best = k
			}
		}
		counts[best]++
	}
	var deck []string
	for k, kind := range kinds {
		for range counts[k] {
			deck = append(deck, kind.match)
		}
	}
	r.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })

	d := &boundary.Document{Version: 1}
	for i, match := range deck {
		rule := boundary.Rule{ID: fmt.Sprint("rule-", i), Enabled: true, Type: boundary.TypePath, Match: match}
		for _, op := range action.Ops {
			if r.Float64() < 0.4 {
				rule.Operations = append(rule.Operations, string(op))
			}
		}
		if len(rule.Operations) == 0 {
			rule.Operations = []string{string(action.Ops[r.IntN(len(action.Ops))])}
		}
		switch match {
		case boundary.MatchExact:
			rule.Pattern = fmt.Sprintf("/srv/app/%s/%s%d.conf", word(), word(), i)
		case boundary.MatchPrefix:
			rule.Pattern = fmt.Sprintf("/srv/data/%s/%s%d/", word(), word(), i)
		case boundary.MatchGlob:
			rule.Pattern = fmt.Sprintf([]string{"/home/*/%s/**/*.key", "**/%s.env", "/srv/*/%s/*.pem", "/var/lib/%s/**"}[r.IntN(4)], word())
		case boundary.MatchContains:
			rule.Pattern = fmt.Sprintf("%s%dsecret", word(), i)
		case boundary.MatchRegex:
			rule.Pattern = fmt.Sprintf(`^/var/log/%s%d-[0-9]+\.log$`, word(), i)
		}
		d.HardBlocks = append(d.HardBlocks, rule)
	}

	ref := newNaive(d)
	var queries []query
	for len(queries) < 64 {
		// A query that matches a rule. Where the glob dialects differ (a "/**/" of no
		// directory, "/x/**" matching "/x" itself), the path never goes: "/**/" always
		// becomes a real directory and "/**" a path below it.
		rule := d.HardBlocks[r.IntN(len(d.HardBlocks))]
		op := action.Op(rule.Operations[r.IntN(len(rule.Operations))])
		var p string
		switch rule.Match {
		case boundary.MatchExact:
			p = rule.Pattern
		case boundary.MatchPrefix:
			p = rule.Pattern + word() + ".txt"
		case boundary.MatchGlob:
			p = strings.NewReplacer("/**/", "/"+word()+"/", "/**", "/"+word()+"/data", "**/", "/srv/site/", "*.", "id.", "*", word()).Replace(rule.Pattern)
		case boundary.MatchContains:
			p = "/tmp/" + rule.Pattern + ".txt"
		case boundary.MatchRegex:
			p = strings.NewReplacer("^", "", `-[0-9]+\.log$`, fmt.Sprintf("-%d.log", r.IntN(1000))).Replace(rule.Pattern)
		}
		if len(ref.check(op, p, nil)) == 0 {
			panic("workload: the query " + p + " meant to match matches nothing")
		}
		queries = append(queries, query{op, p})

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
			if len(ref.check(op, p, nil)) == 0 {
				break
			}
		}
		queries = append(queries, query{op, p})
	}
	return d, queries
}

// naive is the loop the anchors measured: every rule in turn, doublestar for globs, regexes
// compiled beforehand. It is the baseline of the hard-block tables.
type naive struct {
	rules []naiveRule
}

type naiveRule struct {
	id    string
	ops   []action.Op
	match string
	pat   string
	re    *regexp.Regexp
}

func newNaive(d *boundary.Document) *naive {
	n := &naive{}
	for _, r := range d.HardBlocks {
		nr := naiveRule{id: r.ID, match: r.Match, pat: r.Pattern}
		for _, op := range r.Operations {
			nr.ops = append(nr.ops, action.Op(op))
		}
		if r.Match == boundary.MatchRegex {
			nr.re = regexp.MustCompile(r.Pattern)
		}
		n.rules = append(n.rules, nr)
	}
	return n
}

// check appends the IDs of the rules that block op on path to ids.
func (n *naive) check(op action.Op, path string, ids []string) []string {
	for i := range n.rules {
		r := &n.rules[i]
		if !slices.Contains(r.ops, op) {
			continue
		}
		var m bool
		switch r.match {
		case boundary.MatchExact:
			m = path == r.pat
		case boundary.MatchPrefix:
			m = strings.HasPrefix(path, r.pat)
		case boundary.MatchGlob:
			m, _ = doublestar.Match(r.pat, path)
		case boundary.MatchRegex:
			m = r.re.MatchString(path)
		case boundary.MatchContains:
			m = strings.Contains(path, r.pat)
		}
		if m {
			ids = append(ids, r.id)
		}
	}
	return ids
}
