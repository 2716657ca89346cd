package gateway

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/auth"
)

func TestRouteOf(t *testing.T) {
	bound := &auth.Token{Model: "claude-haiku-5-5", Harness: "loop"}
	cases := []struct {
		name    string
		tok     *auth.Token
		meta    map[string]any
		model   string
		harness string
		err     string
	}{
		{name: "nothing", tok: &auth.Token{}},
		{name: "stated", tok: &auth.Token{}, meta: map[string]any{metaModel: "claude-sonnet-5", metaHarness: "loop"}, model: "claude-sonnet-5", harness: "loop"},
		{name: "bound", tok: bound, model: "claude-haiku-5-5", harness: "loop"},
		{name: "bound and stated alike", tok: bound, meta: map[string]any{metaModel: "claude-haiku-5-5", metaHarness: "loop"}, model: "claude-haiku-5-5", harness: "loop"},
		{name: "a model against the token", tok: bound, meta: map[string]any{metaModel: "claude-sonnet-5"},
			err: "initialize _meta.warden/model states the model claude-sonnet-5, but the session's token binds the model claude-haiku-5-5"},
		{name: "a harness against the token", tok: bound, meta: map[string]any{metaHarness: "default"},
			err: "initialize _meta.warden/harness states the harness default, but the session's token binds the harness loop"},
		{name: "a model that is not a string", tok: &auth.Token{}, meta: map[string]any{metaModel: 3.0}, err: "_meta.warden/model must be a non-empty string, not 3"},
		{name: "an empty harness", tok: &auth.Token{}, meta: map[string]any{metaHarness: ""}, err: "_meta.warden/harness must be a non-empty string"},
		{name: "a malformed model", tok: &auth.Token{}, meta: map[string]any{metaModel: "a b"}, err: `initialize _meta.warden/model: the model id "a b" must match`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt, err := routeOf(c.tok, c.meta)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("routeOf = %+v, %v; want an error saying %q", rt, err, c.err)
				}
				return
			}
			if err != nil || rt.model != c.model || rt.harness != c.harness {
				t.Fatalf("routeOf = %+v, %v; want model %q, harness %q", rt, err, c.model, c.harness)
			}
		})
	}
}

// Over stdio the session opens before its initialize is read, on the model its token binds:
// an initialize that states another is refused, one that states the same is answered.
func TestStdioRefusesAnotherModel(t *testing.T) {
	r := newRig(t, []byte(askPolicy), nil)
	secret, hash, err := auth.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.db.CreateToken(context.Background(), &auth.Token{ID: "tok_" + newID(), Hash: hash, Role: auth.RoleAgent,
		Tenant: "default", SessionRole: "person", Model: "claude-haiku-5-5", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ model, want string }{
		{"claude-sonnet-5", "states the model claude-sonnet-5, but the session runs on claude-haiku-5-5"},
		{"claude-haiku-5-5", `"result"`},
	} {
		input := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"_meta":{"warden/model":"` + c.model +
			`"},"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := r.gw.ServeStdio(ctx, secret, io.NopCloser(strings.NewReader(input)), nopWriteCloser{&lockedWriter{w: &out}})
		cancel()
		if err != nil && ctx.Err() != nil {
			t.Fatalf("serve: %v", err)
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("initialize stating %s over stdio: %s; want %q", c.model, out.String(), c.want)
		}
	}
}
