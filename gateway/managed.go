package gateway

// Managed references (P4): a connector that declares managed: in the policy issues
// $wardenManaged references to secrets it holds. A reference becomes a handle like any
// protected value; when a process binds it (protectedBindings), the session's registry checks
// its issuer and version, its lifetime and that its agent, session and conversation are this
// session's exactly, asks managedAuthz whether the session may still use it, and only then
// has the connector fetch the value (connectorProvider).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/secret"
)

// Keys of the _meta Warden sends with every upstream call: who the call is for, so that a
// connector can issue managed references scoped to exactly that.
const (
	MetaAgent        = "dev.wardenhq/agent"
	MetaSession      = "dev.wardenhq/session"
	MetaConversation = "dev.wardenhq/conversation"
)

// scope is who the session's protected values belong to: its principal, its session id, and
// its conversation (its run, or the session itself when it runs none).
func (s *session) scope() secret.Scope {
	conv := s.id
	if gs := s.gs.Load(); gs != nil && gs.Run != nil {
		conv = gs.Run.ID
	}
	return secret.Scope{Agent: principal(s.token), Session: s.id, Conversation: conv}
}

// callerMeta is the _meta of the session's upstream calls.
func (s *session) callerMeta() mcp.Meta {
	sc := s.scope()
	return mcp.Meta{MetaAgent: sc.Agent, MetaSession: sc.Session, MetaConversation: sc.Conversation}
}

// issuers are the managed-reference issuers of a policy, with their versions.
func issuers(p *policy.Policy) map[string][]string {
	out := map[string][]string{}
	for srv := range p.Servers() {
		if srv.Managed != nil {
			out[srv.Managed.Issuer] = srv.Managed.Versions
		}
	}
	return out
}

// managedAuthz decides, at each use, whether the session may still use a managed reference:
// it has not ended, the policy in force still has the reference's provider issue references
// under that issuer and version, and the session's current surface still holds a tool of it.
type managedAuthz struct{ s *session }

// Authorize implements secret.Authorizer.
func (a managedAuthz) Authorize(_ context.Context, m secret.Managed) error {
	s := a.s
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended {
		return errors.New("the session has ended")
	}
	sf := s.gs.Load().Review.Surface
	srv, ok := sf.Policy().Server(m.Provider)
	switch {
	case !ok || srv.Managed == nil:
		return fmt.Errorf("%s does not issue managed references under the policy in force", m.Provider)
	case srv.Managed.Issuer != m.Issuer || !slices.Contains(srv.Managed.Versions, m.Version):
		return fmt.Errorf("%s issues references as %s (versions %v), not %s version %s", m.Provider, srv.Managed.Issuer, srv.Managed.Versions, m.Issuer, m.Version)
	}
	for _, name := range sf.Tools() {
		if t, ok := sf.Policy().Tool(name); ok && t.Server == srv {
			return nil
		}
	}
	return fmt.Errorf("this session no longer holds any tool of %s", m.Provider)
}

// providers are the connectors that can fetch managed references' values, by id.
func (s *session) providers() map[string]secret.Provider {
	out := map[string]secret.Provider{}
	for srv := range s.gs.Load().Review.Surface.Policy().Servers() {
		if srv.Managed != nil && srv.Upstream != nil {
			out[srv.ID] = connectorProvider{s: s, srv: srv}
		}
	}
	return out
}

// connectorProvider fetches a managed reference's value from the connector that issued it, by
// calling its resolve tool with {"ref": REF}; the answer must hold exactly one
// $wardenSensitive envelope, which is read in a registry of its own and never shown to the
// model.
type connectorProvider struct {
	s   *session
	srv *policy.Server
}

// Fetch implements secret.Provider.
func (p connectorProvider) Fetch(ctx context.Context, m secret.Managed) (secret.Secret, error) {
	s := p.s
	u := s.upstream(ctx, s.gs.Load().Review.Surface, p.srv)
	if u == nil {
		return secret.Secret{}, fmt.Errorf("connector %s cannot be reached", p.srv.ID)
	}
	res, err := u.call(ctx, p.srv.Managed.Resolve, map[string]any{"ref": m.Ref}, s.callerMeta(), true)
	if err != nil {
		return secret.Secret{}, err
	}
	if res.IsError {
		return secret.Secret{}, fmt.Errorf("connector %s refused to resolve the reference", p.srv.ID)
	}
	v, err := plain(res)
	if err != nil {
		return secret.Secret{}, err
	}
	scratch := secret.NewRegistry(s.scope())
	defer scratch.Forget()
	// The envelope may be in structured content or in a text item that is one JSON document.
	var texts []any
	if m, ok := v.(map[string]any); ok {
		if items, ok := m["content"].([]any); ok {
			for _, it := range items {
				if item, ok := it.(map[string]any); ok {
					if text, ok := item["text"].(string); ok && declares(text) {
						var doc any
						if json.Unmarshal([]byte(text), &doc) == nil {
							texts = append(texts, doc)
						}
					}
				}
			}
		}
		v = map[string]any{"structured": m["structuredContent"], "texts": texts}
	}
	out, err := scratch.Protect(v)
	if err != nil {
		return secret.Secret{}, fmt.Errorf("connector %s answered with a malformed envelope: %w", p.srv.ID, err)
	}
	handles := handlesIn(out, nil)
	if len(handles) != 1 {
		return secret.Secret{}, fmt.Errorf("connector %s answered with %d protected values, not exactly one", p.srv.ID, len(handles))
	}
	got, err := scratch.Resolve(map[string]string{"v": handles[0]})
	if err != nil {
		return secret.Secret{}, err
	}
	return got["v"], nil
}

// handlesIn collects the distinct protected:// handles in a decoded JSON value.
func handlesIn(v any, seen []string) []string {
	switch v := v.(type) {
	case string:
		if strings.HasPrefix(v, secret.HandlePrefix) && !slices.Contains(seen, v) {
			seen = append(seen, v)
		}
	case map[string]any:
		for _, x := range v {
			seen = handlesIn(x, seen)
		}
	case []any:
		for _, x := range v {
			seen = handlesIn(x, seen)
		}
	}
	return seen
}
