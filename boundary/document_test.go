package boundary_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
)

// omit removes a field from a rule built by rule.
type omitted struct{}

var omit omitted

// rule is a valid path rule as JSON, with fields changed or removed.
func rule(changes ...any) string {
	r := map[string]any{
		"id": "r", "enabled": true, "type": "path", "pattern": "/etc/passwd",
		"match": "exact", "operations": []string{"read"}, "reason": "no",
	}
	for i := 0; i < len(changes); i += 2 {
		k := changes[i].(string)
		if changes[i+1] == omit {
			delete(r, k)
			continue
		}
		r[k] = changes[i+1]
	}
	data, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// doc is a version 1 document holding rules.
func doc(rules ...string) string {
	return `{"version":1,"hardBlocks":[` + strings.Join(rules, ",") + `]}`
}

func TestParseValid(t *testing.T) {
	text := doc(
		rule("id", "keys", "type", "path", "match", "glob", "pattern", "/home/*/.ssh/**", "operations", []string{"read", "write", "delete"}),
		rule("id", "rm", "type", "command", "match", "prefix", "pattern", "rm -rf /", "operations", []string{"execute"}, "reason", omit),
		rule("id", "off", "enabled", false, "match", "regex", "pattern", `^/var/log/.*\.log$`),
		rule("id", "home", "match", "prefix", "pattern", "~/.aws/"),
		rule("id", "sec", "match", "contains", "pattern", "secret", "operations", []string{"delegate"}),
	)
	d, err := boundary.Parse([]byte(text))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &boundary.Document{Version: 1, HardBlocks: []boundary.Rule{
		{ID: "keys", Enabled: true, Type: "path", Pattern: "/home/*/.ssh/**", Match: "glob", Operations: []string{"read", "write", "delete"}, Reason: "no"},
		{ID: "rm", Enabled: true, Type: "command", Pattern: "rm -rf /", Match: "prefix", Operations: []string{"execute"}},
		{ID: "off", Enabled: false, Type: "path", Pattern: `^/var/log/.*\.log$`, Match: "regex", Operations: []string{"read"}, Reason: "no"},
		{ID: "home", Enabled: true, Type: "path", Pattern: "~/.aws/", Match: "prefix", Operations: []string{"read"}, Reason: "no"},
		{ID: "sec", Enabled: true, Type: "path", Pattern: "secret", Match: "contains", Operations: []string{"delegate"}, Reason: "no"},
	}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	s, err := boundary.Compile(d, boundary.Options{Home: "/home/u"})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if diff := cmp.Diff(want.HardBlocks, s.Rules()); diff != "" {
		t.Errorf("Rules are not the rules as written (-want +got):\n%s", diff)
	}
}

func TestParseEmpty(t *testing.T) {
	d, err := boundary.Parse([]byte(`{"version":1,"hardBlocks":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.HardBlocks) != 0 {
		t.Errorf("HardBlocks = %v, want none", d.HardBlocks)
	}
}

// badDocs are documents with one problem each, and the message for it.
var badDocs = []struct {
	name string
	give string
	want []string
}{
	{"version", `{"version":2,"hardBlocks":[]}`, []string{"version: unsupported version 2; want 1"}},
	{"no version", `{"hardBlocks":[]}`, []string{"version: missing; want 1"}},
	{"version as a string", `{"version":"1","hardBlocks":[]}`, []string{"version: must be an integer; want 1"}},
	{"version as a fraction", `{"version":1.5,"hardBlocks":[]}`, []string{"version: must be an integer; want 1"}},
	{"no rules", `{"version":1}`, []string{"hardBlocks: missing; write [] for no rules"}},
	{"rules not an array", `{"version":1,"hardBlocks":{}}`, []string{"hardBlocks: must be an array of rules"}},
	{"rules null", `{"version":1,"hardBlocks":null}`, []string{"hardBlocks: must be an array of rules"}},
	{"rule not an object", doc(`1`), []string{"hardBlocks[0]: must be an object (a rule)"}},
	{"empty id", doc(rule("id", "")), []string{"hardBlocks[0].id: empty; every rule needs an id"}},
	{"missing id", doc(rule("id", omit)), []string{"hardBlocks[0].id: empty; every rule needs an id"}},
	{"duplicate id", doc(rule(), rule("id", "s"), rule()), []string{`hardBlocks[2].id: duplicate id "r"; hardBlocks[0] has it too`}},
	{"unknown type", doc(rule("type", "file")), []string{`hardBlocks[0].type: unknown type "file"; want path or command`}},
	{"empty type", doc(rule("type", "")), []string{`hardBlocks[0].type: empty; want path or command`}},
	{"unknown match", doc(rule("match", "globs")), []string{`hardBlocks[0].match: unknown match method "globs"; want exact, prefix, glob, regex or contains`}},
	{"empty match", doc(rule("match", omit)), []string{`hardBlocks[0].match: empty; want exact, prefix, glob, regex or contains`}},
	{"empty pattern", doc(rule("pattern", "")), []string{"hardBlocks[0].pattern: empty"}},
	{"bad regex", doc(rule("match", "regex", "pattern", "(a")), []string{"hardBlocks[0].pattern: invalid regex: error parsing regexp: missing closing ): `(a`"}},
	{"bad command regex", doc(rule("type", "command", "operations", []string{"execute"}, "match", "regex", "pattern", "a**")), []string{"hardBlocks[0].pattern: invalid regex: error parsing regexp: invalid nested repetition operator: `**`"}},
	{"relative exact", doc(rule("pattern", "etc/passwd")), []string{`hardBlocks[0].pattern: a path pattern must be absolute or start with "~/"`}},
	{"relative prefix", doc(rule("match", "prefix", "pattern", "~root/")), []string{`hardBlocks[0].pattern: a path pattern must be absolute or start with "~/"`}},
	{"unclosed class", doc(rule("match", "glob", "pattern", "/x/[ab")), []string{`hardBlocks[0].pattern: invalid glob: unclosed "[" at byte 3`}},
	{"empty class", doc(rule("match", "glob", "pattern", "/x/[]")), []string{`hardBlocks[0].pattern: invalid glob: empty character class at byte 3`}},
	{"unclosed alternatives", doc(rule("match", "glob", "pattern", "/x/{a,b")), []string{`hardBlocks[0].pattern: invalid glob: unclosed "{"`}},
	{"stray brace", doc(rule("match", "glob", "pattern", "/x/a}")), []string{`hardBlocks[0].pattern: invalid glob: "}" without "{" at byte 4`}},
	{"dangling escape", doc(rule("match", "glob", "pattern", `/x/a\`)), []string{`hardBlocks[0].pattern: invalid glob: it ends with an unescaped "\"`}},
	{"relative glob", doc(rule("match", "glob", "pattern", "*.env")), []string{`hardBlocks[0].pattern: this glob cannot match an absolute path ("*" and "?" stop at "/"); start it with "/", "~/" or "**/"`}},
	{"command glob escape", doc(rule("type", "command", "operations", []string{"execute"}, "match", "glob", "pattern", `rm *\`)), []string{`hardBlocks[0].pattern: invalid command glob: it ends with an unescaped "\"`}},
	{"no operations", doc(rule("operations", []string{})), []string{"hardBlocks[0].operations: empty; want one or more of read, write, delete, execute, delegate"}},
	{"missing operations", doc(rule("operations", omit)), []string{"hardBlocks[0].operations: empty; want one or more of read, write, delete, execute, delegate"}},
	{"unknown operation", doc(rule("operations", []string{"read", "exec"})), []string{`hardBlocks[0].operations[1]: unknown operation "exec"; want read, write, delete, execute or delegate`}},
	{"duplicate operation", doc(rule("operations", []string{"read", "write", "read"})), []string{`hardBlocks[0].operations[2]: duplicate operation "read"`}},
	{"command without execute", doc(rule("type", "command", "pattern", "rm -rf /", "operations", []string{"delete"})), []string{"hardBlocks[0].operations: a command rule must include execute: command rules apply when a command runs"}},
	{"missing enabled", doc(rule("enabled", omit)), []string{"hardBlocks[0].enabled: missing; write true or false"}},
	{"enabled as a string", doc(rule("enabled", "yes")), []string{"hardBlocks[0].enabled: must be true or false"}},
	{"enabled null", doc(rule("enabled", nil)), []string{"hardBlocks[0].enabled: must be true or false"}},
	{"operations as a string", doc(rule("operations", "read")), []string{"hardBlocks[0].operations: must be an array of operation names"}},
	{"operation as a number", doc(rule("operations", []any{"read", 1})), []string{"hardBlocks[0].operations[1]: must be a string; want read, write, delete, execute or delegate"}},
	{"pattern as a number", doc(rule("pattern", 7)), []string{"hardBlocks[0].pattern: must be a string"}},
	{"id null", doc(rule("id", nil)), []string{"hardBlocks[0].id: must be a string"}},
	{"reason as a bool", doc(rule("reason", true)), []string{"hardBlocks[0].reason: must be a string"}},
	{"unknown rule field", doc(rule("colour", "red")), []string{"hardBlocks[0].colour: unknown field; want id, enabled, type, pattern, match, operations or reason"}},
	{"unknown top field", `{"version":1,"hardBlocks":[],"rules":[]}`, []string{"rules: unknown field; want version or hardBlocks"}},
	{"field twice", `{"version":1,"hardBlocks":[{"id":"a","id":"b","enabled":true,"type":"path","pattern":"/x","match":"exact","operations":["read"]}]}`, []string{"hardBlocks[0].id: written twice"}},
	{"version twice", `{"version":1,"version":1,"hardBlocks":[]}`, []string{"version: written twice"}},
	{"not JSON", "{\"version\":1,\n\"hardBlocks\":[}", []string{"invalid JSON at line 2, column 15: invalid character '}' looking for beginning of value"}},
	{"not an object", `[1]`, []string{"the document must be a JSON object"}},
	{"empty input", ``, []string{"invalid JSON at line 1, column 1: unexpected end of JSON input"}},
}

// TestValidationMessages shows every message, with its field.
func TestValidationMessages(t *testing.T) {
	for _, tt := range badDocs {
		t.Run(tt.name, func(t *testing.T) {
			d, err := boundary.Parse([]byte(tt.give))
			if err == nil {
				t.Fatalf("Parse accepted %s", tt.give)
			}
			if d != nil {
				t.Errorf("Parse returned a document with its errors")
			}
			var verr boundary.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("error %T is not a ValidationError", err)
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAllErrorsAtOnce shows that one pass reports every problem, rule by rule.
func TestAllErrorsAtOnce(t *testing.T) {
	text := `{"version":3,"hardBlocks":[` +
		rule("id", "", "match", "globs", "colour", "red") + "," +
		rule("type", "command", "pattern", "", "operations", []string{"read", "fly"}) + "," +
		rule("match", "regex", "pattern", "[", "enabled", omit) +
		`],"extra":true}`
	_, err := boundary.Parse([]byte(text))
	want := []string{
		"extra: unknown field; want version or hardBlocks",
		"version: unsupported version 3; want 1",
		"hardBlocks[0].colour: unknown field; want id, enabled, type, pattern, match, operations or reason",
		"hardBlocks[0].id: empty; every rule needs an id",
		`hardBlocks[0].match: unknown match method "globs"; want exact, prefix, glob, regex or contains`,
		"hardBlocks[1].pattern: empty",
		`hardBlocks[1].operations[1]: unknown operation "fly"; want read, write, delete, execute or delegate`,
		"hardBlocks[1].operations: a command rule must include execute: command rules apply when a command runs",
		"hardBlocks[2].enabled: missing; write true or false",
		`hardBlocks[2].id: duplicate id "r"; hardBlocks[1] has it too`,
		"hardBlocks[2].pattern: invalid regex: error parsing regexp: missing closing ]: `[`",
	}
	if err == nil {
		t.Fatal("Parse accepted it")
	}
	if diff := cmp.Diff(want, strings.Split(err.Error(), "\n")); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestValidateDocument(t *testing.T) {
	d := &boundary.Document{Version: 1, HardBlocks: []boundary.Rule{
		{ID: "a", Enabled: true, Type: "path", Match: "glob", Pattern: "/x/**", Operations: []string{"read"}},
		{ID: "a", Type: "path", Match: "prefix", Pattern: "x/", Operations: nil},
	}}
	err := d.Validate()
	want := `hardBlocks[1].id: duplicate id "a"; hardBlocks[0] has it too
hardBlocks[1].pattern: a path pattern must be absolute or start with "~/"
hardBlocks[1].operations: empty; want one or more of read, write, delete, execute, delegate`
	if err == nil || err.Error() != want {
		t.Errorf("Validate = %v\nwant %s", err, want)
	}
	var verr boundary.ValidationError
	if !errors.As(err, &verr) || verr[0].Field != "hardBlocks[1].id" {
		t.Errorf("fields are not reachable: %#v", err)
	}
	if _, err := boundary.Compile(d, boundary.Options{}); err == nil || err.Error() != want {
		t.Errorf("Compile = %v; want the same errors", err)
	}
}

func TestCompileHome(t *testing.T) {
	d, err := boundary.Parse([]byte(doc(
		rule("id", "a", "match", "prefix", "pattern", "~/.ssh/"),
		rule("id", "b", "match", "glob", "pattern", "~/**/*.key"),
		rule("id", "c", "match", "regex", "pattern", "^~/x"), // not a path pattern: no expansion
	)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = boundary.Compile(d, boundary.Options{})
	want := `hardBlocks[0].pattern: "~/" needs a home directory, and none was configured
hardBlocks[1].pattern: "~/" needs a home directory, and none was configured`
	if err == nil || err.Error() != want {
		t.Errorf("Compile without a home = %v\nwant %s", err, want)
	}
	if _, err := boundary.Compile(d, boundary.Options{Home: "home/u"}); err == nil || !strings.Contains(err.Error(), `needs an absolute home directory, not "home/u"`) {
		t.Errorf("Compile with a relative home = %v", err)
	}
	s, err := boundary.Compile(d, boundary.Options{Home: "/home/u[1]"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		give string
		want []string
	}{
		{"/home/u[1]/.ssh/id_rsa", []string{"a"}},
		{"/home/u[1]/x/y.key", []string{"b"}},
		{"/home/u1/x/y.key", nil}, // the home is literal in a glob, not a class
		{"~/x", []string{"c"}},
	} {
		if got := ids(s.CheckPath(action.OpRead, tt.give, false, nil)); !cmp.Equal(got, tt.want) {
			t.Errorf("CheckPath(%q) = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// TestLoadInvalidBlocksEverything: stored data that does not validate blocks every action.
// BURROW's loader would fall back to empty boundaries here, which allows everything.
func TestLoadInvalidBlocksEverything(t *testing.T) {
	for _, data := range []string{
		``,
		`not json`,
		`{"version":2,"hardBlocks":[]}`,
		doc(rule("match", "globs")),
		doc(rule("match", "prefix", "pattern", "~/.ssh/")), // needs a home; none given
		`{"version":1,"hardBlocks":[],"x":1}`,
	} {
		s := boundary.Load([]byte(data), boundary.Options{})
		if s.Invalid() == nil {
			t.Errorf("Load(%q): Invalid() = nil", data)
			continue
		}
		if len(s.Rules()) != 0 {
			t.Errorf("Load(%q) kept rules", data)
		}
		// BURROW's fallback would be an empty rule set: nothing blocked. Not here.
		for _, op := range action.Ops {
			hits := s.CheckPath(op, "/work/repo/src/main.go", false, nil)
			if len(hits) != 1 || hits[0].Rule.ID != boundary.ConfigInvalidID {
				t.Errorf("Load(%q): CheckPath(%s) = %v; want the config-invalid hit", data, op, hits)
			}
		}
		hits := s.CheckCommand("ls", []string{"ls"}, nil)
		if len(hits) != 1 || hits[0].Rule.ID != boundary.ConfigInvalidID || hits[0].Target != "ls" {
			t.Errorf("Load(%q): CheckCommand = %v; want the config-invalid hit", data, hits)
		}
		if !strings.HasPrefix(hits[0].Rule.Reason, "the stored hard-block document is invalid: ") {
			t.Errorf("reason = %q", hits[0].Rule.Reason)
		}
		var verr boundary.ValidationError
		if !errors.As(s.Invalid(), &verr) {
			t.Errorf("Load(%q): Invalid() = %v does not wrap the ValidationError", data, s.Invalid())
		}
	}
	empty := boundary.Load([]byte(`{"version":1,"hardBlocks":[]}`), boundary.Options{})
	if empty.Invalid() != nil || len(empty.CheckPath(action.OpDelete, "/", true, nil)) != 0 {
		t.Errorf("a valid empty document blocks: %v", empty.Invalid())
	}
}

func TestUncompiledSetBlocks(t *testing.T) {
	var zero boundary.Set
	var nilSet *boundary.Set
	for _, s := range []*boundary.Set{&zero, nilSet} {
		if s.Invalid() == nil {
			t.Error("Invalid() = nil for a set never compiled")
		}
		if hits := s.CheckPath(action.OpRead, "/x", false, nil); len(hits) != 1 || hits[0].Rule.ID != boundary.ConfigInvalidID {
			t.Errorf("CheckPath = %v", hits)
		}
		if hits := s.CheckCommand("ls", nil, nil); len(hits) != 1 || hits[0].Rule.ID != boundary.ConfigInvalidID {
			t.Errorf("CheckCommand = %v", hits)
		}
	}
	if err := boundary.Empty().Invalid(); err != nil {
		t.Errorf("Empty().Invalid() = %v", err)
	}
}

func TestRevision(t *testing.T) {
	a := boundary.Load([]byte(doc(rule())), boundary.Options{})
	spaced := boundary.Load([]byte("{ \"hardBlocks\" : [ "+rule()+" ] ,\n \"version\" : 1 }"), boundary.Options{})
	changed := boundary.Load([]byte(doc(rule("pattern", "/etc/shadow"))), boundary.Options{})
	disabled := boundary.Load([]byte(doc(rule("enabled", false))), boundary.Options{})
	if a.Revision() != spaced.Revision() {
		t.Errorf("spacing and key order change the revision: %s, %s", a.Revision(), spaced.Revision())
	}
	if a.Revision() == changed.Revision() || a.Revision() == disabled.Revision() {
		t.Errorf("a changed rule keeps the revision %s", a.Revision())
	}
	if len(a.Revision()) != 16 {
		t.Errorf("Revision = %q, want 16 hex digits", a.Revision())
	}
	bad1 := boundary.Load([]byte(`{"version":2}`), boundary.Options{})
	bad2 := boundary.Load([]byte(`{"version":3}`), boundary.Options{})
	if bad1.Revision() == bad2.Revision() || bad1.Revision() == "" {
		t.Errorf("invalid data revisions: %q, %q", bad1.Revision(), bad2.Revision())
	}
	if boundary.Empty().Revision() != boundary.Load([]byte(`{"version":1,"hardBlocks":[]}`), boundary.Options{}).Revision() {
		t.Error("Empty() and an empty document differ in revision")
	}
}

func TestRulesIsACopy(t *testing.T) {
	s := boundary.Load([]byte(doc(rule())), boundary.Options{})
	r := s.Rules()
	r[0].Operations[0] = "write"
	r[0].ID = "changed"
	if got := ids(s.CheckPath(action.OpRead, "/etc/passwd", false, nil)); !cmp.Equal(got, []string{"r"}) {
		t.Errorf("changing Rules() changed the set: %v", got)
	}
}

func ids(hits []boundary.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Rule.ID)
	}
	return out
}

func ExampleLoad() {
	stored := []byte(`{"version":1,"hardBlocks":[
	  {"id":"ssh-keys","enabled":true,"type":"path","pattern":"~/.ssh/**","match":"glob",
	   "operations":["read","write","delete"],"reason":"keys stay put"},
	  {"id":"no-rm-root","enabled":true,"type":"command","pattern":"rm -rf /","match":"exact",
	   "operations":["execute"]}]}`)
	s := boundary.Load(stored, boundary.Options{Home: "/home/ana"})
	fmt.Println(s.Invalid())
	for _, h := range s.CheckPath(action.OpRead, "/home/ana/.ssh/id_ed25519", false, nil) {
		fmt.Println(h.Rule.ID, h.Rule.Reason)
	}
	for _, h := range s.CheckCommand(`/bin/rm  -rf /`, []string{boundary.CommandText([]string{"/bin/rm", "-rf", "/"})}, nil) {
		fmt.Printf("%s matched %q\n", h.Rule.ID, h.Target)
	}
	fmt.Println(len(s.CheckPath(action.OpRead, "/home/ana/notes.txt", false, nil)))

	broken := boundary.Load([]byte(`{"version":1,"hardBlocks":[{"id":"x"}]}`), boundary.Options{})
	fmt.Println(broken.CheckPath(action.OpRead, "/home/ana/notes.txt", false, nil)[0].Rule.ID)
	// Output:
	// <nil>
	// ssh-keys keys stay put
	// no-rm-root matched "rm -rf /"
	// 0
	// boundary_config_invalid
}

// FuzzParse checks that no input crashes Parse or Load; that every problem is one line
// naming its field; that an accepted document validates, compiles, survives a round trip
// through JSON and loads with the same revision; and that a refused one loads as a set that
// blocks everything. It is seeded with every document of these tests.
func FuzzParse(f *testing.F) {
	for _, b := range badDocs {
		f.Add([]byte(b.give))
	}
	f.Add([]byte(doc(rule())))
	f.Add([]byte(`{"version":1,"hardBlocks":[]}`))
	f.Add([]byte(doc(
		rule("id", "g", "match", "glob", "pattern", "~/**/{a,b}/[!x]*.key", "operations", []string{"read", "delete"}),
		rule("id", "c", "type", "command", "match", "glob", "pattern", `curl * | \*sh`, "operations", []string{"execute", "write"}),
		rule("id", "x", "match", "regex", "pattern", `(?i)^/v[a-z]+\d$`, "enabled", false),
		rule("id", "p", "match", "prefix", "pattern", "/srv//data/../x/"),
	)))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := boundary.Parse(data)
		s := boundary.Load(data, boundary.Options{Home: "/home/u"})
		if err != nil {
			if d != nil {
				t.Fatal("Parse returned a document and an error")
			}
			var verr boundary.ValidationError
			if !errors.As(err, &verr) || len(verr) == 0 {
				t.Fatalf("error %T %v is not a non-empty ValidationError", err, err)
			}
			for _, e := range verr {
				if e.Msg == "" || strings.Contains(e.Error(), "\n") {
					t.Fatalf("bad problem %q", e.Error())
				}
			}
			if s.Invalid() == nil {
				t.Fatal("Load accepted what Parse refused")
			}
			hits := s.CheckPath(action.OpRead, "/work/x", false, nil)
			if len(hits) != 1 || hits[0].Rule.ID != boundary.ConfigInvalidID {
				t.Fatalf("an invalid set does not block: %v", hits)
			}
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("Parse accepted a document that does not validate: %v", err)
		}
		if s.Invalid() != nil {
			t.Fatalf("Load refused what Parse accepted: %v", s.Invalid())
		}
		c, err := boundary.Compile(d, boundary.Options{Home: "/home/u"})
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		if c.Revision() != s.Revision() {
			t.Fatalf("revisions %s and %s", c.Revision(), s.Revision())
		}
		again, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		d2, err := boundary.Parse(again)
		if err != nil {
			t.Fatalf("the document does not survive a round trip: %v\n%s", err, again)
		}
		if diff := cmp.Diff(d, d2); diff != "" {
			t.Fatalf("round trip (-before +after):\n%s", diff)
		}
		for _, op := range action.Ops {
			s.CheckPath(op, "/home/u/x", true, nil)
			s.CheckPath(op, "/home/u/x", false, nil)
		}
		s.CheckCommand("rm -rf /", []string{"rm -rf /"}, nil)
	})
}
