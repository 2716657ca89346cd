package main

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/boundary"
)

// TestWorkload: the mix of the anchors, 64 queries, the even ones matching, the odd ones not.
func TestWorkload(t *testing.T) {
	for _, n := range []int{10, 1000} {
		d, queries := workload(n)
		count := map[string]int{}
		for _, r := range d.HardBlocks {
			count[r.Match]++
		}
		if n == 1000 {
			for _, k := range kinds {
				if count[k.match] != n*k.share/100 {
					t.Errorf("rules=%d: %d %s rules, want %d%%", n, count[k.match], k.match, k.share)
				}
			}
		} else if len(count) != len(kinds) {
			t.Errorf("rules=%d: kinds %v, want all five", n, count)
		}
		nv := newNaive(d)
		if len(queries) != 64 {
			t.Fatalf("rules=%d: %d queries, want 64", n, len(queries))
		}
		for i, q := range queries {
			if hit := len(nv.check(q.op, q.path, nil)) > 0; hit != (i%2 == 0) {
				t.Errorf("rules=%d: query %d (%s %s) matches: %v", n, i, q.op, q.path, hit)
			}
		}
	}
}

// TestEnginesAgree: at 10 rules, every engine gives the naive loop's rules for every query.
func TestEnginesAgree(t *testing.T) {
	d, queries := workload(10)
	engines, err := newEngines(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if err := agree(engines, queries); err != nil {
		t.Fatal(err)
	}
}

// TestAgreeReportsDisagreement: an engine that misses a rule, or blocks by one too many, is
// caught and named, and so is one that fails.
func TestAgreeReportsDisagreement(t *testing.T) {
	d, queries := workload(10)
	nv := newNaive(d)
	naiveEngine := engine{"naive", func(q query) ([]string, error) { return nv.check(q.op, q.path, nil), nil }}
	tests := []struct {
		name  string
		check func(q query) ([]string, error)
		want  string
	}{
		{"misses", func(q query) ([]string, error) { return nil, nil }, "the engines disagree on 32 decisions"},
		{"extra", func(q query) ([]string, error) {
			return append(nv.check(q.op, q.path, nil), "rule-x"), nil
		}, "the engines disagree on 64 decisions"},
		{"fails", func(q query) ([]string, error) { return nil, io.ErrUnexpectedEOF }, "fails: " + string(queries[0].op)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := agree([]engine{naiveEngine, {tt.name, tt.check}}, queries)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("agree: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestCedarForms: each kind of rule has its Cedar form; a glob or regex outside the workload's
// shapes is refused rather than translated wrongly.
func TestCedarForms(t *testing.T) {
	tests := []struct {
		give boundary.Rule
		want string
	}{
		{boundary.Rule{ID: "e", Match: boundary.MatchExact, Pattern: "/srv/app/a/b1.conf", Operations: []string{"read"}},
			`forbid (principal, action in [Action::"read"], resource) when { context.path == "/srv/app/a/b1.conf" };`},
		{boundary.Rule{ID: "p", Match: boundary.MatchPrefix, Pattern: "/srv/data/a/", Operations: []string{"read", "write"}},
			`forbid (principal, action in [Action::"read", Action::"write"], resource) when { context.path like "/srv/data/a/*" };`},
		{boundary.Rule{ID: "g", Match: boundary.MatchGlob, Pattern: "/home/*/a/**/*.key", Operations: []string{"delete"}},
			`forbid (principal, action in [Action::"delete"], resource) when { context.path like "/home/*/a/*/*.key" };`},
		{boundary.Rule{ID: "c", Match: boundary.MatchContains, Pattern: "a1secret", Operations: []string{"read"}},
			`forbid (principal, action in [Action::"read"], resource) when { context.path like "*a1secret*" };`},
		{boundary.Rule{ID: "r", Match: boundary.MatchRegex, Pattern: `^/var/log/a1-[0-9]+\.log$`, Operations: []string{"read"}},
			`forbid (principal, action in [Action::"read"], resource) when { context.path like "/var/log/a1-*.log" };`},
	}
	for _, tt := range tests {
		got, err := cedarPolicy(tt.give)
		if err != nil || got != tt.want {
			t.Errorf("cedarPolicy(%s) = %s, %v; want %s", tt.give.ID, got, err, tt.want)
		}
	}
	for _, r := range []boundary.Rule{
		{ID: "g", Match: boundary.MatchGlob, Pattern: "/x/{a,b}/*.key"},
		{ID: "r", Match: boundary.MatchRegex, Pattern: `^/var/log/a.b-[0-9]+\.log$`},
		{ID: "r2", Match: boundary.MatchRegex, Pattern: `secret$`},
	} {
		if got, err := cedarPolicy(r); err == nil {
			t.Errorf("cedarPolicy(%s %s) = %s; want an error", r.Match, r.Pattern, got)
		}
	}
}

// TestChartSVG: the chart is well-formed XML with one line and one legend entry per series,
// and a point a log scale cannot show is an error, not a broken picture.
func TestChartSVG(t *testing.T) {
	c := chart{title: "cost <by> rules", xLabel: "rules", yLabel: "ns", xLog: true, yLog: true, series: []series{
		{"a & b", []point{{10, 200}, {1000, 400}, {10000, 900}}},
		{"c", []point{{10, 1e5}, {1000, 1e7}, {10000, 1e9}}},
	}}
	var b strings.Builder
	if err := c.write(&b); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	texts := ""
	dec := xml.NewDecoder(strings.NewReader(b.String()))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, b.String())
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			counts[tok.Name.Local]++
		case xml.CharData:
			texts += string(tok) + "|"
		}
	}
	if counts["svg"] != 1 || counts["polyline"] != 2 || counts["circle"] != 6 {
		t.Errorf("elements %v; want one svg, two polylines, six circles", counts)
	}
	for _, want := range []string{"cost <by> rules", "a & b", "|10|", "|1k|", "|10k|", "|100|", "|100M|", "|1G|"} {
		if !strings.Contains("|"+texts, want) {
			t.Errorf("the SVG's texts %q lack %q", texts, want)
		}
	}

	for _, bad := range []float64{0, -1} {
		c := chart{title: "t", yLog: true, series: []series{{"s", []point{{1, bad}}}}}
		if err := c.write(io.Discard); err == nil {
			t.Errorf("a log scale drew y = %v", bad)
		}
	}
	if err := (chart{title: "empty"}).write(io.Discard); err == nil {
		t.Error("a chart with no points was drawn")
	}
}

// TestPage: the page gives each table its ratios to the baseline of the same run, and says
// "unavailable" when the sandbox could not run.
func TestPage(t *testing.T) {
	r := &report{machine: machine{cpu: "test CPU", cores: 2}, command: "go run .", loadStart: "1.5", loadEnd: "2.5",
		hardBlocks: []hardBlockResult{{rules: 10, ns: map[string]float64{engineNames[0]: 100, engineNames[1]: 50}}},
		gateway: []gatewayResult{
			{kind: kindDirect, clients: 1, calls: 100, wall: time.Second, cpu: 100 * time.Millisecond, p50: time.Millisecond},
			{kind: kindWarden, clients: 1, calls: 50, wall: time.Second, cpu: 100 * time.Millisecond, p50: 3 * time.Millisecond},
		},
		start: startResult{runs: 3, plain: time.Millisecond, sandboxErr: errors.New("no namespaces")},
	}
	var b strings.Builder
	if err := r.writeMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"| CPU | test CPU |", "load average 1.5 at the start",
		"| Warden boundary index | 50 ns | 0.50 |",
		"| 1 | Warden | 50 | 0.50 | 3 ms |", "+2 ms", "+1 ms |",
		"| sandboxed (`sandbox.Run`) | unavailable | – |", "no namespaces",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
}

// TestLinearTicks: a linear axis starts at zero and its ticks cover the largest value.
func TestLinearTicks(t *testing.T) {
	for _, hi := range []float64{0.7, 3, 17, 1234} {
		lo, top := bounds([]float64{hi / 2, hi}, false)
		ts := ticks(lo, top, false)
		if lo != 0 || len(ts) < 2 || len(ts) > 8 || ts[0] != 0 || ts[len(ts)-1] > top {
			t.Errorf("hi %v: bounds %v..%v, ticks %v", hi, lo, top, ts)
		}
	}
}
