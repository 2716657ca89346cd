package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/audit"
)

// fullEvent is an event with every field set.
func fullEvent() *audit.Event {
	return &audit.Event{
		Time:      at(1500 * time.Microsecond),
		Kind:      audit.KindDecision,
		CallID:    "call-1",
		Tenant:    "t1",
		Session:   "sess-1",
		Principal: "agent:coworker-7",
		Role:      "specialist",
		Profile:   "seo-specialist",
		Run:       "run-1",
		Tool:      "mcp__firecrawl__scrape",
		Digest:    "sha256:0123456789abcdef",
		Decision:  "ask",
		Blockers: []audit.Blocker{
			{Code: "hard_policy_block:user_configured_hard_block", Rule: "no-keys", Detail: "reads ~/.ssh/id_ed25519"},
			{Code: "approval_required"},
		},
		Rules:          []string{"no-keys", "firecrawl-spend"},
		Approver:       "alice@example.com",
		Channel:        "elicitation",
		Spend:          &audit.Spend{Connector: "firecrawl", Unit: "credits", Amount: 2.75},
		Outcome:        "error",
		Error:          "upstream said \"429\"\nretry later",
		PolicyRevision: "rev-42",
		Harness:        "claude-code",
	}
}

func mustAppend(t *testing.T, s audit.Log, e *audit.Event) {
	t.Helper()
	if err := s.Append(t.Context(), e); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func mustQuery(t *testing.T, s audit.Log, f audit.Filter) []*audit.Event {
	t.Helper()
	got, err := s.Query(t.Context(), f)
	if err != nil {
		t.Fatalf("Query(%+v): %v", f, err)
	}
	return got
}

func testAuditAppendIDs(t *testing.T, o Opener) {
	s := open(t, o)
	var last int64
	for i := range 10 {
		e := &audit.Event{Time: at(time.Duration(i) * time.Second), Kind: audit.KindDecision, Tenant: "t1"}
		if i%3 == 0 {
			e.Time = at(-time.Duration(i) * time.Second) // IDs follow appends, not times
		}
		mustAppend(t, s, e)
		if e.ID <= last {
			t.Fatalf("append %d got ID %d, want above %d", i, e.ID, last)
		}
		last = e.ID
	}
	// the caller's ID is not used: the log assigns one
	e := &audit.Event{ID: 1, Time: t0, Kind: audit.KindRun, Tenant: "t1"}
	mustAppend(t, s, e)
	if e.ID <= last {
		t.Errorf("an event appended with ID 1 got ID %d, want above %d", e.ID, last)
	}
	if got := len(mustQuery(t, s, audit.Filter{})); got != 11 {
		t.Errorf("Query returned %d events, want 11", got)
	}
}

func testAuditRoundTrip(t *testing.T, o Opener) {
	s := open(t, o)
	full := fullEvent()
	bare := &audit.Event{Time: at(time.Second), Kind: audit.KindRun}
	nanos := &audit.Event{Time: at(2*time.Second + 123*time.Microsecond), Kind: audit.KindOutcome, Outcome: "ok",
		Tenant: "t1", Spend: &audit.Spend{Connector: "dataforseo", Unit: "USD", Amount: 0.1 + 0.2}}
	zone := &audit.Event{Time: at(3 * time.Second).In(time.FixedZone("CEST", 2*3600)), Kind: audit.KindApproval,
		Decision: "allow", Approver: "bob", Channel: "api", Blockers: []audit.Blocker{}, Rules: []string{}}
	want := []*audit.Event{full, bare, nanos, zone}
	for _, e := range want {
		mustAppend(t, s, e)
	}
	got := mustQuery(t, s, audit.Filter{})
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("events read back (-want +got):\n%s", diff)
	}
	all := instances(t, o, s)
	if diff := cmp.Diff(want, mustQuery(t, all[len(all)-1], audit.Filter{}), cmpOpts...); diff != "" {
		t.Errorf("events read back by another instance (-want +got):\n%s", diff)
	}
}

// matches is the Filter's meaning, as the suite reads it: empty fields select everything;
// Since is inclusive and Until exclusive; AfterID pages forward.
func matches(f audit.Filter, e *audit.Event) bool {
	eq := func(want, got string) bool { return want == "" || want == got }
	return eq(f.Tenant, e.Tenant) && eq(f.Session, e.Session) && eq(f.Tool, e.Tool) &&
		eq(f.Decision, e.Decision) && eq(f.Kind, e.Kind) && eq(f.CallID, e.CallID) && eq(f.Harness, e.Harness) &&
		(f.Since.IsZero() || !e.Time.Before(f.Since)) &&
		(f.Until.IsZero() || e.Time.Before(f.Until)) &&
		e.ID > f.AfterID
}

func testAuditQuery(t *testing.T, o Opener) {
	s := open(t, o)
	var events []*audit.Event
	tenants := []string{"t1", "t2", "t1", "t1", "t3"}
	sessions := []string{"s1", "s2", "s3"}
	tools := []string{"files_read", "shell_exec", "mcp__github__github_comment", "mcp__firecrawl__scrape"}
	decisions := []string{"allow", "ask", "deny", ""}
	harnesses := []string{"", "", "claude-code", "ci-bot", "", "", "claude-code"}
	kinds := []string{audit.KindDecision, audit.KindApproval, audit.KindOutcome, audit.KindDecision, audit.KindRun}
	for i := range 40 {
		e := &audit.Event{
			Time:     at(time.Duration(i*7%40) * time.Second), // times not in ID order
			Kind:     kinds[i%len(kinds)],
			CallID:   fmt.Sprintf("call-%d", i/3),
			Tenant:   tenants[i%len(tenants)],
			Session:  sessions[i%len(sessions)],
			Tool:     tools[i%len(tools)],
			Decision: decisions[i%len(decisions)],
			Harness:  harnesses[i%len(harnesses)],
		}
		mustAppend(t, s, e)
		events = append(events, e)
	}
	mid := events[20].ID
	tests := []struct {
		name string
		give audit.Filter
		min  int // at least this many events match, so that the case means something
	}{
		{"everything", audit.Filter{}, 40},
		{"tenant", audit.Filter{Tenant: "t1"}, 20},
		{"session", audit.Filter{Session: "s2"}, 10},
		{"tool", audit.Filter{Tool: "shell_exec"}, 10},
		{"decision", audit.Filter{Decision: "deny"}, 10},
		{"kind", audit.Filter{Kind: audit.KindDecision}, 10},
		{"call id", audit.Filter{CallID: "call-4"}, 3},
		{"harness", audit.Filter{Harness: "claude-code"}, 10},
		{"harness and tenant", audit.Filter{Harness: "ci-bot", Tenant: "t1"}, 2},
		{"tenant and session", audit.Filter{Tenant: "t1", Session: "s1"}, 5},
		{"tenant, tool and decision", audit.Filter{Tenant: "t1", Tool: "files_read", Decision: "allow"}, 2},
		{"kind and tenant", audit.Filter{Kind: audit.KindOutcome, Tenant: "t1"}, 4},
		{"since (inclusive)", audit.Filter{Since: at(30 * time.Second)}, 10},
		{"until (exclusive)", audit.Filter{Until: at(10 * time.Second)}, 10},
		{"time range", audit.Filter{Since: at(10 * time.Second), Until: at(20 * time.Second)}, 10},
		{"time range within a nanosecond", audit.Filter{Since: at(15 * time.Second), Until: at(15*time.Second + time.Nanosecond)}, 1},
		{"time range and tenant", audit.Filter{Tenant: "t2", Since: at(10 * time.Second), Until: at(30 * time.Second)}, 4},
		{"after an id", audit.Filter{AfterID: mid}, 19},
		{"after an id, with a tenant", audit.Filter{AfterID: mid, Tenant: "t1"}, 9},
		{"unknown tenant", audit.Filter{Tenant: "t9"}, 0},
		{"tenant names are exact", audit.Filter{Tenant: "T1"}, 0},
		{"an empty range", audit.Filter{Since: at(20 * time.Second), Until: at(20 * time.Second)}, 0},
		{"after the last", audit.Filter{AfterID: events[39].ID}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []*audit.Event
			for _, e := range events {
				if matches(tt.give, e) {
					want = append(want, e)
				}
			}
			if len(want) < tt.min {
				t.Fatalf("the fixture gives %d events, the case needs %d", len(want), tt.min)
			}
			got := mustQuery(t, s, tt.give)
			if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
				t.Errorf("Query(%+v) (-want +got):\n%s", tt.give, diff)
			}
			// Limit takes the first matching events in ID order
			if len(want) > 2 {
				f := tt.give
				f.Limit = 2
				if diff := cmp.Diff(want[:2], mustQuery(t, s, f), cmpOpts...); diff != "" {
					t.Errorf("Query(%+v) with a limit (-want +got):\n%s", f, diff)
				}
			}
		})
	}
}

func testAuditPaging(t *testing.T, o Opener) {
	s := open(t, o)
	var want []int64
	for i := range 25 {
		e := &audit.Event{Time: at(time.Duration(i) * time.Second), Kind: audit.KindDecision, Tenant: "t1", CallID: fmt.Sprint(i)}
		if i%4 == 3 {
			e.Tenant = "t2"
		}
		mustAppend(t, s, e)
		if e.Tenant == "t1" {
			want = append(want, e.ID)
		}
	}
	var (
		got   []int64
		pages []int
		after int64
	)
	for range 10 {
		page := mustQuery(t, s, audit.Filter{Tenant: "t1", AfterID: after, Limit: 5})
		if len(page) == 0 {
			break
		}
		pages = append(pages, len(page))
		for _, e := range page {
			got = append(got, e.ID)
		}
		after = page[len(page)-1].ID
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paged IDs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{5, 5, 5, 4}, pages); diff != "" {
		t.Errorf("page sizes (-want +got):\n%s", diff)
	}
}

func testAuditConcurrentAppends(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	const n = 100
	var (
		mu  sync.Mutex
		ids = map[int64]string{}
	)
	errs := race(all, n, func(st Store, i int) error {
		e := &audit.Event{Time: at(time.Duration(i) * time.Millisecond), Kind: audit.KindDecision, Tenant: "t1",
			CallID: fmt.Sprintf("call-%d", i), Decision: "allow"}
		if err := st.Append(context.Background(), e); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if prev, dup := ids[e.ID]; dup {
			return fmt.Errorf("ID %d given to %s and %s", e.ID, prev, e.CallID)
		}
		ids[e.ID] = e.CallID
		return nil
	})
	tally(t, errs, nil)
	got := mustQuery(t, s, audit.Filter{})
	if len(got) != n {
		t.Fatalf("Query returned %d events, want %d", len(got), n)
	}
	seen := map[string]bool{}
	for i, e := range got {
		if i > 0 && e.ID <= got[i-1].ID {
			t.Errorf("event %d has ID %d after ID %d: not in ID order", i, e.ID, got[i-1].ID)
		}
		if ids[e.ID] != e.CallID {
			t.Errorf("event ID %d holds %s, Append reported %s", e.ID, e.CallID, ids[e.ID])
		}
		seen[e.CallID] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct calls recorded, want %d", len(seen), n)
	}
}

// testAuditAppendAll checks a batch append, where the store offers one: one commit, IDs in
// order, every field kept.
func testAuditAppendAll(t *testing.T, o Opener) {
	s := open(t, o)
	b, ok := s.(audit.Batcher)
	if !ok {
		t.Skip("the store appends one event at a time")
	}
	mustAppend(t, s, &audit.Event{Time: t0, Kind: audit.KindRun, Tenant: "t1"})
	batch := []*audit.Event{fullEvent(), fullEvent(), fullEvent()}
	for i, e := range batch {
		e.CallID = fmt.Sprintf("batch-%d", i)
	}
	if err := b.AppendAll(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(batch); i++ {
		if batch[i].ID <= batch[i-1].ID {
			t.Errorf("IDs %d then %d: want increasing", batch[i-1].ID, batch[i].ID)
		}
	}
	got := mustQuery(t, s, audit.Filter{CallID: "batch-1"})
	if len(got) != 1 || got[0].ID != batch[1].ID {
		t.Fatalf("query by call after a batch: %+v", got)
	}
	want := fullEvent()
	want.ID, want.CallID, want.Time = got[0].ID, "batch-1", got[0].Time
	want.PrevHash, want.Hash = batch[1].PrevHash, batch[1].Hash // as AppendAll set them
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("a batched event (-want +got):\n%s", diff)
	}
	if err := b.AppendAll(context.Background(), nil); err != nil {
		t.Errorf("an empty batch: %v", err)
	}
}
