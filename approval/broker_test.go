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
	if out.Decision != verdict.Deny || out.Code != verdict.ApprovalCanceled || out.Card.State != approval.Expired {
		t.Fatalf("%+v", out)
	}
	if _, err := b.Answer(context.Background(), "acme", out.Card.ID, approval.AllowOnce, "late", ""); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("answering an abandoned card: %v; want ErrNotPending", err)
	}
}

func TestAnswerValidation(t *testing.T) {
	b, db, _ := newBroker(t, time.Minute)
	card := &approval.Card{ID: "c1", Tenant: "acme", Tool: "t", Digest: "d", State: approval.Pending, Created: time.Now(), Deadline: time.Now().Add(time.Hour)}
	if err := db.CreateCard(context.Background(), card); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Answer(context.Background(), "acme", "c1", "maybe", "a", ""); err == nil {
		t.Error("an unknown answer was taken")
	}
	if _, err := b.Answer(context.Background(), "beta", "c1", approval.Deny, "a", ""); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("another tenant's card: %v; want ErrNotFound", err)
	}
	if _, err := b.Answer(context.Background(), "acme", "c1", approval.AllowOnce, "a", "other"); !errors.Is(err, approval.ErrDigestMismatch) {
		t.Errorf("another call's digest: %v", err)
	}
	if _, err := b.Answer(context.Background(), "", "c1", approval.Deny, "admin", "d"); err != nil {
		t.Errorf("an admin answering with the right digest: %v", err)
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
		_, answerErr := b.Answer(context.Background(), "acme", cards[0].ID, approval.AllowOnce, "alice", "")
		out := <-done
		stored, _ := db.Card(context.Background(), "", cards[0].ID)
		if (out.Decision == verdict.Allow) != (stored.State == approval.Allowed) || (answerErr == nil) != (stored.State == approval.Allowed) {
			t.Fatalf("round %d: outcome %+v, answer error %v, stored %s", i, out, answerErr, stored.State)
		}
	}
}
