package gateway

// Protected bindings of sandboxed commands (issue 16): a command bound to a protected value is
// given a placeholder, fresh for the call, and the session's egress proxy writes the value in
// its place only in requests to the hosts the value's source allows (policy: secrets.hosts, by
// default a url connector's own host). The placeholder-to-value map lives in the proxy for the
// call only, and is never logged or audited. A source that says secrets.exposeToProcess gives
// the value itself, and output redaction is then the only defence.

import (
	"fmt"

	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/secret"
)

// placehold puts placeholders in env (variable → value, from handles: variable → handle) for
// every value whose source does not expose it to processes, and has the session's proxy
// substitute them until release is called, when the command has ended.
func (s *session) placehold(env map[string]string, handles map[string]any) (map[string]string, func(), error) {
	pol := s.gs.Load().Review.Surface.Policy()
	var subs []egress.Substitution
	for name, value := range env {
		h, _ := handles[name].(string)
		src, _ := s.secrets.Source(h)
		srv, known := pol.Server(src)
		if known && srv.ExposeSecrets {
			continue // the policy gives this source's values to the process itself
		}
		var hosts *egress.Allowlist
		if known {
			hosts = srv.SecretHosts // nil: the value goes nowhere
		}
		ph := egress.NewPlaceholder()
		subs = append(subs, egress.Substitution{Name: name, Placeholder: ph, Value: secret.New(value), Hosts: hosts})
		env[name] = ph
	}
	if len(subs) == 0 {
		return env, func() {}, nil
	}
	p, _, err := s.net()
	if err != nil {
		return nil, nil, fmt.Errorf("protected bindings need the session's egress proxy, which cannot start: %w", err)
	}
	release, err := p.Substitute(subs)
	if err != nil {
		return nil, nil, err
	}
	return env, release, nil
}

// caBundle is what every sandboxed command of the session trusts: the system roots and the
// proxy's CA (native.Sandbox.CABundle). The proxy terminates TLS only while the session holds
// placeholders, but then it does so for every tunnel, a command's running beside the one that
// holds them too: given to each command from its start, the bundle keeps that command's HTTPS
// working then. Trusting the CA at other times changes nothing (its key never leaves the
// proxy, which signs only while it terminates). Without a bundle (the CA cannot be made), a
// command's TLS to a host the proxy terminates fails to verify: closed, not open.
func (s *session) caBundle() []byte {
	p, _, err := s.net()
	if err != nil {
		return nil
	}
	b, err := p.CABundle()
	if err != nil {
		s.g.logger.Error("the session's certificate authority could not be made", "session", s.id, "err", err)
		return nil
	}
	return b
}
