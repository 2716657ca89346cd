package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// BoundariesConfig is a hard-block document written in the policy: BURROW's
// {"version":1,"hardBlocks":[...]} in YAML form, or a reference to a JSON file holding it:
//
//	boundaries:
//	  version: 1
//	  hardBlocks:
//	    - {id: dotenv, enabled: true, type: path, pattern: "**/.env", match: glob, operations: [read]}
//
//	boundaries: {file: rules.json}   # relative to the policy file
//
// The policy package reads it (and the file) but does not judge the rules: package boundary
// does that (boundary.FromPolicy), at the places this records, so that `warden check` reports
// a bad rule at its file:line:col like any other problem of the policy.
type BoundariesConfig struct {
	Node
	// File is the JSON file the document was read from, as written (relative to the policy
	// file's directory unless absolute); empty for a document written inline.
	File string
	// JSON is the document as BURROW's JSON: the file's bytes, or the inline YAML converted.
	// It is nil when the file could not be read (an error was reported).
	JSON []byte

	places map[string]Pos // field path ("hardBlocks[2].match") → where it is written
}

// Place returns where a field of the document ("hardBlocks[2].operations[0]", as package
// boundary names fields) is written: the field itself when the document is inline, else the
// nearest enclosing field written, else where the document (or its file reference) starts.
func (b *BoundariesConfig) Place(field string) Pos {
	for f := field; f != ""; {
		if p, ok := b.places[f]; ok {
			return p
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	if p, ok := b.places[""]; ok {
		return p
	}
	return b.Pos
}

func (b *BoundariesConfig) decodeYAML(d *decoder, y *yaml.Node) {
	b.Pos = nodePos(y)
	b.places = map[string]Pos{"": nodePos(y)}
	if y.Kind != yaml.MappingNode {
		d.errorf(nodePos(y), "boundaries must be a hard-block document (version, hardBlocks) or {file: FILE}, not %s", describe(y))
		return
	}
	var fileNode *yaml.Node
	others := 0
	for i := 0; i+1 < len(y.Content); i += 2 {
		if d.resolve(y.Content[i]).Value == "file" {
			fileNode = d.resolve(y.Content[i+1])
		} else {
			others++
		}
	}
	if fileNode != nil {
		if others > 0 {
			d.errorf(nodePos(y), "boundaries: give either file or the document (version, hardBlocks), not both")
			return
		}
		name, ok := d.scalar(fileNode, "boundaries file")
		if !ok {
			return
		}
		b.File = name
		b.places[""] = nodePos(fileNode)
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(d.file), name)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			d.errorf(nodePos(fileNode), "boundaries: read %s: %v", name, err)
			return
		}
		b.JSON = data
		return
	}
	var v any
	if err := y.Decode(&v); err != nil {
		d.errorf(nodePos(y), "boundaries: %v", err)
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		d.errorf(nodePos(y), "boundaries: the document cannot be read as JSON: %v", err)
		return
	}
	b.JSON = data
	placeFields(d, y, "", b.places)
}

// placeFields records where each field under y is written, named as package boundary names
// them.
func placeFields(d *decoder, y *yaml.Node, path string, places map[string]Pos) {
	y = d.resolve(y)
	if y == nil {
		return
	}
	switch y.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(y.Content); i += 2 {
			k := d.resolve(y.Content[i])
			f := k.Value
			if path != "" {
				f = path + "." + k.Value
			}
			places[f] = valuePos(y.Content[i+1])
			placeFields(d, y.Content[i+1], f, places)
		}
	case yaml.SequenceNode:
		for i, item := range y.Content {
			f := path + "[" + strconv.Itoa(i) + "]"
			places[f] = nodePos(item)
			placeFields(d, item, f, places)
		}
	}
}

// DefaultBoundaries is the deployment-wide hard-block document (the top-level boundaries),
// or nil. Every tenant's rules start with it.
func (p *Policy) DefaultBoundaries() *BoundariesConfig { return p.boundaries }

// TenantBoundaries is the hard-block document written on a tenant (added to the deployment's),
// or nil.
func (p *Policy) TenantBoundaries(tenant string) *BoundariesConfig {
	if p.tenantBounds == nil {
		return nil
	}
	return p.tenantBounds[tenant]
}

// Describe names the document in messages: "boundaries", or "boundaries file F" for one read
// from a file.
func (b *BoundariesConfig) Describe() string {
	if b.File != "" {
		return fmt.Sprintf("boundaries file %s", b.File)
	}
	return "boundaries"
}
