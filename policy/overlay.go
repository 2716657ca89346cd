package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Doc is one object of the runtime data, kept in a store and overlaid on the policy file by
// ParseOverlay: a tenant, a tenant's connection or profile, or what a tenant adds to the egress
// allowlist. Its Data is written as the file would write the item, in JSON (or YAML).
type Doc struct {
	// Kind is one of DocKinds.
	Kind string
	// ID is the object's id: the tenant's own for a tenant and for its egress.
	ID string
	// Tenant is the tenant the object belongs to.
	Tenant string
	// Data is the object.
	Data []byte
	// Source names the object in messages ("profile writer"); Kind and ID when empty.
	Source string
}

// The kinds of Doc.
const (
	DocTenant     = "tenant"
	DocConnection = "connection"
	DocProfile    = "profile"
	DocEgress     = "egress"
)

// DocKinds are the kinds of Doc, in the order they are overlaid.
var DocKinds = []string{DocTenant, DocConnection, DocProfile, DocEgress}

// ParseOverlay compiles the policy document data (named name in messages) with docs overlaid
// on it, as if each had been written into the file: a tenant is added to the file's tenants;
// a connection to its tenant's connections; a profile to the profiles, and to its tenant's
// coworkers; an egress object becomes its tenant's egress. An object may not stand for one
// the file declares (a tenant, connection or profile of the same id, a tenant's egress): the
// file is the deployment, and is changed in the file.
//
// Every problem is reported, as Parse reports them; a problem in an object names it
// (Error.Object, its Source) and the JSON pointer of the value (Error.Pointer) instead of a
// line and column, and its Pos.Doc is the object's index in docs plus one. The policy's
// Revision covers the file and the objects.
func ParseOverlay(name string, data []byte, docs []Doc) (*Policy, error) {
	cfg, probs, _ := decodeConfig(name, data)
	if len(probs.errs) > 0 {
		return nil, sortErrors(probs.errs)
	}
	decoded := make([]any, len(docs))
	for i, d := range docs {
		o := &overlaid{Doc: d}
		if o.Source == "" {
			o.Source = d.Kind + " " + d.ID
		}
		probs.docs = append(probs.docs, o)
		decoded[i] = o.decode(probs, i+1)
	}
	if len(probs.errs) > 0 {
		return nil, sortErrors(probs.errs)
	}
	declared := declaredIDs(cfg)
	for _, kind := range DocKinds {
		for i, d := range docs {
			if d.Kind == kind && decoded[i] != nil {
				overlay(probs, cfg, declared, probs.docs[i], i+1, decoded[i])
			}
		}
	}
	if len(probs.errs) > 0 {
		return nil, sortErrors(probs.errs)
	}
	c := newCompiler(probs, cfg)
	c.compile()
	if len(c.errs) > 0 {
		return nil, sortErrors(c.errs)
	}
	h := sha256.New()
	h.Write(data)
	for _, d := range docs {
		fmt.Fprintf(h, "\x00%s\x00%s\x00%s\x00%d\x00", d.Kind, d.ID, d.Tenant, len(d.Data))
		h.Write(d.Data)
	}
	c.pol.Revision = hex.EncodeToString(h.Sum(nil)[:8])
	c.pol.File = name
	c.pol.warnings = sortErrors(c.warnings)
	return c.pol, nil
}

// overlaid is a Doc being overlaid, with where each of its values starts.
type overlaid struct {
	Doc
	starts []start
}

// start is where one value of an object starts, and its JSON pointer.
type start struct {
	line, col int
	pointer   string
}

// pointer is the JSON pointer of the value at pos: the last value to start at or before it.
func (o *overlaid) pointer(pos Pos) string {
	i, _ := slices.BinarySearchFunc(o.starts, pos, func(s start, p Pos) int {
		if s.line != p.Line {
			return s.line - p.Line
		}
		if s.col <= p.Col {
			return -1 // at or before: keep looking right
		}
		return 1
	})
	if i == 0 {
		return ""
	}
	return o.starts[i-1].pointer
}

// index records where every value of the object starts.
func (o *overlaid) index(n *yaml.Node, ptr string) {
	if n == nil {
		return
	}
	o.starts = append(o.starts, start{n.Line, n.Column, ptr})
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			child := ptr + "/" + escapePointer(k.Value)
			o.starts = append(o.starts, start{k.Line, k.Column, child})
			o.index(v, child)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			o.index(v, ptr+"/"+strconv.Itoa(i))
		}
	case yaml.ScalarNode:
		if p := valuePos(n); p.Col != n.Column {
			o.starts = append(o.starts, start{p.Line, p.Col, ptr})
		}
	}
}

// sortStarts puts the starts in document order, a value before the values inside it.
func (o *overlaid) sortStarts() {
	slices.SortStableFunc(o.starts, func(a, b start) int {
		if a.line != b.line {
			return a.line - b.line
		}
		return a.col - b.col
	})
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// decode reads the object into its config type, reporting its problems at its places (doc
// is its index plus one). It returns nil when there is nothing to overlay.
func (o *overlaid) decode(probs *problems, doc int) any {
	dp := &problems{file: o.Source}
	report := func() {
		for _, e := range dp.errs {
			pos := e.Pos
			pos.Doc = doc
			probs.errs = append(probs.errs, probs.at(pos, e.Msg))
		}
	}
	var v any
	switch o.Kind {
	case DocTenant:
		v = &TenantConfig{}
	case DocConnection:
		v = &ConnectionConfig{}
	case DocProfile:
		v = &ProfileConfig{}
	case DocEgress:
		v = &TenantEgressConfig{}
	default:
		probs.errorf(Pos{Doc: doc}, "%q is not a kind of object (want one of %s)", o.Kind, strings.Join(DocKinds, ", "))
		return nil
	}
	root := parseDocument(dp, o.Data)
	if root == nil {
		report()
		return nil
	}
	o.index(root, "")
	o.sortStarts()
	if root.Kind != yaml.MappingNode {
		dp.errorf(nodePos(root), "a %s must be an object, not %s", o.Kind, describe(root))
		report()
		return nil
	}
	d := &decoder{problems: dp, lines: strings.Split(string(o.Data), "\n")}
	rv := reflect.ValueOf(v).Elem()
	d.decode(root, rv, "the "+o.Kind)
	report()
	if len(dp.errs) > 0 || d.overflow {
		return nil
	}
	stamp(rv, doc)
	return v
}

// declared are the ids the policy file declares, by kind.
type declared map[string]map[string]bool

func declaredIDs(cfg *Config) declared {
	d := declared{DocTenant: {}, DocConnection: {}, DocProfile: {}, DocEgress: {}}
	for _, t := range cfg.Tenants {
		d[DocTenant][t.ID] = true
		if t.Egress != nil {
			d[DocEgress][t.ID] = true
		}
		for _, c := range t.Connections {
			d[DocConnection][c.ID] = true
		}
	}
	for _, p := range cfg.Profiles {
		d[DocProfile][p.ID] = true
	}
	return d
}

// overlay adds one decoded object to the document.
func overlay(probs *problems, cfg *Config, decl declared, o *overlaid, doc int, v any) {
	at := Pos{Line: 1, Col: 1, Doc: doc}
	if decl[o.Kind][o.ID] {
		probs.errorf(at, "%s %s is declared in the policy file, which stays its only place: change it there", o.Kind, o.ID)
		return
	}
	// checkID compares the id the object writes (if any) with the one it is stored under.
	checkID := func(n Node, id *string) bool {
		switch {
		case *id == "":
			*id = o.ID
		case *id != o.ID:
			probs.errorf(n.At("id"), "the id is %q, but the %s is stored as %s", *id, o.Kind, o.ID)
			return false
		}
		return true
	}
	tenant := func() *TenantConfig {
		for i := range cfg.Tenants {
			if cfg.Tenants[i].ID == o.Tenant {
				return &cfg.Tenants[i]
			}
		}
		probs.errorf(at, "the %s belongs to the tenant %q, which does not exist", o.Kind, o.Tenant)
		return nil
	}
	switch v := v.(type) {
	case *TenantConfig:
		bad := false
		for field, where := range map[string]string{
			"connections": "connections are objects of their own",
			"boundaries":  "hard blocks are the tenant's hard-block document",
			"egress":      "what the tenant adds to the egress allowlist is an object of its own",
		} {
			if v.Has(field) {
				probs.errorf(v.At(field), "%s, not a field of a stored tenant", where)
				bad = true
			}
		}
		if bad || !checkID(v.Node, &v.ID) {
			return
		}
		if o.Tenant != "" && o.Tenant != o.ID {
			probs.errorf(at, "a tenant belongs to itself, not to %s", o.Tenant)
			return
		}
		cfg.Tenants = append(cfg.Tenants, *v)
	case *ConnectionConfig:
		if !checkID(v.Node, &v.ID) {
			return
		}
		if t := tenant(); t != nil && storedSecretOK(probs, cfg, o.Tenant, v) {
			t.Connections = append(t.Connections, *v)
		}
	case *ProfileConfig:
		if !checkID(v.Node, &v.ID) {
			return
		}
		if t := tenant(); t != nil {
			cfg.Profiles = append(cfg.Profiles, *v)
			t.Coworkers = append(t.Coworkers, Name{Value: v.ID, Pos: v.Pos})
		}
	case *TenantEgressConfig:
		if o.ID != o.Tenant {
			probs.errorf(at, "a tenant's egress is stored under the tenant's id (%s), not %s", o.Tenant, o.ID)
			return
		}
		if t := tenant(); t != nil {
			t.Egress = v
		}
	}
}

var posType = reflect.TypeFor[Pos]()

// stamp marks every place in a decoded object as the object's (Pos.Doc).
func stamp(v reflect.Value, doc int) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			stamp(v.Elem(), doc)
		}
	case reflect.Struct:
		if v.Type() == posType {
			if v.CanSet() {
				v.FieldByName("Doc").SetInt(int64(doc))
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				stamp(v.Field(i), doc)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			stamp(v.Index(i), doc)
		}
	case reflect.Map:
		if !holdsPos(v.Type().Elem(), map[reflect.Type]bool{}) {
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			stamp(e, doc)
			v.SetMapIndex(k, e)
		}
	}
}

// holdsPos reports whether a value of type t can hold a Pos (seen: the types being looked at).
func holdsPos(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return holdsPos(t.Elem(), seen)
	case reflect.Struct:
		if t == posType {
			return true
		}
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsPos(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// StoredSecretPrefix is the start of the names of the environment variables a stored
// connection of the tenant may take its credential from: WARDEN_SECRET_, the tenant's id in
// upper case with - as _, and __ (tenant acme-eu: WARDEN_SECRET_ACME_EU__). A connection in the
// policy file may name any env:NAME or file:/path, since whoever writes the file runs the
// deployment; one written through the API may not, or a tenant's operator could hand a
// connection Warden's own credentials, another tenant's, or any file Warden can read.
func StoredSecretPrefix(tenant string) string {
	return "WARDEN_SECRET_" + strings.ToUpper(strings.ReplaceAll(tenant, "-", "_")) + "__"
}

// storedSecretOK checks a stored connection's credential reference: env: and a name of its
// tenant's own prefix, which no other tenant shares.
func storedSecretOK(probs *problems, cfg *Config, tenant string, cc *ConnectionConfig) bool {
	if cc.Secret == "" {
		return true
	}
	prefix := StoredSecretPrefix(tenant)
	name, isEnv := strings.CutPrefix(cc.Secret, "env:")
	if !isEnv || !strings.HasPrefix(name, prefix) || len(name) == len(prefix) || !envPattern.MatchString(name) {
		probs.errorf(cc.At("secret"), "a connection stored through the API takes its credential from an environment variable of its tenant's own: env:%sNAME (the policy file may name any env: or file: reference)", prefix)
		return false
	}
	for _, other := range cfg.Tenants {
		if other.ID != tenant && StoredSecretPrefix(other.ID) == prefix {
			probs.errorf(cc.At("secret"), "tenants %s and %s have the same secret prefix %s, so neither's stored connections may name a credential: rename one of them", tenant, other.ID, prefix)
			return false
		}
	}
	return true
}
