// Package instance keeps a record of the processes that serve sessions on a store, and frees
// what one of them held when it stops without saying so (kill -9, a lost machine).
//
// Every process that serves sessions (warden serve, warden mcp) registers an Instance and
// beats its heartbeat on an interval. Runs, cards and, through their runs, reservations carry
// the instance that holds them. An instance whose heartbeat is older than a bound (several
// intervals) is dead, and recovery, run by every live instance at its start and on every beat,
// frees what it held, in one step per store:
//
//   - its live runs end, so a profile at maxConcurrentRuns counts them no more;
//   - its pending cards expire with channel canceled: nobody waits for their answer, and an
//     answer could run nothing; the Keeper records an approval event (deny, approval_canceled)
//     for each;
//   - its open reservations are settled at the amount reserved when the call's decision to run
//     is on record (the call may have run), and released when it is not (the gate records the
//     decision before it runs anything, so such a call cannot have run); reservations made
//     before calls were recorded on them are settled, never free;
//   - the instance is forgotten.
//
// A process shutting down cleanly recovers its own rows the same way (Recovery.Leaving).
// Rows that carry no instance (an embedder's gate without one) are never touched.
//
// Heartbeats are stamped with each instance's clock, so instances sharing a store need clocks
// that agree to well within the staleness bound. An instance that was taken for dead (paused
// for longer than the bound) registers again at its next beat; the runs recovery ended stay
// ended, and their sessions make no more billed calls: recovery fails closed.
package instance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/budget"
	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/verdict"
)

// Instance is one process serving sessions on a store.
type Instance struct {
	ID        string
	Started   time.Time
	Heartbeat time.Time
}

// Recovery says whose rows a recovery frees.
type Recovery struct {
	// Self is the recovering instance: never taken for dead, unless Leaving.
	Self string
	// StaleBefore: an instance whose heartbeat is before it is dead, and so is an instance
	// named on a row that is not registered at all (it shut down, or was forgotten).
	StaleBefore time.Time
	// At stamps what recovery ends, expires, settles and releases.
	At time.Time
	// Leaving: Self is shutting down cleanly, and its own rows are freed too.
	Leaving bool
}

// Recovered is what a recovery freed.
type Recovered struct {
	// Instances are the dead instances forgotten.
	Instances []string
	// Runs are the runs ended.
	Runs []budget.Run
	// Cards are the cards expired, as they now are (state expired, channel canceled).
	Cards []*approval.Card
	// Settled and Released count the reservations resolved each way.
	Settled, Released int
}

// Empty reports whether the recovery freed nothing.
func (r *Recovered) Empty() bool {
	return len(r.Instances) == 0 && len(r.Runs) == 0 && len(r.Cards) == 0 && r.Settled == 0 && r.Released == 0
}

// Store keeps instances and recovers the rows of dead ones. Implementations are safe for
// concurrent use, and Recover is atomic across every instance sharing the store: of two
// recoveries at once, each row is freed by exactly one.
type Store interface {
	// Beat records the instance's heartbeat (Heartbeat), registering it if it is not
	// registered; registered reports that it was not (its first beat, or recovery forgot it).
	Beat(ctx context.Context, inst *Instance) (registered bool, err error)
	// Recover frees, in one transaction, what dead instances held (see the package
	// documentation) and forgets them.
	Recover(ctx context.Context, r Recovery) (*Recovered, error)
}

// The defaults of Options.
const (
	DefaultInterval = 10 * time.Second
	// StaleBeats is how many intervals without a beat make an instance dead by default.
	StaleBeats = 3
)

// Options configures a Keeper. Store and Log are required.
type Options struct {
	Store Store
	// Log records an approval event for every card recovery expires, and a run event for
	// every run it ends.
	Log audit.Log
	// Clock defaults to the real one.
	Clock clock.Clock
	// Interval is how often the instance beats and recovers (0: DefaultInterval).
	Interval time.Duration
	// Stale is how long without a beat makes an instance dead (0: StaleBeats intervals). It
	// must be longer than Interval.
	Stale time.Duration
	// Logger reports what recovery did and what failed; the default is slog's.
	Logger *slog.Logger
}

// Keeper is this process's instance: it registers it, beats and recovers on an interval, and
// frees the instance's own rows when it is closed. It is safe for concurrent use.
type Keeper struct {
	o    Options
	inst Instance

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Start registers a new instance, recovers what dead instances left, and beats in the
// background until Close. An error means the instance could not be registered or recovery
// failed: nothing should be served then.
func Start(ctx context.Context, o Options) (*Keeper, error) {
	if o.Store == nil || o.Log == nil {
		return nil, errors.New("instance: a store and an audit log are both required")
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Stale <= 0 {
		o.Stale = StaleBeats * o.Interval
	}
	if o.Stale <= o.Interval {
		return nil, fmt.Errorf("instance: the staleness bound %v must be longer than the heartbeat interval %v", o.Stale, o.Interval)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	now := o.Clock.Now()
	k := &Keeper{o: o, inst: Instance{ID: newID(), Started: now, Heartbeat: now},
		stop: make(chan struct{}), done: make(chan struct{})}
	if _, err := o.Store.Beat(ctx, &k.inst); err != nil {
		return nil, fmt.Errorf("register instance %s: %w", k.inst.ID, err)
	}
	if err := k.recover(ctx, false); err != nil {
		return nil, err
	}
	go k.loop()
	return k, nil
}

// ID is the instance's id, for gate.Options.Instance and approval.Options.Instance.
func (k *Keeper) ID() string { return k.inst.ID }

// Close stops the heartbeat and frees what the instance still holds (runs its sessions did not
// end, cards nobody will wait on), so that nothing waits for the staleness bound. Closing twice
// is harmless.
func (k *Keeper) Close(ctx context.Context) error {
	first := false
	k.once.Do(func() { first = true; close(k.stop) })
	<-k.done
	if !first {
		return nil
	}
	return k.recover(ctx, true)
}

func (k *Keeper) loop() {
	defer close(k.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-k.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		tick, stopTick := k.o.Clock.After(k.o.Interval)
		select {
		case <-k.stop:
			stopTick()
			return
		case <-tick:
		}
		k.beat(ctx)
	}
}

// beat records the heartbeat, then frees what instances that stopped beating held.
func (k *Keeper) beat(ctx context.Context) {
	k.inst.Heartbeat = k.o.Clock.Now()
	registered, err := k.o.Store.Beat(ctx, &k.inst)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			k.o.Logger.Error("instance heartbeat failed; other instances take this one for dead after the staleness bound",
				"instance", k.inst.ID, "stale", k.o.Stale, "err", err)
		}
		return
	case registered:
		k.o.Logger.Warn("this instance was taken for dead (no heartbeat within the staleness bound) and is registered again; the runs and cards it held were ended",
			"instance", k.inst.ID, "stale", k.o.Stale)
	}
	if err := k.recover(ctx, false); err != nil && ctx.Err() == nil {
		k.o.Logger.Error("recovery failed; it is tried again at the next heartbeat", "instance", k.inst.ID, "err", err)
	}
}

// recover frees what dead instances (and, leaving, this one) held, and records it.
func (k *Keeper) recover(ctx context.Context, leaving bool) error {
	now := k.o.Clock.Now()
	got, err := k.o.Store.Recover(ctx, Recovery{Self: k.inst.ID, StaleBefore: now.Add(-k.o.Stale), At: now, Leaving: leaving})
	if err != nil {
		return fmt.Errorf("recover what stopped instances held: %w", err)
	}
	if got.Empty() {
		return nil
	}
	var errs []error
	for _, c := range got.Cards {
		e := audit.Event{Time: now, Kind: audit.KindApproval, Tenant: c.Tenant, Session: c.Session,
			Principal: c.Principal, Tool: c.Tool, Digest: c.Digest, PolicyRevision: c.PolicyRevision,
			Decision: verdict.Deny.String(), Channel: string(approval.ChannelCanceled),
			Blockers: []audit.Blocker{{Code: string(verdict.ApprovalCanceled),
				Detail: "the process whose call waited on the card stopped (instance " + c.Instance + ")"}}}
		errs = append(errs, k.o.Log.Append(ctx, &e))
	}
	for _, r := range got.Runs {
		e := audit.Event{Time: now, Kind: audit.KindRun, Tenant: r.Tenant, Session: r.Session, Profile: r.Profile,
			Run: r.ID, Outcome: "ended", Error: "the process that held the run stopped (instance " + r.Instance + ")"}
		errs = append(errs, k.o.Log.Append(ctx, &e))
	}
	level := slog.LevelWarn
	if leaving {
		level = slog.LevelInfo
	}
	k.o.Logger.Log(ctx, level, "freed what stopped instances held", "instances", got.Instances,
		"runs_ended", len(got.Runs), "cards_expired", len(got.Cards),
		"reservations_settled", got.Settled, "reservations_released", got.Released)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("record what recovery freed: %w", err)
	}
	return nil
}

func newID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "i-" + hex.EncodeToString(b[:])
}
