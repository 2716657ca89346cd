package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The decoder turns a YAML node tree into the config types with the position of every value,
// and reports every problem it meets (unknown fields, wrong types, duplicate keys) instead of
// stopping at the first. yaml.v3's own decoding gives only a line, and only some errors.

// maxNodes bounds the nodes visited while decoding, aliases expanded: a small document whose
// aliases refer to each other can otherwise stand for billions of nodes, and every node
// decoded is work for the compiler too. The Scout example has about 5,000.
const maxNodes = 250_000

type decoder struct {
	*problems
	// lines are the document's lines, to find where a value's text is written (see place);
	// placed caches it for nodes reached again through aliases.
	lines    []string
	placed   map[*yaml.Node]placement
	visited  int
	overflow bool
}

// yamlDecoder is implemented by config types that read their own node (scalars with positions,
// and fields that take more than one shape).
type yamlDecoder interface {
	decodeYAML(d *decoder, n *yaml.Node)
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseDocument parses exactly one YAML document.
func parseDocument(p *problems, data []byte) (root *yaml.Node) {
	defer func() {
		// yaml.v3 has panicked on malformed input in the past; a bad file must be an error, never
		// a crash of the process that loads it.
		if r := recover(); r != nil {
			p.errorf(Pos{}, "YAML parser failed on this document: %v", r)
			root = nil
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.errorf(Pos{Line: 1, Col: 1}, "the document is empty")
			return nil
		}
		p.errs = append(p.errs, yamlError(p.file, err))
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		p.errorf(nodePos(&extra), "a policy is one YAML document; a second one starts here")
		return nil
	} else if !errors.Is(err, io.EOF) {
		p.errs = append(p.errs, yamlError(p.file, err))
		return nil
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	p.errorf(nodePos(&doc), "the document is empty")
	return nil
}

// yamlParserProblems are the problems yaml.v3's parser (not its scanner) reports. For these it
// prints the line counted from 0 (the scanner's from 1), so one is added.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

func yamlError(file string, err error) *Error {
	msg := err.Error()
	if m := yamlLineErr.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if yamlParserProblems[m[2]] {
			line++
		}
		return &Error{File: file, Pos: Pos{Line: line, Col: 1}, Msg: "YAML: " + m[2]}
	}
	return &Error{File: file, Pos: Pos{Line: 1, Col: 1}, Msg: "YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

func nodePos(n *yaml.Node) Pos { return Pos{Line: n.Line, Col: n.Column} }

// resolve follows an alias and counts the visit against the node budget.
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.visited++
	if d.visited > maxNodes && !d.overflow {
		d.overflow = true
		d.errorf(nodePos(n), "the document expands to more than %d nodes through its aliases", maxNodes)
	}
	return n
}

var yamlDecoderType = reflect.TypeFor[yamlDecoder]()

// decode reads n into v, which must be addressable.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, what string) {
	n = d.resolve(n)
	if n == nil || d.overflow {
		return
	}
	if v.CanAddr() && v.Addr().Type().Implements(yamlDecoderType) {
		v.Addr().Interface().(yamlDecoder).decodeYAML(d, n)
		return
	}
	if isNull(n) {
		// unset: the zero value, which later stages read as "not given". An empty entry of a list
		// still has a place, so what is missing from it can be reported there.
		if v.Kind() == reflect.Struct {
			if si := infoFor(v.Type()); si.node >= 0 {
				v.Field(si.node).Set(reflect.ValueOf(Node{Pos: nodePos(n)}))
			}
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		nv := reflect.New(v.Type().Elem())
		d.decode(n, nv.Elem(), what)
		v.Set(nv)
	case reflect.Struct:
		d.decodeStruct(n, v, what)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.errorf(nodePos(n), "%s must be a list, not %s", what, describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, s.Index(i), "each entry of "+what)
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.errorf(nodePos(n), "%s must be a mapping, not %s", what, describe(n))
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		seen := map[string]Pos{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := d.resolve(n.Content[i]), n.Content[i+1]
			key, ok := d.key(k, seen)
			if !ok {
				continue
			}
			ev := reflect.New(v.Type().Elem()).Elem()
			d.decode(val, ev, fmt.Sprintf("%s %q", what, key))
			m.SetMapIndex(reflect.ValueOf(key), ev)
		}
		v.Set(m)
	case reflect.String:
		if s, ok := d.scalar(n, what); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		if s, ok := d.scalar(n, what); ok {
			switch {
			case n.Tag == "!!bool" && strings.EqualFold(s, "true"):
				v.SetBool(true)
			case n.Tag == "!!bool" && strings.EqualFold(s, "false"):
				v.SetBool(false)
			default:
				d.errorf(nodePos(n), "%s must be true or false, not %q", what, s)
			}
		}
	case reflect.Int:
		if s, ok := d.scalar(n, what); ok {
			var i int
			if n.Tag != "!!int" || n.Decode(&i) != nil {
				d.errorf(nodePos(n), "%s must be a whole number, not %q", what, s)
				return
			}
			v.SetInt(int64(i))
		}
	case reflect.Float64:
		if s, ok := d.scalar(n, what); ok {
			var f float64
			if (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&f) != nil {
				d.errorf(nodePos(n), "%s must be a number, not %q", what, s)
				return
			}
			if math.IsInf(f, 0) || math.IsNaN(f) {
				// .inf would be a budget or allowance with no limit at all.
				d.errorf(nodePos(n), "%s must be a finite number, not %q", what, s)
				return
			}
			v.SetFloat(f)
		}
	default:
		panic(fmt.Sprintf("policy: no YAML decoding for %s", v.Type()))
	}
}

// key reads a mapping key, reporting a key that is not a plain string or appears twice.
func (d *decoder) key(k *yaml.Node, seen map[string]Pos) (string, bool) {
	if k.Kind != yaml.ScalarNode || isNull(k) {
		d.errorf(nodePos(k), "a mapping key must be a name, not %s", describe(k))
		return "", false
	}
	if first, dup := seen[k.Value]; dup {
		d.errorf(nodePos(k), "%q is given twice in one mapping (first at line %d)", k.Value, first.Line)
		return "", false
	}
	seen[k.Value] = nodePos(k)
	return k.Value, true
}

// scalar returns the text of a scalar node, reporting any other kind of node.
func (d *decoder) scalar(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.errorf(nodePos(n), "%s must be a single value, not %s", what, describe(n))
		return "", false
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		d.errorf(nodePos(n), "%s has the tag %q, which Warden does not read", what, n.Tag)
		return "", false
	}
	return n.Value, true
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "this"
}

// structInfo is the yaml field table of a config struct.
type structInfo struct {
	label  string
	fields map[string]int
	names  []string
	node   int // index of the embedded Node, or -1
}

var structInfos sync.Map // reflect.Type → *structInfo

func infoFor(t reflect.Type) *structInfo {
	if si, ok := structInfos.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{label: typeLabel(t), fields: map[string]int{}, node: -1}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type == reflect.TypeFor[Node]() {
			si.node = i
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" || tag == "-" {
			continue
		}
		si.fields[tag] = i
		si.names = append(si.names, tag)
	}
	structInfos.Store(t, si)
	return si
}

// typeLabel names a config type for messages, with its article: ToolConfig is "a tool",
// AllowanceConfig "an allowance", LimitsConfig "the limits".
func typeLabel(t reflect.Type) string {
	name := strings.TrimSuffix(t.Name(), "Config")
	if name == "" {
		return "the policy" // Config itself
	}
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	label := strings.ToLower(b.String())
	switch {
	case strings.HasSuffix(label, "s"):
		return "the " + label
	case strings.ContainsRune("aeiou", rune(label[0])):
		return "an " + label
	}
	return "a " + label
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, what string) {
	si := infoFor(v.Type())
	if n.Kind != yaml.MappingNode {
		d.errorf(nodePos(n), "%s must be a mapping (%s), not %s", what, si.label, describe(n))
		return
	}
	node := Node{Pos: nodePos(n), Keys: map[string]Pos{}}
	seen := map[string]Pos{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.resolve(n.Content[i])
		key, ok := d.key(k, seen)
		if !ok {
			continue
		}
		idx, known := si.fields[key]
		if !known {
			d.errorf(nodePos(k), "unknown field %q in %s%s", key, si.label, suggest(key, si.names))
			continue
		}
		val := n.Content[i+1]
		node.Keys[key] = valuePos(val)
		d.decode(val, v.Field(idx), fmt.Sprintf("%q", key))
	}
	if si.node >= 0 {
		v.Field(si.node).Set(reflect.ValueOf(node))
	}
}

// valuePos is where a value's text starts: inside the quotes of a quoted scalar.
func valuePos(n *yaml.Node) Pos {
	p := nodePos(n)
	if n.Kind == yaml.ScalarNode && (n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle)) != 0 {
		p.Col++
	}
	return p
}

// suggest names the closest known field, or lists them all.
func suggest(key string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if dist := editDistance(strings.ToLower(key), strings.ToLower(n)); dist < bestD {
			best, bestD = n, dist
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	return "; known fields are " + strings.Join(sorted, ", ")
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Name is a string value that keeps its place in the document, for ids that refer to other
// parts of the policy (so a reference to something that does not exist is reported where it is
// written).
type Name struct {
	Value string
	Pos   Pos
}

func (n Name) String() string { return n.Value }

func (n *Name) decodeYAML(d *decoder, y *yaml.Node) {
	n.Pos = valuePos(y)
	if isNull(y) {
		return
	}
	if s, ok := d.scalar(y, "a name"); ok {
		n.Value = s
	}
}

func (p *Pins) decodeYAML(d *decoder, y *yaml.Node) {
	if isNull(y) {
		return
	}
	if y.Kind != yaml.MappingNode {
		d.errorf(nodePos(y), `"pins" must be a mapping of tool names to digests, not %s`, describe(y))
		return
	}
	seen := map[string]Pos{}
	for i := 0; i+1 < len(y.Content); i += 2 {
		k := d.resolve(y.Content[i])
		key, ok := d.key(k, seen)
		if !ok {
			continue
		}
		pin := Pin{Tool: Name{Value: key, Pos: valuePos(k)}}
		v := d.resolve(y.Content[i+1])
		if v == nil || d.overflow {
			return
		}
		pin.Digest.Pos = valuePos(v)
		if !isNull(v) {
			if s, ok := d.scalar(v, fmt.Sprintf("the pin of %s", key)); ok {
				pin.Digest.Value = s
			}
		}
		*p = append(*p, pin)
	}
}

// Expr is the source of a condition (see cond.go) with its place in the document.
type Expr struct {
	Src string
	Pos Pos
	// approx: Src is not written verbatim on one line at Pos, so offsets into it are not columns.
	approx bool
}

func (e *Expr) decodeYAML(d *decoder, y *yaml.Node) {
	e.Pos = valuePos(y)
	if isNull(y) {
		return
	}
	if s, ok := d.scalar(y, "a condition"); ok {
		e.Src = s
		e.Pos, e.approx = d.place(y, s, e.Pos)
	}
}

// place finds where the text s of scalar y is written, so that an offset into s is a column: on
// y's line after any tag, anchor or quote, or for a block scalar on the first line of its body.
// When s is not written verbatim on one line (escapes, folded lines), it returns at and true:
// the place is only where the value starts.
func (d *decoder) place(y *yaml.Node, s string, at Pos) (Pos, bool) {
	if pl, ok := d.placed[y]; ok {
		return pl.pos, pl.approx
	}
	pos, approx := d.findText(y, s, at)
	if d.placed == nil {
		d.placed = map[*yaml.Node]placement{}
	}
	d.placed[y] = placement{pos, approx}
	return pos, approx
}

type placement struct {
	pos    Pos
	approx bool
}

func (d *decoder) findText(y *yaml.Node, s string, at Pos) (Pos, bool) {
	line, text := y.Line, s
	block := y.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0
	if block {
		text = strings.TrimRight(text, "\n")
		for line++; line <= len(d.lines) && strings.TrimSpace(d.lines[line-1]) == ""; line++ {
		}
	}
	if line < 1 || line > len(d.lines) || strings.Contains(text, "\n") {
		return at, true
	}
	raw := strings.TrimSuffix(d.lines[line-1], "\r")
	col := 1
	if !block {
		// Skip to y's column (yaml counts columns in characters).
		for i := range raw {
			if col == y.Column {
				raw = raw[i:]
				break
			}
			col++
		}
		if col != y.Column {
			return at, true
		}
	}
	i := strings.Index(raw, text)
	if i < 0 || block && strings.TrimSpace(raw[:i]) != "" {
		return at, true
	}
	return Pos{Line: line, Col: col + utf8.RuneCountInString(raw[:i])}, false
}

// Credentials is a role's credential set: "all", "none", "grant" or a list of connector ids.
type Credentials struct {
	// Mode is "all", "none", "grant" or "list"; empty when not written.
	Mode       string
	Connectors []Name
	Pos        Pos
}

func (c *Credentials) decodeYAML(d *decoder, y *yaml.Node) {
	c.Pos = valuePos(y)
	switch {
	case isNull(y):
	case y.Kind == yaml.SequenceNode:
		c.Mode = "list"
		d.decode(y, reflect.ValueOf(&c.Connectors).Elem(), `"credentials"`)
		if c.Connectors == nil {
			c.Connectors = []Name{}
		}
	default:
		s, ok := d.scalar(y, `"credentials"`)
		if !ok {
			return
		}
		switch s {
		case "all", "none", "grant":
			c.Mode = s
		default:
			d.errorf(c.Pos, `"credentials" must be all, none, grant or a list of connector ids, not %q`, s)
		}
	}
}

// Effect is a tool's effect class: what a call does to the world.
type Effect string

// The effect classes. A connector tool is one of read, write, send, spend and delete; built-ins
// and platform tools may also execute commands or delegate to another agent.
const (
	EffectRead     Effect = "read"
	EffectWrite    Effect = "write"
	EffectDelete   Effect = "delete"
	EffectSend     Effect = "send"
	EffectSpend    Effect = "spend"
	EffectExecute  Effect = "execute"
	EffectDelegate Effect = "delegate"
)

// Effects lists every effect class in order.
var Effects = []Effect{EffectRead, EffectWrite, EffectDelete, EffectSend, EffectSpend, EffectExecute, EffectDelegate}

func (e *Effect) decodeYAML(d *decoder, y *yaml.Node) {
	if isNull(y) {
		return
	}
	s, ok := d.scalar(y, "an effect")
	if !ok {
		return
	}
	if !slices.Contains(Effects, Effect(s)) {
		d.errorf(valuePos(y), "unknown effect class %q; it must be one of %s", s, joinEffects(Effects))
		return
	}
	*e = Effect(s)
}

func joinEffects(es []Effect) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}

func (c *CostConfig) decodeYAML(d *decoder, y *yaml.Node) {
	if y.Kind == yaml.ScalarNode && !isNull(y) {
		// A bare number: every call costs that.
		c.Node = Node{Pos: valuePos(y), Keys: map[string]Pos{"fixed": valuePos(y)}}
		var f float64
		d.decode(y, reflect.ValueOf(&f).Elem(), `"cost"`)
		c.Fixed = &f
		return
	}
	d.decodeStruct(y, reflect.ValueOf(c).Elem(), `"cost"`)
}
