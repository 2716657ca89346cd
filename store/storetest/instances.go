package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/instance"
)

// beat registers (or beats) instance id at when.
func beat(t *testing.T, s instance.Store, id string, when time.Time) bool {
	t.Helper()
	registered, err := s.Beat(t.Context(), &instance.Instance{ID: id, Started: t0, Heartbeat: when})
	if err != nil {
		t.Fatalf("Beat(%s): %v", id, err)
	}
	return registered
}

// recoverAs recovers as instance self, taking for dead every instance that last beat before
// staleBefore.
func recoverAs(t *testing.T, s instance.Store, self string, staleBefore time.Time, leaving bool) *instance.Recovered {
	t.Helper()
	got, err := s.Recover(t.Context(), instance.Recovery{Self: self, StaleBefore: staleBefore, At: at(time.Hour), Leaving: leaving})
	if err != nil {
		t.Fatalf("Recover(%s): %v", self, err)
	}
	return got
}

// runOf returns a run of the profile (at most one live run) held by instance inst.
func runOf(id, inst string) *budget.Run {
	r := newRun(id, allow(firecrawl, 100, 1000))
	r.MaxConcurrent = 1
	r.Instance = inst
	return r
}

// decided records the gate's decision to run call (the event recovery looks for).
func decided(t *testing.T, s audit.Log, call, kind, decision string) {
	t.Helper()
	mustAppend(t, s, &audit.Event{Time: at(time.Minute), Kind: kind, CallID: call, Tenant: "t1", Decision: decision})
}

func runIDs(rs []budget.Run) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}

func testInstanceBeat(t *testing.T, o Opener) {
	s := open(t, o)
	if !beat(t, s, "i-a", at(0)) {
		t.Error("the first Beat says the instance was registered already")
	}
	if beat(t, s, "i-a", at(time.Second)) {
		t.Error("a second Beat says the instance was not registered")
	}
	// the beat moved the heartbeat: a bound at the second beat leaves it live
	if got := recoverAs(t, s, "i-b", at(time.Second), false); !got.Empty() {
		t.Errorf("Recover took an instance that beat at the bound for dead: %+v", got)
	}
	if got := recoverAs(t, s, "i-b", at(2*time.Second), false); fmt.Sprint(got.Instances) != "[i-a]" {
		t.Errorf("Recover forgot %v, want [i-a]", got.Instances)
	}
	if !beat(t, s, "i-a", at(3*time.Second)) {
		t.Error("Beat of a forgotten instance does not say it registered it again")
	}
}

func testRecoverStaleRun(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	beat(t, s, "i-dead", at(0))
	beat(t, s, "i-self", at(time.Hour))
	mustStart(t, s, runOf("run-dead", "i-dead"))
	if err := s.StartRun(ctx, runOf("run-next", "i-self"), 0, month); !errors.Is(err, budget.ErrConcurrentRuns) {
		t.Fatalf("StartRun beside a live run = %v, want ErrConcurrentRuns", err)
	}
	got := recoverAs(t, s, "i-self", at(time.Minute), false)
	if fmt.Sprint(runIDs(got.Runs)) != "[run-dead]" || fmt.Sprint(got.Instances) != "[i-dead]" {
		t.Fatalf("Recover ended runs %v and forgot %v, want [run-dead] and [i-dead]", runIDs(got.Runs), got.Instances)
	}
	if r := got.Runs[0]; r.Tenant != "t1" || r.Profile != "seo-specialist" || r.Session != "sess-run-dead" || r.Instance != "i-dead" {
		t.Errorf("Recover returned run %+v, want its tenant, profile, session and instance", r)
	}
	st := mustStatus(t, s, "run-dead")
	if st.Run.Ended.IsZero() || st.Run.Instance != "i-dead" {
		t.Errorf("after recovery the run is %+v, want it ended, still naming its instance", st.Run)
	}
	if _, err := s.Turn(ctx, "run-dead"); !errors.Is(err, budget.ErrRunEnded) {
		t.Errorf("Turn of a recovered run = %v, want ErrRunEnded", err)
	}
	// the profile may run again, and the ended run, which spent nothing, takes nothing from the day
	next := runOf("run-next", "i-self")
	next.Allowances = []budget.Allowance{allow(firecrawl, 1000, 1000)}
	if err := s.StartRun(ctx, next, 0, month); err != nil {
		t.Fatalf("StartRun after recovery = %v, want it admitted", err)
	}
	if got := recoverAs(t, s, "i-self", at(time.Minute), false); !got.Empty() {
		t.Errorf("a second recovery freed %+v, want nothing", got)
	}
}

func testRecoverLeavesLive(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	beat(t, s, "i-live", at(2*time.Minute))
	beat(t, s, "i-self", at(0)) // stale, but it is the one recovering
	for _, r := range []*budget.Run{runOf("run-live", "i-live"), runOf("run-self", "i-self"), runOf("run-none", "")} {
		r.Profile = r.ID // each its own profile, so all three are live
		mustStart(t, s, r)
		res := reservation("res-"+r.ID, r.ID, firecrawl, 3, at(time.Minute))
		res.Call = "call-" + r.ID
		mustReserve(t, s, res)
	}
	for _, inst := range []string{"i-live", "i-self", ""} {
		c := newCard("card-"+inst, "t1", at(time.Minute))
		c.Instance = inst
		mustCreateCard(t, s, c)
	}
	if got := recoverAs(t, s, "i-self", at(time.Minute), false); !got.Empty() {
		t.Fatalf("Recover freed %+v; every instance is live (or none is named)", got)
	}
	for _, id := range []string{"run-live", "run-self", "run-none"} {
		if st := mustStatus(t, s, id); !st.Run.Ended.IsZero() {
			t.Errorf("run %s ended", id)
		}
		wantSpent(t, s, id, firecrawl, 3, 0)
	}
	for _, inst := range []string{"i-live", "i-self", ""} {
		c, err := s.Card(ctx, "", "card-"+inst)
		if err != nil {
			t.Fatalf("Card: %v", err)
		}
		if c.State != approval.Pending || c.Instance != inst {
			t.Errorf("card of instance %q is %s with instance %q, want pending with its instance", inst, c.State, c.Instance)
		}
	}
}

func testRecoverDeadReservations(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	beat(t, s, "i-dead", at(0))
	mustStart(t, s, runOf("run-dead", "i-dead"))
	mustStart(t, s, func() *budget.Run { r := runOf("run-ended", "i-dead"); r.Profile = "other"; return r }())
	type res struct {
		id, run, call string
		amount        float64
		settle        bool
	}
	all := []res{
		{"ran", "run-dead", "call-ran", 1, true},              // decision to run on record
		{"asked", "run-dead", "call-asked", 2, false},         // only the ask and the approval
		{"undecided", "run-dead", "call-undecided", 4, false}, // nothing at all
		{"legacy", "run-dead", "", 8, true},                   // made before calls were recorded
		{"in-flight", "run-ended", "call-in-flight", 16, true},
	}
	for _, r := range all {
		v := reservation(r.id, r.run, firecrawl, r.amount, at(time.Minute))
		v.Call = r.call
		mustReserve(t, s, v)
	}
	decided(t, s, "call-ran", audit.KindDecision, "allow")
	decided(t, s, "call-asked", audit.KindDecision, "ask")
	decided(t, s, "call-asked", audit.KindApproval, "allow")
	decided(t, s, "call-in-flight", audit.KindDecision, "allow")
	mustEnd(t, s, "run-ended") // a run that ended with its call in flight

	got := recoverAs(t, s, "i-self", at(time.Minute), false)
	if got.Settled != 3 || got.Released != 2 {
		t.Errorf("Recover settled %d and released %d, want 3 and 2", got.Settled, got.Released)
	}
	wantSpent(t, s, "run-dead", firecrawl, 0, 1+8)
	wantSpent(t, s, "run-ended", firecrawl, 0, 16)
	for _, r := range all {
		if err := s.Release(ctx, r.id, at(2*time.Hour)); !errors.Is(err, budget.ErrNotReserved) {
			t.Errorf("Release(%s) after recovery = %v, want ErrNotReserved", r.id, err)
		}
	}
}

func testRecoverCards(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	beat(t, s, "i-dead", at(0))
	beat(t, s, "i-live", at(time.Hour))
	for _, id := range []string{"dead-1", "dead-2", "live"} {
		c := newCard(id, "t1", at(time.Minute))
		c.Instance = "i-dead"
		if id == "live" {
			c.Instance = "i-live"
		}
		mustCreateCard(t, s, c)
	}
	answered := newCard("answered", "t1", at(time.Minute))
	answered.Instance = "i-dead"
	mustCreateCard(t, s, answered)
	mustResolve(t, s, "answered", approval.Denied, approval.Deny, "ops@example.com", approval.ChannelAPI, at(2*time.Minute))
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch, err := s.Watch(wctx, "dead-1")
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}

	got := recoverAs(t, s, "i-live", at(time.Minute), false)
	var ids []string
	for _, c := range got.Cards {
		ids = append(ids, c.ID)
		if c.State != approval.Expired || c.Channel != approval.ChannelCanceled || !c.Answered.Equal(at(time.Hour)) ||
			c.Instance != "i-dead" || c.Tool != "mcp__shopify__shopify_admin_graphql" || c.Session != "sess-"+c.ID {
			t.Errorf("Recover returned card %+v, want it whole, expired through channel canceled at the recovery's time", c)
		}
	}
	sort.Strings(ids)
	if fmt.Sprint(ids) != "[dead-1 dead-2]" {
		t.Fatalf("Recover expired %v, want [dead-1 dead-2]", ids)
	}
	if c, err := s.Card(ctx, "", "dead-2"); err != nil || c.State != approval.Expired || c.Channel != approval.ChannelCanceled {
		t.Errorf("Card(dead-2) after recovery = %+v, %v; want expired, canceled", c, err)
	}
	if _, err := s.Resolve(ctx, "dead-1", approval.Allowed, approval.AllowOnce, "ops@example.com", approval.ChannelAPI, at(2*time.Hour)); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("an answer to an expired card = %v, want ErrNotPending", err)
	}
	if !closedWithin(watch, waitFor) {
		t.Error("a watch on a card recovery expired did not fire")
	}
	for id, want := range map[string]approval.State{"live": approval.Pending, "answered": approval.Denied} {
		if c, err := s.Card(ctx, "", id); err != nil || c.State != want {
			t.Errorf("Card(%s) = %+v, %v; want %s", id, c, err, want)
		}
	}
}

func testRecoverLeaving(t *testing.T, o Opener) {
	s := open(t, o)
	beat(t, s, "i-self", at(time.Hour))
	mustStart(t, s, runOf("run-self", "i-self"))
	c := newCard("card-self", "t1", at(time.Minute))
	c.Instance = "i-self"
	mustCreateCard(t, s, c)
	got := recoverAs(t, s, "i-self", at(time.Minute), true)
	if fmt.Sprint(runIDs(got.Runs)) != "[run-self]" || len(got.Cards) != 1 || fmt.Sprint(got.Instances) != "[i-self]" {
		t.Errorf("a leaving instance's recovery freed %+v, want its run, its card and itself", got)
	}
	if !beat(t, s, "i-self", at(2*time.Hour)) {
		t.Error("the instance is still registered after it left")
	}
}

// testRaceRecover: recoveries by several instances at once free each row once, and charge each
// reservation once.
func testRaceRecover(t *testing.T, o Opener) {
	s := open(t, o)
	stores := instances(t, o, s)
	const runs, perRun = 10, 5
	beat(t, s, "i-dead", at(0))
	for i := range runs {
		r := runOf(fmt.Sprintf("run-%d", i), "i-dead")
		r.Profile = r.ID
		mustStart(t, s, r)
		for j := range perRun {
			v := reservation(fmt.Sprintf("res-%d-%d", i, j), r.ID, firecrawl, 1, at(time.Minute))
			mustReserve(t, s, v) // no call recorded: settled
		}
		c := newCard(fmt.Sprintf("card-%d", i), "t1", at(time.Minute))
		c.Instance = "i-dead"
		mustCreateCard(t, s, c)
	}
	const racers = 8
	var (
		wg                   sync.WaitGroup
		mu                   sync.Mutex
		ended, cards, forgot []string
		settled              int
	)
	for k := range racers {
		st := stores[k%len(stores)]
		self := fmt.Sprintf("i-racer-%d", k)
		beat(t, st, self, at(time.Hour))
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := st.Recover(t.Context(), instance.Recovery{Self: self, StaleBefore: at(time.Minute), At: at(time.Hour)})
			if err != nil {
				t.Errorf("Recover: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ended = append(ended, runIDs(got.Runs)...)
			for _, c := range got.Cards {
				cards = append(cards, c.ID)
			}
			forgot = append(forgot, got.Instances...)
			settled += got.Settled + got.Released
		}()
	}
	wg.Wait()
	if len(ended) != runs || len(cards) != runs || fmt.Sprint(forgot) != "[i-dead]" || settled != runs*perRun {
		t.Errorf("the recoveries together ended %d runs, expired %d cards, settled %d reservations and forgot %v; want %d, %d, %d and [i-dead]",
			len(ended), len(cards), settled, forgot, runs, runs, runs*perRun)
	}
	for i := range runs {
		wantSpent(t, s, fmt.Sprintf("run-%d", i), firecrawl, 0, perRun)
	}
}
