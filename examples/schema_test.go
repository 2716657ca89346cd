package examples_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// schemaPath is the published schema, relative to this directory (where go test runs).
const schemaPath = "../docs/warden.schema.json"

var loadSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", schemaPath, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaPath, doc); err != nil {
		return nil, fmt.Errorf("add %s: %w", schemaPath, err)
	}
	return c.Compile(schemaPath)
})

func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	sch, err := loadSchema()
	if err != nil {
		t.Fatalf("compile the schema: %v", err)
	}
	return sch
}

// TestExamplesMatchSchema checks every example policy in this directory tree against the
// published schema. The examples are found by walking, so a new one is checked without being
// listed here.
func TestExamplesMatchSchema(t *testing.T) {
	sch := schema(t)
	paths := examplePaths(t)
	if len(paths) == 0 {
		t.Fatal("found no example policy (*.yaml) under examples/; at least quickstart.yaml should be there")
	}
	for _, path := range paths {
		t.Run(filepath.ToSlash(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := decodeYAML(data)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if err := sch.Validate(doc); err != nil {
				t.Errorf("%s does not match %s:\n%v", path, schemaPath, err)
			}
		})
	}
}

// examplePaths lists the *.yaml and *.yml files under the current directory, skipping testdata
// and hidden entries (editor lock and swap files among them).
func examplePaths(t *testing.T) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == "." {
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, ".") || (d.IsDir() && name == "testdata") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(name); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk the examples: %v", err)
	}
	return paths
}

// TestSchemaAccepts pins shapes the schema must take: YAML that reads as booleans and numbers
// where the loader reads text, and both forms of credentials. The rejections below are small
// changes to documents like these.
func TestSchemaAccepts(t *testing.T) {
	sch := schema(t)
	tests := []struct {
		name string
		give string
	}{
		{
			name: "only the version",
			give: "version: 1\n",
		},
		{
			name: "switch values that YAML reads as booleans and numbers",
			give: `
version: 1
switches:
  - name: HARNESS_LOOP_ENABLED
    on: [1, true]
  - name: REQUIRE_WRITE_APPROVAL
    off: [false, 0, "no"]
  - name: APPROVAL_TIMEOUT_MS
    rule: integer
    default: 300000
  - name: SANDBOX_EGRESS
    modes: [allowlist, open]
    default: allowlist
`,
		},
		{
			name: "credentials as a word and as a list",
			give: `
version: 1
roles:
  - id: person
    credentials: all
  - id: support
    credentials: [agentmail, shopify]
`,
		},
		{
			name: "approvalByElicitation on person, off elsewhere, on for a role with a channel",
			give: `
version: 1
roles:
  - {id: person, approvalByElicitation: true}
  - {id: inbound, approvalByElicitation: false}
  - {id: desk, approvalChannel: true, approvalByElicitation: true}
  - {id: bot, approvalByElicitation: false}
`,
		},
		{
			name: "a connector tool with a gate",
			give: `
version: 1
connectors:
  - id: github
    effect: read
    grantable: true
    tools:
      - name: mcp__github__github_comment
        effect: send
        grantable: false
        gate: {approval: true, withoutChannel: refuse, requires: GITHUB_ALLOW_WRITES}
`,
		},
		{
			name: "a connector with pinned tool definitions",
			give: `
version: 1
connectors:
  - id: docs
    effect: read
    discover: true
    upstream: {command: [docs-mcp]}
    pins:
      mcp__docs__search: sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
`,
		},
		{
			name: "the sandbox egress card and a sandboxed connector",
			give: `
version: 1
builtins:
  - name: sandbox_allow_host
  - {name: AllowHost, kind: sandbox_allow_host, input: {host: hostname, reason: why}}
connectors:
  - id: files
    effect: read
    sandbox: true
    upstream: {command: [files-mcp]}
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := decodeYAML([]byte(tt.give))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(doc); err != nil {
				t.Errorf("schema rejected a valid document:\n%s\nerror:\n%v", tt.give, err)
			}
		})
	}
}

// TestSchemaRejects checks that the schema refuses what the loader refuses. want is a piece of
// the validation error, so a document rejected for some other reason fails the test.
func TestSchemaRejects(t *testing.T) {
	sch := schema(t)
	tests := []struct {
		name string
		give string
		want string
	}{
		{
			name: "unknown top-level field",
			give: "version: 1\nnmae: shop\n",
			want: "additional properties 'nmae' not allowed",
		},
		{
			name: "unknown field in a tool",
			give: `
version: 1
connectors:
  - id: github
    tools:
      - name: mcp__github__github_read_file
        effect: read
        grantabel: true
`,
			want: "at '/connectors/0/tools/0': additional properties 'grantabel' not allowed",
		},
		{
			name: "effect not in the enum",
			give: `
version: 1
connectors:
  - id: github
    tools:
      - name: mcp__github__github_comment
        effect: comment
`,
			want: "at '/connectors/0/tools/0/effect'",
		},
		{
			name: "version 2",
			give: "version: 2\n",
			want: "at '/version': value must be 1",
		},
		{
			name: "missing version",
			give: "name: shop\n",
			want: "missing property 'version'",
		},
		{
			name: "credentials not all, none, grant or a list",
			give: `
version: 1
roles:
  - id: support
    credentials: some
`,
			want: "at '/roles/0/credentials'",
		},
		{
			name: "switch rule not in the enum",
			give: `
version: 1
switches:
  - name: SHOPIFY_ALLOW_WRITES
    rule: true-or-yes
`,
			want: "at '/switches/0/rule'",
		},
		{
			name: "approvalByElicitation on a standard role with nobody to ask",
			give: `
version: 1
roles:
  - {id: inbound, approvalByElicitation: true}
`,
			want: "at '/roles/0'",
		},
		{
			name: "approvalByElicitation on a new role without an approval channel",
			give: `
version: 1
roles:
  - {id: bot, approvalChannel: false, approvalByElicitation: true}
`,
			want: "at '/roles/0'",
		},
		{
			name: "approvalByElicitation that is not a boolean",
			give: `
version: 1
roles:
  - {id: person, approvalByElicitation: "yes"}
`,
			want: "at '/roles/0/approvalByElicitation'",
		},
		{
			name: "role id with an upper-case letter",
			give: `
version: 1
roles:
  - id: Support
`,
			want: "at '/roles/0/id'",
		},
		{
			name: "maxTurns below 1",
			give: `
version: 1
limits:
  maxTurns: 0
`,
			want: "at '/limits/maxTurns'",
		},
		{
			name: "a pin whose digest is in upper case",
			give: `
version: 1
connectors:
  - id: docs
    effect: read
    discover: true
    upstream: {command: [docs-mcp]}
    pins:
      mcp__docs__search: sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855
`,
			want: "at '/connectors/0/pins/mcp__docs__search'",
		},
		{
			name: "a pin that names no tool",
			give: `
version: 1
connectors:
  - id: docs
    effect: read
    discover: true
    upstream: {command: [docs-mcp]}
    pins:
      search: sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
`,
			want: "invalid propertyName 'search'",
		},
		{
			name: "sandbox that is not a boolean",
			give: `
version: 1
connectors:
  - id: files
    effect: read
    sandbox: landlock
    upstream: {command: [files-mcp]}
`,
			want: "at '/connectors/0/sandbox'",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := decodeYAML([]byte(tt.give))
			if err != nil {
				t.Fatal(err)
			}
			err = sch.Validate(doc)
			if err == nil {
				t.Fatalf("schema accepted an invalid document (%s):\n%s", tt.name, tt.give)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("schema rejected the document, but the error does not contain %q:\n%v", tt.want, err)
			}
		})
	}
}

// decodeYAML reads one YAML document into the values encoding/json would give for the same
// data, which is what the schema validator takes.
func decodeYAML(data []byte) (any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the document is empty")
		}
		return nil, err
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("a policy is one YAML document; found more than one")
	}
	return jsonValue(v, "")
}

// jsonValue converts a value decoded by yaml.v3 into a JSON-compatible one, with ptr (a JSON
// pointer) naming it in errors.
func jsonValue(v any, ptr string) (any, error) {
	switch v := v.(type) {
	case nil, bool, string, int, int64, uint64:
		return v, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("at %q: %v is not a JSON number", ptr, v)
		}
		return v, nil
	case time.Time:
		// yaml.v3 reads an unquoted date as a timestamp; the loader reads it as text.
		return v.Format(time.RFC3339Nano), nil
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			var err error
			if out[i], err = jsonValue(item, fmt.Sprintf("%s/%d", ptr, i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, item := range v {
			var err error
			if out[k], err = jsonValue(item, ptr+"/"+k); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[any]any:
		// yaml.v3 gives this type when a key is not a string, such as 1 or true; the loader
		// takes any scalar key as its text.
		out := make(map[string]any, len(v))
		for k, item := range v {
			switch k.(type) {
			case string, bool, int, int64, uint64, float64:
			default:
				return nil, fmt.Errorf("at %q: a mapping key must be a name, not %v (%T)", ptr, k, k)
			}
			key := fmt.Sprint(k)
			if _, dup := out[key]; dup {
				return nil, fmt.Errorf("at %q: key %q is given twice", ptr, key)
			}
			var err error
			if out[key], err = jsonValue(item, ptr+"/"+key); err != nil {
				return nil, err
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("at %q: unexpected YAML value %v (%T)", ptr, v, v)
	}
}
