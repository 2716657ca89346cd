package policy

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// SetPins returns the policy document data with pins written into it (connector id → tool
// name → digest): a pin the connector already has for the tool is replaced where it stands,
// and a new one is added to the connector's pins, which are added to the connector when it has
// none. It does not check the pins; Parse the result for that.
//
// The document is located with yaml.v3's node tree and edited in place, so everything else in
// it (comments, blank lines, quoting, folded text, the order of fields) is kept byte for byte.
// Each edit is checked: the edited document must decode to the original one plus the pin. When
// a pin cannot be placed that way, the document is encoded again from its node tree with the
// pin added, which keeps every comment and value but not the layout (blank lines, line breaks
// in long text); reencoded reports that. A document in which neither works (a connector written
// through an alias, say) is an error, and nothing is changed.
func SetPins(data []byte, pins map[string]map[string]string) (out []byte, reencoded bool, err error) {
	out = data
	for _, id := range slices.Sorted(maps.Keys(pins)) {
		for _, tool := range slices.Sorted(maps.Keys(pins[id])) {
			next, re, err := setPin(out, id, tool, pins[id][tool])
			if err != nil {
				return nil, false, err
			}
			out, reencoded = next, reencoded || re
		}
	}
	return out, reencoded, nil
}

// setPin writes one pin.
func setPin(data []byte, id, tool, digest string) ([]byte, bool, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, false, fmt.Errorf("the policy cannot be read as YAML: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, false, errors.New("the policy is not a YAML mapping")
	}
	conn, end := findConnector(doc.Content[0], id)
	if conn == nil {
		return nil, false, fmt.Errorf("the policy has no connector %s to pin tools of", id)
	}
	want, err := withPin(data, id, tool, digest)
	if err != nil {
		return nil, false, err
	}
	if edited, ok := (&splicer{data: data}).pin(conn, end, tool, digest); ok && decodesTo(edited, want) {
		return edited, false, nil
	}
	// The node tree, encoded again.
	if conn.Kind == yaml.MappingNode {
		setInTree(conn, tool, digest)
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(indentOf(data))
		if enc.Encode(&doc) == nil && enc.Close() == nil && decodesTo(buf.Bytes(), want) {
			return buf.Bytes(), true, nil
		}
	}
	return nil, false, fmt.Errorf("the pin of %s could not be written into the policy; add it by hand under connector %s's pins", tool, id)
}

// findConnector finds the mapping of the connector with the id among the document's
// connectors, and the line at which the next thing in the document starts (after its last line,
// when nothing follows it).
func findConnector(root *yaml.Node, id string) (*yaml.Node, int) {
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "connectors" || root.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		items := root.Content[i+1].Content
		for j, item := range items {
			m := item
			if m.Kind == yaml.AliasNode {
				m = m.Alias
			}
			if m == nil || m.Kind != yaml.MappingNode || valueOf(m, "id") == nil || valueOf(m, "id").Value != id {
				continue
			}
			end := 0 // the end of the document
			switch {
			case j+1 < len(items):
				end = items[j+1].Line
			case i+2 < len(root.Content):
				end = root.Content[i+2].Line
			}
			return item, end
		}
	}
	return nil, 0
}

// valueOf returns the value of key in a mapping node, or nil.
func valueOf(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// withPin is what the document must decode to once the pin is written.
func withPin(data []byte, id, tool, digest string) (any, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	root, _ := v.(map[string]any)
	items, _ := root["connectors"].([]any)
	for _, item := range items {
		if c, ok := item.(map[string]any); ok && c["id"] == id {
			pins, ok := c["pins"].(map[string]any)
			if !ok {
				pins = map[string]any{}
				c["pins"] = pins
			}
			pins[tool] = digest
			return v, nil
		}
	}
	return nil, fmt.Errorf("the policy has no connector %s to pin tools of", id)
}

// decodesTo reports whether a document decodes to want.
func decodesTo(data []byte, want any) bool {
	var got any
	return yaml.Unmarshal(data, &got) == nil && reflect.DeepEqual(got, want)
}

// setInTree writes a pin into a connector's node.
func setInTree(conn *yaml.Node, tool, digest string) {
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	pins := valueOf(conn, "pins")
	switch {
	case pins == nil:
		pins = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		conn.Content = append(conn.Content, str("pins"), pins)
	case pins.Kind != yaml.MappingNode:
		*pins = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: pins.Line, Column: pins.Column}
	}
	if v := valueOf(pins, tool); v != nil {
		*v = *str(digest)
		return
	}
	pins.Content = append(pins.Content, str(tool), str(digest))
}

// indentOf is the indentation step of a document: that of its first indented line (2 when
// there is none, or it is out of the encoder's range).
func indentOf(data []byte) int {
	for line := range strings.SplitSeq(string(data), "\n") {
		n := len(line) - len(strings.TrimLeft(line, " "))
		if n > 0 && strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			if n >= 2 && n <= 8 {
				return n
			}
			break
		}
	}
	return 2
}

// A splicer edits a document's text at the places its nodes were read from.
type splicer struct {
	data []byte
}

// pin writes the pin into the text of conn, which ends before line end (0: the document's
// end). It reports false where it cannot.
func (s *splicer) pin(conn *yaml.Node, end int, tool, digest string) ([]byte, bool) {
	if conn.Kind != yaml.MappingNode {
		return nil, false
	}
	entry := tool + ": " + digest
	pins := valueOf(conn, "pins")
	switch {
	case pins == nil && conn.Style&yaml.FlowStyle != 0:
		return s.intoFlow(conn, len(conn.Content) > 0, "pins: {"+entry+"}")
	case pins == nil:
		at, ok := s.endOfNode(conn, end)
		if !ok {
			return nil, false
		}
		indent := strings.Repeat(" ", conn.Column-1)
		return s.insertLines(at, indent+"pins:", indent+strings.Repeat(" ", s.step(conn))+entry), true
	case pins.Kind == yaml.MappingNode && valueOf(pins, tool) != nil:
		return s.replace(valueOf(pins, tool), digest)
	case pins.Kind == yaml.MappingNode && pins.Style&yaml.FlowStyle != 0:
		return s.intoFlow(pins, len(pins.Content) > 0, entry)
	case pins.Kind == yaml.MappingNode && len(pins.Content) > 0:
		last := pins.Content[len(pins.Content)-1]
		return s.insertLines(s.lineEnd(last.Line), strings.Repeat(" ", pins.Column-1)+entry), true
	case pins.Kind == yaml.ScalarNode && pins.Tag == "!!null" && pins.Value == "":
		// pins: with nothing after it.
		var key *yaml.Node
		for i := 0; i+1 < len(conn.Content); i += 2 {
			if conn.Content[i+1] == pins {
				key = conn.Content[i]
			}
		}
		return s.insertLines(s.lineEnd(key.Line), strings.Repeat(" ", key.Column-1+s.step(conn))+entry), true
	case pins.Kind == yaml.ScalarNode && pins.Tag == "!!null":
		return s.replaceText(pins, pins.Value, "{"+entry+"}")
	}
	return nil, false
}

// step is the indentation of a nested block mapping under conn (2 when it has none).
func (s *splicer) step(conn *yaml.Node) int {
	for i := 1; i < len(conn.Content); i += 2 {
		if v := conn.Content[i]; v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && v.Column > conn.Column {
			return v.Column - conn.Column
		}
	}
	return 2
}

// offset is the byte offset of a 1-based line and column (columns count characters), or -1.
func (s *splicer) offset(line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(s.data[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	for c := 1; c < col; c++ {
		if off >= len(s.data) || s.data[off] == '\n' {
			return -1
		}
		_, n := utf8.DecodeRune(s.data[off:])
		off += n
	}
	return off
}

// lineEnd is the offset just after the newline that ends a line (the document's length for
// its last line).
func (s *splicer) lineEnd(line int) int {
	off := s.offset(line, 1)
	if off < 0 {
		return len(s.data)
	}
	if i := bytes.IndexByte(s.data[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(s.data)
}

// endOfNode is where lines added at the end of a block node go: after its last line that
// holds anything, before the blank lines and comments that come before what follows it.
func (s *splicer) endOfNode(n *yaml.Node, end int) (int, bool) {
	lines := strings.Split(string(s.data), "\n")
	last := len(lines) // the last line of the document
	if end > 0 {
		last = end - 1
	}
	for last > n.Line {
		t := strings.TrimSpace(lines[last-1])
		if t != "" && !strings.HasPrefix(t, "#") && t != "-" {
			break
		}
		last--
	}
	if last < n.Line || last > len(lines) {
		return 0, false
	}
	return s.lineEnd(last), true
}

// newline is the document's line ending.
func (s *splicer) newline() string {
	if bytes.Contains(s.data, []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}

// insertLines inserts whole lines at an offset that starts a line (or ends the document).
func (s *splicer) insertLines(at int, lines ...string) []byte {
	nl := s.newline()
	var b bytes.Buffer
	b.Write(s.data[:at])
	if at > 0 && s.data[at-1] != '\n' {
		b.WriteString(nl)
	}
	for _, l := range lines {
		b.WriteString(l + nl)
	}
	b.Write(s.data[at:])
	return b.Bytes()
}

// replace replaces a single-line scalar's value, keeping its quotes.
func (s *splicer) replace(v *yaml.Node, value string) ([]byte, bool) {
	if v.Kind != yaml.ScalarNode {
		return nil, false
	}
	q := ""
	switch {
	case v.Style&yaml.DoubleQuotedStyle != 0:
		q = `"`
	case v.Style&yaml.SingleQuotedStyle != 0:
		q = "'"
	case v.Style != 0:
		return nil, false // a block scalar, or a tag
	}
	return s.replaceText(v, q+v.Value+q, q+value+q)
}

// replaceText replaces the text old, written where node n starts, with new.
func (s *splicer) replaceText(n *yaml.Node, old, new string) ([]byte, bool) {
	off := s.offset(n.Line, n.Column)
	if off < 0 || !bytes.HasPrefix(s.data[off:], []byte(old)) {
		return nil, false
	}
	out := slices.Concat(s.data[:off], []byte(new), s.data[off+len(old):])
	return out, true
}

// intoFlow adds an entry at the end of a flow mapping, before its closing brace.
func (s *splicer) intoFlow(m *yaml.Node, nonEmpty bool, entry string) ([]byte, bool) {
	start := s.offset(m.Line, m.Column)
	if start < 0 || start >= len(s.data) || s.data[start] != '{' {
		return nil, false
	}
	closing := matchingBrace(s.data, start)
	if closing < 0 {
		return nil, false
	}
	if nonEmpty {
		entry = ", " + entry
	}
	// Before any spaces that precede the brace: {a: b } becomes {a: b, c: d }.
	at := closing
	for at > start+1 && (s.data[at-1] == ' ' || s.data[at-1] == '\t') {
		at--
	}
	return slices.Concat(s.data[:at], []byte(entry), s.data[at:]), true
}

// matchingBrace is the offset of the brace that closes the flow collection opened at start, or
// -1. It skips quoted text and comments.
func matchingBrace(data []byte, start int) int {
	depth := 0
	for i := start; i < len(data); i++ {
		switch c := data[i]; c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				if c != '}' {
					return -1
				}
				return i
			}
		case '"':
			if !startsScalar(data, start, i) {
				continue
			}
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '\'':
			if !startsScalar(data, start, i) {
				continue
			}
			for i++; i < len(data); i++ {
				if data[i] == '\'' {
					if i+1 < len(data) && data[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
		case '#':
			if i > 0 && (data[i-1] == ' ' || data[i-1] == '\t') {
				for i < len(data) && data[i] != '\n' {
					i++
				}
			}
		}
	}
	return -1
}

// startsScalar reports whether the quote at i starts a quoted scalar of the flow collection
// opened at start (a quote inside plain text, as in it's, does not).
func startsScalar(data []byte, start, i int) bool {
	for j := i - 1; j >= start; j-- {
		switch data[j] {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[', ',', ':', '?':
			return true
		}
		return false
	}
	return true
}
