package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// hardBlockResult is the cost of one decision, by engine, at one rule count.
type hardBlockResult struct {
	rules int
	ns    map[string]float64 // engine name → median ns per decision
}

// hardBlockOptions say how long to measure.
type hardBlockOptions struct {
	sizes  []int
	rounds int           // each engine is timed this many times, the median kept
	budget time.Duration // a round runs passes over the 64 queries until this much time has gone
}

// runHardBlocks checks, at each size, that every engine agrees with the naive loop on every
// query, then times each. A disagreement is an error: the figures would compare different
// decisions.
func runHardBlocks(ctx context.Context, o hardBlockOptions, logf func(string, ...any)) ([]hardBlockResult, error) {
	var out []hardBlockResult
	for _, n := range o.sizes {
		d, queries := workload(n)
		logf("hard blocks: %d rules: compiling the engines", n)
		engines, err := newEngines(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("hard blocks, %d rules: %w", n, err)
		}
		if err := agree(engines, queries); err != nil {
			return nil, fmt.Errorf("hard blocks, %d rules: %w", n, err)
		}
		logf("hard blocks: %d rules: all %d engines agree on the %d queries", n, len(engines), len(queries))
		times := map[string][]float64{}
		for round := range o.rounds {
			// Each round takes the engines in another order, so that none is always first
			// after a garbage collection of another's making.
			for k := range engines {
				e := engines[(k+round)%len(engines)]
				ns, err := timeEngine(e, queries, o.budget)
				if err != nil {
					return nil, fmt.Errorf("hard blocks, %d rules, %s: %w", n, e.name, err)
				}
				times[e.name] = append(times[e.name], ns)
			}
		}
		res := hardBlockResult{rules: n, ns: map[string]float64{}}
		for name, ts := range times {
			res.ns[name] = median(ts)
		}
		out = append(out, res)
	}
	return out, nil
}

// agree checks that every engine returns the naive loop's rules for every query; engines[0]
// is the naive loop.
func agree(engines []engine, queries []query) error {
	var problems []string
	for _, q := range queries {
		want, err := engines[0].check(q)
		if err != nil {
			return fmt.Errorf("%s: %s %s: %w", engines[0].name, q.op, q.path, err)
		}
		for _, e := range engines[1:] {
			got, err := e.check(q)
			if err != nil {
				return fmt.Errorf("%s: %s %s: %w", e.name, q.op, q.path, err)
			}
			if !slices.Equal(got, want) {
				problems = append(problems, fmt.Sprintf("%s %s: %s blocks by %v, %s by %v", q.op, q.path, e.name, got, engines[0].name, want))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the engines disagree on %d decisions:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return nil
}

// timeEngine runs passes over the queries until budget has gone (at least one pass) and
// returns the nanoseconds per decision.
func timeEngine(e engine, queries []query, budget time.Duration) (float64, error) {
	decisions := 0
	start := time.Now()
	for {
		for _, q := range queries {
			if _, err := e.check(q); err != nil {
				return 0, err
			}
		}
		decisions += len(queries)
		if el := time.Since(start); el >= budget {
			return float64(el.Nanoseconds()) / float64(decisions), nil
		}
	}
}

// median of xs, which it sorts.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}
