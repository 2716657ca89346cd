package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wardenhq/warden/auth"
)

// The token cache's guarantees, none of which depends on how long anything takes: the TTLs
// are far longer than the tests run.

func TestRevokeTokenTakesEffectAtOnce(t *testing.T) {
	r := newRig(t, []byte(faultPolicy), nil).with(func(o *Options) { o.TokenTTL = time.Hour })
	secret := r.token("acme", "person", "")
	cs := r.connect(secret, nil)
	if out, isErr := call(t, cs, "files_list", map[string]any{"path": "."}); isErr {
		t.Fatalf("before the revocation: %s", out)
	}
	tok, err := r.db.TokenByHash(context.Background(), auth.Hash(secret))
	if err != nil {
		t.Fatal(err)
	}

	// Revoked in a store without a feed of revocations: the gateway still trusts what it
	// looked up (for up to TokenTTL, here an hour). (A store with a feed ends the session at
	// once: TestRevocationReachesEveryInstance.)
	r.gw.stopRevocations()
	if err := r.db.RevokeToken(context.Background(), tok.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if out, isErr := call(t, cs, "files_list", map[string]any{"path": "."}); isErr {
		t.Fatalf("a token revoked elsewhere, within its TTL: %s", out)
	}

	// Through the gateway, it is refused from the next request on (the store has it revoked
	// already, which RevokeToken reports; it forgets the token all the same).
	if err := r.gw.RevokeToken(context.Background(), tok.ID, time.Now()); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("RevokeToken of a token revoked already = %v, want auth.ErrNotFound", err)
	}
	got := r.post(secret, cs.ID(), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	wantError(t, "a token revoked through the gateway", got, 401, -32001, nil, "unauthenticated", "revoked")
}

func TestUnknownTokensAreNeverRemembered(t *testing.T) {
	r := newRig(t, []byte(faultPolicy), nil).with(func(o *Options) { o.TokenTTL = time.Hour })
	secret, hash, err := auth.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	got := r.post(secret, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	wantError(t, "a token not yet stored", got, 401, -32001, nil, "unauthenticated", "not valid")
	// Stored now: good at once, since its refusal was not remembered.
	tok := &auth.Token{ID: "tok_" + newID(), Hash: hash, Role: auth.RoleAgent, Tenant: "acme", SessionRole: "person",
		Name: "tester", Created: time.Now()}
	if err := r.db.CreateToken(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	cs := r.connect(secret, nil)
	if out, isErr := call(t, cs, "files_list", map[string]any{"path": "."}); isErr {
		t.Errorf("a token stored after it was refused: %s", out)
	}
}

// slowTokens is a token store whose lookups wait for release, once they have said so on
// started.
type slowTokens struct {
	auth.Store
	started, release chan struct{}
}

func (s *slowTokens) TokenByHash(ctx context.Context, hash string) (*auth.Token, error) {
	s.started <- struct{}{}
	<-s.release
	return s.Store.TokenByHash(ctx, hash)
}

func TestALookupUnderWayWhenTheTokenIsRevokedIsNotRemembered(t *testing.T) {
	r := newRig(t, []byte(faultPolicy), nil)
	secret := r.token("acme", "person", "")
	hash := auth.Hash(secret)
	tok, err := r.db.TokenByHash(context.Background(), hash)
	if err != nil {
		t.Fatal(err)
	}
	c := &tokenCache{ttl: time.Hour}
	slow := &slowTokens{Store: r.db, started: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error)
	go func() {
		_, err := c.lookup(context.Background(), slow, hash)
		done <- err
	}()
	<-slow.started
	// The lookup has begun (it may have read the token as good); the token is forgotten now.
	c.forget(tok.ID)
	close(slow.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	_, kept := c.entries[hash]
	c.mu.Unlock()
	if kept {
		t.Error("a lookup under way when its token was forgotten was remembered")
	}

	// A lookup that begins afterwards is remembered, and each caller gets its own copy.
	slow.started = make(chan struct{}, 2)
	first, err := c.lookup(context.Background(), slow, hash)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.lookup(context.Background(), slow, hash)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(slow.started); n != 1 {
		t.Errorf("two lookups read the store %d times, want once", n)
	}
	if first == second || *first != *second || second.ID != tok.ID {
		t.Errorf("remembered lookups: %p %+v, %p %+v", first, first, second, second)
	}
}
