package approval_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/store/sqlite"
	"github.com/wardenhq/warden/verdict"
)

func newBroker(t *testing.T, timeout time.Duration) (*approval.Broker, *sqlite.DB, *clock.Fake) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	return approval.NewBroker(approval.Options{Store: db, Clock: c, Timeout: timeout}), db, c
}

var req = approval.Request{Tenant: "acme", Session: "s", Tool: "t", Digest: "d", PolicyRevision: "r", Args: []byte(`{}`), Reason: "why", Channel: true}

func TestNoChannel(t *testing.T) {
	b, db, _ := newBroker(t, time.Minute)
	r := req
	r.Channel = false
	out, err := b.Decide(context.Background(), r)
	if err != nil || out.Decision != verdict.Deny || out.Code != verdict.NoApprovalChannel {
		t.Fatalf("%+v %v", out, err)
	}
	if cards, _ := db.Cards(context.Background(), approval.CardFilter{}); len(cards) != 0 {
		t.Error("a card was parked where nobody can answer it")
	}
}

func TestCanceledCallExpiresItsCard(t *testing.T) {
	b, _, c := newBroker(t, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan approval.Outcome)
	go func() {
		out, _ := b.Decide(ctx, req)
		done <- out
	}()
	for c.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	out := <-done
	if out.Decision != verdict.Deny || out.Code != verdict.ApprovalCanceled || out.Card.State != approval.Expired || out.Card.Channel != approval.ChannelCanceled {
		t.Fatalf("%+v", out)
	}
	if _, err := b.Answer(context.Background(), "acme", out.Card.ID, approval.AllowOnce, "late", approval.ChannelAPI, ""); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("answering an abandoned card: %v; want ErrNotPending", err)
	}
}

func TestAnswerValidation(t *testing.T) {
	b, db, _ := newBroker(t, time.Minute)
	card := &approval.Card{ID: "c1", Tenant: "acme", Tool: "t", Digest: "d", State: approval.Pending, Created: time.Now(), Deadline: time.Now().Add(time.Hour)}
	if err := db.CreateCard(context.Background(), card); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Answer(context.Background(), "acme", "c1", "maybe", "a", approval.ChannelAPI, ""); err == nil {
		t.Error("an unknown answer was taken")
	}
	for _, ch := range []approval.Channel{"", approval.ChannelDeadline, approval.ChannelCanceled} {
		if _, err := b.Answer(context.Background(), "acme", "c1", approval.AllowOnce, "a", ch, ""); err == nil {
			t.Errorf("an answer through %q was taken", ch)
		}
	}
	if _, err := b.Answer(context.Background(), "beta", "c1", approval.Deny, "a", approval.ChannelAPI, ""); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("another tenant's card: %v; want ErrNotFound", err)
	}
	if _, err := b.Answer(context.Background(), "acme", "c1", approval.AllowOnce, "a", approval.ChannelAPI, "other"); !errors.Is(err, approval.ErrDigestMismatch) {
		t.Errorf("another call's digest: %v", err)
	}
	done, err := b.Answer(context.Background(), "", "c1", approval.Deny, "admin", approval.ChannelElicitation, "d")
	if err != nil {
		t.Fatalf("an admin answering with the right digest: %v", err)
	}
	if done.Channel != approval.ChannelElicitation || done.Approver != "admin" {
		t.Errorf("answered card: channel %q approver %q; want elicitation, admin", done.Channel, done.Approver)
	}
}

func TestTimeoutZeroExpiresAtOnce(t *testing.T) {
	b, _, _ := newBroker(t, 0)
	out, err := b.Decide(context.Background(), req)
	if err != nil || out.Code != verdict.ApprovalTimeout || out.Card == nil || out.Card.State != approval.Expired || out.Card.Channel != approval.ChannelDeadline {
		t.Fatalf("%+v %v; want a card expired by the deadline", out, err)
	}
}

func TestAnswerRacesTheDeadline(t *testing.T) {
	// Whichever lands first wins, and the call sees that one: never an allow recorded as a
	// timeout, or the other way round.
	for i := range 20 {
		b, db, c := newBroker(t, time.Minute)
		done := make(chan approval.Outcome)
		go func() {
			out, _ := b.Decide(context.Background(), req)
			done <- out
		}()
		for c.Waiters() == 0 {
			time.Sleep(time.Millisecond)
		}
		cards, _ := db.Cards(context.Background(), approval.CardFilter{State: approval.Pending})
		go c.Advance(time.Minute)
		_, answerErr := b.Answer(context.Background(), "acme", cards[0].ID, approval.AllowOnce, "alice", approval.ChannelAPI, "")
		out := <-done
		stored, _ := db.Card(context.Background(), "", cards[0].ID)
		if (out.Decision == verdict.Allow) != (stored.State == approval.Allowed) || (answerErr == nil) != (stored.State == approval.Allowed) {
			t.Fatalf("round %d: outcome %+v, answer error %v, stored %s", i, out, answerErr, stored.State)
		}
		wantCh := approval.ChannelDeadline
		if stored.State == approval.Allowed {
			wantCh = approval.ChannelAPI
		}
		if stored.Channel != wantCh || out.Card.Channel != wantCh {
			t.Fatalf("round %d: %s card stored with channel %q, the call saw %q; want %q", i, stored.State, stored.Channel, out.Card.Channel, wantCh)
		}
	}
}

// A call that goes away between parking its card and watching it (the card is announced
// first, and the announcement can end the call) leaves no card pending.
func TestCallGoneBeforeItsCardIsWatched(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	b := approval.NewBroker(approval.Options{Store: db, Timeout: time.Minute, OnCard: func(c *approval.Card) {
		if c.State == approval.Pending {
			cancel()
		}
	}})
	out, err := b.Decide(ctx, req)
	if err != nil || out.Decision != verdict.Deny || out.Code != verdict.ApprovalCanceled {
		t.Fatalf("%+v %v; want a deny for approval_canceled", out, err)
	}
	cards, err := db.Cards(context.Background(), approval.CardFilter{})
	if err != nil || len(cards) != 1 || cards[0].State != approval.Expired || cards[0].Channel != approval.ChannelCanceled {
		t.Fatalf("the card: %+v %v; want it expired through canceled", cards, err)
	}
}

// A caller that waits less than the broker's timeout gets a card that lives only as long as
// it waits: a deadline d from now, expiry at once for d <= 0, and never past the timeout.
func TestDecideWithin(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name         string
		give         time.Duration
		wantDeadline time.Duration
	}{
		{"shorter than the timeout", 10 * time.Second, 10 * time.Second},
		{"longer than the timeout", time.Hour, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, db, c := newBroker(t, time.Minute)
			done := make(chan approval.Outcome)
			go func() {
				out, _ := b.DecideWithin(context.Background(), req, tt.give)
				done <- out
			}()
			for c.Waiters() == 0 {
				time.Sleep(time.Millisecond)
			}
			cards, _ := db.Cards(context.Background(), approval.CardFilter{State: approval.Pending})
			if len(cards) != 1 || !cards[0].Deadline.Equal(start.Add(tt.wantDeadline)) {
				t.Fatalf("pending cards %+v; want one with its deadline %s from now", cards, tt.wantDeadline)
			}
			c.Advance(tt.wantDeadline)
			out := <-done
			if out.Code != verdict.ApprovalTimeout || out.Card == nil || out.Card.State != approval.Expired || out.Card.Channel != approval.ChannelDeadline {
				t.Fatalf("%+v; want the card expired at its deadline", out)
			}
		})
	}
	t.Run("no wait", func(t *testing.T) {
		b, _, _ := newBroker(t, time.Minute)
		out, err := b.DecideWithin(context.Background(), req, 0)
		if err != nil || out.Code != verdict.ApprovalTimeout || out.Card == nil || out.Card.State != approval.Expired ||
			out.Card.Channel != approval.ChannelDeadline || !out.Card.Deadline.Equal(out.Card.Created) {
			t.Fatalf("%+v %v; want a card expired at once", out, err)
		}
	})
}
