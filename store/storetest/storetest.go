// Package storetest is the conformance suite every Warden store passes: cards and standing
// approvals (approval.Store), the ledger (budget.Store), the audit trail (audit.Log), bearer
// tokens (auth.Store), tenants' stored hard blocks (boundary.Store), the instances serving
// on the store, with the recovery of what a dead one held (instance.Store), and the
// management plane's stored objects (manage.Store).
//
// A store's own tests call [Run] with an [Opener]:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Opener{
//			New:     func(t *testing.T) storetest.Store { ... a fresh, empty store ... },
//			Another: func(t *testing.T, s storetest.Store) storetest.Store { ... the same storage ... },
//		})
//	}
//
// Each behaviour the interfaces document is a subtest, and errors are matched with errors.Is
// against the packages' sentinels.
//
// # Readings
//
// Where the interfaces leave a choice open, the suite makes one so that every store behaves
// alike (each is marked "the suite's reading" in the test that makes it):
//
//   - CreateCard stores the card as pending, whatever its State field says.
//   - Cards and Standings are newest first by Created.
//   - Watch of a card that does not exist is approval.ErrNotFound. When a watch's context ends,
//     nothing is left running for it and its channel stays open: an ended watch is not an
//     answer, so the waiter must also select on ctx.Done().
//   - FindStanding matches tenant, tool and digest exactly; tenant "" matches nothing.
//   - StartRun's per-day figure is the new run's own. An ended run whose calls were all
//     released, or that made none, counts for nothing. A refused run is not recorded: RunStatus
//     says budget.ErrNotFound. Negative, NaN and infinite figures are budget.ErrInvalid.
//   - RunStatus.Spent follows the order of the run's allowances; Reserved is what open
//     reservations hold, Settled what settled ones cost.
//   - Reserve on a connector the run has no allowance for is budget.ErrRunAllowance; on a run that
//     was never started, budget.ErrRunEnded.
//   - Settle and Release of an unknown reservation are budget.ErrNotFound; both still work after
//     the run ended (the call was in flight).
//   - RecoverReservations takes reservations made strictly before the given time.
//   - instance.Recovery.StaleBefore is inclusive of the live: an instance that beat exactly at
//     it is live. Recovered lists runs by id; its cards and instances have no order.
//   - ModelSpend of a negative or non-finite amount is budget.ErrInvalid and records nothing.
//   - audit.Filter: Since is inclusive, Until exclusive; Limit keeps the first events in ID
//     order; Append ignores the ID the caller set.
//   - RevokeToken of an unknown token is auth.ErrNotFound; Tokens has no order.
//   - PutBoundaries keeps the bytes it is given (validating is the caller's); ListBoundaries is
//     by tenant.
//   - PutObject keeps the bytes it is given. Objects orders ids bytewise (as Go compares
//     strings); AllObjects orders by kind, then id, both bytewise. A deleted object may be
//     created again (revision 0) in another tenant: nothing of it is left to move. A write over
//     a deleted object with any revision but 0 is manage.ErrStale, a deletion of it
//     manage.ErrNotFound. WatchObjects fires the writer's own watch before the write returns,
//     and its channel closes when its context ends.
//
// The races (50 answers to one card, 200 reservations against an allowance of 50, starts
// against a per-day figure, turns) are spread over two instances when the Opener has Another,
// so that a store shared by several processes is held to the same arithmetic as one. Run the
// suite with -race.
//
// Times handed to the store are UTC with microsecond precision (PostgreSQL keeps no finer),
// and are compared with time.Time.Equal.
package storetest

import (
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/instance"
	"github.com/wardenhq/warden/manage"
)

// Store is everything a Warden store provides.
type Store interface {
	approval.Store
	budget.Store
	audit.Log
	auth.Store
	boundary.Store
	instance.Store
	instance.Sessions
	manage.Store
	audit.Checkpointer
	// SetSigner has the store tell s of every event it appends.
	SetSigner(s *audit.Signer)
	Ping(context.Context) error
	Close() error
}

// Opener opens stores for the suite.
type Opener struct {
	// New opens a fresh, empty store (its own file or schema). The suite closes it with
	// t.Cleanup; cleanups the opener registers itself (dropping a schema, say) run after that.
	New func(t *testing.T) Store
	// Another opens a second instance on the same storage as s, as another process would. The
	// suite closes it too. Nil when the store has no such notion.
	Another func(t *testing.T, s Store) Store
	// Exec runs SQL statements on s's storage by hand, past any guard the store keeps (as
	// someone tampering with the trail would), for the audit chain's tests. Nil: those tests
	// are skipped.
	Exec func(t *testing.T, s Store, stmts ...string)
}

// Run runs every test of the suite as a subtest of t, each on a fresh store.
func Run(t *testing.T, o Opener) {
	t.Helper()
	if o.New == nil {
		t.Fatal("storetest: Opener.New is nil")
	}
	groups := []struct {
		name string
		test func(*testing.T, Opener)
	}{
		{"Ping", testPing},

		{"Cards/CreateAndGet", testCardCreateAndGet},
		{"Cards/List", testCardList},
		{"Cards/Resolve", testCardResolve},
		{"Cards/ResolveOnce", testCardResolveOnce},
		{"Cards/Watch", testCardWatch},
		{"Cards/WatchEndsWithContext", testCardWatchEndsWithContext},
		{"Cards/WatchAcrossInstances", testCardWatchAcrossInstances},

		{"Standings/Find", testStandingFind},
		{"Standings/List", testStandingList},
		{"Standings/Revoke", testStandingRevoke},

		{"Ledger/StartRunDayRule", testStartRunDayRule},
		{"Ledger/StartRunInvalid", testStartRunInvalid},
		{"Ledger/StartRunConcurrency", testStartRunConcurrency},
		{"Ledger/StartRunMonthlyCap", testStartRunMonthlyCap},
		{"Ledger/RunStatus", testRunStatus},
		{"Ledger/DaySpend", testDaySpend},
		{"Ledger/EndRun", testEndRun},
		{"Ledger/Reserve", testReserve},
		{"Ledger/SettleAndRelease", testSettleAndRelease},
		{"Ledger/RecoverReservations", testRecoverReservations},
		{"Ledger/Turn", testTurn},
		{"Ledger/ModelSpend", testModelSpend},
		{"Ledger/RaceReserve", testRaceReserve},
		{"Ledger/RaceReserveSettle", testRaceReserveSettle},
		{"Ledger/RaceStartRunDay", testRaceStartRunDay},
		{"Ledger/RaceStartRunConcurrency", testRaceStartRunConcurrency},
		{"Ledger/RaceTurn", testRaceTurn},
		{"Ledger/RaceModelSpend", testRaceModelSpend},

		{"Instances/Beat", testInstanceBeat},
		{"Instances/StaleRunEnded", testRecoverStaleRun},
		{"Instances/LiveUntouched", testRecoverLeavesLive},
		{"Instances/Reservations", testRecoverDeadReservations},
		{"Instances/Cards", testRecoverCards},
		{"Instances/Leaving", testRecoverLeaving},
		{"Instances/RaceRecover", testRaceRecover},

		{"Sessions/Lifecycle", testSessionLifecycle},
		{"Sessions/Expire", testSessionExpire},
		{"Sessions/RaceExpire", testRaceSessionExpire},
		{"Sessions/Children", testSessionChildren},

		{"Audit/AppendAssignsIDs", testAuditAppendIDs},
		{"Audit/RoundTrip", testAuditRoundTrip},
		{"Audit/Query", testAuditQuery},
		{"Audit/Paging", testAuditPaging},
		{"Audit/ConcurrentAppends", testAuditConcurrentAppends},
		{"Audit/AppendAll", testAuditAppendAll},

		{"Tokens", testTokens},

		{"Boundaries/PutAndGet", testBoundariesPutAndGet},
		{"Boundaries/Race", testBoundariesRace},
		{"Boundaries/Watch", testBoundariesWatch},

		{"Objects/PutAndGet", testObjectsPutAndGet},
		{"Objects/TenantMove", testObjectsTenantMove},
		{"Objects/Delete", testObjectsDelete},
		{"Objects/List", testObjectsList},
		{"Objects/ChangeCount", testObjectsChangeCount},
		{"Objects/Race", testObjectsRace},
		{"Objects/Watch", testObjectsWatch},
		{"Objects/WatchEndsWithContext", testObjectsWatchEndsWithContext},
	}
	groups = append(groups, chainTests...)
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) { g.test(t, o) })
	}
}

// open opens a fresh store and closes it when the test ends.
func open(t *testing.T, o Opener) Store {
	t.Helper()
	s := o.New(t)
	if s == nil {
		t.Fatal("Opener.New returned nil")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// instances returns s and, when the opener has Another, a second instance on its storage.
func instances(t *testing.T, o Opener, s Store) []Store {
	t.Helper()
	if o.Another == nil {
		return []Store{s}
	}
	s2 := o.Another(t, s)
	if s2 == nil {
		t.Fatal("Opener.Another returned nil")
	}
	t.Cleanup(func() {
		if err := s2.Close(); err != nil {
			t.Errorf("Close (second instance): %v", err)
		}
	})
	return []Store{s, s2}
}

// t0 is the suite's fixed time: UTC, microsecond precision.
var t0 = time.Date(2026, 3, 14, 9, 26, 53, 589793000, time.UTC)

// at returns t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// waitFor is how long the suite waits for something that must happen "soon" (a watch to
// fire across instances); generous, because it is a bound, never a sleep.
const waitFor = 10 * time.Second

// cmpOpts compare stored records: times by instant, JSON by value, nil and empty alike.
var cmpOpts = []cmp.Option{
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
	cmp.Comparer(jsonEqual),
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type() != rawJSON }, cmpopts.EquateEmpty()),
}

var rawJSON = reflect.TypeFor[json.RawMessage]()

// jsonEqual compares two JSON texts by value (a store may reformat them, as jsonb does).
func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(x, y)
}

// closed reports whether ch is closed now, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// closedWithin reports whether ch closes within d.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ch:
		return true
	case <-timer.C:
		return false
	}
}

// goroutines counts the running goroutines once the collector has run.
func goroutines() int {
	runtime.GC()
	return runtime.NumGoroutine()
}

// goroutinesBackTo waits, polling, until at most n goroutines run, and reports the count.
func goroutinesBackTo(n int, within time.Duration) (int, bool) {
	deadline := time.Now().Add(within)
	for {
		got := goroutines()
		if got <= n {
			return got, true
		}
		if time.Now().After(deadline) {
			return got, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testPing(t *testing.T, o Opener) {
	s := open(t, o)
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}
