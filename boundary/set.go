package boundary

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Options are what compiling needs besides the document. The zero value is valid: no home,
// so a rule written with "~/" is an error.
type Options struct {
	// Home expands a leading "~/" in exact, prefix and glob path patterns. It must be
	// absolute. Empty: a rule that uses "~/" does not compile.
	Home string
}

// Set is a compiled, immutable rule set. It is safe for concurrent use by any number of
// goroutines. The zero Set (and a nil *Set) was never compiled: it blocks everything, like
// a Set built from invalid data.
type Set struct {
	built   bool
	invalid error
	// blockAll is the hit an invalid set reports for every check.
	blockAll Rule
	rules    []Rule
	revision string
	order    map[*Rule]int // rule → its place in the document, to sort hits
	paths    [numOps]*index
	cmd      *index
}

// Hit is one rule that matched, and the path or command text it matched. Rule points into
// the Set: do not modify it.
type Hit struct {
	Rule   *Rule
	Target string
}

// ConfigInvalidID is the ID of the rule an invalid Set reports as hit for every check, so that
// a caller that forgets to look at Invalid still blocks. Report it with the blocker
// boundary_config_invalid and the reason from Invalid.
const ConfigInvalidID = "boundary_config_invalid"

var errNotCompiled = errors.New("the hard-block set was not compiled (use boundary.Compile, Load or Empty)")

// notCompiled is the rule a zero or nil Set reports.
var notCompiled = Rule{ID: ConfigInvalidID, Enabled: true, Reason: errNotCompiled.Error()}

// Empty returns a Set with no rules: it blocks nothing.
func Empty() *Set {
	s, err := Compile(&Document{Version: 1}, Options{})
	if err != nil {
		panic(err) // an empty document always compiles
	}
	return s
}

// Compile validates d and builds its index. It returns a ValidationError listing every
// problem; the Set does not share memory with d.
func Compile(d *Document, opt Options) (*Set, error) {
	if d == nil {
		return nil, ValidationError{{Msg: "no document"}}
	}
	if errs := check(d, opt); len(errs) > 0 {
		return nil, ValidationError(errs)
	}
	return build(d.HardBlocks, opt), nil
}

// check validates d and the "~/" patterns it needs a home for.
func check(d *Document, opt Options) []FieldError {
	errs := d.validate()
	for i, r := range d.HardBlocks {
		if r.Type != TypePath || !strings.HasPrefix(r.Pattern, "~/") {
			continue
		}
		if r.Match != MatchExact && r.Match != MatchPrefix && r.Match != MatchGlob {
			continue
		}
		field := fmt.Sprintf("hardBlocks[%d].pattern", i)
		switch {
		case opt.Home == "":
			errs = append(errs, FieldError{field, `"~/" needs a home directory, and none was configured`})
		case !filepath.IsAbs(opt.Home):
			errs = append(errs, FieldError{field, fmt.Sprintf(`"~/" needs an absolute home directory, not %q`, opt.Home)})
		}
	}
	slices.SortStableFunc(errs, func(a, b FieldError) int { return ruleIndex(a.Field) - ruleIndex(b.Field) })
	return errs
}

// build indexes rules that were checked.
func build(rules []Rule, opt Options) *Set {
	home := ""
	if opt.Home != "" {
		home = filepath.Clean(opt.Home)
	}
	s := &Set{built: true, order: make(map[*Rule]int, len(rules))}
	s.rules = make([]Rule, len(rules))
	for i, r := range rules {
		r.Operations = slices.Clone(r.Operations)
		s.rules[i] = r
		s.order[&s.rules[i]] = i
	}
	s.revision = revision(s.rules)

	prepared := make([]prepared, len(s.rules))
	for i := range s.rules {
		prepared[i] = prepare(&s.rules[i], home)
	}
	for slot := range numOps {
		s.paths[slot] = buildIndex(prepared, TypePath, allOps[slot])
	}
	s.cmd = buildIndex(prepared, TypeCommand, "execute")
	return s
}

// Load compiles stored data. It never fails: data that does not parse, validate or compile
// gives a Set whose Invalid says why and which blocks every action. BURROW falls back to no
// rules here; Warden never does.
func Load(data []byte, opt Options) *Set {
	d, err := Parse(data)
	if err == nil {
		var s *Set
		if s, err = Compile(d, opt); err == nil {
			return s
		}
	}
	return invalidSet("the stored hard-block document", data, err)
}

// invalidSet is the Set of rules that do not validate (what names them): it blocks everything.
func invalidSet(what string, data []byte, err error) *Set {
	sum := sha256.Sum256(append([]byte("invalid\n"), data...))
	return &Set{
		built:    true,
		invalid:  fmt.Errorf("%s is invalid, so every action is blocked:\n%w", what, err),
		blockAll: Rule{ID: ConfigInvalidID, Enabled: true, Reason: what + " is invalid: " + firstLine(err.Error())},
		revision: hex.EncodeToString(sum[:8]),
	}
}

// Merge compiles a tenant's rules from two sources: the policy's document (nil: none) and
// stored data (nil: none). Hard blocks only accumulate: the Set holds the policy's rules, then
// the stored ones, so a stored document can add blocks but never lift one the deployment's
// policy file wrote. An id may appear in both: a stored rule identical to a policy rule is
// kept once, and a different one blocks too, under the same id. Like
// Load, Merge never fails: stored data that does not validate gives a Set that blocks every
// action, and so does a policy document that does not (the policy compiler refuses those
// before they get here).
func Merge(policy *Document, stored []byte, opt Options) *Set {
	var rules []Rule
	if policy != nil {
		if errs := check(policy, opt); len(errs) > 0 {
			return invalidSet("the policy's hard-block document", nil, ValidationError(errs))
		}
		rules = append(rules, policy.HardBlocks...)
	}
	if stored != nil {
		d, err := Parse(stored)
		if err == nil {
			if errs := check(d, opt); len(errs) > 0 {
				err = ValidationError(errs)
			}
		}
		if err != nil {
			return invalidSet("the stored hard-block document", stored, err)
		}
		policyRules := len(rules)
		for _, r := range d.HardBlocks {
			// A stored copy of a policy rule adds nothing but a second blocker.
			if !slices.ContainsFunc(rules[:policyRules], func(p Rule) bool { return sameRule(p, r) }) {
				rules = append(rules, r)
			}
		}
	}
	return build(rules, opt)
}

func sameRule(a, b Rule) bool {
	return a.ID == b.ID && a.Enabled == b.Enabled && a.Type == b.Type && a.Pattern == b.Pattern &&
		a.Match == b.Match && a.Reason == b.Reason && slices.Equal(a.Operations, b.Operations)
}

// Invalid says why s blocks every action, or returns nil for a usable set. The error of a
// set from Load wraps the ValidationError.
func (s *Set) Invalid() error {
	if s == nil || !s.built {
		return errNotCompiled
	}
	return s.invalid
}

// Rules returns a copy of the rules as written, in document order (none for an invalid set).
func (s *Set) Rules() []Rule {
	if s == nil {
		return nil
	}
	out := make([]Rule, len(s.rules))
	for i, r := range s.rules {
		r.Operations = slices.Clone(r.Operations)
		out[i] = r
	}
	return out
}

// Revision is a digest of the canonical document (16 hex digits): it changes when the
// rules do, and not with the document's spacing or key order. Options are not part of it.
// An invalid set's revision is a digest of its raw data.
func (s *Set) Revision() string {
	if s == nil {
		return ""
	}
	return s.revision
}

func revision(rules []Rule) string {
	d := Document{Version: 1, HardBlocks: rules}
	if d.HardBlocks == nil {
		d.HardBlocks = []Rule{}
	}
	data, err := json.Marshal(d)
	if err != nil {
		panic(err) // strings, bools and ints always encode
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// CommandText is the normalised form of one simple command that command rules match: the
// program's base name, then its arguments, joined by single spaces. argv is the command as
// the shell would run it, quotes already removed.
func CommandText(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(path.Base(argv[0]))
	for _, a := range argv[1:] {
		b.WriteByte(' ')
		b.WriteString(a)
	}
	return b.String()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " (and more)"
	}
	return s
}

// prepared is a rule read once for every index it goes into.
type prepared struct {
	rule    *Rule
	pattern string         // for paths: "~/" expanded; exact and prefix cleaned
	re      *regexp.Regexp // regex rules
	tree    *treeGlob      // path glob rules
}

func prepare(r *Rule, home string) prepared {
	p := prepared{rule: r, pattern: r.Pattern}
	if !r.Enabled {
		return p
	}
	if r.Type == TypePath {
		switch r.Match {
		case MatchExact:
			p.pattern = filepath.Clean(expandHome(r.Pattern, home))
		case MatchPrefix:
			x := expandHome(r.Pattern, home)
			p.pattern = filepath.Clean(x)
			if strings.HasSuffix(x, "/") && p.pattern != "/" {
				p.pattern += "/"
			}
		case MatchGlob:
			if rest, ok := strings.CutPrefix(r.Pattern, "~/"); ok {
				p.pattern = escapeGlob(home) + "/" + rest
				if home == "/" {
					p.pattern = "/" + rest
				}
			}
			p.tree = newTreeGlob(p.pattern)
		}
	}
	if r.Match == MatchRegex {
		p.re = regexp.MustCompile(r.Pattern) // validated
	}
	return p
}

func expandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return home + "/" + rest
	}
	return p
}

// escapeGlob makes every byte of s literal in a doublestar pattern.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]{}\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
