package secret_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wardenhq/warden/secret"
)

func Example() {
	r := secret.NewRegistry(secret.Scope{Agent: "agent-1", Session: "session-1", Conversation: "conv-1"})

	// A connector's result declares its token.
	var result any
	_ = json.Unmarshal([]byte(`{"login": "ann",
		"token": {"$wardenSensitive": {"type": "token", "value": "ghp_example1234"}}}`), &result)
	out, err := r.Protect(result)
	if err != nil {
		fmt.Println("withhold the result:", err)
		return
	}
	handle := out.(map[string]any)["token"].(string)
	fmt.Println(strings.HasPrefix(handle, "protected://token/"))

	// A later shell_exec binds the handle to a variable: the process gets the value.
	env, err := r.Resolve(map[string]string{"GITHUB_TOKEN": handle})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(env["GITHUB_TOKEN"].Reveal())

	// The process echoes it; the model reads the handle.
	fmt.Println(r.Redact("token=ghp_example1234") == "token="+handle)

	// Logs read the placeholder.
	fmt.Println(env["GITHUB_TOKEN"])

	// A malformed declaration withholds the whole result.
	_ = json.Unmarshal([]byte(`{"a": {"$wardenSensitive": {"type": "token", "value": 42}}}`), &result)
	_, err = r.Protect(result)
	fmt.Println(err)
	// Output:
	// true
	// ghp_example1234
	// true
	// [protected]
	// malformed protected-value declaration at /a/$wardenSensitive/value: value is not a string
}

type vault map[string]string

func (v vault) Fetch(_ context.Context, m secret.Managed) (secret.Secret, error) {
	if s, ok := v[m.Ref]; ok {
		return secret.New(s), nil
	}
	return secret.Secret{}, errors.New("no such secret")
}

type grants struct{ revoked bool }

func (g *grants) Authorize(context.Context, secret.Managed) error {
	if g.revoked {
		return errors.New("grant revoked")
	}
	return nil
}

func ExampleRegistry_ResolveManaged() {
	r := secret.NewRegistryWith(secret.Scope{Agent: "agent-1", Session: "session-1", Conversation: "conv-1"},
		secret.Options{Issuers: map[string][]string{"vault-broker": {"1"}}})
	var result any
	_ = json.Unmarshal([]byte(`{"$wardenManaged": {"issuer": "vault-broker", "version": "1",
		"expires": "2026-12-01T00:00:00Z", "agent": "agent-1", "session": "session-1",
		"conversation": "conv-1", "provider": "vault", "ref": "kv/db"}}`), &result)
	out, _ := r.Protect(result)
	handle := out.(string)

	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	g := &grants{}
	providers := map[string]secret.Provider{"vault": vault{"kv/db": "db-pass-5678"}}
	v, err := r.ResolveManaged(context.Background(), handle, now, g, providers)
	fmt.Println(v.Reveal(), err)

	g.revoked = true
	_, err = r.ResolveManaged(context.Background(), handle, now, g, providers)
	fmt.Println(errors.Is(err, secret.ErrNotAuthorized))

	_, err = r.ResolveManaged(context.Background(), handle, now.Add(24*time.Hour), &grants{}, providers)
	fmt.Println(errors.Is(err, secret.ErrExpired))
	// Output:
	// db-pass-5678 <nil>
	// true
	// true
}
