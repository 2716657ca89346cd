package secret_test

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/secret"
)

var regexpHandle = regexp.MustCompile(`protected://[a-z-]+/[a-z2-7]{8}\.[a-z2-7]{26}`)

func envelope(v string) any {
	return map[string]any{"k": map[string]any{secret.KeySensitive: map[string]any{"type": "token", "value": v}}}
}

func protectOne(t *testing.T, r *secret.Registry, v string) string {
	t.Helper()
	out, err := r.Protect(envelope(v))
	if err != nil {
		t.Fatal(err)
	}
	return out.(map[string]any)["k"].(string)
}

func TestSharedAcrossRegistries(t *testing.T) {
	tenant := secret.NewShared(secret.SharedOptions{})
	a := secret.NewRegistryWith(secret.Scope{Session: "a"}, secret.Options{Shared: tenant})
	b := secret.NewRegistryWith(secret.Scope{Session: "b"}, secret.Options{Shared: tenant})
	other := secret.NewRegistryWith(secret.Scope{Session: "c"}, secret.Options{Shared: secret.NewShared(secret.SharedOptions{})})
	const v = "ghp_Zr8Lw2mVb5Nc9xT4kQpJ7hYd3sGf"
	ha := protectOne(t, a, v)

	if got := a.Redact("echo " + v); got != "echo "+ha {
		t.Errorf("the registry that protected it: %q", got)
	}
	if got := b.Redact("echo " + v + " and " + b64(v)); got != "echo "+secret.Redacted+" and "+secret.Redacted {
		t.Errorf("another registry of the tenant: %q; want %s twice", got, secret.Redacted)
	}
	if got := other.Redact("echo " + v); got != "echo "+v {
		t.Errorf("another tenant's registry redacts %q", got)
	}
	// B cannot bind A's handle, nor the placeholder.
	if _, err := b.Resolve(map[string]string{"T": ha}); !errors.Is(err, secret.ErrForeignHandle) {
		t.Errorf("B resolving A's handle: %v", err)
	}
	if _, err := b.Resolve(map[string]string{"T": secret.Redacted}); !errors.Is(err, secret.ErrUnknownHandle) {
		t.Errorf("resolving %s: %v", secret.Redacted, err)
	}
	// Once B holds the value too, it writes its own handle.
	hb := protectOne(t, b, v)
	if hb == ha || b.Redact(v) != hb {
		t.Errorf("B's own handle: %q, Redact %q", hb, b.Redact(v))
	}
	// A's handle is kept whole in A's texts, B's text shows it as any text.
	if got := a.Redact("see " + ha); got != "see "+ha {
		t.Errorf("A's own handle: %q", got)
	}
}

// clock is a time that tests move.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func TestSharedLifetime(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	tenant := secret.NewShared(secret.SharedOptions{Lifetime: time.Hour, Now: clk.Now})
	a := secret.NewRegistryWith(testScope, secret.Options{Shared: tenant})
	b := secret.NewRegistryWith(testScope, secret.Options{Shared: tenant})
	const v = "sk-Ab3dE5gH7jK9mN2pQ4sT6vW8yZ0bC1dF"
	protectOne(t, a, v)
	a.Forget() // the session ends

	// No registry holds it; for its lifetime it is still redacted.
	clk.now = clk.now.Add(59 * time.Minute)
	b.Add(secret.TypeCredential, secret.New("another-credential-1"))
	if got := b.Redact(v); got != secret.Redacted {
		t.Errorf("within its lifetime: %q", got)
	}
	clk.now = clk.now.Add(2 * time.Minute)
	b.Add(secret.TypeCredential, secret.New("another-credential-2")) // forgetting happens on changes
	if got := b.Redact(v); got != v {
		t.Errorf("after its lifetime: %q", got)
	}
	if tenant.Len() != 2 {
		t.Errorf("Len = %d; want the two credentials", tenant.Len())
	}
}

func TestSharedLimits(t *testing.T) {
	tenant := secret.NewShared(secret.SharedOptions{MaxValues: 3})
	a := secret.NewRegistryWith(testScope, secret.Options{Shared: tenant})
	b := secret.NewRegistryWith(testScope, secret.Options{Shared: tenant})
	vals := []string{"q7Rt2LmX9vKp4WsB", "Hn3Jd8YcF6gQz1Ve", "Ub5Ni0Ow7Ea2Ty9R", "Xk4Mv6Ls1Pj8Gh3D"}
	protectOne(t, a, vals[0])
	protectOne(t, a, vals[1])
	protectOne(t, b, vals[2])
	// Full of values held by live registries: a fourth is refused, never left unredacted.
	if _, err := b.Protect(envelope(vals[3])); !errors.Is(err, secret.ErrLimit) {
		t.Fatalf("a value past the limit: %v", err)
	}
	if b.Redact(vals[3]) != vals[3] || b.Len() != 1 {
		t.Errorf("the refused value was kept")
	}
	// A's session ends: its values are no longer held, and the least recently used makes room.
	a.Forget()
	h := protectOne(t, b, vals[3])
	if got := b.Redact(vals[3] + " " + vals[1] + " " + vals[0]); got != h+" "+secret.Redacted+" "+vals[0] {
		t.Errorf("after making room: %q", got)
	}
	// Warden's own credentials are never refused.
	b.Add(secret.TypeCredential, secret.New("upstream-credential-9Q"))
	if tenant.Len() != 4 {
		t.Errorf("Len = %d", tenant.Len())
	}
}

func TestSharedPrintsNoValue(t *testing.T) {
	tenant := secret.NewShared(secret.SharedOptions{})
	r := secret.NewRegistryWith(testScope, secret.Options{Shared: tenant})
	const v = "sk-Ab3dE5gH7jK9mN2pQ4sT6vW8yZ0bC1dF"
	r.Add(secret.TypeToken, secret.New(v))
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "shared", tenant)
	for _, s := range []string{fmt.Sprint(tenant), fmt.Sprintf("%+v %#v", tenant, tenant), logged.String()} {
		if strings.Contains(s, v) || strings.Contains(s, "sk-") {
			t.Errorf("a Shared printed its value: %s", s)
		}
	}
}

// TestSharedGrowsLikeItRebuilds adds values one result at a time, so that the index grows by
// segments and merges them, and compares what it finds with an index built at once.
func TestSharedGrowsLikeItRebuilds(t *testing.T) {
	vals := realisticValues(300)
	grown := secret.NewRegistryWith(testScope, secret.Options{Shared: secret.NewShared(secret.SharedOptions{})})
	for i := 0; i < len(vals); i += 1 + i%7 {
		var envelopes []any
		for _, v := range vals[i:min(len(vals), i+1+i%7)] {
			envelopes = append(envelopes, map[string]any{secret.KeySensitive: map[string]any{"type": "token", "value": v}})
		}
		if _, err := grown.Protect(envelopes); err != nil {
			t.Fatal(err)
		}
	}
	whole := secret.NewRegistryWith(testScope, secret.Options{Shared: secret.NewShared(secret.SharedOptions{})})
	var envelopes []any
	for _, v := range vals {
		envelopes = append(envelopes, map[string]any{secret.KeySensitive: map[string]any{"type": "token", "value": v}})
	}
	if _, err := whole.Protect(envelopes); err != nil {
		t.Fatal(err)
	}
	handle := regexpHandle.ReplaceAllString
	for i, v := range vals {
		text := "a " + v + " b " + b64("x"+v[:min(len(v), 20)]) + " c " + eachByte(v[len(v)/2:], "%02x", ":") + " d " + reverse(v)
		g, w := handle(grown.Redact(text), "H"), handle(whole.Redact(text), "H")
		if g != w {
			t.Fatalf("value %d: grown %q, built at once %q", i, g, w)
		}
		if strings.Contains(g, v) {
			t.Fatalf("value %d leaked: %q", i, g)
		}
	}
}
