package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/wardenhq/warden/manage"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/server"
)

// memData stands for manage.Service until it lands on main: the policy file's objects are
// read-only, stored ones are kept in memory with their revisions, and a profile or connection
// naming what the policy does not declare is refused with a JSON pointer.
type memData struct {
	mu       sync.Mutex
	p        *policy.Policy
	declared map[manage.Kind]map[string]*manage.Item
	stored   map[manage.Kind]map[string]*manage.Item
	revs     map[string]int64
}

var _ server.Data = (*memData)(nil)

func newMemData(p *policy.Policy) *memData {
	d := &memData{p: p, declared: map[manage.Kind]map[string]*manage.Item{}, stored: map[manage.Kind]map[string]*manage.Item{}, revs: map[string]int64{}}
	for _, k := range manage.Kinds {
		d.declared[k], d.stored[k] = map[string]*manage.Item{}, map[string]*manage.Item{}
	}
	add := func(kind manage.Kind, tenant, id string, v any) {
		data, _ := json.Marshal(v)
		d.declared[kind][id] = &manage.Item{Kind: kind, ID: id, Tenant: tenant, Source: manage.SourcePolicy, Data: data}
	}
	for t := range p.Tenants() {
		add(manage.KindTenant, t.ID, t.ID, map[string]any{"id": t.ID, "name": t.Name})
		for _, c := range t.Connections {
			add(manage.KindConnection, t.ID, c.ID, map[string]any{"id": c.ID, "connector": c.Connector.ID, "name": c.Name})
		}
		for _, pr := range t.Coworkers {
			add(manage.KindProfile, t.ID, pr.ID, map[string]any{"id": pr.ID, "grant": map[string]any{"connectors": []string{"crawl", "shop"}}})
		}
	}
	return d
}

func (d *memData) Policy() *policy.Policy { return d.p }

func (d *memData) List(_ context.Context, kind manage.Kind, tenant, after string, limit int) ([]*manage.Item, string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var all []*manage.Item
	for _, m := range []map[string]*manage.Item{d.declared[kind], d.stored[kind]} {
		for _, it := range m {
			if (tenant == "" || it.Tenant == tenant) && it.ID > after {
				all = append(all, it)
			}
		}
	}
	slices.SortFunc(all, func(a, b *manage.Item) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	if limit > 0 && len(all) > limit {
		return all[:limit], all[limit-1].ID, nil
	}
	return all, "", nil
}

func (d *memData) Get(_ context.Context, kind manage.Kind, id string) (*manage.Item, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if it, ok := d.declared[kind][id]; ok {
		return it, nil
	}
	if it, ok := d.stored[kind][id]; ok {
		return it, nil
	}
	return nil, manage.ErrNotFound
}

func (d *memData) check(kind manage.Kind, data []byte) manage.Invalid {
	var v struct {
		Connector string   `json:"connector"`
		Tools     []string `json:"tools"`
		Grant     *struct {
			Connectors []string `json:"connectors"`
		} `json:"grant"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return manage.Invalid{{Message: err.Error()}}
	}
	var bad manage.Invalid
	if kind == manage.KindConnection {
		if _, ok := d.p.Server(v.Connector); !ok {
			bad = append(bad, manage.Problem{Field: "/connector", Message: fmt.Sprintf("no connector %q", v.Connector)})
		}
	}
	for i, t := range v.Tools {
		if _, ok := d.p.Tool(t); !ok {
			bad = append(bad, manage.Problem{Field: fmt.Sprintf("/tools/%d", i), Message: fmt.Sprintf("the tool %q does not exist", t)})
		}
	}
	if v.Grant != nil {
		for i, c := range v.Grant.Connectors {
			if _, ok := d.p.Server(c); !ok {
				bad = append(bad, manage.Problem{Field: fmt.Sprintf("/grant/connectors/%d", i), Message: fmt.Sprintf("no connector %q", c)})
			}
		}
	}
	return bad
}

func (d *memData) Put(_ context.Context, kind manage.Kind, tenant, id string, data []byte, rev int64, by string) (*manage.Item, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.declared[kind][id]; ok {
		return nil, manage.ErrDeclared
	}
	cur := d.stored[kind][id]
	switch {
	case rev == 0 && cur != nil:
		return nil, manage.ErrExists
	case rev != manage.AnyRevision && (cur == nil && rev != 0 || cur != nil && cur.Revision != rev):
		return nil, manage.ErrStale
	case cur != nil && cur.Tenant != tenant:
		return nil, manage.ErrStale
	}
	if bad := d.check(kind, data); bad != nil {
		return nil, bad
	}
	key := string(kind) + "/" + id
	d.revs[key]++
	now := time.Now().UTC()
	it := &manage.Item{Kind: kind, ID: id, Tenant: tenant, Source: manage.SourceStore, Revision: d.revs[key], By: by, Updated: &now, Data: append([]byte(nil), data...)}
	d.stored[kind][id] = it
	return it, nil
}

func (d *memData) Delete(_ context.Context, kind manage.Kind, id string, rev int64, by string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.declared[kind][id]; ok {
		return manage.ErrDeclared
	}
	cur := d.stored[kind][id]
	switch {
	case cur == nil:
		return manage.ErrNotFound
	case rev != manage.AnyRevision && cur.Revision != rev:
		return manage.ErrStale
	}
	d.revs[string(kind)+"/"+id]++
	delete(d.stored[kind], id)
	return nil
}
