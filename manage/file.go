package manage

import (
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// fileItems are the items the policy file declares, as the API shows them (read-only).
type fileItems struct {
	byKey map[objectKey]*Item
	// coworkers are, for each tenant, the profiles of the file it lists.
	coworkers map[string][]string
	order     []*Item
}

// readFile finds the tenants, connections, profiles and egress objects the file declares.
// The file has compiled (or is about to be compiled); a part that cannot be read as expected is
// skipped here and reported by the compiler.
func readFile(name string, data []byte) (*fileItems, error) {
	f := &fileItems{byKey: map[objectKey]*Item{}, coworkers: map[string][]string{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return f, nil
	}
	root := resolve(doc.Content[0])
	owner := map[string]string{} // profile → the first tenant listing it
	for _, t := range seq(field(root, "tenants")) {
		tid := scalar(field(t, "id"))
		if tid == "" {
			continue
		}
		f.add(KindTenant, tid, tid, without(t, "connections", "boundaries", "egress"))
		for _, c := range seq(field(t, "connections")) {
			if id := scalar(field(c, "id")); id != "" {
				f.add(KindConnection, id, tid, c)
			}
		}
		if e := field(t, "egress"); e != nil {
			f.add(KindEgress, tid, tid, e)
		}
		for _, n := range seq(field(t, "coworkers")) {
			if id := scalar(n); id != "" {
				f.coworkers[tid] = append(f.coworkers[tid], id)
				if _, ok := owner[id]; !ok {
					owner[id] = tid
				}
			}
		}
	}
	for _, p := range seq(field(root, "profiles")) {
		if id := scalar(field(p, "id")); id != "" {
			f.add(KindProfile, id, owner[id], p)
		}
	}
	return f, nil
}

func (f *fileItems) add(kind Kind, id, tenant string, n *yaml.Node) {
	var v any
	data := json.RawMessage("{}")
	if err := n.Decode(&v); err == nil {
		if b, err := json.Marshal(v); err == nil {
			data = b
		}
	}
	it := &Item{Kind: kind, ID: id, Tenant: tenant, Source: SourcePolicy, Data: data}
	f.byKey[objectKey{kind, id}] = it
	f.order = append(f.order, it)
}

// get returns the file's item of a kind and id, or nil.
func (f *fileItems) get(kind Kind, id string) *Item {
	if f == nil {
		return nil
	}
	return f.byKey[objectKey{kind, id}]
}

// list returns the file's items of a kind for a tenant ("": every tenant). A profile of the
// file belongs to every tenant that lists it as a coworker.
func (f *fileItems) list(kind Kind, tenant string) []*Item {
	var out []*Item
	if kind == KindProfile && tenant != "" {
		for _, id := range f.coworkers[tenant] {
			if it := f.get(KindProfile, id); it != nil {
				c := *it
				c.Tenant = tenant
				out = append(out, &c)
			}
		}
		return out
	}
	for _, it := range f.order {
		if it.Kind == kind && (tenant == "" || it.Tenant == tenant) {
			out = append(out, it)
		}
	}
	return out
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// field returns the value of a mapping's key, or nil.
func field(m *yaml.Node, key string) *yaml.Node {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return resolve(m.Content[i+1])
		}
	}
	return nil
}

// seq returns a sequence's items, or nil.
func seq(n *yaml.Node) []*yaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolve(c)
	}
	return out
}

func scalar(n *yaml.Node) string {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// without returns a mapping without some of its keys.
func without(m *yaml.Node, keys ...string) *yaml.Node {
	out := *m
	out.Content = nil
	for i := 0; i+1 < len(m.Content); i += 2 {
		skip := false
		for _, k := range keys {
			skip = skip || m.Content[i].Value == k
		}
		if !skip {
			out.Content = append(out.Content, m.Content[i], m.Content[i+1])
		}
	}
	return &out
}
