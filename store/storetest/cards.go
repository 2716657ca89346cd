package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/approval"
)

// newCard returns a pending card with every field filled.
func newCard(id, tenant string, created time.Time) *approval.Card {
	return &approval.Card{
		ID:             id,
		Tenant:         tenant,
		Session:        "sess-" + id,
		Principal:      "agent:coworker-7",
		Tool:           "mcp__shopify__shopify_admin_graphql",
		Digest:         "sha256:" + id,
		PolicyRevision: "rev-42",
		Args:           json.RawMessage(`{"query":"mutation { refund }","amount":12.5,"to":["a@example.com"],"n":{"k":null}}`),
		Reason:         "a write to Shopify asks a person",
		State:          approval.Pending,
		Created:        created,
		Deadline:       created.Add(5 * time.Minute),
	}
}

func mustCreateCard(t *testing.T, s approval.Store, c *approval.Card) {
	t.Helper()
	if err := s.CreateCard(t.Context(), c); err != nil {
		t.Fatalf("CreateCard(%s): %v", c.ID, err)
	}
}

func mustResolve(t *testing.T, s approval.Store, id string, state approval.State, answer approval.Answer, approver string, ch approval.Channel, when time.Time) *approval.Card {
	t.Helper()
	c, err := s.Resolve(t.Context(), id, state, answer, approver, ch, when)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", id, err)
	}
	return c
}

func testCardCreateAndGet(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	want := newCard("card-1", "tenant-a", t0)
	mustCreateCard(t, s, want)

	// the suite's reading: CreateCard "stores a new pending card", whatever State the caller left
	// in the struct (here the zero value).
	bare := newCard("card-2", "tenant-a", at(time.Second))
	bare.State = ""
	mustCreateCard(t, s, bare)
	bare.State = approval.Pending

	// a card without arguments
	noArgs := newCard("card-3", "tenant-b", at(2*time.Second))
	noArgs.Args = nil
	mustCreateCard(t, s, noArgs)

	tests := []struct {
		name, tenant, id string
		want             *approval.Card
		wantErr          error
	}{
		{"own tenant", "tenant-a", "card-1", want, nil},
		{"any tenant", "", "card-1", want, nil},
		{"created without a state is pending", "tenant-a", "card-2", bare, nil},
		{"no arguments", "tenant-b", "card-3", noArgs, nil},
		{"another tenant's card is not found", "tenant-b", "card-1", nil, approval.ErrNotFound},
		{"tenant names are exact", "Tenant-A", "card-1", nil, approval.ErrNotFound},
		{"unknown card", "", "card-404", nil, approval.ErrNotFound},
		{"unknown card in a tenant", "tenant-a", "card-404", nil, approval.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Card(ctx, tt.tenant, tt.id)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Card(%q, %q) error = %v, want %v", tt.tenant, tt.id, err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got, cmpOpts...); diff != "" {
				t.Errorf("Card(%q, %q) mismatch (-want +got):\n%s", tt.tenant, tt.id, diff)
			}
		})
	}
}

func testCardList(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	type spec struct {
		id, tenant string
		created    time.Duration
		state      approval.State
	}
	specs := []spec{ // created in an order other than their times
		{"c4", "t1", 3 * time.Second, approval.Pending},
		{"c1", "t1", 0, approval.Pending},
		{"c6", "t2", 5 * time.Second, approval.Expired},
		{"c2", "t1", 1 * time.Second, approval.Allowed},
		{"c5", "t1", 4 * time.Second, approval.Denied},
		{"c3", "t2", 2 * time.Second, approval.Pending},
	}
	for _, sp := range specs {
		mustCreateCard(t, s, newCard(sp.id, sp.tenant, at(sp.created)))
	}
	for _, sp := range specs {
		switch sp.state {
		case approval.Allowed:
			mustResolve(t, s, sp.id, approval.Allowed, approval.AllowOnce, "alice", approval.ChannelElicitation, at(time.Minute))
		case approval.Denied:
			mustResolve(t, s, sp.id, approval.Denied, approval.Deny, "bob", approval.ChannelAPI, at(time.Minute))
		case approval.Expired:
			mustResolve(t, s, sp.id, approval.Expired, "", "", approval.ChannelDeadline, at(time.Minute))
		}
	}

	tests := []struct {
		name string
		give approval.CardFilter
		want []string
	}{
		{"everything, newest first", approval.CardFilter{}, []string{"c6", "c5", "c4", "c3", "c2", "c1"}},
		{"tenant", approval.CardFilter{Tenant: "t1"}, []string{"c5", "c4", "c2", "c1"}},
		{"pending", approval.CardFilter{State: approval.Pending}, []string{"c4", "c3", "c1"}},
		{"tenant and pending", approval.CardFilter{Tenant: "t1", State: approval.Pending}, []string{"c4", "c1"}},
		{"allowed", approval.CardFilter{State: approval.Allowed}, []string{"c2"}},
		{"denied", approval.CardFilter{State: approval.Denied}, []string{"c5"}},
		{"expired", approval.CardFilter{State: approval.Expired}, []string{"c6"}},
		{"limit", approval.CardFilter{Limit: 2}, []string{"c6", "c5"}},
		{"tenant and limit", approval.CardFilter{Tenant: "t1", Limit: 3}, []string{"c5", "c4", "c2"}},
		{"limit above the count", approval.CardFilter{Tenant: "t2", Limit: 10}, []string{"c6", "c3"}},
		{"unknown tenant", approval.CardFilter{Tenant: "t9"}, nil},
		{"tenant names are exact", approval.CardFilter{Tenant: "T1"}, nil},
		{"tenant with nothing in the state", approval.CardFilter{Tenant: "t2", State: approval.Denied}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cards, err := s.Cards(ctx, tt.give)
			if err != nil {
				t.Fatalf("Cards(%+v): %v", tt.give, err)
			}
			var got []string
			for _, c := range cards {
				got = append(got, c.ID)
			}
			if diff := cmp.Diff(tt.want, got, cmpOpts...); diff != "" {
				t.Errorf("Cards(%+v) ids mismatch (-want +got):\n%s", tt.give, diff)
			}
		})
	}

	// the listed cards are whole records
	cards, err := s.Cards(ctx, approval.CardFilter{Tenant: "t1", State: approval.Allowed})
	if err != nil || len(cards) != 1 {
		t.Fatalf("Cards(t1, allowed) = %v, %v; want one card", cards, err)
	}
	want := newCard("c2", "t1", at(time.Second))
	want.State, want.Answer, want.Approver, want.Answered = approval.Allowed, approval.AllowOnce, "alice", at(time.Minute)
	want.Channel = approval.ChannelElicitation
	if diff := cmp.Diff(want, cards[0], cmpOpts...); diff != "" {
		t.Errorf("listed card mismatch (-want +got):\n%s", diff)
	}
	// a pending card has no channel yet
	cards, err = s.Cards(ctx, approval.CardFilter{Tenant: "t1", State: approval.Pending, Limit: 1})
	if err != nil || len(cards) != 1 || cards[0].Channel != "" {
		t.Errorf("Cards(t1, pending) = %v, %v; want one card with no channel", cards, err)
	}
}

func testCardResolve(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	tests := []struct {
		name    string
		state   approval.State
		answer  approval.Answer
		channel approval.Channel
	}{
		{"allow once", approval.Allowed, approval.AllowOnce, approval.ChannelAPI},
		{"allow for the tenant", approval.Allowed, approval.AllowTenant, approval.ChannelAPI},
		{"deny by elicitation", approval.Denied, approval.Deny, approval.ChannelElicitation},
		{"an embedder's own channel", approval.Allowed, approval.AllowOnce, "slack"},
		{"expiry at the deadline", approval.Expired, "", approval.ChannelDeadline},
		{"expiry when the call went away", approval.Expired, "", approval.ChannelCanceled},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("card-%d", i)
			mustCreateCard(t, s, newCard(id, "tenant-a", at(time.Duration(i)*time.Second)))
			when := at(time.Hour + time.Duration(i)*time.Second)
			want := newCard(id, "tenant-a", at(time.Duration(i)*time.Second))
			want.State, want.Answer, want.Approver, want.Answered = tt.state, tt.answer, "alice", when
			want.Channel = tt.channel

			got, err := s.Resolve(ctx, id, tt.state, tt.answer, "alice", tt.channel, when)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
				t.Errorf("Resolve returned (-want +got):\n%s", diff)
			}
			stored, err := s.Card(ctx, "tenant-a", id)
			if err != nil {
				t.Fatalf("Card: %v", err)
			}
			if diff := cmp.Diff(want, stored, cmpOpts...); diff != "" {
				t.Errorf("stored card (-want +got):\n%s", diff)
			}

			// a second answer, even the same one, is refused and changes nothing
			for _, again := range tests {
				_, err := s.Resolve(ctx, id, again.state, again.answer, "mallory", again.channel, at(2*time.Hour))
				if !errors.Is(err, approval.ErrNotPending) {
					t.Errorf("second Resolve(%s, %s) error = %v, want ErrNotPending", again.state, again.answer, err)
				}
			}
			stored, err = s.Card(ctx, "", id)
			if err != nil {
				t.Fatalf("Card: %v", err)
			}
			if diff := cmp.Diff(want, stored, cmpOpts...); diff != "" {
				t.Errorf("card after refused answers (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("unknown card", func(t *testing.T) {
		_, err := s.Resolve(ctx, "card-404", approval.Allowed, approval.AllowOnce, "alice", approval.ChannelAPI, t0)
		if !errors.Is(err, approval.ErrNotFound) {
			t.Errorf("Resolve(unknown) error = %v, want ErrNotFound", err)
		}
	})
}

func testCardResolveOnce(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	mustCreateCard(t, s, newCard("card-race", "tenant-a", t0))

	const answers = 50
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
		others  []error
	)
	start := make(chan struct{})
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := all[i%len(all)]
			state, answer := approval.Allowed, approval.AllowOnce
			if i%2 == 1 {
				state, answer = approval.Denied, approval.Deny
			}
			approver := fmt.Sprintf("approver-%d", i)
			channel := approval.Channel(fmt.Sprintf("channel-%d", i))
			<-start
			c, err := st.Resolve(context.Background(), "card-race", state, answer, approver, channel, at(time.Minute))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				if c == nil || c.Approver != approver || c.Channel != channel {
					others = append(others, fmt.Errorf("winner %s got card %+v", approver, c))
				}
				winners = append(winners, approver)
				return
			}
			if !errors.Is(err, approval.ErrNotPending) {
				others = append(others, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d answers won (%v), want exactly 1", len(winners), winners)
	}
	for _, err := range others {
		t.Errorf("a losing answer got %v, want ErrNotPending", err)
	}
	c, err := s.Card(t.Context(), "tenant-a", "card-race")
	if err != nil {
		t.Fatalf("Card: %v", err)
	}
	if c.Approver != winners[0] || c.State == approval.Pending || string(c.Channel) != "channel-"+strings.TrimPrefix(winners[0], "approver-") {
		t.Errorf("card after the race: state %s approver %q channel %q, want the winner %q's answer", c.State, c.Approver, c.Channel, winners[0])
	}
}

func testCardWatch(t *testing.T, o Opener) {
	s := open(t, o)
	ctx := t.Context()
	mustCreateCard(t, s, newCard("card-w", "tenant-a", t0))

	var chans []<-chan struct{}
	for range 3 { // every watcher of a card is woken
		ch, err := s.Watch(ctx, "card-w")
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		chans = append(chans, ch)
	}
	for i, ch := range chans {
		if closed(ch) {
			t.Fatalf("watch %d fired while the card is pending", i)
		}
	}
	mustResolve(t, s, "card-w", approval.Denied, approval.Deny, "alice", approval.ChannelAPI, at(time.Minute))
	for i, ch := range chans {
		if !closedWithin(ch, waitFor) {
			t.Fatalf("watch %d did not fire within %v of Resolve", i, waitFor)
		}
	}

	// a card that has left pending: the channel is closed when Watch returns
	ch, err := s.Watch(ctx, "card-w")
	if err != nil {
		t.Fatalf("Watch(resolved): %v", err)
	}
	if !closed(ch) {
		t.Errorf("Watch of a resolved card: channel not closed at once")
	}

	// the suite's reading: watching a card that does not exist is ErrNotFound (it could never
	// leave pending, so a waiter would wait for its deadline for nothing).
	if _, err := s.Watch(ctx, "card-404"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("Watch(unknown) error = %v, want ErrNotFound", err)
	}
}

func testCardWatchEndsWithContext(t *testing.T, o Opener) {
	s := open(t, o)
	mustCreateCard(t, s, newCard("card-ctx", "tenant-a", t0))

	// one watch first, so that whatever a store starts once (a listener) is already running
	warm, cancelWarm := context.WithCancel(t.Context())
	if _, err := s.Watch(warm, "card-ctx"); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	cancelWarm()
	base := goroutines()

	const watches = 100
	var chans []<-chan struct{}
	for range watches {
		ctx, cancel := context.WithCancel(t.Context())
		ch, err := s.Watch(ctx, "card-ctx")
		if err != nil {
			cancel()
			t.Fatalf("Watch: %v", err)
		}
		cancel()
		chans = append(chans, ch)
	}
	// the watches end: nothing is left running for them
	if got, ok := goroutinesBackTo(base+5, waitFor); !ok {
		t.Errorf("%d goroutines %v after %d watches ended, want at most %d: watches leak", got, waitFor, watches, base+5)
	}
	// the suite's reading: an ended watch is not a resolution, so its channel is not closed
	// (the waiter learns of its own context from ctx.Done())
	for i, ch := range chans {
		if closed(ch) {
			t.Fatalf("watch %d's channel was closed when its context ended; the card is still pending", i)
		}
	}

	// the card can still be answered and watched
	ch, err := s.Watch(t.Context(), "card-ctx")
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	mustResolve(t, s, "card-ctx", approval.Allowed, approval.AllowOnce, "alice", approval.ChannelAPI, at(time.Minute))
	if !closedWithin(ch, waitFor) {
		t.Errorf("a live watch did not fire after others ended")
	}
}

func testCardWatchAcrossInstances(t *testing.T, o Opener) {
	if o.Another == nil {
		t.Skip("the store has no second instance")
	}
	s := open(t, o)
	all := instances(t, o, s)
	a, b := all[0], all[1]
	ctx := t.Context()

	tests := []struct {
		name              string
		create, resolveOn Store
		watchOn           Store
	}{
		{"answered on the first, waited on the second", a, a, b},
		{"answered on the second, waited on the first", a, b, a},
		{"created and answered on the second, waited on the first", b, b, a},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("card-x%d", i)
			mustCreateCard(t, tt.create, newCard(id, "tenant-a", at(time.Duration(i)*time.Second)))
			ch, err := tt.watchOn.Watch(ctx, id)
			if err != nil {
				t.Fatalf("Watch: %v", err)
			}
			if closed(ch) {
				t.Fatalf("watch fired while the card is pending")
			}
			mustResolve(t, tt.resolveOn, id, approval.Allowed, approval.AllowTenant, "alice", approval.ChannelElicitation, at(time.Minute))
			if !closedWithin(ch, waitFor) {
				t.Fatalf("the other instance's watch did not fire within %v", waitFor)
			}
			c, err := tt.watchOn.Card(ctx, "tenant-a", id)
			if err != nil {
				t.Fatalf("Card: %v", err)
			}
			if c.State != approval.Allowed || c.Answer != approval.AllowTenant || c.Approver != "alice" || c.Channel != approval.ChannelElicitation {
				t.Errorf("card seen by the waiting instance: %s %s %q %q", c.State, c.Answer, c.Approver, c.Channel)
			}
		})
	}
}
