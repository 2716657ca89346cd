package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/approval"
	"github.com/wardenhq/warden/egress"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/native"
	"github.com/wardenhq/warden/policy"
)

// errSessionEnded is the error of a session's network once the session has ended.
var errSessionEnded = errors.New("the session has ended")

// allowedRefresh is how often a tenant's list of allowed hosts is read again from the store,
// at most: a host allowed or revoked through another instance is seen within it. An answer
// given to a card of this instance widens the list at once.
const allowedRefresh = 2 * time.Second

// StandingStore is what the gateway reads to know the hosts a person allowed for a tenant:
// the standing approvals of sandbox_allow_host, and the cards they were answered on (which
// hold the host). The approvals store is one.
type StandingStore interface {
	Standings(ctx context.Context, tenant string) ([]*approval.Standing, error)
	Card(ctx context.Context, tenant, id string) (*approval.Card, error)
}

// allowedHosts are the tenants' lists of hosts a person allowed with "allow for this tenant"
// on a sandbox_allow_host card. A list is a standing approval in the store, so the approvals
// API shows and revokes it like any other.
type allowedHosts struct {
	store  StandingStore // nil: only what this process was told
	logger *slog.Logger
	policy func() *policy.Policy

	mu      sync.Mutex
	tenants map[string]*tenantHosts
}

type tenantHosts struct {
	list    atomic.Pointer[egress.Allowlist]
	read    atomic.Int64 // when the list was last read from the store (unix nanoseconds)
	reading atomic.Bool
	mu      sync.Mutex // serialises adds and reads
}

func (a *allowedHosts) tenant(id string) *tenantHosts {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tenants == nil {
		a.tenants = map[string]*tenantHosts{}
	}
	t := a.tenants[id]
	if t == nil {
		t = &tenantHosts{}
		a.tenants[id] = t
	}
	return t
}

// list returns the function a tenant's proxies call on every check (egress.ProxyOptions.Tenant):
// it returns the list at once, and reads it again from the store in the background when it is
// older than allowedRefresh.
func (a *allowedHosts) list(tenant string) func() *egress.Allowlist {
	t := a.tenant(tenant)
	if t.read.Load() == 0 {
		a.refresh(context.Background(), tenant, t) // the first proxy of the tenant waits for it
	}
	return func() *egress.Allowlist {
		if time.Since(time.Unix(0, t.read.Load())) > allowedRefresh && t.reading.CompareAndSwap(false, true) {
			go func() {
				defer t.reading.Store(false)
				a.refresh(context.Background(), tenant, t)
			}()
		}
		return t.list.Load()
	}
}

// stale makes every tenant's list be read again at its next check: the policy changed, and
// with it what the tenants add to the allowlist.
func (a *allowedHosts) stale() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.tenants {
		if t.read.Load() != 0 {
			t.read.Store(1)
		}
	}
}

// add puts a host on a tenant's list at once (its standing approval is saved by the broker).
func (a *allowedHosts) add(tenant, host string) error {
	t := a.tenant(tenant)
	t.mu.Lock()
	defer t.mu.Unlock()
	next, err := t.list.Load().With(host)
	if err != nil {
		return err
	}
	t.list.Store(next)
	return nil
}

// refresh reads a tenant's list: the entries the policy in force gives the tenant (its egress
// object), and from the store the hosts of its standing approvals of tools of kind
// sandbox_allow_host that are not revoked. A store that cannot be read leaves the
// list as it was (logged); an entry that no longer parses is left out (logged).
func (a *allowedHosts) refresh(ctx context.Context, tenant string, t *tenantHosts) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var standings []*approval.Standing
	var err error
	if a.store != nil {
		standings, err = a.store.Standings(ctx, tenant)
	}
	if err != nil {
		a.logger.Warn("the hosts allowed for a tenant could not be read; the list in memory stays", "tenant", tenant, "err", err)
		t.read.Store(time.Now().UnixNano())
		return
	}
	p := a.policy()
	var hosts []string
	if t, ok := p.Tenant(tenant); ok {
		// What the tenant's own egress object (or its entry in the policy file) adds.
		hosts = append(hosts, t.Egress...)
	}
	for _, st := range standings {
		if !st.Revoked.IsZero() || st.Tenant != tenant {
			continue
		}
		if tool, ok := p.Tool(st.Tool); !ok || tool.Kind != kindAllowHost {
			continue
		}
		c, err := a.store.Card(ctx, tenant, st.CardID)
		if err != nil {
			a.logger.Warn("the card of a host allowed for a tenant could not be read", "tenant", tenant, "standing", st.ID, "err", err)
			continue
		}
		var args struct {
			Host string `json:"host"`
		}
		if err := json.Unmarshal(c.Args, &args); err != nil || args.Host == "" {
			a.logger.Warn("the card of a host allowed for a tenant names no host", "tenant", tenant, "card", c.ID)
			continue
		}
		hosts = append(hosts, args.Host)
	}
	var list *egress.Allowlist
	for _, h := range hosts {
		next, err := list.With(h)
		if err != nil {
			a.logger.Warn("a host allowed for a tenant is not a valid entry; it is left out", "tenant", tenant, "host", h, "err", err)
			continue
		}
		list = next
	}
	t.mu.Lock()
	t.list.Store(list)
	t.read.Store(time.Now().UnixNano())
	t.mu.Unlock()
}

// kindAllowHost is the native kind of the tool that asks a person to widen the sandbox's
// egress (X3).
const kindAllowHost = "sandbox_allow_host"

// allowHost runs sandbox_allow_host once a person said yes: allow once widens this session's
// proxy; allow for the tenant puts the host on the tenant's list, which every proxy of the
// tenant consults (the broker saved it as a standing approval). Running commands are not
// restarted: their next connection through the proxy is let through.
func (s *session) allowHost(ctx context.Context, a *action.Action) (map[string]any, error) {
	host := a.Inputs["host"]
	if host == "" {
		return nil, fmt.Errorf("%w: sandbox_allow_host without a host", native.ErrUnreviewed)
	}
	answer, asked := gate.Answer(ctx)
	if !asked {
		return nil, errors.New("sandbox_allow_host widens the sandbox only on a person's answer, and nobody was asked")
	}
	if s.g.checker.Mode() == egress.ModeOpen {
		return hostResult(fmt.Sprintf("Nothing changed: %s is open, so every public host is reachable already.", egress.EnvMode),
			map[string]any{"host": host, "scope": "none"}), nil
	}
	p, _, err := s.net()
	if err != nil {
		return nil, err
	}
	tenant := s.gs.Load().Review.Surface.Tenant().ID
	switch answer {
	case approval.AllowTenant:
		if err := s.g.allowed.add(tenant, host); err != nil {
			return nil, fmt.Errorf("%s cannot be allowed: %w", host, err)
		}
		s.g.logger.Info("egress widened for a tenant", "tenant", tenant, "host", host, "session", s.id)
		return hostResult(fmt.Sprintf("Allowed %s for tenant %s (saved): sandboxed commands of every session of the tenant reach it through the proxy from now on. "+
			"It stays until an operator revokes the standing approval.", host, tenant),
			map[string]any{"host": host, "scope": "tenant"}), nil
	default:
		if err := p.AllowOnce(host); err != nil {
			return nil, fmt.Errorf("%s cannot be allowed: %w", host, err)
		}
		s.g.logger.Info("egress widened for a session", "tenant", tenant, "host", host, "session", s.id)
		return hostResult(fmt.Sprintf("Allowed %s for this session only: its sandboxed commands reach it through the proxy from now on.", host),
			map[string]any{"host": host, "scope": "session"}), nil
	}
}

// textResult is a tool result of one text and its structured form.
func hostResult(text string, structured map[string]any) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "structuredContent": structured}
}
