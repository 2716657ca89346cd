package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wardenhq/warden/egress"
)

func (c *compiler) compileTenants() {
	p := c.pol
	p.boundaries = c.cfg.Boundaries
	connIDs := map[string]Pos{}
	var owner *Tenant
	for i := range c.cfg.Tenants {
		tc := &c.cfg.Tenants[i]
		if !c.checkID(tc.Node, "a tenant", tc.ID, idPattern) {
			continue
		}
		if j, dup := p.tenantIdx[tc.ID]; dup {
			c.errorf(tc.At("id"), "tenant %q is declared twice (first at line %d)", tc.ID, p.tenants[j].Pos.Line)
			continue
		}
		t := &Tenant{ID: tc.ID, Name: tc.Name, Account: tc.Account, Owner: tc.Owner, Goals: tc.Goals,
			MonthlyModelCapUsd: tc.MonthlyModelCapUsd, Index: len(p.tenants), Pos: tc.Pos}
		if tc.MonthlyModelCapUsd < 0 {
			c.errorf(tc.At("monthlyModelCapUsd"), "tenant %s: monthlyModelCapUsd cannot be negative", t.ID)
		}
		if t.Name == "" {
			t.Name = t.ID
		}
		if t.Owner {
			if owner != nil {
				c.errorf(tc.At("owner"), "tenant %s is marked as the owner's, but %s already is: the deployment has one owner's tenant", t.ID, owner.ID)
			} else {
				owner = t
			}
		}
		seen := map[string]bool{}
		for _, n := range tc.Skills {
			if n.Value == "" || seen[n.Value] {
				c.errorf(n.Pos, "tenant %s: skill %q is empty or listed twice", t.ID, n.Value)
				continue
			}
			seen[n.Value] = true
			t.Skills = append(t.Skills, n.Value)
		}
		for _, n := range tc.Coworkers {
			pr, ok := p.Profile(n.Value)
			switch {
			case !ok:
				c.errorf(n.Pos, "tenant %s names the coworker %q, which is not a profile", t.ID, n.Value)
			case containsProfile(t.Coworkers, pr):
				c.errorf(n.Pos, "tenant %s names the coworker %s twice", t.ID, n.Value)
			default:
				t.Coworkers = append(t.Coworkers, pr)
			}
		}
		for j := range tc.Connections {
			cc := &tc.Connections[j]
			if !c.checkID(cc.Node, "a connection", cc.ID, idPattern) {
				continue
			}
			if first, dup := connIDs[cc.ID]; dup {
				c.errorf(cc.At("id"), "connection %q is declared twice (first at line %d); connection ids are unique across tenants", cc.ID, first.Line)
				continue
			}
			connIDs[cc.ID] = cc.Pos
			s, ok := p.Server(cc.Connector.Value)
			switch {
			case cc.Connector.Value == "":
				c.errorf(cc.Pos, "connection %s names no connector", cc.ID)
				continue
			case !ok:
				c.errorf(cc.Connector.Pos, "connection %s is for the connector %q, which does not exist", cc.ID, cc.Connector.Value)
				continue
			case s.Kind != KindConnector:
				c.errorf(cc.Connector.Pos, "connection %s is for %q, which is a platform server, not a connector", cc.ID, cc.Connector.Value)
				continue
			}
			conn := &Connection{ID: cc.ID, Name: cc.Name, Connector: s, Tenant: t, Enabled: cc.Enabled == nil || *cc.Enabled, Secret: cc.Secret, Pos: cc.Pos}
			if ref := cc.Secret; ref != "" && !strings.HasPrefix(ref, "env:") && !strings.HasPrefix(ref, "file:") {
				c.errorf(cc.At("secret"), "connection %s: secret must be a reference, env:NAME or file:/path, never the value itself", cc.ID)
			}
			if conn.Name == "" {
				conn.Name = conn.ID
			}
			t.Connections = append(t.Connections, conn)
		}
		c.compileEgress(t, tc.Egress)
		p.tenantIdx[t.ID] = t.Index
		p.tenants = append(p.tenants, t)
		if tc.Boundaries != nil {
			if p.tenantBounds == nil {
				p.tenantBounds = map[string]*BoundariesConfig{}
			}
			p.tenantBounds[t.ID] = tc.Boundaries
		}
	}

	// Sharing, now that every tenant exists.
	for _, t := range p.tenants {
		tc := c.tenantConfig(t)
		for _, conn := range t.Connections {
			cc := c.connectionConfig(tc, conn.ID)
			for _, n := range cc.SharedWith {
				other, ok := p.Tenant(n.Value)
				switch {
				case !ok:
					c.errorf(n.Pos, "connection %s is shared with the tenant %q, which does not exist", conn.ID, n.Value)
				case other == t:
					c.errorf(n.Pos, "connection %s is shared with its own tenant", conn.ID)
				case t.Account == "" || other.Account != t.Account:
					c.errorf(n.Pos, "connection %s can be shared only within its account: %s belongs to account %q, %s to %q",
						conn.ID, t.ID, t.Account, other.ID, other.Account)
				default:
					conn.SharedWith = append(conn.SharedWith, other)
				}
			}
		}
	}

	// Each tenant's stored credentials: its own enabled connection first, then one shared with
	// it. The host environment is decided per session (it depends on the environment and on
	// whether the tenant is the owner's).
	for _, t := range p.tenants {
		t.stored = make([]*Resolution, len(p.servers))
		for _, conn := range t.Connections {
			i := conn.Connector.Index
			if !conn.Enabled {
				continue
			}
			if t.stored[i] != nil {
				c.warnf(conn.Pos, "tenant %s has two enabled connections for %s; %s is used", t.ID, conn.Connector.ID, t.stored[i].Connection.ID)
				continue
			}
			t.stored[i] = &Resolution{Source: SourceOwn, Connection: conn}
		}
	}
	for _, from := range p.tenants {
		for _, conn := range from.Connections {
			if !conn.Enabled {
				continue
			}
			for _, to := range conn.SharedWith {
				if i := conn.Connector.Index; to.stored[i] == nil {
					to.stored[i] = &Resolution{Source: SourceShared, Connection: conn}
				}
			}
		}
	}
}

// compileEgress checks the hosts a tenant adds to the egress allowlist, each as the proxy
// would read it.
func (c *compiler) compileEgress(t *Tenant, ec *TenantEgressConfig) {
	if ec == nil {
		return
	}
	seen := map[string]bool{}
	for _, n := range ec.Allow {
		if _, err := egress.NewAllowlist([]string{n.Value}); err != nil {
			var le egress.ListError
			msg := err.Error()
			if errors.As(err, &le) && len(le) == 1 {
				msg = le[0].Err.Error()
			}
			c.errorf(n.Pos, "tenant %s: egress entry %q: %s", t.ID, n.Value, msg)
			continue
		}
		if seen[n.Value] {
			c.errorf(n.Pos, "tenant %s: egress entry %q is listed twice", t.ID, n.Value)
			continue
		}
		seen[n.Value] = true
		t.Egress = append(t.Egress, n.Value)
	}
}

func containsProfile(list []*Profile, p *Profile) bool {
	for _, q := range list {
		if q == p {
			return true
		}
	}
	return false
}

func (c *compiler) tenantConfig(t *Tenant) *TenantConfig {
	for i := range c.cfg.Tenants {
		if c.cfg.Tenants[i].Pos == t.Pos {
			return &c.cfg.Tenants[i]
		}
	}
	return &TenantConfig{}
}

func (c *compiler) connectionConfig(tc *TenantConfig, id string) *ConnectionConfig {
	for i := range tc.Connections {
		if tc.Connections[i].ID == id {
			return &tc.Connections[i]
		}
	}
	return &ConnectionConfig{}
}

// ErrNoConnection is matched by the error of a connection selector that selects nothing.
var ErrNoConnection = errors.New("no connection selected")

// Connections returns the enabled connections the tenant may use for a connector: its own,
// then those its account shared with it, in declaration order.
func (p *Policy) Connections(t *Tenant, c *Server) []*Connection {
	var out []*Connection
	for _, conn := range t.Connections {
		if conn.Enabled && conn.Connector == c {
			out = append(out, conn)
		}
	}
	for _, from := range p.tenants {
		for _, conn := range from.Connections {
			if conn.Enabled && conn.Connector == c && slices.Contains(conn.SharedWith, t) {
				out = append(out, conn)
			}
		}
	}
	return out
}

// SelectConnection picks the connection a call names (S8): by its exact id, or by a display
// name that matches exactly one of the tenant's usable connections for the connector, in any
// case. An ambiguous name selects nothing: it is an error, never a guess.
func (p *Policy) SelectConnection(t *Tenant, c *Server, selector string) (*Connection, error) {
	usable := p.Connections(t, c)
	for _, conn := range usable {
		if conn.ID == selector {
			return conn, nil
		}
	}
	var found []*Connection
	for _, conn := range usable {
		if strings.EqualFold(conn.Name, selector) {
			found = append(found, conn)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("%w: tenant %s has no usable %s connection with the id or name %q", ErrNoConnection, t.ID, c.ID, selector)
	}
	ids := make([]string, len(found))
	for i, conn := range found {
		ids[i] = conn.ID
	}
	return nil, fmt.Errorf("%w: the name %q is ambiguous for tenant %s (%s): select by id", ErrNoConnection, selector, t.ID, strings.Join(ids, ", "))
}
