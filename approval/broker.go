package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/verdict"
)

// Request is a call that asks a person.
type Request struct {
	Tenant, Session, Principal string
	Tool                       string
	Digest                     string
	PolicyRevision             string
	// Args are shown to the person; protected values must already be redacted.
	Args   []byte
	Reason string
	// Channel says whether anybody can answer in this session.
	Channel bool
}

// Outcome is what came of a request.
type Outcome struct {
	Decision verdict.Decision
	// Code says why: for an allow, "" (a person allowed it) or "standing" (a saved allow for
	// this tenant); for a deny, one of the approval codes or no_approval_channel.
	Code     verdict.Code
	Approver string
	Card     *Card
	Standing *Standing
}

// Broker parks calls on cards and waits for their answers. It is safe for concurrent use.
type Broker struct {
	store   Store
	clock   clock.Clock
	timeout time.Duration
	onCard  func(*Card)
	inst    string
}

// Options configures a Broker.
type Options struct {
	Store Store
	// Clock defaults to the real one.
	Clock clock.Clock
	// Timeout is how long a card waits before it denies (APPROVAL_TIMEOUT_MS); 0 denies at once.
	Timeout time.Duration
	// OnCard, if set, is told of every card created (to notify people) and of every card
	// leaving pending.
	OnCard func(*Card)
	// Instance is this process's instance id, recorded on every card (Card.Instance) so that
	// recovery expires the cards of a process that died; "" records none.
	Instance string
}

// NewBroker returns a broker.
func NewBroker(o Options) *Broker {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &Broker{store: o.Store, clock: o.Clock, timeout: o.Timeout, onCard: o.OnCard, inst: o.Instance}
}

// Decide asks a person about a call and waits for the answer, the deadline, or ctx. A saved
// allow for this tenant and exactly this call (tool and digest) allows it without a card.
func (b *Broker) Decide(ctx context.Context, req Request) (Outcome, error) {
	return b.decide(ctx, req, b.timeout)
}

// DecideWithin is Decide for a caller that waits at most d: the card's deadline is d from now
// when that comes before the broker's own timeout, and d <= 0 expires the card at once. The
// card is recorded either way, and never outlives the wait (a client of POST /api/v1/review
// that asks for a card it will not wait for).
func (b *Broker) DecideWithin(ctx context.Context, req Request, d time.Duration) (Outcome, error) {
	return b.decide(ctx, req, min(d, b.timeout))
}

func (b *Broker) decide(ctx context.Context, req Request, timeout time.Duration) (Outcome, error) {
	if !req.Channel {
		return Outcome{Code: verdict.NoApprovalChannel}, nil
	}
	switch s, err := b.store.FindStanding(ctx, req.Tenant, req.Tool, req.Digest); {
	case err == nil:
		return Outcome{Decision: verdict.Allow, Code: "standing", Approver: s.Approver, Standing: s}, nil
	case !errors.Is(err, ErrNotFound):
		return Outcome{}, fmt.Errorf("find standing approval: %w", err)
	}
	now := b.clock.Now()
	c := &Card{
		ID: newID(), Tenant: req.Tenant, Session: req.Session, Principal: req.Principal,
		Tool: req.Tool, Digest: req.Digest, PolicyRevision: req.PolicyRevision,
		Args: req.Args, Reason: req.Reason, State: Pending, Instance: b.inst, Created: now, Deadline: now.Add(max(timeout, 0)),
	}
	if err := b.store.CreateCard(ctx, c); err != nil {
		return Outcome{}, fmt.Errorf("create card: %w", err)
	}
	b.notify(c)
	if timeout <= 0 {
		return b.expire(ctx, c, verdict.ApprovalTimeout, ChannelDeadline)
	}
	// Watch before waiting, then look again: an answer that lands in between is not missed.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	changed, err := b.store.Watch(wctx, c.ID)
	if err != nil {
		// The card must not stay pending: an answer to it would run nothing. The caller that
		// went away in the meantime is the common case.
		code, ch := verdict.ApprovalCanceled, ChannelCanceled
		out, xerr := b.expire(context.WithoutCancel(ctx), c, code, ch)
		if ctx.Err() != nil && xerr == nil {
			return out, nil
		}
		return Outcome{}, fmt.Errorf("watch card: %w", err)
	}
	timer, stopTimer := b.clock.After(timeout)
	defer stopTimer()
	select {
	case <-changed:
		return b.settled(ctx, c.ID)
	case <-timer:
		return b.expire(ctx, c, verdict.ApprovalTimeout, ChannelDeadline)
	case <-ctx.Done():
		// The caller went away: expire the card so nobody answers a call that will not run.
		return b.expire(context.WithoutCancel(ctx), c, verdict.ApprovalCanceled, ChannelCanceled)
	}
}

// expire ends a pending card without an answer; if an answer won the race, it stands.
func (b *Broker) expire(ctx context.Context, c *Card, code verdict.Code, ch Channel) (Outcome, error) {
	done, err := b.store.Resolve(ctx, c.ID, Expired, "", "", ch, b.clock.Now())
	switch {
	case errors.Is(err, ErrNotPending):
		return b.settled(ctx, c.ID)
	case err != nil:
		return Outcome{}, fmt.Errorf("expire card: %w", err)
	}
	b.notify(done)
	return Outcome{Code: code, Card: done}, nil
}

// settled reads a card that has left pending and turns its answer into an outcome.
func (b *Broker) settled(ctx context.Context, id string) (Outcome, error) {
	c, err := b.store.Card(ctx, "", id)
	if err != nil {
		return Outcome{}, fmt.Errorf("read answered card: %w", err)
	}
	switch c.State {
	case Allowed:
		return Outcome{Decision: verdict.Allow, Approver: c.Approver, Card: c}, nil
	case Denied:
		return Outcome{Code: verdict.ApprovalDenied, Approver: c.Approver, Card: c}, nil
	case Expired:
		if c.Channel == ChannelCanceled {
			return Outcome{Code: verdict.ApprovalCanceled, Card: c}, nil
		}
		return Outcome{Code: verdict.ApprovalTimeout, Card: c}, nil
	}
	return Outcome{}, fmt.Errorf("card %s woke its watcher while still %s", id, c.State)
}

// ErrDigestMismatch is matched when an answer names a call other than the card's.
var ErrDigestMismatch = errors.New("the answer is for another call than the card's")

// Answer records a person's answer to a card of the tenant ("" for any tenant: an admin),
// given through channel (ChannelAPI, ChannelCLI, ChannelElicitation, or an embedder's own
// word; never empty, and never one of the channels that end a card unanswered). digest, when
// given, must be the card's: an answer is bound to the exact call it was shown. allow_tenant
// also saves a standing approval for the tenant, tool and digest. A card that was already
// answered or expired gives ErrNotPending; another tenant's, ErrNotFound.
func (b *Broker) Answer(ctx context.Context, tenant, id string, a Answer, approver string, channel Channel, digest string) (*Card, error) {
	if !a.Valid() {
		return nil, fmt.Errorf("answer %q: want allow_once, allow_tenant or deny", a)
	}
	switch channel {
	case "", ChannelDeadline, ChannelCanceled:
		return nil, fmt.Errorf("answer through %q: an answer names the channel it came through", channel)
	}
	c, err := b.store.Card(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if digest != "" && digest != c.Digest {
		return nil, ErrDigestMismatch
	}
	state := Allowed
	if a == Deny {
		state = Denied
	}
	now := b.clock.Now()
	done, err := b.store.Resolve(ctx, id, state, a, approver, channel, now)
	if err != nil {
		return nil, err
	}
	b.notify(done)
	if a == AllowTenant {
		s := &Standing{ID: newID(), Tenant: done.Tenant, Tool: done.Tool, Digest: done.Digest,
			CardID: done.ID, Approver: approver, Created: now}
		if err := b.store.AddStanding(ctx, s); err != nil {
			return done, fmt.Errorf("the call is allowed, but saving the standing approval failed: %w", err)
		}
	}
	return done, nil
}

func (b *Broker) notify(c *Card) {
	if b.onCard != nil && c != nil {
		b.onCard(c)
	}
}

func newID() string {
	var buf [12]byte
	if _, err := rand.Read(buf[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(buf[:])
}
