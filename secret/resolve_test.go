package secret_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/secret"
)

func TestResolve(t *testing.T) {
	r := secret.NewRegistry(testScope)
	out, err := r.Protect(decode(t, `{"a": {"$wardenSensitive": {"type": "token", "value": "tok-6666"}},
		"b": {"$burrowSensitive": {"type": "password", "value": "pw-7777"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := out.(map[string]any)["a"].(string), out.(map[string]any)["b"].(string)
	got, err := r.Resolve(map[string]string{"GITHUB_TOKEN": a, "_pw2": b, "ALSO": a})
	if err != nil {
		t.Fatal(err)
	}
	reveal := map[string]string{}
	for k, v := range got {
		reveal[k] = v.Reveal()
	}
	if fmt.Sprint(reveal) != "map[ALSO:tok-6666 GITHUB_TOKEN:tok-6666 _pw2:pw-7777]" {
		t.Errorf("Resolve = %v", reveal)
	}
	if got, err := r.Resolve(nil); err != nil || len(got) != 0 {
		t.Errorf("Resolve(nil) = %v, %v", got, err)
	}
}

func TestResolveErrors(t *testing.T) {
	r := secret.NewRegistry(testScope)
	good := r.Add(secret.TypeToken, secret.New("tok-8888"))
	out, err := r.Protect(decode(t, `{"$wardenManaged": `+managedJSON+`}`))
	if err != nil {
		t.Fatal(err)
	}
	managed := out.(string)
	other := secret.NewRegistry(testScope)
	foreign := other.Add(secret.TypeToken, secret.New("tok-9999"))
	gone := secret.NewRegistry(testScope)
	forgotten := gone.Add(secret.TypeToken, secret.New("tok-0000"))
	gone.Forget()
	goneAgain := gone.Add(secret.TypeToken, secret.New("tok-0001")) // the registry serves on

	tests := []struct {
		name, varName, handle string
		want                  error
	}{
		{name: "empty name", varName: "", handle: good, want: secret.ErrInvalidName},
		{name: "leading digit", varName: "1TOKEN", handle: good, want: secret.ErrInvalidName},
		{name: "dash", varName: "MY-TOKEN", handle: good, want: secret.ErrInvalidName},
		{name: "equals sign", varName: "A=B", handle: good, want: secret.ErrInvalidName},
		{name: "space", varName: "A B", handle: good, want: secret.ErrInvalidName},
		{name: "NUL", varName: "A\x00", handle: good, want: secret.ErrInvalidName},
		{name: "not a handle", varName: "T", handle: "ghp_plainvalue", want: secret.ErrUnknownHandle},
		{name: "empty handle", varName: "T", handle: "", want: secret.ErrUnknownHandle},
		{name: "made-up handle", varName: "T", handle: good[:len(good)-3] + "aaa", want: secret.ErrUnknownHandle},
		{name: "handle with a bad kind", varName: "T", handle: strings.Replace(good, "token", "apikey", 1), want: secret.ErrUnknownHandle},
		{name: "another registry's handle", varName: "T", handle: foreign, want: secret.ErrForeignHandle},
		{name: "another registry's forgotten handle", varName: "T", handle: forgotten, want: secret.ErrForeignHandle},
		{name: "managed reference", varName: "T", handle: managed, want: secret.ErrManagedHandle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Resolve(map[string]string{"OK": good, tt.varName: tt.handle})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Resolve = %v; want %v", err, tt.want)
			}
			if got != nil {
				t.Errorf("Resolve gave values with its error: %v", got)
			}
			var be *secret.BindingError
			if !errors.As(err, &be) || be.Name != tt.varName {
				t.Errorf("error %v does not name the binding %q", err, tt.varName)
			}
		})
	}
	if _, err := gone.Resolve(map[string]string{"T": forgotten}); !errors.Is(err, secret.ErrUnknownHandle) {
		t.Errorf("a forgotten handle in its own registry = %v; want ErrUnknownHandle", err)
	}
	if got, err := gone.Resolve(map[string]string{"T": goneAgain}); err != nil || got["T"].Reveal() != "tok-0001" {
		t.Errorf("a registry after Forget: %v, %v", got, err)
	}

	// Every bad binding is reported, in name order; a raw value given as a handle is not
	// repeated in the message.
	_, err = r.Resolve(map[string]string{"B-1": good, "A": "tok-8888", "C": foreign})
	msg := fmt.Sprint(err)
	ia, ib, ic := strings.Index(msg, `"A"`), strings.Index(msg, `"B-1"`), strings.Index(msg, `"C"`)
	if !(0 <= ia && ia < ib && ib < ic) {
		t.Errorf("error %q does not list A, B-1 and C in order", msg)
	}
	if strings.Contains(msg, "tok-8888") || !strings.Contains(msg, good) {
		t.Errorf("error %q repeats the value instead of its handle", msg)
	}
}

// authz and provider fakes.
type authzFunc func(context.Context, secret.Managed) error

func (f authzFunc) Authorize(ctx context.Context, m secret.Managed) error { return f(ctx, m) }

type providerFunc func(context.Context, secret.Managed) (secret.Secret, error)

func (f providerFunc) Fetch(ctx context.Context, m secret.Managed) (secret.Secret, error) {
	return f(ctx, m)
}

func TestResolveManaged(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	opts := secret.Options{Issuers: map[string][]string{"vault-broker": {"1", "2"}}}
	allow := authzFunc(func(context.Context, secret.Managed) error { return nil })
	vault := providerFunc(func(_ context.Context, m secret.Managed) (secret.Secret, error) {
		if m.Ref != "kv/db#password" {
			return secret.Secret{}, errors.New("no such ref")
		}
		return secret.New("db-password-123"), nil
	})
	providers := map[string]secret.Provider{"vault": vault}
	envelope := func(mod func(m map[string]any)) map[string]any {
		m := decode(t, managedJSON).(map[string]any)
		if mod != nil {
			mod(m)
		}
		return map[string]any{"$wardenManaged": m}
	}
	set := func(k, v string) func(map[string]any) { return func(m map[string]any) { m[k] = v } }

	tests := []struct {
		name      string
		opts      secret.Options
		scope     secret.Scope
		envelope  map[string]any
		handle    func(r *secret.Registry, managed string) string
		now       time.Time
		authz     secret.Authorizer
		providers map[string]secret.Provider
		want      error
		cause     string
	}{
		{name: "resolves"},
		{name: "unknown handle", handle: func(r *secret.Registry, h string) string { return h[:len(h)-2] + "aa" }, want: secret.ErrUnknownHandle},
		{name: "another registry's handle", handle: func(*secret.Registry, string) string {
			return secret.NewRegistry(testScope).Add(secret.TypeToken, secret.New("x"))
		}, want: secret.ErrForeignHandle},
		{name: "a plain value", handle: func(r *secret.Registry, _ string) string { return r.Add(secret.TypeToken, secret.New("plain")) }, want: secret.ErrNotManaged},
		{name: "forgotten", handle: func(r *secret.Registry, h string) string { r.Forget(); return h }, want: secret.ErrUnknownHandle},
		{name: "no issuer configured", opts: secret.Options{}, want: secret.ErrUnsupportedIssuer},
		{name: "unsupported issuer", envelope: envelope(set("issuer", "other-broker")), want: secret.ErrUnsupportedIssuer},
		{name: "unsupported version", envelope: envelope(set("version", "3")), want: secret.ErrUnsupportedVersion},
		{name: "expired", envelope: envelope(set("expires", "2026-11-30T11:59:59Z")), want: secret.ErrExpired},
		{name: "expires now", envelope: envelope(set("expires", "2026-11-30T12:00:00Z")), want: secret.ErrExpired},
		{name: "expires in another zone, still valid", envelope: envelope(set("expires", "2026-11-30T13:00:01+01:00"))},
		{name: "another agent", envelope: envelope(set("agent", "agent-2")), want: secret.ErrScopeMismatch},
		{name: "another session", envelope: envelope(set("session", "session-2")), want: secret.ErrScopeMismatch},
		{name: "another conversation", envelope: envelope(set("conversation", "conv-2")), want: secret.ErrScopeMismatch},
		{name: "a registry with an empty scope", scope: secret.Scope{}, want: secret.ErrScopeMismatch},
		{name: "agent differs only in case", envelope: envelope(set("agent", "Agent-1")), want: secret.ErrScopeMismatch},
		{name: "refused", authz: authzFunc(func(context.Context, secret.Managed) error { return errors.New("grant revoked") }), want: secret.ErrNotAuthorized, cause: "grant revoked"},
		{name: "no authorizer", authz: nil, want: secret.ErrNotAuthorized},
		{name: "no provider of that name", envelope: envelope(set("provider", "aws")), want: secret.ErrNoProvider},
		{name: "no providers", providers: map[string]secret.Provider{}, want: secret.ErrNoProvider},
		{name: "provider fails", envelope: envelope(set("ref", "kv/missing")), want: secret.ErrProviderFailed, cause: "no such ref"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// fill in the defaults: the success case
			if tt.opts.Issuers == nil && tt.name != "no issuer configured" {
				tt.opts = opts
			}
			if tt.scope == (secret.Scope{}) && tt.name != "a registry with an empty scope" {
				tt.scope = testScope
			}
			if tt.envelope == nil {
				tt.envelope = envelope(nil)
			}
			if tt.now.IsZero() {
				tt.now = now
			}
			if tt.authz == nil && tt.name != "no authorizer" {
				tt.authz = allow
			}
			if tt.providers == nil {
				tt.providers = providers
			}
			r := secret.NewRegistryWith(tt.scope, tt.opts)
			out, err := r.Protect(tt.envelope)
			if err != nil {
				t.Fatal(err)
			}
			h := out.(string)
			if tt.handle != nil {
				h = tt.handle(r, h)
			}
			got, err := r.ResolveManaged(context.Background(), h, tt.now, tt.authz, tt.providers)
			if tt.want == nil {
				if err != nil || got.Reveal() != "db-password-123" {
					t.Fatalf("ResolveManaged = %v; want the value", err)
				}
				if red := r.Redact("pw=db-password-123"); red != "pw="+h {
					t.Errorf("the fetched value is not redacted: %q", red)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("ResolveManaged = %v; want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.cause) {
				t.Errorf("error %q does not carry the cause %q", err, tt.cause)
			}
			if got.Reveal() != "" {
				t.Errorf("ResolveManaged gave a value with its error")
			}
		})
	}
}

func TestResolveManagedForgottenDuringFetch(t *testing.T) {
	r := secret.NewRegistryWith(testScope, secret.Options{Issuers: map[string][]string{"vault-broker": {"1"}}})
	out, err := r.Protect(decode(t, `{"$wardenManaged": `+managedJSON+`}`))
	if err != nil {
		t.Fatal(err)
	}
	slow := providerFunc(func(context.Context, secret.Managed) (secret.Secret, error) {
		r.Forget() // the turn ends while the provider is fetching
		return secret.New("late-value"), nil
	})
	allow := authzFunc(func(context.Context, secret.Managed) error { return nil })
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	if _, err := r.ResolveManaged(context.Background(), out.(string), now, allow, map[string]secret.Provider{"vault": slow}); !errors.Is(err, secret.ErrUnknownHandle) {
		t.Errorf("ResolveManaged = %v; want ErrUnknownHandle", err)
	}
	if r.Len() != 0 || r.Redact("late-value") != "late-value" {
		t.Error("a value fetched for a forgotten handle was kept")
	}
}

// TestSource: a handle remembers the server whose result declared its value; the first
// source of a value declared twice stays.
func TestSource(t *testing.T) {
	r := secret.NewRegistry(secret.Scope{})
	env := func(v string) any {
		return map[string]any{"k": map[string]any{secret.KeySensitive: map[string]any{"type": "token", "value": v}}}
	}
	handle := func(out any) string { return out.(map[string]any)["k"].(string) }
	a, err := r.ProtectFrom("github", env("value-from-github-0001"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Protect(env("value-from-nowhere-0002"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.ProtectFrom("other", env("value-from-github-0001"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		h, want string
		ok      bool
	}{
		{handle(a), "github", true},
		{handle(b), "", true},
		{handle(again), "github", true},
		{"protected://token/unknown0.aaaaaaaaaaaaaaaaaaaaaaaaaa", "", false},
	} {
		if got, ok := r.Source(tt.h); got != tt.want || ok != tt.ok {
			t.Errorf("Source(%s) = %q, %v; want %q, %v", tt.h, got, ok, tt.want, tt.ok)
		}
	}
}
