package secret

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Managed is a managed reference (P4): a pointer to a value that a provider holds, valid for
// one agent, session and conversation until Expires. A registry keeps it behind a handle; the
// value is fetched each time it is used, and kept only so that Redact can find it.
type Managed struct {
	Issuer, Version string
	Expires         time.Time
	Agent, Session  string
	Conversation    string
	Provider, Ref   string
}

// Authorizer says whether the caller is still authorised to use a managed reference; nil
// means yes. It is asked on every use, so that a revoked grant takes effect at once.
type Authorizer interface {
	Authorize(ctx context.Context, m Managed) error
}

// Provider fetches the value a managed reference points to.
type Provider interface {
	Fetch(ctx context.Context, m Managed) (Secret, error)
}

// ResolveManaged fetches the value of the managed reference behind handle. Each check has its
// own error, in this order: the handle is known (ErrUnknownHandle, ErrForeignHandle) and
// managed (ErrNotManaged); the issuer and its version are in Options.Issuers
// (ErrUnsupportedIssuer, ErrUnsupportedVersion); now is before Expires (ErrExpired); the
// reference's agent, session and conversation equal the registry's Scope exactly
// (ErrScopeMismatch); authz, which must not be nil, allows it (ErrNotAuthorized); providers
// has the reference's provider (ErrNoProvider) and it fetches the value (ErrProviderFailed).
// The causes from authz and the provider are wrapped too.
//
// The fetched value becomes known to Redact, as the handle, so that a process echoing it is
// redacted like any declared value. If the registry is forgotten while the provider fetches,
// the value is not given out and the error is ErrUnknownHandle.
func (r *Registry) ResolveManaged(ctx context.Context, handle string, now time.Time, authz Authorizer, providers map[string]Provider) (Secret, error) {
	fail := func(err error) (Secret, error) {
		return Secret{}, &redactedError{msg: r.Redact("resolve " + quoteShort(handle) + ": " + err.Error()), err: err}
	}
	r.st.mu.Lock()
	e, err := r.lookup(handle)
	gen := r.st.gen
	r.st.mu.Unlock()
	if err != nil {
		return fail(err)
	}
	if e.managed == nil {
		return fail(ErrNotManaged)
	}
	m := *e.managed
	versions, ok := r.st.opts.Issuers[m.Issuer]
	if !ok {
		return fail(fmt.Errorf("%w %q", ErrUnsupportedIssuer, m.Issuer))
	}
	if !slices.Contains(versions, m.Version) {
		return fail(fmt.Errorf("%w %q of issuer %q", ErrUnsupportedVersion, m.Version, m.Issuer))
	}
	if !now.Before(m.Expires) {
		return fail(fmt.Errorf("%w at %s", ErrExpired, m.Expires.Format(time.RFC3339)))
	}
	switch {
	case m.Agent != r.st.scope.Agent:
		return fail(fmt.Errorf("%w: the agent differs", ErrScopeMismatch))
	case m.Session != r.st.scope.Session:
		return fail(fmt.Errorf("%w: the session differs", ErrScopeMismatch))
	case m.Conversation != r.st.scope.Conversation:
		return fail(fmt.Errorf("%w: the conversation differs", ErrScopeMismatch))
	}
	if authz == nil {
		return fail(fmt.Errorf("%w: no authorizer", ErrNotAuthorized))
	}
	if err := authz.Authorize(ctx, m); err != nil {
		return fail(fmt.Errorf("%w: %w", ErrNotAuthorized, err))
	}
	p, ok := providers[m.Provider]
	if !ok || p == nil {
		return fail(fmt.Errorf("%w %q", ErrNoProvider, m.Provider))
	}
	value, err := p.Fetch(ctx, m)
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrProviderFailed, err))
	}

	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	if r.st.gen != gen {
		return fail(ErrUnknownHandle)
	}
	if v := value.Reveal(); len(v) >= MinRedactLen {
		if _, known := r.st.held[v]; !known {
			_ = r.learn([]string{v}, []string{handle}, true) // forced: cannot fail
			r.publish()
		}
	}
	return value, nil
}
