// Command bench is Warden's benchmark anyone can run: in one process and one run it measures
// (a) the hard-block workload of PERFORMANCE-ANCHORS.md through Warden's boundary index, a naive
// Go loop, OPA (rules as data, one rule per block) and cedar-go, after checking that they agree
// on every query; (b) an MCP echo call direct, through a bare go-sdk proxy and through Warden's
// gateway, at 1, 8 and 32 clients, and through a round-robin proxy over one `warden serve` and
// over three on one PostgreSQL store, at 8 clients; (c) redaction throughput by number of known values; (d) a
// sandboxed start of true against a plain one. It writes docs/performance.md, with ratios to
// the baselines of the same run, and SVG charts it draws itself.
//
// It is its own module so that OPA and cedar-go never enter Warden's go.mod.
//
// Usage:
//
//	cd bench && go run . [-short] [-postgres URL] [-out ../docs/performance.md]
//
// -short runs in seconds (few rules, one client, few calls) and still fails when the engines
// disagree; CI runs it. -postgres (default $WARDEN_TEST_POSTGRES_URL) is the server the
// several instances share; without one that part is skipped and the page says so. No timing is
// ever asserted.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	short := flag.Bool("short", false, "run in seconds: few rules, one client, few calls (agreement is still checked)")
	pg := flag.String("postgres", os.Getenv("WARDEN_TEST_POSTGRES_URL"), "a PostgreSQL server for the several-instances part (a schema of its own is made and dropped); none: that part is skipped, and the page says so")
	out := flag.String("out", "../docs/performance.md", "the page to write; its charts go to a directory named after it without .md (/dev/null: no page, no charts)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bench: unexpected arguments %q; usage: go run . [-short] [-postgres URL] [-out file]\n", flag.Args())
		os.Exit(2)
	}
	if err := run(context.Background(), *short, *pg, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, short bool, pgURL, out string) error {
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
	}
	command := "cd bench && go run . -out " + out
	if short {
		command = "cd bench && go run . -short -out " + out
	}
	r := &report{machine: thisMachine(), command: command, short: short, charts: map[string]string{}}
	r.hbOpts = hardBlockOptions{sizes: []int{10, 1000, 10000}, rounds: 5, budget: 200 * time.Millisecond}
	r.gwOpts = gatewayOptions{clients: []int{1, 8, 32}, rounds: 3, calls: 2000, warmup: 20}
	r.trioOpts = trioOptions{clients: 8, rounds: 3, calls: 2000, warmup: 20}
	redactSize, redactBudget, starts := 1<<20, 300*time.Millisecond, 101
	if short {
		r.hbOpts = hardBlockOptions{sizes: []int{10, 1000}, rounds: 1, budget: time.Millisecond}
		r.gwOpts = gatewayOptions{clients: []int{1}, rounds: 2, calls: 20, warmup: 2}
		r.trioOpts = trioOptions{clients: 8, rounds: 1, calls: 40, warmup: 1}
		redactSize, redactBudget, starts = 64<<10, time.Millisecond, 3
	}
	t0 := time.Now()
	r.loadStart = loadAverage()

	var err error
	if r.hardBlocks, err = runHardBlocks(ctx, r.hbOpts, logf); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "warden-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if r.gateway, err = runGateway(ctx, r.gwOpts, dir, logf); err != nil {
		return err
	}
	if r.trio, err = runTrio(ctx, r.trioOpts, pgURL, dir, logf); err != nil {
		return err
	}
	if r.redaction, err = runRedaction(redactSize, redactBudget, logf); err != nil {
		return err
	}
	if r.start, err = runStart(ctx, starts, logf); err != nil {
		return err
	}
	r.elapsed = time.Since(t0)
	r.loadEnd = loadAverage()
	return r.write(out, logf)
}

// write writes the charts, then the page that links them; with out /dev/null it only draws
// the charts in memory, so that a chart that cannot be drawn still fails the short form.
func (r *report) write(out string, logf func(string, ...any)) error {
	charts := map[string]chart{"hardblocks.svg": r.hardBlockChart(), "gateway-latency.svg": r.gatewayChart()}
	toFiles := out != os.DevNull
	chartDir := strings.TrimSuffix(out, ".md")
	if toFiles {
		if err := os.MkdirAll(chartDir, 0o755); err != nil {
			return err
		}
	}
	for name, c := range charts {
		var b strings.Builder
		if err := c.write(&b); err != nil {
			return err
		}
		if !toFiles {
			continue
		}
		if err := os.WriteFile(filepath.Join(chartDir, name), []byte(b.String()), 0o644); err != nil {
			return err
		}
		r.charts[name] = filepath.Base(chartDir) + "/" + name
	}
	var b strings.Builder
	if err := r.writeMarkdown(&b); err != nil {
		return err
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	logf("wrote %s in %s", out, r.elapsed.Round(time.Second))
	return nil
}
