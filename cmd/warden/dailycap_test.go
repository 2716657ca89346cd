package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
)

// A profile's daily model budget through serve's stack: the harness reports its spend over
// HTTP (POST /api/v1/runs/{id}/usage); the report that takes the day to the cap stops the run
// (its next call is refused with run_limit), and the next run of the profile is refused at
// initialize. (That no run starts when the day's spend cannot be read is tested in gate.)
func TestDailyBudgetThroughServe(t *testing.T) {
	src := string(examples.Quickstart)
	src = strings.Replace(src, "      runBudgetUsd: 0.25\n      maxTurns: 20", "      runBudgetUsd: 0.25\n      maxTurns: 20\n      dailyBudgetUsd: 0.3", 1)
	src = strings.Replace(src, "  maxConcurrentRuns: 1\n", "  maxConcurrentRuns: 8\n", 1)
	p, err := policy.Parse("daily.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if pr, ok := p.Profile("reviewer"); !ok || pr.Limits.DailyBudgetUsd != 0.3 {
		t.Fatalf("the reviewer's limits: %+v", pr)
	}
	dir := t.TempDir()
	r := newUsageRigFor(t, p, openUsageDB(t, dir), dir)
	agent, _ := r.token(auth.RoleAgent, "coworker", "reviewer")

	_, run, _, refused := r.open(agent)
	if refused != nil || run == "" {
		t.Fatalf("the first run: %v", refused)
	}
	if code, st := r.usage(agent, run, `{"modelUsd": 0.2}`); code != http.StatusOK || st["stopped"] != false {
		t.Fatalf("$0.20 of the day's $0.30: HTTP %d %v", code, st)
	}
	session, run, _, refused := r.open(agent)
	if refused != nil {
		t.Fatalf("a second run under the daily cap was refused: %v", refused)
	}
	code, st := r.usage(agent, run, `{"modelUsd": 0.1}`)
	if code != http.StatusOK || st["stopped"] != true || !strings.Contains(fmt.Sprint(st["stoppedBecause"]), "its daily cap is 0.3000") {
		t.Fatalf("$0.30 of the day's $0.30: HTTP %d %v; want the run stopped", code, st)
	}
	text, isErr := r.call(agent, session, "")
	wantRunLimit(t, "a call after the day's cap", text, isErr)
	if _, _, _, refused := r.open(agent); refused == nil || !strings.Contains(fmt.Sprint(refused), "daily cap") {
		t.Fatalf("a run at the day's cap: %v; want it refused, saying the daily cap", refused)
	}
}
