package manage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden/policy"
)

// The export document: the runtime data as YAML, one section per kind, each entry the object
// as the policy file would write it plus the tenant it belongs to, and each tenant's stored
// hard-block document. `warden export` writes it and `warden import` reads it, so that a
// deployment's data can be kept in git next to its policy file.

// TenantDocument is a tenant's stored hard-block document, as exported.
type TenantDocument struct {
	Tenant string
	Data   json.RawMessage
}

// sections are the export document's sections, one per kind, in the order they are loaded.
var sections = []struct {
	key  string
	kind Kind
}{{"tenants", KindTenant}, {"connections", KindConnection}, {"profiles", KindProfile}, {"egress", KindEgress}}

// Stored returns every stored object in force or not, by kind (in the order they are
// overlaid) and id.
func (s *Service) Stored(ctx context.Context) ([]*Object, error) {
	objects, _, err := s.o.Store.AllObjects(ctx)
	if err != nil {
		return nil, err
	}
	order := func(k Kind) int { return slices.Index(Kinds, k) }
	slices.SortStableFunc(objects, func(a, b *Object) int {
		if d := order(a.Kind) - order(b.Kind); d != 0 {
			return d
		}
		return strings.Compare(a.ID, b.ID)
	})
	return objects, nil
}

// WriteExport writes objects and hard-block documents as the export document.
func WriteExport(w io.Writer, objects []*Object, bounds []TenantDocument) error {
	root := &yaml.Node{Kind: yaml.MappingNode}
	root.HeadComment = "The runtime data of a Warden deployment, as `warden export` wrote it: load it with\n`warden import`. The policy file is the deployment; this is what changed while it ran."
	add := func(key string, v *yaml.Node) {
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	}
	add("version", &yaml.Node{Kind: yaml.ScalarNode, Value: "1", Tag: "!!int"})
	for _, sec := range sections {
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, o := range objects {
			if o.Kind != sec.kind {
				continue
			}
			n, err := entry(o.Data, o.Kind, o.ID, o.Tenant)
			if err != nil {
				return fmt.Errorf("%s %s: %w", o.Kind, o.ID, err)
			}
			list.Content = append(list.Content, n)
		}
		if len(list.Content) > 0 {
			add(sec.key, list)
		}
	}
	if len(bounds) > 0 {
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, b := range bounds {
			doc, err := jsonNode(b.Data)
			if err != nil {
				return fmt.Errorf("the hard blocks of %s: %w", b.Tenant, err)
			}
			list.Content = append(list.Content, &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Value: "tenant"}, {Kind: yaml.ScalarNode, Value: b.Tenant},
				{Kind: yaml.ScalarNode, Value: "document"}, doc}})
		}
		add("boundaries", list)
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return err
	}
	return enc.Close()
}

// entry is one object as an entry of its section: tenant and id first, then its fields.
func entry(data []byte, kind Kind, id, tenant string) (*yaml.Node, error) {
	n, err := jsonNode(data)
	if err != nil {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, errors.New("the stored object is not a JSON object")
	}
	var head []*yaml.Node
	if kind != KindTenant {
		head = append(head, &yaml.Node{Kind: yaml.ScalarNode, Value: "tenant"}, &yaml.Node{Kind: yaml.ScalarNode, Value: tenant})
	}
	if kind != KindEgress {
		head = append(head, &yaml.Node{Kind: yaml.ScalarNode, Value: "id"}, &yaml.Node{Kind: yaml.ScalarNode, Value: id})
	}
	rest := without(n, "id", "tenant").Content
	n.Content = append(head, rest...)
	return n, nil
}

// jsonNode parses JSON into a node tree written in YAML's block style.
func jsonNode(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("not one JSON value")
	}
	block(doc.Content[0])
	return doc.Content[0], nil
}

// block drops the flow and quoting styles JSON brings: the encoder quotes a string that would
// read as something else (true, 1, null) by itself.
func block(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		block(c)
	}
}

// ReadExport reads an export document (name for messages): its objects, in the order they
// are loaded, and its hard-block documents. Every problem of shape is reported, each at its
// line and column; what the objects mean is checked by Import.
func ReadExport(name string, data []byte) ([]*Object, []TenantDocument, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || resolve(doc.Content[0]).Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("%s: an export is a YAML mapping with version, tenants, connections, profiles, egress and boundaries", name)
	}
	root := resolve(doc.Content[0])
	var errs []error
	fail := func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d:%d: %s", name, n.Line, n.Column, fmt.Sprintf(format, args...)))
	}
	known := map[string]bool{"version": true, "boundaries": true}
	for _, sec := range sections {
		known[sec.key] = true
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; !known[k.Value] {
			fail(k, "unknown section %q (want version, tenants, connections, profiles, egress, boundaries)", k.Value)
		}
	}
	if v := scalar(field(root, "version")); v != "1" {
		fail(root, "version must be 1, not %q", v)
	}
	var objects []*Object
	seen := map[objectKey]bool{}
	for _, sec := range sections {
		for _, e := range seq(field(root, sec.key)) {
			if e.Kind != yaml.MappingNode {
				fail(e, "an entry of %s must be a mapping", sec.key)
				continue
			}
			tenant, id := scalar(field(e, "tenant")), scalar(field(e, "id"))
			switch sec.kind {
			case KindTenant:
				if tenant != "" && tenant != id {
					fail(e, "a tenant belongs to itself: leave tenant out")
					continue
				}
				tenant = id
			case KindEgress:
				id = tenant
			}
			if tenant == "" || id == "" {
				fail(e, "an entry of %s needs %s", sec.key, map[bool]string{true: "tenant", false: "tenant and id"}[sec.kind == KindEgress])
				continue
			}
			if seen[objectKey{sec.kind, id}] {
				fail(e, "%s %s is listed twice", sec.kind, id)
				continue
			}
			seen[objectKey{sec.kind, id}] = true
			var v any
			if err := without(e, "tenant").Decode(&v); err != nil {
				fail(e, "%v", err)
				continue
			}
			if sec.kind == KindEgress {
				v = withoutKey(v, "id")
			}
			data, err := json.Marshal(v)
			if err != nil {
				fail(e, "%v", err)
				continue
			}
			objects = append(objects, &Object{Kind: sec.kind, ID: id, Tenant: tenant, Data: data})
		}
	}
	var bounds []TenantDocument
	for _, e := range seq(field(root, "boundaries")) {
		tenant, d := scalar(field(e, "tenant")), field(e, "document")
		if tenant == "" || d == nil {
			fail(e, "an entry of boundaries needs tenant and document")
			continue
		}
		var v any
		if err := d.Decode(&v); err != nil {
			fail(d, "%v", err)
			continue
		}
		data, err := json.Marshal(v)
		if err != nil {
			fail(d, "%v", err)
			continue
		}
		bounds = append(bounds, TenantDocument{Tenant: tenant, Data: data})
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return objects, bounds, nil
}

// sameJSON reports whether two JSON texts hold the same value (an export read back has its
// keys in another order than they were written).
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func withoutKey(v any, key string) any {
	if m, ok := v.(map[string]any); ok {
		delete(m, key)
	}
	return v
}

// ImportReport says what an import changed.
type ImportReport struct {
	Created, Updated, Unchanged, Deleted []string // "kind id"
}

// Import makes the stored objects what objects says: each is created or updated (an object
// already stored as given is left alone), and with prune every stored object the list does
// not hold is deleted. The whole result is validated first, as one change: when it does not
// compile, nothing is written and the error is Invalid, each problem naming its object
// ("profile writer /tools/1"). Objects the policy file declares are refused (ErrDeclared).
func (s *Service) Import(ctx context.Context, objects []*Object, prune bool, by string) (*ImportReport, error) {
	st := s.state.Load()
	stored, _, err := s.o.Store.AllObjects(ctx)
	if err != nil {
		return nil, err
	}
	var problems Invalid
	given := map[objectKey]*Object{}
	for _, o := range objects {
		if st.file.get(o.Kind, o.ID) != nil {
			problems = append(problems, Problem{Where: string(o.Kind) + " " + o.ID, Message: ErrDeclared.Error()})
			continue
		}
		data, err := normalize(o.Data, o.ID)
		if err != nil {
			problems = append(problems, Problem{Where: string(o.Kind) + " " + o.ID, Message: err.Error()})
			continue
		}
		c := *o
		c.Data = data
		given[objectKey{o.Kind, o.ID}] = &c
	}
	var result []*Object
	for _, o := range stored {
		k := objectKey{o.Kind, o.ID}
		if g, ok := given[k]; ok {
			if g.Tenant != o.Tenant {
				problems = append(problems, Problem{Where: string(o.Kind) + " " + o.ID, Message: fmt.Sprintf("it belongs to the tenant %s in the store, not %s: delete it there first", o.Tenant, g.Tenant)})
			}
			continue
		}
		if !prune {
			result = append(result, o)
		}
	}
	for _, o := range objects {
		if g := given[objectKey{o.Kind, o.ID}]; g != nil {
			result = append(result, g)
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	if _, err := policy.ParseOverlay(st.name, st.data, docs(result)); err != nil {
		var errs policy.ErrorList
		if !errors.As(err, &errs) {
			return nil, err
		}
		for _, e := range errs {
			where := e.Object
			if e.Pos.Doc == 0 {
				where = fmt.Sprintf("%s:%d:%d", e.File, e.Pos.Line, e.Pos.Col)
			} else if e.Pointer != "" {
				where += " " + e.Pointer
			}
			problems = append(problems, Problem{Where: where, Message: e.Msg})
		}
		return nil, problems
	}
	rep := &ImportReport{}
	now := s.o.Now().UTC()
	have := map[objectKey]*Object{}
	for _, o := range stored {
		have[objectKey{o.Kind, o.ID}] = o
	}
	for _, kind := range Kinds {
		for _, o := range objects {
			g := given[objectKey{o.Kind, o.ID}]
			if g == nil || g.Kind != kind {
				continue
			}
			name := string(g.Kind) + " " + g.ID
			cur := have[objectKey{g.Kind, g.ID}]
			if cur != nil && sameJSON(cur.Data, g.Data) {
				rep.Unchanged = append(rep.Unchanged, name)
				continue
			}
			rev := int64(0)
			if cur != nil {
				rev = cur.Revision
			}
			w := &Object{Kind: g.Kind, ID: g.ID, Tenant: g.Tenant, Data: g.Data, By: by, Updated: now}
			out, err := s.o.Store.PutObject(ctx, w, rev)
			if err != nil {
				return rep, fmt.Errorf("%s: %w (what is listed in the report was written)", name, err)
			}
			if err := s.record(ctx, out, "put"); err != nil {
				return rep, err
			}
			if cur == nil {
				rep.Created = append(rep.Created, name)
			} else {
				rep.Updated = append(rep.Updated, name)
			}
		}
	}
	if prune {
		for i := len(Kinds) - 1; i >= 0; i-- {
			for _, o := range stored {
				if o.Kind != Kinds[i] || given[objectKey{o.Kind, o.ID}] != nil {
					continue
				}
				if err := s.o.Store.DeleteObject(ctx, o.Kind, o.ID, o.Revision, by, now); err != nil {
					return rep, fmt.Errorf("delete %s %s: %w (what is listed in the report was written)", o.Kind, o.ID, err)
				}
				if err := s.record(ctx, &Object{Kind: o.Kind, ID: o.ID, Tenant: o.Tenant, By: by, Updated: now, Deleted: true}, "delete"); err != nil {
					return rep, err
				}
				rep.Deleted = append(rep.Deleted, string(o.Kind)+" "+o.ID)
			}
		}
	}
	if err := s.reload(ctx, st.name, st.data, true); err != nil {
		return rep, err
	}
	return rep, nil
}
