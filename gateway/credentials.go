package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/auth"
	"github.com/wardenhq/warden/instance"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/secret"
	"github.com/wardenhq/warden/surface"
)

// credential finds what a session hands a connector's upstream: the secret of the tenant's
// own connection or of the connection shared with it, or the host's variables for the owner.
// A connector that takes no credential is reached with none.
func (g *Gateway) credential(sf *surface.Surface, srv *policy.Server) (credential, error) {
	for _, c := range sf.Credentials() {
		if c.Connector == srv {
			return resolveCredential(srv, &c)
		}
	}
	return resolveCredential(srv, nil)
}

// resolveCredential reads what a connector's upstream is handed, from where it comes (nil:
// nowhere, which only a connector that takes no credential accepts).
func resolveCredential(srv *policy.Server, c *surface.Credential) (credential, error) {
	up := srv.Upstream
	needs := up.CredentialEnv != "" || up.CredentialHeader != ""
	if c == nil {
		if needs {
			return credential{}, fmt.Errorf("connector %s needs a credential, and the session has none", srv.ID)
		}
		return credential{}, nil
	}
	if c.Connection == nil {
		// The host environment: the owner's credentials.
		var host []string
		for _, name := range srv.HostEnv {
			if v, ok := os.LookupEnv(name); ok {
				host = append(host, name+"="+v)
			}
		}
		if needs && len(host) == 0 {
			return credential{}, fmt.Errorf("connector %s takes the host's credentials, but none of %s is set", srv.ID, strings.Join(srv.HostEnv, ", "))
		}
		return credential{id: "host", host: host}, nil
	}
	if c.Connection.Secret == "" {
		if needs {
			return credential{}, fmt.Errorf("connection %s of %s has no secret reference", c.Connection.ID, srv.ID)
		}
		return credential{id: "connection:" + c.Connection.ID}, nil
	}
	v, err := resolveRef(c.Connection.Secret)
	if err != nil {
		return credential{}, fmt.Errorf("connection %s of %s: %w", c.Connection.ID, srv.ID, err)
	}
	return credential{id: "connection:" + c.Connection.Tenant.ID + "/" + c.Connection.ID, value: v}, nil
}

// resolveRef reads a secret reference: env:NAME (a variable of Warden's environment) or
// file:/path (the file's content, without its final newline).
func resolveRef(ref string) (secret.Secret, error) {
	kind, name, _ := strings.Cut(ref, ":")
	switch kind {
	case "env":
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return secret.Secret{}, fmt.Errorf("the secret reference %s names a variable that is not set", ref)
		}
		return secret.New(v), nil
	case "file":
		b, err := os.ReadFile(name)
		if err != nil {
			return secret.Secret{}, fmt.Errorf("the secret reference %s cannot be read: %w", ref, errors.Unwrap(err))
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return secret.Secret{}, fmt.Errorf("the secret reference %s names an empty file", ref)
		}
		return secret.New(v), nil
	}
	return secret.Secret{}, fmt.Errorf("the secret reference %q is neither env:NAME nor file:/path", ref)
}

// A child is a subagent's token: it opens a session whose surface is a subset of its parent's,
// working in the root the parent's call named, and lives while its parent does.
type child struct {
	token         *auth.Token
	hash          string
	parent        *session
	role, profile string
	root          string
}

// spawn makes a subagent's token (spawn_subagent). The token comes back as a protected value:
// the model sees a handle, which it passes to the process that runs the subagent through
// protectedBindings.
func (s *session) spawn(ctx context.Context, a *action.Action) (map[string]any, error) {
	gs := s.gs.Load()
	profile := a.Inputs["profile"]
	sf, err := gs.Review.Surface.Child("", profile)
	if err != nil {
		return nil, fmt.Errorf("the subagent cannot be started: %w", err)
	}
	root := a.Paths["root"]
	if root == "" {
		root = s.workspace
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("the subagent's root %s is not a directory", a.Inputs["root"])
	}
	secretValue, hash, err := auth.NewSecret()
	if err != nil {
		return nil, err
	}
	tok := &auth.Token{ID: "sub-" + newID(), Hash: hash, Role: auth.RoleAgent, Tenant: sf.Tenant().ID,
		SessionRole: sf.Role().ID, Name: gs.Principal + "/subagent", Created: s.g.o.Gate.Now()}
	if pr := sf.Profile(); pr != nil {
		tok.Profile = pr.ID
	}
	c := &child{token: tok, hash: hash, parent: s, profile: profile, root: root}
	if id := s.mcpID.Load(); id != nil && s.g.shared() {
		// Kept in the store (its hash, never the secret), so that the subagent may connect to
		// any instance while this session lives.
		if err := s.g.o.Sessions.PutChild(ctx, &instance.Child{Hash: hash, Token: tok.ID, Parent: *id, Tenant: tok.Tenant,
			Role: tok.SessionRole, Profile: tok.Profile, Name: tok.Name, Spawned: profile, Root: root, Created: tok.Created}); err != nil {
			return nil, fmt.Errorf("the subagent's token cannot be recorded: %w", err)
		}
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return nil, errors.New("the session has ended")
	}
	s.kids = append(s.kids, c)
	s.mu.Unlock()
	s.g.mu.Lock()
	s.g.children[hash] = c
	s.g.mu.Unlock()
	return map[string]any{
		"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf(
			"A subagent may now connect to this Warden's MCP endpoint with the bearer token in structuredContent.token "+
				"(a protected handle: pass it to the process that runs the subagent through protectedBindings). "+
				"Its %d tools are a subset of yours; it works in %s; its task: %s", sf.Len(), root, a.Inputs["task"])}},
		"structuredContent": map[string]any{
			"token": map[string]any{"$wardenSensitive": map[string]any{"type": "token", "value": secretValue}},
			"tools": toAny(sf.Tools()),
			"root":  root,
			"task":  a.Inputs["task"],
			"depth": float64(sf.Depth()),
		},
	}, nil
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}
