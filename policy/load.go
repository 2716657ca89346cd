package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads and compiles the policy file at path. On any problem it returns an ErrorList
// holding every problem found, each at its place.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	return Parse(path, data)
}

// Parse compiles a policy document; name is the file name used in messages.
func Parse(name string, data []byte) (*Policy, error) {
	// Problems come in two rounds, each reported whole: shape (YAML syntax, unknown fields,
	// wrong types), then meaning. Compiling a document whose shape is wrong would mostly report
	// the consequences of the shape problems a second time.
	cfg, probs, _ := decodeConfig(name, data)
	if len(probs.errs) > 0 {
		return nil, sortErrors(probs.errs)
	}
	c := newCompiler(probs, cfg)
	c.compile()
	if len(c.errs) > 0 {
		return nil, sortErrors(c.errs)
	}
	sum := sha256.Sum256(data)
	c.pol.Revision = hex.EncodeToString(sum[:8])
	c.pol.File = name
	c.pol.warnings = sortErrors(c.warnings)
	return c.pol, nil
}

// Decode reads a policy document into its written form without compiling it. It reports
// problems of shape (YAML syntax, unknown fields, wrong types) but not of meaning.
func Decode(name string, data []byte) (*Config, error) {
	cfg, probs, _ := decodeConfig(name, data)
	if len(probs.errs) > 0 {
		return nil, sortErrors(probs.errs)
	}
	return cfg, nil
}

// decodeConfig decodes a document. usable is false when there is nothing to compile: a YAML
// syntax error, a document that is not a mapping, or one whose aliases expand too far.
func decodeConfig(name string, data []byte) (cfg *Config, probs *problems, usable bool) {
	probs = &problems{file: name}
	root := parseDocument(probs, data)
	cfg = &Config{}
	if root == nil {
		return cfg, probs, false
	}
	if root.Kind != yaml.MappingNode {
		probs.errorf(nodePos(root), "the policy must be a mapping with version, builtins, servers, ..., not %s", describe(root))
		return cfg, probs, false
	}
	d := &decoder{problems: probs, lines: strings.Split(string(data), "\n")}
	d.decode(root, reflect.ValueOf(cfg).Elem(), "the policy")
	return cfg, probs, !d.overflow
}

var (
	idPattern       = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
	serverIDPattern = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	builtinPattern  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	switchPattern   = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	envPattern      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	toolPartPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	wordPattern     = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// checkID reports an id that is missing or malformed.
func (c *compiler) checkID(n Node, kind, id string, re *regexp.Regexp) bool {
	switch {
	case id == "":
		c.errorf(n.Pos, "%s has no id", kind)
		return false
	case !re.MatchString(id):
		c.errorf(n.At("id"), "%s id %s must match %s", kind, strconv.Quote(id), re)
		return false
	}
	return true
}
