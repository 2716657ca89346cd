package boundary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/action"
)

// Rule is one hard block, in BURROW's shape.
type Rule struct {
	// ID names the rule; it is unique in its document and appears in blockers.
	ID string `json:"id"`
	// Enabled turns the rule on; a disabled rule never matches.
	Enabled bool `json:"enabled"`
	// Type is TypePath or TypeCommand.
	Type string `json:"type"`
	// Pattern is what the rule matches, read according to Match.
	Pattern string `json:"pattern"`
	// Match is the matching method: MatchExact, MatchPrefix, MatchGlob, MatchRegex or
	// MatchContains.
	Match string `json:"match"`
	// Operations are the operations the rule blocks (action.Op names). A command rule
	// includes execute.
	Operations []string `json:"operations"`
	// Reason is shown to whoever is blocked.
	Reason string `json:"reason,omitempty"`
}

// Document is the stored hard-block document: {"version":1,"hardBlocks":[...]}.
type Document struct {
	// Version is the document format; only 1 exists.
	Version int `json:"version"`
	// HardBlocks are the rules, in order.
	HardBlocks []Rule `json:"hardBlocks"`
}

// The rule types.
const (
	TypePath    = "path"
	TypeCommand = "command"
)

// The matching methods.
const (
	MatchExact    = "exact"
	MatchPrefix   = "prefix"
	MatchGlob     = "glob"
	MatchRegex    = "regex"
	MatchContains = "contains"
)

// FieldError is one problem with one field of a document. Field is a path into the JSON
// ("hardBlocks[3].match", "version"); it is empty for a problem with the document as a whole
// (it is not JSON, or not an object).
type FieldError struct {
	Field, Msg string
}

// Error is "field: message", or the message alone for the document as a whole.
func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// ValidationError is every problem found in a document: problems of the document as a whole
// first, then rule by rule, in each the shape problems (JSON types, unknown fields) before
// the values'.
type ValidationError []FieldError

// Error lists the problems one per line.
func (v ValidationError) Error() string {
	lines := make([]string, len(v))
	for i, e := range v {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

const (
	wantTypes   = "want path or command"
	wantMatches = "want exact, prefix, glob, regex or contains"
	wantOps     = "want read, write, delete, execute or delegate"
	ruleFields  = "id, enabled, type, pattern, match, operations or reason"
)

// Parse reads a document strictly: every field must have its JSON type, unknown and
// repeated fields are errors, and "enabled" must be written (a rule whose state is unclear
// is refused rather than guessed). Then it validates the document. Every problem is
// returned at once, as a ValidationError; the document is nil when there is any.
func Parse(data []byte) (*Document, error) {
	var errs []FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{field, fmt.Sprintf(format, args...)})
	}
	if err := syntaxCheck(data); err != nil {
		return nil, ValidationError{{Msg: err.Error()}}
	}
	top, ok := objectFields(data)
	if !ok {
		return nil, ValidationError{{Msg: "the document must be a JSON object"}}
	}
	d := &Document{}
	seenVersion, seenBlocks := false, false
	var rawRules []json.RawMessage
	for _, f := range top {
		switch f.key {
		case "version":
			if seenVersion {
				add("version", "written twice")
				continue
			}
			seenVersion = true
			if !isNumber(f.val) || json.Unmarshal(f.val, &d.Version) != nil {
				add("version", "must be an integer; want 1")
			}
		case "hardBlocks":
			if seenBlocks {
				add("hardBlocks", "written twice")
				continue
			}
			seenBlocks = true
			if len(f.val) == 0 || f.val[0] != '[' {
				add("hardBlocks", "must be an array of rules")
				continue
			}
			_ = json.Unmarshal(f.val, &rawRules) // valid JSON array: cannot fail
		default:
			add(f.key, "unknown field; want version or hardBlocks")
		}
	}
	if !seenVersion {
		add("version", "missing; want 1")
	}
	if !seenBlocks {
		add("hardBlocks", "missing; write [] for no rules")
	}
	d.HardBlocks = make([]Rule, len(rawRules))
	for i, raw := range rawRules {
		decodeRule(fmt.Sprintf("hardBlocks[%d]", i), raw, &d.HardBlocks[i], add)
	}

	// Validation problems on a field that could not be decoded say nothing new.
	bad := make(map[string]bool, len(errs))
	for _, e := range errs {
		bad[e.Field] = true
	}
	for _, e := range d.validate() {
		if !badField(bad, e.Field) {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b FieldError) int { return ruleIndex(a.Field) - ruleIndex(b.Field) })
		return nil, ValidationError(errs)
	}
	return d, nil
}

// Validate checks a document: version 1; ids non-empty and unique; a known type and match
// method; a non-empty pattern that is valid for its method (a regex compiles, a glob is
// doublestar syntax and can match an absolute path, an exact or prefix path pattern is
// absolute or starts with "~/"); operations non-empty, known and not repeated; a command
// rule includes execute. It returns a ValidationError listing every problem, or nil.
func (d *Document) Validate() error {
	if errs := d.validate(); len(errs) > 0 {
		return ValidationError(errs)
	}
	return nil
}

func (d *Document) validate() []FieldError {
	var errs []FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{field, fmt.Sprintf(format, args...)})
	}
	if d.Version != 1 {
		add("version", "unsupported version %d; want 1", d.Version)
	}
	firstID := make(map[string]int, len(d.HardBlocks))
	for i := range d.HardBlocks {
		r := &d.HardBlocks[i]
		f := fmt.Sprintf("hardBlocks[%d]", i)
		switch j, dup := firstID[r.ID]; {
		case r.ID == "":
			add(f+".id", "empty; every rule needs an id")
		case dup:
			add(f+".id", "duplicate id %q; hardBlocks[%d] has it too", r.ID, j)
		default:
			firstID[r.ID] = i
		}
		typeOK := r.Type == TypePath || r.Type == TypeCommand
		switch {
		case r.Type == "":
			add(f+".type", "empty; %s", wantTypes)
		case !typeOK:
			add(f+".type", "unknown type %q; %s", r.Type, wantTypes)
		}
		matchOK := slices.Contains([]string{MatchExact, MatchPrefix, MatchGlob, MatchRegex, MatchContains}, r.Match)
		switch {
		case r.Match == "":
			add(f+".match", "empty; %s", wantMatches)
		case !matchOK:
			add(f+".match", "unknown match method %q; %s", r.Match, wantMatches)
		}
		if r.Pattern == "" {
			add(f+".pattern", "empty")
		} else if msg := patternProblem(r, typeOK, matchOK); msg != "" {
			add(f+".pattern", "%s", msg)
		}
		if len(r.Operations) == 0 {
			add(f+".operations", "empty; want one or more of read, write, delete, execute, delegate")
		}
		for j, name := range r.Operations {
			if _, ok := action.ParseOp(name); !ok {
				add(fmt.Sprintf("%s.operations[%d]", f, j), "unknown operation %q; %s", name, wantOps)
			} else if slices.Index(r.Operations, name) < j {
				add(fmt.Sprintf("%s.operations[%d]", f, j), "duplicate operation %q", name)
			}
		}
		if r.Type == TypeCommand && len(r.Operations) > 0 && !slices.Contains(r.Operations, string(action.OpExecute)) {
			add(f+".operations", "a command rule must include execute: command rules apply when a command runs")
		}
	}
	return errs
}

// patternProblem says what is wrong with a non-empty pattern, or "".
func patternProblem(r *Rule, typeOK, matchOK bool) string {
	if !matchOK {
		return ""
	}
	if r.Match == MatchRegex {
		if _, err := regexp.Compile(r.Pattern); err != nil {
			return "invalid regex: " + err.Error()
		}
		return ""
	}
	if !typeOK {
		return ""
	}
	if r.Type == TypeCommand {
		if r.Match == MatchGlob && !cmdGlobValid(r.Pattern) {
			return `invalid command glob: it ends with an unescaped "\"`
		}
		return ""
	}
	switch r.Match {
	case MatchExact, MatchPrefix:
		if !filepath.IsAbs(r.Pattern) && !strings.HasPrefix(r.Pattern, "~/") {
			return `a path pattern must be absolute or start with "~/"`
		}
	case MatchGlob:
		if !doublestar.ValidatePattern(r.Pattern) {
			return "invalid glob: " + globProblem(r.Pattern)
		}
		if !strings.HasPrefix(r.Pattern, "~/") && !globCanMatchAbsolute(r.Pattern) {
			return `this glob cannot match an absolute path ("*" and "?" stop at "/"); start it with "/", "~/" or "**/"`
		}
	}
	return ""
}

// decodeRule reads one rule object, reporting each field of the wrong type, each unknown or
// repeated field, and a missing "enabled".
func decodeRule(f string, raw json.RawMessage, r *Rule, add func(field, format string, args ...any)) {
	fields, ok := objectFields(raw)
	if !ok {
		add(f, "must be an object (a rule)")
		return
	}
	seen := make(map[string]bool, len(fields))
	for _, fl := range fields {
		name := f + "." + fl.key
		if seen[fl.key] {
			add(name, "written twice")
			continue
		}
		seen[fl.key] = true
		var dst *string
		switch fl.key {
		case "id":
			dst = &r.ID
		case "type":
			dst = &r.Type
		case "pattern":
			dst = &r.Pattern
		case "match":
			dst = &r.Match
		case "reason":
			dst = &r.Reason
		case "enabled":
			switch string(fl.val) {
			case "true":
				r.Enabled = true
			case "false":
				r.Enabled = false
			default:
				add(name, "must be true or false")
			}
			continue
		case "operations":
			var elems []json.RawMessage
			if len(fl.val) == 0 || fl.val[0] != '[' || json.Unmarshal(fl.val, &elems) != nil {
				add(name, "must be an array of operation names")
				continue
			}
			r.Operations = make([]string, 0, len(elems))
			for j, e := range elems {
				var s string
				if !isString(e) || json.Unmarshal(e, &s) != nil {
					add(fmt.Sprintf("%s[%d]", name, j), "must be a string; %s", wantOps)
					continue
				}
				r.Operations = append(r.Operations, s)
			}
			continue
		default:
			add(name, "unknown field; want %s", ruleFields)
			continue
		}
		if !isString(fl.val) || json.Unmarshal(fl.val, dst) != nil {
			add(name, "must be a string")
		}
	}
	if !seen["enabled"] {
		add(f+".enabled", "missing; write true or false")
	}
}

// badField reports whether field, or a field above it, could not be decoded.
func badField(bad map[string]bool, field string) bool {
	for {
		if bad[field] {
			return true
		}
		i := strings.LastIndexAny(field, ".[")
		if i <= 0 {
			return false
		}
		field = field[:i]
	}
}

// ruleIndex is the N of "hardBlocks[N]..." in field, or -1: problems sort by rule, document
// fields first.
func ruleIndex(field string) int {
	rest, ok := strings.CutPrefix(field, "hardBlocks[")
	if !ok {
		return -1
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return -1
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil {
		return -1
	}
	return n
}

type jsonField struct {
	key string
	val json.RawMessage
}

// objectFields lists the members of a JSON object in order, repeats included. raw must be
// valid JSON; ok is false when it is not an object.
func objectFields(raw []byte) (fields []jsonField, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, false
		}
		fields = append(fields, jsonField{key, val})
	}
	return fields, true
}

// syntaxCheck reports malformed JSON with its line and column.
func syntaxCheck(data []byte) error {
	if json.Valid(data) {
		return nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, se.Offset-1) // Offset is just past the byte at fault
		return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, se.Error())
	}
	if err == nil {
		err = errors.New("not valid JSON")
	}
	return fmt.Errorf("invalid JSON: %s", err.Error())
}

func lineCol(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

func isString(raw []byte) bool { return len(raw) > 0 && raw[0] == '"' }

func isNumber(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}
