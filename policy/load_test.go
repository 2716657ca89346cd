package policy_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/policy"
)

// The bad-input tests build each document from a small valid base: a case writes only the
// top-level sections it breaks (at the top, so the lines it gives are the document's first
// lines), and every section it does not write is taken from the base, unchanged. Each case breaks
// exactly one thing and lists every error it must produce, in document order, as
// "line:col: part of the message".

// fileName is the name every document is parsed under; errors must start with it.
const fileName = "name.yaml"

// baseSections is a minimal valid policy, one top-level section at a time. Nothing in it refers
// to another section except where noted, so a case can replace most sections on their own.
var baseSections = []struct{ key, text string }{
	{"version", "version: 1\n"},
	{"builtins", `builtins:
  - name: files_read
  - name: files_write
  - name: files_delete
  - {name: Bash, kind: shell_exec}
`},
	{"switches", `switches:
  - {name: FLAG, rule: exactly-true}
  - {name: MODE, modes: [open, closed], default: closed}
  - {name: COUNT, rule: integer, default: "5"}
`},
	{"harnesses", "harnesses:\n  - {id: loop, builtins: false}\n"},
	// The seo tools ride on the skill method.
	{"skills", "skills:\n  - id: method\n  - id: extra\n"},
	{"servers", `servers:
  - id: memory
    effect: read
    tools:
      - name: mcp__memory__read
      - {name: mcp__memory__write, effect: write}
  - id: project
    tools:
      - {name: mcp__project__read, effect: read}
      - {name: mcp__project__delete, effect: delete}
  - id: seo
    effect: write
    tools:
      - {name: mcp__seo__save, skill: method, grantable: true}
      - {name: mcp__seo__hand_off, effect: delegate, skill: method, handoff: true, grantable: true}
      - {name: mcp__seo__load, effect: read, skill: "*"}
`},
	{"connectors", `connectors:
  - id: shop
    effect: read
    grantable: true
    tools:
      - name: mcp__shop__list
      - {name: mcp__shop__update, effect: write, grantable: false, gate: {approval: true}}
    withheld:
      - {what: Deletes, reason: They cannot be undone., tools: [mcp__shop__delete_*]}
  - id: crawl
    effect: read
    grantable: true
    billing: {unit: credits}
    tools:
      - name: mcp__crawl__scrape
      - {name: mcp__crawl__joint, needs: [shop]}
      - {name: mcp__crawl__extra, optIn: true}
`},
	{"limits", "limits: {runBudgetUsd: 1, maxTurns: 5, maxConcurrentRuns: 1}\n"},
	{"tenants", "tenants:\n  - {id: main, account: acme, owner: true}\n"},
}

// doc returns the document a case stands for: give (its own sections, first), then every base
// section give does not write.
func doc(give string) string {
	give = strings.TrimPrefix(give, "\n")
	written := map[string]bool{}
	for line := range strings.SplitSeq(give, "\n") {
		if key, _, ok := strings.Cut(line, ":"); ok && key != "" && !strings.ContainsAny(key[:1], " #-") {
			written[key] = true
		}
	}
	var b strings.Builder
	b.WriteString(give)
	if give != "" && !strings.HasSuffix(give, "\n") {
		b.WriteByte('\n')
	}
	for _, s := range baseSections {
		if !written[s.key] {
			b.WriteString(s.text)
		}
	}
	return b.String()
}

// badDoc is one invalid document.
type badDoc struct {
	name string
	// give is the YAML the case writes; with raw it is the whole document, else doc(give).
	give string
	raw  bool
	// want is every error, in order: "line:col: substring", or ": substring" for an error that
	// has no place.
	want []string
}

func (b badDoc) text() string {
	if b.raw {
		return b.give
	}
	return doc(b.give)
}

// Two well-formed digests, for pins.
const (
	digestA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	digestB = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
)

// badDocs is shared with FuzzParse as seeds.
var badDocs = []badDoc{
	// ---- sessions
	{
		name: "sessions out of range",
		give: "sessions:\n  idleTimeout: soon\n  maxPerToken: -1\n  maxPerTenant: -2\n",
		want: []string{
			`2:16: sessions: idleTimeout "soon" is not a duration`,
			`3:16: sessions: maxPerToken must be 0 (no cap) or more, not -1`,
			`4:17: sessions: maxPerTenant must be 0 (no cap) or more, not -2`,
		},
	},
	{
		name: "a negative idle timeout",
		give: "sessions: {idleTimeout: -5m}\n",
		want: []string{`1:25: sessions: idleTimeout must not be negative`},
	},
	{
		name: "an idle timeout too short to keep a session",
		give: "sessions: {idleTimeout: 500ms}\n",
		want: []string{`1:25: sessions: idleTimeout 500ms is shorter than a second`},
	},
	// ---- the YAML document itself
	{
		name: "malformed YAML",
		raw:  true,
		give: "version: 1\nbuiltins: [{name: files_read}\nlimits: {}\n",
		want: []string{`2:1: YAML: did not find expected ',' or ']'`},
	},
	{
		name: "tab indentation",
		raw:  true,
		give: "version: 1\nbuiltins:\n\t- name: files_read\n",
		want: []string{`3:1: YAML: found character that cannot start any token`},
	},
	{
		name: "unknown anchor",
		raw:  true,
		give: "version: 1\nbuiltins: *tools\n",
		want: []string{`1:1: YAML: unknown anchor 'tools' referenced`},
	},
	{
		name: "two documents",
		raw:  true,
		give: "version: 1\n---\nversion: 1\n",
		want: []string{`2:1: a policy is one YAML document; a second one starts here`},
	},
	{
		name: "empty document",
		raw:  true,
		give: "",
		want: []string{`1:1: the document is empty`},
	},
	{
		name: "only comments",
		raw:  true,
		give: "# a policy\n\n# to come\n",
		want: []string{`1:1: the document is empty`},
	},
	{
		name: "a document marker and nothing else",
		raw:  true,
		give: "---\n",
		want: []string{`2:1: the policy must be a mapping with version, builtins, servers, ..., not null`},
	},
	{
		name: "top level is a list",
		raw:  true,
		give: "- version: 1\n",
		want: []string{`1:1: the policy must be a mapping with version, builtins, servers, ..., not a list`},
	},
	{
		name: "top level is a scalar",
		raw:  true,
		give: "\n\nversion 1\n",
		want: []string{`3:1: the policy must be a mapping with version, builtins, servers, ..., not "version 1"`},
	},
	{
		name: "version missing",
		raw:  true,
		give: "builtins:\n  - name: files_read\n",
		want: []string{`1:1: version is missing: add version: 1 at the top`},
	},
	{
		name: "version 2",
		give: "version: 2\n",
		want: []string{`1:10: version 2 is not supported; this Warden reads version 1`},
	},

	// ---- shape: unknown fields, at several depths, with a suggestion
	{
		name: "unknown top-level field",
		give: "verison: 1\n",
		want: []string{`1:1: unknown field "verison" in the policy (did you mean "version"?)`},
	},
	{
		name: "unknown top-level field, nothing close",
		give: "tools: []\n",
		want: []string{`1:1: unknown field "tools" in the policy; known fields are boundaries, builtins, connectors, description, harnesses, limits, models, name, profiles, roles, search, servers, sessions, skills, switches, tenants, version`},
	},
	{
		name: "a search provider Warden does not know",
		give: "search: {provider: bing}\n",
		want: []string{`1:20: search provider "bing" is not one Warden knows; it is one of none, harness`},
	},
	{
		name: "unknown field in a built-in",
		give: "builtins:\n  - {name: files_read, knd: files_read}\n",
		want: []string{`2:24: unknown field "knd" in a tool (did you mean "kind"?)`},
	},
	{
		name: "unknown field in a server",
		give: `
servers:
  - id: memory
    grantabel: true
    effect: read
    tools: [{name: mcp__memory__read}]
`,
		want: []string{`3:5: unknown field "grantabel" in a server (did you mean "grantable"?)`},
	},
	{
		name: "unknown field in a gate, three levels down",
		give: `
connectors:
  - id: shop
    effect: read
    tools:
      - name: mcp__shop__update
        gate: {aproval: true}
`,
		want: []string{`6:16: unknown field "aproval" in a gate (did you mean "approval"?)`},
	},
	{
		name: "unknown field in an allowance, four levels down",
		give: `
profiles:
  - id: p
    tools: [files_read]
    grant:
      connectors: [crawl]
      allowance:
        crawl: {perRun: 1, perday: 2}
`,
		want: []string{`7:28: unknown field "perday" in an allowance (did you mean "perDay"?)`},
	},
	{
		name: "unknown field in limits",
		give: "limits: {runBudgetUsd: 1, maxTurns: 5, maxConcurrentRuns: 1, maxDepth: 1}\n",
		want: []string{`1:62: unknown field "maxDepth" in the limits; known fields are dailyBudgetUsd, maxAttempts, maxConcurrentRuns, maxDelegationDepth, maxTurns, runBudgetUsd`},
	},
	{
		name: "unknown field in a connection",
		give: "tenants:\n  - id: main\n    connections:\n      - {id: c, connector: shop, enable: true}\n",
		want: []string{`4:34: unknown field "enable" in a connection (did you mean "enabled"?)`},
	},

	// ---- shape: wrong types
	{
		name: "mapping where a list goes",
		give: "builtins: {name: files_read}\n",
		want: []string{`1:11: "builtins" must be a list, not a mapping`},
	},
	{
		name: "scalar where a mapping goes",
		give: "builtins:\n  - files_read\n",
		want: []string{`2:5: each entry of "builtins" must be a mapping (a tool), not "files_read"`},
	},
	{
		name: "list where a single value goes",
		give: "builtins:\n  - {name: [files_read]}\n",
		want: []string{`2:12: "name" must be a single value, not a list`},
	},
	{
		name: "list where a name goes",
		give: "profiles:\n  - {id: p, role: [coworker], tools: [files_read]}\n",
		want: []string{`2:19: a name must be a single value, not a list`},
	},
	{
		name: "mapping where a condition goes",
		give: "builtins:\n  - {name: files_read, when: {FLAG: true}}\n",
		want: []string{`2:30: a condition must be a single value, not a mapping`},
	},
	{
		name: "list where a mapping of allowances goes",
		give: "profiles:\n  - id: p\n    tools: [files_read]\n    grant: {connectors: [crawl], allowance: [crawl]}\n",
		want: []string{`4:45: "allowance" must be a mapping, not a list`},
	},
	{
		name: "bool written yes",
		give: "connectors:\n  - {id: shop, effect: read, grantable: yes, tools: [{name: mcp__shop__list}]}\n",
		want: []string{`2:41: "grantable" must be true or false, not "yes"`},
	},
	{
		name: "bool written 1",
		give: "tenants:\n  - {id: main, owner: 1}\n",
		want: []string{`2:23: "owner" must be true or false, not "1"`},
	},
	{
		name: "bool written as a quoted string",
		give: "tenants:\n  - {id: main, owner: \"true\"}\n",
		want: []string{`2:23: "owner" must be true or false, not "true"`},
	},
	{
		name: "int written as a float",
		give: "limits: {runBudgetUsd: 1, maxTurns: 2.5, maxConcurrentRuns: 1}\n",
		want: []string{`1:37: "maxTurns" must be a whole number, not "2.5"`},
	},
	{
		name: "int written as a word",
		give: "version: one\n",
		want: []string{`1:10: "version" must be a whole number, not "one"`},
	},
	{
		name: "float written as a word",
		give: "limits: {runBudgetUsd: cheap, maxTurns: 5, maxConcurrentRuns: 1}\n",
		want: []string{`1:24: "runBudgetUsd" must be a number, not "cheap"`},
	},
	{
		name: "float that is infinite",
		give: "limits: {runBudgetUsd: .inf, maxTurns: 5, maxConcurrentRuns: 1}\n",
		want: []string{`1:24: "runBudgetUsd" must be a finite number, not ".inf"`},
	},
	{
		name: "float that is not a number",
		give: "connectors:\n  - {id: shop, effect: read, billing: {unit: usd, askAbove: .nan}}\n",
		want: []string{`2:61: "askAbove" must be a finite number, not ".nan"`},
	},
	{
		name: "unknown effect class",
		give: "servers:\n  - {id: memory, effect: reed}\n",
		want: []string{`2:26: unknown effect class "reed"; it must be one of read, write, delete, send, spend, execute, delegate`},
	},
	{
		name: "credentials neither a mode nor a list",
		give: "roles:\n  - {id: inbound, credentials: some}\n",
		want: []string{`2:32: "credentials" must be all, none, grant or a list of connector ids, not "some"`},
	},
	{
		name: "credentials as a mapping",
		give: "roles:\n  - {id: inbound, credentials: {shop: true}}\n",
		want: []string{`2:32: "credentials" must be a single value, not a mapping`},
	},
	{
		name: "mapping key that is a list",
		give: "builtins:\n  - {[name]: files_read}\n",
		want: []string{`2:6: a mapping key must be a name, not a list`},
	},
	{
		name: "mapping key that is null",
		give: "builtins:\n  - {~: files_read}\n",
		want: []string{`2:6: a mapping key must be a name, not null`},
	},
	{
		name: "a local tag",
		give: "builtins:\n  - {name: !secret files_read}\n",
		want: []string{`2:12: "name" has the tag "!secret", which Warden does not read`},
	},
	{
		name: "a local tag with a line break in it",
		give: "builtins:\n  - {name: !a%0Ab files_read}\n",
		want: []string{`2:12: "name" has the tag "!a\nb", which Warden does not read`},
	},

	// ---- shape: duplicate keys
	{
		name: "duplicate top-level key",
		give: "version: 1\nversion: 1\n",
		want: []string{`2:1: "version" is given twice in one mapping (first at line 1)`},
	},
	{
		name: "duplicate key in a tool",
		give: "builtins:\n  - name: files_read\n    kind: files_read\n    name: files_list\n",
		want: []string{`4:5: "name" is given twice in one mapping (first at line 2)`},
	},
	{
		name: "duplicate key in a mapping of allowances",
		give: `
profiles:
  - id: p
    tools: [files_read]
    grant:
      connectors: [crawl]
      allowance:
        crawl: {perRun: 1, perDay: 2}
        crawl: {perRun: 1, perDay: 2}
`,
		want: []string{`8:9: "crawl" is given twice in one mapping (first at line 7)`},
	},

	// ---- switches
	{
		name: "switch without a name",
		give: "switches:\n  - {rule: exactly-true}\n",
		want: []string{`2:5: a switch has no name`},
	},
	{
		name: "switch name in lower case",
		give: "switches:\n  - {name: flag, rule: exactly-true}\n",
		want: []string{`2:12: switch name "flag" must be an environment variable name in upper case`},
	},
	{
		name: "switch declared twice",
		give: "switches:\n  - {name: FLAG, rule: exactly-true}\n  - {name: FLAG, rule: true-1-yes}\n",
		want: []string{`3:12: switch FLAG is declared twice (first at line 2)`},
	},
	{
		name: "built-in switch given another rule",
		give: "switches:\n  - {name: REQUIRE_WRITE_APPROVAL, rule: exactly-true}\n",
		want: []string{`2:5: REQUIRE_WRITE_APPROVAL is built into Warden with the rule on unless "false", "0" or "no" (unset is on); a policy may describe it but not change its rule`},
	},
	{
		name: "built-in integer switch given another default",
		give: "switches:\n  - {name: APPROVAL_TIMEOUT_MS, rule: integer, default: \"1000\"}\n",
		want: []string{`2:5: APPROVAL_TIMEOUT_MS is built into Warden with the rule a whole number; 300000 when unset; a policy may describe it`},
	},
	{
		name: "switch with two rules",
		give: "switches:\n  - {name: FLAG, rule: exactly-true, on: [yes]}\n",
		want: []string{`2:5: switch FLAG needs exactly one truth rule: rule (exactly-true, integer, non-empty, on-unless-false-0-no, true-1-yes), on, off or modes`},
	},
	{
		name: "switch with no rule",
		give: "switches:\n  - {name: FLAG}\n",
		want: []string{`2:5: switch FLAG needs exactly one truth rule`},
	},
	{
		name: "unknown rule",
		give: "switches:\n  - {name: FLAG, rule: exactly_true}\n",
		want: []string{`2:24: switch FLAG: unknown rule "exactly_true"; the rules are exactly-true, integer, non-empty, on-unless-false-0-no, true-1-yes`},
	},
	{
		name: "empty rule",
		give: "switches:\n  - {name: FLAG, rule: \"\"}\n",
		want: []string{`2:25: switch FLAG: unknown rule ""`},
	},
	{
		name: "integer switch with a default that is not a number",
		give: "switches:\n  - {name: COUNT, rule: integer, default: many}\n",
		want: []string{`2:43: switch COUNT is an integer switch: its default must be a whole number, not "many"`},
	},
	{
		name: "integer switch without a default",
		give: "switches:\n  - {name: COUNT, rule: integer}\n",
		want: []string{`2:5: switch COUNT is an integer switch: its default must be a whole number, not ""`},
	},
	{
		name: "on with no values",
		give: "switches:\n  - {name: FLAG, on: []}\n",
		want: []string{`2:22: switch FLAG: on must list at least one value`},
	},
	{
		name: "off listing a value twice",
		give: "switches:\n  - {name: FLAG, off: [\"0\", \"no\", \"0\"]}\n",
		want: []string{`2:23: switch FLAG lists "0" twice`},
	},
	{
		name: "mode switch with one mode",
		give: "switches:\n  - {name: MODE, modes: [open], default: open}\n",
		want: []string{`2:25: switch MODE: a mode switch needs at least two modes`},
	},
	{
		name: "mode that is not one word",
		give: "switches:\n  - {name: MODE, modes: [open, \"all closed\"], default: open}\n",
		want: []string{`2:25: switch MODE: mode "all closed" must be a single word`},
	},
	{
		name: "mode listed twice in another case",
		give: "switches:\n  - {name: MODE, modes: [open, Open], default: open}\n",
		want: []string{`2:25: switch MODE lists the mode "open" twice (modes compare in any case)`},
	},
	{
		name: "mode default not a mode",
		give: "switches:\n  - {name: MODE, modes: [open, closed], default: shut}\n",
		want: []string{`2:50: switch MODE: default "shut" must be one of its modes (open, closed)`},
	},
	{
		name: "default on a yes/no switch",
		give: "switches:\n  - {name: FLAG, rule: exactly-true, default: \"true\"}\n",
		want: []string{`2:48: switch FLAG: default applies only to mode and integer switches`},
	},

	// ---- harnesses and skills
	{
		name: "default harness with a condition",
		give: "harnesses:\n  - {id: default, when: FLAG}\n",
		want: []string{`2:5: the default harness always exists for every role: it takes no when or roles`},
	},
	{
		name: "harness declared twice",
		give: "harnesses:\n  - id: loop\n  - id: loop\n",
		want: []string{`3:9: harness "loop" is declared twice`},
	},
	{
		name: "harness without an id",
		give: "harnesses:\n  - {builtins: false}\n",
		want: []string{`2:5: a harness has no id`},
	},
	{
		name: "harness id in upper case",
		give: "harnesses:\n  - {id: Loop}\n",
		want: []string{`2:10: a harness id "Loop" must match ^[a-z][a-z0-9_-]*$`},
	},
	{
		name: "harness for a role that does not exist",
		give: "harnesses:\n  - {id: loop, roles: [read_only, readonly]}\n",
		want: []string{`2:35: harness loop names the role "readonly", which does not exist`},
	},
	{
		name: "skill declared twice",
		give: "skills:\n  - id: method\n  - id: extra\n  - id: method\n",
		want: []string{`4:9: skill "method" is declared twice`},
	},
	{
		name: "empty entry in a list",
		give: "skills:\n  - id: method\n  - id: extra\n  -\n",
		want: []string{`4:4: a skill has no id`},
	},

	// ---- conditions: the column is the offending word's, inside the quotes
	{
		name: "unknown switch in a condition",
		give: "builtins:\n  - {name: files_read, when: \"FLAG && FLGA\"}\n",
		want: []string{`2:39: unknown switch FLGA: declare it under switches`},
	},
	{
		name: "unknown fact in a condition",
		give: "builtins:\n  - name: files_read\n    when: '!FLAG || ownr'\n",
		want: []string{`3:21: unknown fact "ownr": the facts are approval_channel, owner, skills, coworkers, goals, harness, model, and switches are written in upper case`},
	},
	{
		name: "unknown mode in a condition",
		give: "builtins:\n  - name: files_read\n    when: MODE == opne && FLAG\n",
		want: []string{`3:19: "opne" is not a mode of MODE (its modes are open, closed)`},
	},
	{
		name: "unknown harness in a condition",
		give: "servers:\n  - id: memory\n    effect: read\n    when: \"harness == lop\"\n",
		want: []string{`4:23: unknown harness "lop"`},
	},
	{
		name: "condition in a block scalar",
		give: "servers:\n  - id: memory\n    effect: read\n    when: >-\n      FLAG && FLGA\n",
		want: []string{`5:15: unknown switch FLGA`},
	},
	{
		name: "condition after a tag",
		give: "servers:\n  - id: memory\n    effect: read\n    when: !!str FLAG && FLGA\n",
		want: []string{`4:25: unknown switch FLGA`},
	},
	{
		name: "condition with an escape: placed at its start",
		give: "servers:\n  - id: memory\n    effect: read\n    when: \"FLAG\\t&& FLGA\"\n",
		want: []string{`4:12: unknown switch FLGA`},
	},
	{
		name: "condition over two lines: placed at its start",
		give: "servers:\n  - id: memory\n    effect: read\n    when: FLAG &&\n      FLGA\n",
		want: []string{`4:11: unknown switch FLGA`},
	},
	{
		name: "condition with a character that is not ASCII",
		give: "servers:\n  - id: memory\n    effect: read\n    description: café\n    when: \"FLAG && é\"\n",
		want: []string{`5:20: expected a switch or fact name, found "é"`},
	},
	{
		name: "condition after a character that is not ASCII on its line",
		give: "servers:\n  - {id: memory, effect: read, description: é, when: \"FLAG && FLGA\"}\n",
		want: []string{`2:63: unknown switch FLGA`},
	},
	{
		name: "empty condition",
		give: "servers:\n  - id: memory\n    effect: read\n    when: \"  \"\n",
		want: []string{`4:12: the condition is empty`},
	},
	{
		name: "empty quoted condition does not mean always",
		give: "servers:\n  - id: memory\n    effect: read\n    when: \"\"\n",
		want: []string{`4:11: the condition is empty: write one, or leave out when to mean always`},
	},
	{
		name: "condition key left without a value does not mean always",
		give: "servers:\n  - id: memory\n    effect: read\n    when:\n",
		want: []string{`4:10: the condition is empty`},
	},
	{
		name: "condition ending early",
		give: "servers:\n  - {id: memory, effect: read, when: \"FLAG &&\"}\n",
		want: []string{`2:46: the condition ends where a switch or fact name is expected`},
	},
	{
		name: "condition with trailing garbage",
		give: "servers:\n  - {id: memory, effect: read, when: \"FLAG owner\"}\n",
		want: []string{`2:44: unexpected "owner" in the condition`},
	},
	{
		name: "condition with an unclosed parenthesis",
		give: "servers:\n  - {id: memory, effect: read, when: \"FLAG && (owner || goals\"}\n",
		want: []string{`2:47: this ( is never closed`},
	},
	{
		name: "condition with an operator where a name goes",
		give: "servers:\n  - {id: memory, effect: read, when: \"FLAG && || owner\"}\n",
		want: []string{`2:47: expected a switch or fact name, found "||"`},
	},
	{
		name: "condition comparing with nothing",
		give: "servers:\n  - {id: memory, effect: read, when: \"MODE == \"}\n",
		want: []string{`2:47: expected a value after ==`},
	},
	{
		name: "harness not compared",
		give: "servers:\n  - {id: memory, effect: read, when: \"owner && harness\"}\n",
		want: []string{`2:48: harness must be compared with a harness id, as in harness == default`},
	},
	{
		name: "fact compared",
		give: "servers:\n  - {id: memory, effect: read, when: \"owner == yes\"}\n",
		want: []string{`2:45: the fact owner is true or false and cannot be compared`},
	},
	{
		name: "mode switch not compared",
		give: "servers:\n  - {id: memory, effect: read, when: \"FLAG || MODE\"}\n",
		want: []string{`2:47: MODE is a mode switch: compare it, as in MODE == open`},
	},
	{
		name: "integer switch as a condition",
		give: "servers:\n  - {id: memory, effect: read, when: \"COUNT\"}\n",
		want: []string{`2:39: COUNT holds a number and cannot be a condition`},
	},
	{
		name: "on/off switch compared",
		give: "servers:\n  - {id: memory, effect: read, when: \"FLAG != true\"}\n",
		want: []string{`2:44: FLAG is on or off and cannot be compared; write FLAG or !FLAG`},
	},
	{
		name: "condition nested too deep",
		give: "servers:\n  - {id: memory, effect: read, when: \"" + strings.Repeat("!", 70) + "FLAG\"}\n",
		want: []string{`2:103: the condition nests deeper than 64 levels`},
	},

	// ---- built-ins
	{
		name: "built-in declared twice",
		give: "builtins:\n  - name: files_read\n  - name: files_read\n",
		want: []string{`3:11: the tool files_read is declared twice (first at line 2); a tool belongs to one server`},
	},
	{
		name: "built-in without a name",
		give: "builtins:\n  - name: files_read\n  - {kind: files_list}\n",
		want: []string{`3:5: a built-in tool has no name`},
	},
	{
		name: "built-in named like a server tool",
		give: "builtins:\n  - name: files_read\n  - {name: mcp__memory__read, kind: files_read}\n",
		want: []string{`3:12: built-in "mcp__memory__read" must be a bare name`},
	},
	{
		name: "built-in with a server tool's field",
		give: "builtins:\n  - {name: files_read, optIn: true}\n",
		want: []string{`2:31: files_read is a built-in: optIn applies only to tools of servers and connectors`},
	},
	{
		name: "built-in without a kind",
		give: "builtins:\n  - name: files_read\n  - name: Bash\n",
		want: []string{`3:5: built-in Bash needs a kind: the native action it maps to (files_delete, `},
	},
	{
		name: "built-in with an unknown kind",
		give: "builtins:\n  - name: files_read\n  - {name: Bash, kind: shell}\n",
		want: []string{`3:24: built-in Bash: unknown kind "shell"; the kinds are files_delete, `},
	},
	{
		name: "built-in with an effect its kind does not have",
		give: "builtins:\n  - {name: files_read, effect: write}\n",
		want: []string{`2:32: built-in files_read: its effect comes from its kind (files_read is read), not write`},
	},

	// ---- servers and connectors
	{
		name: "server without an id",
		give: "servers:\n  - {effect: read}\n",
		want: []string{`2:5: a server has no id`},
	},
	{
		name: "connector with a malformed id",
		give: "connectors:\n  - {id: my-shop, effect: read}\n",
		want: []string{`2:10: a connector id "my-shop" must be lower case letters and digits, words joined by single underscores, and not "builtin"`},
	},
	{
		name: "server named builtin",
		give: "servers:\n  - {id: builtin, effect: read}\n",
		want: []string{`2:10: a server id "builtin" must be lower case`},
	},
	{
		name: "connector with a platform server's id",
		give: "connectors:\n  - {id: memory, effect: read}\n",
		want: []string{`2:10: a connector "memory" is declared twice (first at line 19); platform servers and connectors share one namespace`},
	},
	{
		name: "connector-only field on a server",
		give: "servers:\n  - {id: memory, effect: read, hostEnv: [MEMORY_TOKEN]}\n",
		want: []string{`2:41: server memory: hostEnv applies only to connectors`},
	},
	{
		name: "needs on a connector",
		give: "connectors:\n  - {id: shop, effect: read, needs: [crawl]}\n  - {id: crawl, effect: read}\n",
		want: []string{`2:37: connector shop: needs applies to platform servers and to tools; put it on the joint tools`},
	},
	{
		name: "hostEnv that is not a variable name",
		give: "connectors:\n  - {id: shop, effect: read, hostEnv: [SHOP_TOKEN, shop-token]}\n",
		want: []string{`2:39: connector shop: hostEnv "shop-token" is not an environment variable name`},
	},
	{
		name: "billing in an unknown unit",
		give: "connectors:\n  - {id: shop, effect: read, billing: {unit: eur}}\n",
		want: []string{`2:46: connector shop: billing unit must be usd or credits, not "eur"`},
	},
	{
		name: "billing that asks above a negative cost",
		give: "connectors:\n  - {id: shop, effect: read, billing: {unit: usd, askAbove: -1}}\n",
		want: []string{`2:61: connector shop: askAbove must not be negative`},
	},
	{
		name: "server tool without a name",
		give: "servers:\n  - id: memory\n    effect: read\n    tools:\n      - {effect: read}\n",
		want: []string{`5:9: a tool of memory has no name`},
	},
	{
		name: "tool named for another server",
		give: "servers:\n  - id: memory\n    effect: read\n    tools:\n      - name: mcp__project__read\n",
		want: []string{`5:15: the tool mcp__project__read is declared in memory, but its name says server project: tools are named mcp__memory__<tool>`},
	},
	{
		name: "tool in two servers",
		give: `
servers:
  - id: memory
    effect: read
    tools:
      - name: mcp__memory__read
  - id: project
    effect: read
    tools:
      - name: mcp__memory__read
`,
		want: []string{`9:15: the tool mcp__memory__read is declared in project, but its name says server memory`},
	},
	{
		name: "tool declared twice in one server",
		give: "servers:\n  - id: memory\n    effect: read\n    tools:\n      - name: mcp__memory__read\n      - name: mcp__memory__read\n",
		want: []string{`6:15: the tool mcp__memory__read is declared twice (first at line 5); a tool belongs to one server`},
	},
	{
		name: "tool without the server prefix",
		give: "servers:\n  - id: memory\n    effect: read\n    tools:\n      - name: memory_read\n",
		want: []string{`5:15: the tool "memory_read" of memory must be named mcp__memory__<tool>`},
	},
	{
		name: "tool with a malformed name",
		give: "servers:\n  - id: memory\n    effect: read\n    tools:\n      - name: mcp__memory__-read\n",
		want: []string{`5:15: the tool mcp__memory__-read: the part after mcp__memory__ must match`},
	},
	{
		name: "server tool with a kind",
		give: "servers:\n  - id: memory\n    effect: read\n    tools:\n      - {name: mcp__memory__read, kind: files_read}\n",
		want: []string{`5:41: mcp__memory__read: kind applies only to built-ins`},
	},
	{
		name: "discovered tools without an effect",
		give: "connectors:\n  - {id: shop, discover: true}\n",
		want: []string{
			`2:26: connector shop discovers its tools, so it needs an effect for them`,
			`2:26: mcp__shop__* has no effect class: set effect on the tool or on server shop`,
		},
	},
	{
		name: "tool without an effect",
		give: "servers:\n  - id: memory\n    tools:\n      - name: mcp__memory__read\n",
		want: []string{`4:9: mcp__memory__read has no effect class: set effect on the tool or on server memory`},
	},
	{
		name: "tool riding on a skill that is not bundled",
		give: "servers:\n  - id: seo\n    effect: write\n    tools:\n      - {name: mcp__seo__save, skill: seo-method, grantable: true}\n",
		want: []string{`5:39: mcp__seo__save rides on the skill "seo-method", which is not a bundled skill (declare it under skills)`},
	},
	{
		name: "grantable platform tool that needs nothing",
		give: "servers:\n  - id: memory\n    effect: read\n    tools:\n      - {name: mcp__memory__read, grantable: true}\n",
		want: []string{`5:46: mcp__memory__read: a platform tool is grantable only through the connectors it needs or a skill it rides on; add needs or skill`},
	},
	{
		name: "opt-in tool that is not grantable",
		give: "connectors:\n  - id: shop\n    effect: read\n    tools:\n      - {name: mcp__shop__list, optIn: true}\n",
		want: []string{`5:40: mcp__shop__list is opt-in but not grantable, so no profile could ever be given it`},
	},
	{
		name: "gate with an unknown withoutChannel",
		give: "connectors:\n  - id: shop\n    effect: write\n    tools:\n      - {name: mcp__shop__update, gate: {approval: true, withoutChannel: drop}}\n",
		want: []string{`5:74: mcp__shop__update: withoutChannel must be refuse or absent, not "drop"`},
	},
	{
		name: "gate with an unknown withoutApprovals",
		give: "connectors:\n  - id: shop\n    effect: write\n    tools:\n      - {name: mcp__shop__update, gate: {approval: true, withoutApprovals: deny}}\n",
		want: []string{`5:76: mcp__shop__update: withoutApprovals must be allow or absent, not "deny"`},
	},
	{
		name: "harness limits out of range",
		give: "harnesses:\n  - {id: loop, limits: {sessionBudgetUsd: 0, maxModelCalls: 0}}\n",
		want: []string{
			`2:43: harness loop: limits.sessionBudgetUsd must be above zero (leave it out for no cap), not 0`,
			`2:61: harness loop: limits.maxModelCalls must be at least 1 (leave it out for no cap), not 0`,
		},
	},
	{
		name: "models without ids, with bad ids, twice",
		give: "models:\n  - {description: nameless}\n  - {id: \"claude haiku\"}\n  - {id: claude-haiku-5-5}\n  - {id: claude-haiku-5-5, certified: false}\n",
		want: []string{
			`2:5: a model has no id`,
			`3:11: models: the model id "claude haiku" must match ^[A-Za-z0-9][A-Za-z0-9._/:@-]*$`,
			`5:10: model "claude-haiku-5-5" is declared twice (first at line 4)`,
		},
	},
	{
		name: "model conditions: not compared, unknown",
		give: "models:\n  - {id: claude-haiku-5-5, certified: false}\nservers:\n  - id: memory\n    effect: read\n    when: model\n    tools: [{name: mcp__memory__read}]\n  - id: notes\n    effect: read\n    when: model != claude-haiku-5\n    tools: [{name: mcp__notes__read}]\n",
		want: []string{
			`6:11: model must be compared with a model id, as in model == claude-haiku-5-5`,
			`10:20: unknown model "claude-haiku-5": declare it under models`,
		},
	},
	{
		name: "a daily budget of 0",
		give: "limits: {runBudgetUsd: 1, maxTurns: 5, maxConcurrentRuns: 1, dailyBudgetUsd: 0}\n",
		want: []string{`1:78: the default limits: dailyBudgetUsd must be above zero (leave it out for no daily cap), not 0`},
	},
	{
		name: "a role's session caps below 0",
		give: "roles:\n  - id: inbound\n    sessions: {maxLive: -1, perMinute: -5}\n",
		want: []string{
			`3:25: role inbound: sessions.maxLive must be 0 (no cap) or more, not -1`,
			`3:40: role inbound: sessions.perMinute must be 0 (no cap) or more, not -5`,
		},
	},
	{
		name: "gate effects on a connector tool",
		give: "connectors:\n  - id: shop\n    effect: write\n    tools:\n      - {name: mcp__shop__update, gate: {approval: true, effects: [delete]}}\n",
		want: []string{`5:67: mcp__shop__update: gate effects applies only to built-ins (a connector call has no path effects to match)`},
	},
	{
		name: "gate effects on built-ins that touch no path, empty, or not found by review",
		give: "builtins:\n  - {name: net_fetch, gate: {approval: true, effects: [read]}}\n  - {name: files_delete, gate: {approval: true, effects: []}}\n  - {name: files_write, gate: {approval: true, effects: [send]}}\n  - {name: shell_exec, gate: {requires: REQUIRE_WRITE_APPROVAL, effects: [delete]}}\n",
		want: []string{
			`2:55: net_fetch: gate effects: a net_fetch call has no path effects, so the gate would never ask`,
			`3:58: files_delete: gate effects is empty: leave it out to ask before every call`,
			`4:57: files_write: gate effects: a call's review never finds send; it finds read, write, delete, execute, delegate`,
			`5:74: shell_exec: effects applies only to a gate with approval: true`,
		},
	},
	{
		name: "gate that does not ask, with withoutChannel",
		give: "connectors:\n  - id: shop\n    effect: write\n    tools:\n      - {name: mcp__shop__update, gate: {requires: FLAG, withoutChannel: absent}}\n",
		want: []string{`5:74: mcp__shop__update: withoutChannel applies only to a gate with approval: true`},
	},
	{
		name: "gate requiring a switch that is not declared",
		give: "connectors:\n  - id: shop\n    effect: write\n    tools:\n      - {name: mcp__shop__update, gate: {approval: true, requires: SHOP_WRITES}}\n",
		want: []string{`5:68: mcp__shop__update: the gate requires the switch SHOP_WRITES, which is not declared`},
	},
	{
		name: "gate requiring a mode switch",
		give: "connectors:\n  - id: shop\n    effect: write\n    tools:\n      - {name: mcp__shop__update, gate: {requires: MODE}}\n",
		want: []string{`5:52: mcp__shop__update: the gate requires MODE, which is not an on/off switch`},
	},
	{
		name: "gate that does nothing",
		give: "connectors:\n  - id: shop\n    effect: write\n    tools:\n      - {name: mcp__shop__update, gate: {note: writes}}\n",
		want: []string{`5:41: mcp__shop__update: the gate neither asks for approval nor requires a switch`},
	},
	{
		name: "sandbox_allow_host with a gate that does not ask",
		give: "builtins:\n  - {name: sandbox_allow_host, gate: {approval: false, requires: FLAG}}\n",
		want: []string{`2:49: sandbox_allow_host: sandbox_allow_host always asks a person and is absent where nobody can answer (no approval channel, or approvals off), so its gate cannot say approval: false`},
	},
	{
		name: "sandbox_allow_host that refuses without a channel",
		give: "builtins:\n  - {name: ask_host, kind: sandbox_allow_host, gate: {withoutChannel: refuse}}\n",
		want: []string{`2:71: ask_host: sandbox_allow_host always asks a person and is absent where nobody can answer (no approval channel, or approvals off), so its gate cannot say withoutChannel: refuse`},
	},
	{
		name: "sandbox_allow_host that runs unasked while approvals are off",
		give: "builtins:\n  - name: sandbox_allow_host\n    gate:\n      approval: true\n      withoutApprovals: allow\n",
		want: []string{`5:25: sandbox_allow_host: sandbox_allow_host always asks a person and is absent where nobody can answer (no approval channel, or approvals off), so its gate cannot say withoutApprovals: allow`},
	},
	{
		name: "sandbox_allow_host with every part of its gate the other way",
		give: "builtins:\n  - name: sandbox_allow_host\n    gate: {approval: false, withoutChannel: refuse, withoutApprovals: allow}\n",
		want: []string{
			`3:22: sandbox_allow_host: sandbox_allow_host always asks a person and is absent where nobody can answer (no approval channel, or approvals off), so its gate cannot say approval: false`,
			`3:45: sandbox_allow_host: sandbox_allow_host always asks a person and is absent where nobody can answer (no approval channel, or approvals off), so its gate cannot say withoutChannel: refuse`,
			`3:71: sandbox_allow_host: sandbox_allow_host always asks a person and is absent where nobody can answer (no approval channel, or approvals off), so its gate cannot say withoutApprovals: allow`,
		},
	},
	{
		name: "sandbox_allow_host with an unknown withoutChannel",
		give: "builtins:\n  - {name: sandbox_allow_host, gate: {withoutChannel: drop}}\n",
		want: []string{`2:55: sandbox_allow_host: withoutChannel must be refuse or absent, not "drop"`},
	},
	{
		name: "tool needing a connector that does not exist",
		give: "connectors:\n  - id: shop\n    effect: read\n    tools:\n      - {name: mcp__shop__list, needs: [crawler]}\n",
		want: []string{`5:41: mcp__shop__list needs the connector "crawler", which does not exist`},
	},
	{
		name: "server needing a platform server",
		give: "servers:\n  - {id: memory, effect: read, needs: [project]}\n  - {id: project, effect: read}\n",
		want: []string{`2:40: server memory needs "project", which is not a connector`},
	},
	{
		name: "tool needing its own connector",
		give: "connectors:\n  - id: shop\n    effect: read\n    tools:\n      - {name: mcp__shop__list, needs: [shop]}\n",
		want: []string{`5:41: mcp__shop__list needs its own connector "shop"; needs lists the others it reads`},
	},
	{
		name: "tool needing a connector twice",
		give: "connectors:\n  - id: shop\n    effect: read\n    tools:\n      - {name: mcp__shop__list, needs: [crawl, crawl]}\n  - {id: crawl, effect: read}\n",
		want: []string{`5:48: mcp__shop__list names "crawl" twice in needs`},
	},
	{
		name: "withheld entry without what or reason",
		give: "connectors:\n  - id: shop\n    effect: read\n    withheld:\n      - {tools: [mcp__shop__delete]}\n",
		want: []string{
			`5:9: a withheld entry of shop must say what is withheld (what)`,
			`5:9: a withheld entry of shop must say why (reason)`,
		},
	},
	{
		name: "withheld tool of another server",
		give: "connectors:\n  - id: shop\n    effect: read\n    withheld:\n      - {what: Deletes, reason: Final., tools: [mcp__crawl__delete]}\n",
		want: []string{`5:49: withheld tool "mcp__crawl__delete" of shop must be named mcp__shop__<tool>`},
	},
	{
		name: "withheld tool in the catalog",
		give: `
connectors:
  - id: shop
    effect: read
    tools:
      - name: mcp__shop__list
      - name: mcp__shop__delete_all
    withheld:
      - {what: Deletes, reason: Final., tools: [mcp__shop__delete_*]}
`,
		want: []string{`6:9: mcp__shop__delete_all is in the catalog of shop but also withheld (mcp__shop__delete_*, line 8): a tool is one or the other`},
	},

	// ---- managed references
	{
		name: "managed on a platform server",
		give: "servers:\n  - id: memory\n    effect: read\n    managed: {issuer: mem, resolve: get}\n    tools: [{name: mcp__memory__read}]\n",
		want: []string{`4:14: server memory: managed applies only to connectors`},
	},
	{
		name: "managed without an upstream",
		give: "connectors:\n  - id: vault\n    effect: read\n    managed: {issuer: vault, resolve: get}\n    tools: [{name: mcp__vault__list}]\n",
		want: []string{`4:14: connector vault: managed references are resolved through its upstream, and it has no upstream`},
	},
	{
		name: "managed without an issuer",
		give: "connectors:\n  - id: vault\n    effect: read\n    upstream: {url: \"http://x/mcp\"}\n    managed: {resolve: get}\n    tools: [{name: mcp__vault__list}]\n",
		want: []string{`5:14: connector vault: managed needs the issuer its references name`},
	},
	{
		name: "a managed issuer with a space",
		give: "connectors:\n  - id: vault\n    effect: read\n    upstream: {url: \"http://x/mcp\"}\n    managed: {issuer: \"vault example\", resolve: get}\n    tools: [{name: mcp__vault__list}]\n",
		want: []string{`5:24: connector vault: the issuer "vault example" may hold only letters, digits, '_', '.' and '-'`},
	},
	{
		name: "two connectors with one issuer",
		give: "connectors:\n  - id: vault\n    effect: read\n    upstream: {url: \"http://x/mcp\"}\n    managed: {issuer: v, resolve: get}\n    tools: [{name: mcp__vault__list}]\n  - id: safe\n    effect: read\n    upstream: {url: \"http://x/mcp\"}\n    managed: {issuer: v, resolve: get}\n    tools: [{name: mcp__safe__list}]\n",
		want: []string{`10:23: connector safe: the issuer v is connector vault's already`},
	},
	{
		name: "an empty managed version",
		give: "connectors:\n  - id: vault\n    effect: read\n    upstream: {url: \"http://x/mcp\"}\n    managed: {issuer: v, versions: [\"\"], resolve: get}\n    tools: [{name: mcp__vault__list}]\n",
		want: []string{`5:36: connector vault: a managed-reference version must not be empty`},
	},
	{
		name: "managed without resolve",
		give: "connectors:\n  - id: vault\n    effect: read\n    upstream: {url: \"http://x/mcp\"}\n    managed: {issuer: v}\n    tools: [{name: mcp__vault__list}]\n",
		want: []string{`5:14: connector vault: managed needs resolve, the upstream tool that fetches a reference's value (its own name, without mcp__vault__)`},
	},

	// ---- pins
	{
		name: "pins on a platform server",
		give: "servers:\n  - id: memory\n    effect: read\n    pins: {mcp__memory__read: \"sha256:" + digestA + "\"}\n    tools: [{name: mcp__memory__read}]\n",
		want: []string{`4:11: server memory: pins applies only to connectors`},
	},
	{
		name: "pins that are not a mapping",
		give: "connectors:\n  - id: up\n    effect: read\n    upstream: {url: \"http://x/mcp\"}\n    pins: [mcp__up__list]\n    tools: [{name: mcp__up__list}]\n",
		want: []string{`5:11: "pins" must be a mapping of tool names to digests, not a list`},
	},
	{
		name: "a pin that is not a single value",
		give: "connectors:\n  - id: up\n    effect: read\n    upstream: {url: \"http://x/mcp\"}\n    pins:\n      mcp__up__list: [sha256]\n    tools: [{name: mcp__up__list}]\n",
		want: []string{`6:22: the pin of mcp__up__list must be a single value, not a list`},
	},
	{
		name: "a tool pinned twice",
		give: "connectors:\n  - id: up\n    effect: read\n    upstream: {url: \"http://x/mcp\"}\n    pins:\n      mcp__up__list: sha256:" + digestA + "\n      mcp__up__list: sha256:" + digestB + "\n    tools: [{name: mcp__up__list}]\n",
		want: []string{`7:7: "mcp__up__list" is given twice in one mapping (first at line 6)`},
	},
	{
		name: "pins on a connector without an upstream",
		give: "connectors:\n  - id: shop\n    effect: read\n    pins: {mcp__shop__list: \"sha256:" + digestA + "\"}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:11: connector shop: pins apply to the tool definitions its upstream lists, and it has no upstream`},
	},
	{
		name: "pins naming what is not the connector's tool",
		give: `
connectors:
  - id: up
    effect: read
    upstream: {url: "http://x/mcp"}
    tools: [{name: mcp__up__list}, {name: mcp__up__get}]
    withheld:
      - {what: Deletes, reason: Final., tools: [mcp__up__delete_*]}
    pins:
      mcp__up__list: sha256:` + digestA + `
      mcp__shop__list: sha256:` + digestA + `
      mcp__up__lsit: sha256:` + digestA + `
      mcp__up__delete_all: sha256:` + digestA + `
      mcp__up__*: sha256:` + digestA + `
      mcp__up__get: "sha256:` + strings.ToUpper(digestA) + `"
  - id: docs
    effect: read
    discover: true
    upstream: {command: [docs-mcp]}
    pins:
      mcp__docs__search: sha256:` + digestB + `
      mcp__docs__read: sha256:` + digestA[:63] + `
      mcp__docs__write: ` + digestA + `
      mcp__docs__-bad: sha256:` + digestA + `
`,
		want: []string{
			`10:7: connector up pins "mcp__shop__list": a pin names one of its tools, mcp__up__<tool>`,
			`11:7: connector up pins mcp__up__lsit, which is not one of its tools`,
			`12:7: connector up pins mcp__up__delete_all, which it withholds (Deletes (Final.))`,
			`13:7: connector up pins mcp__up__*, which is not one of its tools`,
			`14:22: connector up: the pin of mcp__up__get must be sha256: and 64 lower-case hex digits, not "sha256:E3B0`,
			`21:24: connector docs: the pin of mcp__docs__read must be sha256: and 64 lower-case hex digits`,
			`22:25: connector docs: the pin of mcp__docs__write must be sha256: and 64 lower-case hex digits`,
			`23:7: connector docs pins mcp__docs__-bad, which is not one of its tools`,
		},
	},

	// ---- roles
	{
		name: "role configured twice",
		give: "roles:\n  - {id: inbound, description: One.}\n  - {id: inbound, description: Two.}\n",
		want: []string{`3:10: role "inbound" is configured twice`},
	},
	{
		name: "role without an id",
		give: "roles:\n  - {description: Nobody.}\n",
		want: []string{`2:5: a role has no id`},
	},
	{
		name: "standard role given an approval channel",
		give: "roles:\n  - {id: inbound, approvalChannel: true}\n",
		want: []string{`2:36: role inbound is standard: approvalChannel is fixed at false for it`},
	},
	{
		name: "standard role without an approval channel answering by elicitation",
		give: "roles:\n  - {id: inbound, approvalByElicitation: true}\n",
		want: []string{`2:42: role inbound has no approval channel, so approvalByElicitation cannot be on: its sessions may not answer their own cards`},
	},
	{
		name: "new role without an approval channel answering by elicitation",
		give: "roles:\n  - {id: bot, approvalByElicitation: true}\n",
		want: []string{`2:38: role bot has no approval channel, so approvalByElicitation cannot be on`},
	},
	{
		name: "approvalByElicitation that is not a boolean",
		give: "roles:\n  - {id: person, approvalByElicitation: sometimes}\n",
		want: []string{`2:41: "approvalByElicitation" must be true or false, not "sometimes"`},
	},
	{
		name: "role limits that delegate against noDelegation",
		give: "roles:\n  - {id: goal_reviewer, limits: {maxDelegationDepth: 1}}\n",
		want: []string{`2:54: role goal_reviewer may not delegate, but its limits allow maxDelegationDepth 1`},
	},
	{
		name: "standard role given grants",
		give: "roles:\n  - {id: coworker, grants: true}\n",
		want: []string{`2:28: role coworker is standard: grants is fixed at false for it`},
	},
	{
		name: "standard role given another profile mode",
		give: "roles:\n  - {id: person, profile: required}\n",
		want: []string{`2:27: role person is standard: its profile mode is fixed at none`},
	},
	{
		name: "new role with an unknown profile mode",
		give: "roles:\n  - {id: auditor, profile: sometimes}\n",
		want: []string{`2:28: role auditor: profile must be none, optional or required, not "sometimes"`},
	},
	{
		name: "new role with grants but no profile",
		give: "roles:\n  - {id: auditor, grants: true}\n",
		want: []string{`2:27: role auditor takes grants but runs no profile: a grant belongs to a profile`},
	},
	{
		name: "credentials for a connector that does not exist",
		give: "roles:\n  - {id: inbound, credentials: [shop, mail]}\n",
		want: []string{`2:39: role inbound is handed credentials for "mail", which is not a connector of this policy`},
	},
	{
		name: "credentials for a platform server",
		give: "roles:\n  - {id: inbound, credentials: [memory]}\n",
		want: []string{`2:33: role inbound: "memory" is a platform server, not a connector; credentials name connectors`},
	},
	{
		name: "credentials naming a connector twice",
		give: "roles:\n  - {id: inbound, credentials: [shop, shop]}\n",
		want: []string{`2:39: role inbound names the connector "shop" twice in credentials`},
	},
	{
		name: "grant credentials for a role without grants",
		give: "roles:\n  - {id: coworker, credentials: grant}\n",
		want: []string{`2:33: role coworker is handed its grant's credentials but takes no grant`},
	},
	{
		name: "goal_reviewer given a ceiling",
		give: "roles:\n  - {id: goal_reviewer, ceiling: [files_read]}\n",
		want: []string{`2:34: role goal_reviewer may hold no tools, but its ceiling selects files_read`},
	},
	{
		name: "inbound ceiling with a built-in",
		give: "roles:\n  - {id: inbound, ceiling: [mcp__shop__list, files_read]}\n",
		want: []string{`2:28: the ceiling of role inbound selects files_read, which its invariants forbid`},
	},
	{
		name: "read_only ceiling with a platform server its invariants forbid",
		give: "roles:\n  - {id: read_only, ceiling: ['builtin:*#read', 'server:memory']}\n",
		want: []string{`2:30: the ceiling of role read_only selects mcp__memory__read, mcp__memory__write, which its invariants forbid`},
	},
	{
		name: "new role whose ceiling breaks its own invariants",
		give: "roles:\n  - id: auditor\n    ceiling: ['*']\n    invariants: {noTools: true}\n",
		want: []string{`3:14: role auditor may hold no tools, but its ceiling selects files_read, files_write, files_delete, Bash, mcp__memory__read, 8 more`},
	},
	{
		name: "defaultProfile on a role that runs none",
		give: "roles:\n  - {id: person, defaultProfile: p}\nprofiles:\n  - {id: p, tools: [files_read]}\n",
		want: []string{`2:34: role person runs no profile, so it can have no defaultProfile`},
	},
	{
		name: "defaultProfile that does not exist",
		give: "roles:\n  - {id: coworker, defaultProfile: helper}\n",
		want: []string{`2:36: role coworker: defaultProfile "helper" does not exist`},
	},
	{
		name: "defaultProfile of another role",
		give: "roles:\n  - {id: goal_agent, defaultProfile: p}\nprofiles:\n  - {id: p, tools: [files_read]}\n",
		want: []string{`2:38: role goal_agent: defaultProfile p runs as role coworker`},
	},

	// ---- selectors
	{
		name: "selector with an unknown effect",
		give: "roles:\n  - {id: person, ceiling: ['*#reed']}\n",
		want: []string{`2:29: selector "*#reed": unknown effect class "reed"; it must be one of read, write, delete, send, spend, execute, delegate`},
	},
	{
		name: "selector with an unknown scope",
		give: "roles:\n  - {id: person, ceiling: ['srv:memory']}\n",
		want: []string{`2:29: selector "srv:memory": unknown scope "srv"; use builtin:, server:, platform: or connector:`},
	},
	{
		name: "selector naming nothing",
		give: "roles:\n  - {id: person, ceiling: ['builtin:']}\n",
		want: []string{`2:29: selector "builtin:" names nothing`},
	},
	{
		name: "server selector with a pattern",
		give: "roles:\n  - {id: person, ceiling: ['server:mem*']}\n",
		want: []string{`2:29: selector "server:mem*": server: takes one server id; use platform: or connector: for patterns`},
	},
	{
		name: "server selector naming no server",
		give: "roles:\n  - {id: person, ceiling: ['*', 'server:memroy']}\n",
		want: []string{`2:34: the ceiling of role person: selector "server:memroy" names server "memroy", which does not exist`},
	},
	{
		name: "ceiling naming a tool that does not exist",
		give: "roles:\n  - {id: person, ceiling: [files_read, mcp__memory__raed]}\n",
		want: []string{`2:40: the ceiling of role person names the tool "mcp__memory__raed", which does not exist (did you mean "mcp__memory__read"?)`},
	},
	{
		name: "ceiling naming a built-in that does not exist",
		give: "roles:\n  - {id: person, ceiling: [files_read, 'builtin:mcp__memory__read']}\n",
		want: []string{`2:41: the ceiling of role person: selector "builtin:mcp__memory__read" names the built-in "mcp__memory__read", which does not exist`},
	},
	{
		name: "ceiling naming a platform server that does not exist",
		give: "roles:\n  - {id: person, ceiling: [files_read, 'platform:shop']}\n",
		want: []string{`2:41: the ceiling of role person: selector "platform:shop" names platform server "shop", which does not exist`},
	},
	{
		name: "ceiling naming a connector that does not exist",
		give: "roles:\n  - {id: person, ceiling: [files_read, 'connector:shopify#read']}\n",
		want: []string{`2:41: the ceiling of role person: selector "connector:shopify#read" names connector "shopify", which does not exist`},
	},
	{
		name: "invariant naming a tool that does not exist",
		give: "roles:\n  - {id: coworker, invariants: {forbid: [mcp__memory__wipe]}}\n",
		want: []string{`2:42: the invariants of role coworker names the tool "mcp__memory__wipe", which does not exist`},
	},

	// ---- limits
	{
		name: "default limits out of range",
		give: "limits: {runBudgetUsd: 0, maxTurns: 0, maxConcurrentRuns: 0, maxDelegationDepth: -1, maxAttempts: 0}\n",
		want: []string{
			`1:24: the default limits: runBudgetUsd must be above zero, not 0`,
			`1:37: the default limits: maxTurns must be at least 1, not 0`,
			`1:59: the default limits: maxConcurrentRuns must be at least 1, not 0`,
			`1:82: the default limits: maxDelegationDepth must be at least 0, not -1`,
			`1:99: the default limits: maxAttempts must be at least 1, not 0`,
		},
	},
	{
		name: "role limits out of range",
		give: "roles:\n  - {id: inbound, limits: {runBudgetUsd: -0.5}}\n",
		want: []string{`2:42: role inbound: runBudgetUsd must be above zero, not -0.5`},
	},
	{
		name: "profile limits out of range",
		give: "profiles:\n  - {id: p, tools: [files_read], limits: {maxTurns: 0}}\n",
		want: []string{`2:53: profile p: maxTurns must be at least 1, not 0`},
	},
	{
		name: "profile limits set nowhere",
		give: "limits: {maxTurns: 5}\nprofiles:\n  - {id: p, tools: [files_read], limits: {runBudgetUsd: 1}}\n",
		want: []string{`3:5: profile p has no maxConcurrentRuns: set it on the profile or under the top-level limits`},
	},

	// ---- profiles: ids and roles
	{
		name: "profile declared twice",
		give: "profiles:\n  - {id: p, tools: [files_read]}\n  - {id: p, tools: [files_write]}\n",
		want: []string{`3:10: profile "p" is declared twice (first at line 2)`},
	},
	{
		name: "profile with a malformed id",
		give: "profiles:\n  - {id: P1, tools: [files_read]}\n",
		want: []string{`2:10: a profile id "P1" must match`},
	},
	{
		name: "profile with a role that does not exist",
		give: "profiles:\n  - {id: p, role: boss, tools: [files_read]}\n",
		want: []string{`2:19: profile p runs as role "boss", which does not exist`},
	},
	{
		name: "profile with a role that runs no profile",
		give: "profiles:\n  - {id: p, role: person, tools: [files_read]}\n",
		want: []string{`2:19: profile p runs as role person, which runs no profile`},
	},
	{
		name: "profile asking for a tool that does not exist",
		give: "profiles:\n  - {id: p, tools: [files_raed]}\n",
		want: []string{`2:21: profile p asks for the tool "files_raed", which does not exist (did you mean "files_read"?)`},
	},
	{
		name: "profile asking for a withheld tool",
		give: "profiles:\n  - {id: p, role: specialist, tools: [files_read, mcp__shop__delete_all], grant: {connectors: [shop]}}\n",
		want: []string{`2:51: profile p asks for mcp__shop__delete_all, which shop withholds: Deletes (They cannot be undone.)`},
	},

	// ---- profiles: the S7 rules
	{
		name: "S7: connector tool its grant does not cover",
		give: `
profiles:
  - id: p
    role: specialist
    tools: [files_read, mcp__shop__list]
    grant:
      connectors: [crawl]
      allowance: {crawl: {perRun: 1, perDay: 2}}
`,
		want: []string{`4:25: profile p asks for mcp__shop__list, but its grant does not cover the connector shop`},
	},
	{
		name: "S7: connector tool for a role that takes no grant",
		give: "profiles:\n  - {id: p, tools: [files_read, mcp__shop__list]}\n",
		want: []string{`2:33: profile p asks for the connector tool mcp__shop__list, but role coworker takes no grant, so no grant can cover it`},
	},
	{
		name: "S7: joint tool whose other connector is not granted",
		give: `
profiles:
  - id: p
    tools: [files_read, mcp__crawl__joint]
    grant:
      connectors: [crawl]
      allowance: {crawl: {perRun: 1, perDay: 2}}
`,
		want: []string{`3:25: profile p asks for mcp__crawl__joint, which also reads shop: its grant does not cover it`},
	},
	{
		name: "S7: tool outside the read table",
		give: "profiles:\n  - id: p\n    tools: [files_read, mcp__shop__update]\n    grant: {connectors: [shop]}\n",
		want: []string{`3:25: profile p asks for mcp__shop__update, which is outside the read table: a specialist reads and proposes; it never commits`},
	},
	{
		name: "S7: billing connector without an allowance",
		// (Both S7 allowance messages must say "allowance": it is the word a person looks for.)
		give: "profiles:\n  - id: p\n    tools: [files_read]\n    grant: {connectors: [shop, crawl]}\n",
		want: []string{`4:12: profile p grants crawl, which bills in credits, without an allowance: add allowance: {crawl: {perRun: ..., perDay: ...}} to the grant`},
	},
	{
		name: "S7: allowance with perRun above perDay",
		give: `
profiles:
  - id: p
    tools: [files_read]
    grant:
      connectors: [crawl]
      allowance:
        crawl: {perRun: 5, perDay: 2}
`,
		want: []string{`7:25: profile p: the allowance for crawl has perRun 5 above perDay 2; a run could spend more than a day may`},
	},
	{
		name: "allowance missing a figure",
		give: "profiles:\n  - id: p\n    tools: [files_read]\n    grant:\n      connectors: [crawl]\n      allowance:\n        crawl: {perDay: 2}\n",
		want: []string{`7:16: profile p: the allowance for crawl needs perRun (in credits)`},
	},
	{
		name: "allowance left empty",
		give: "profiles:\n  - id: p\n    tools: [files_read]\n    grant:\n      connectors: [crawl]\n      allowance:\n        crawl:\n",
		want: []string{
			`7:15: profile p: the allowance for crawl needs perRun (in credits)`,
			`7:15: profile p: the allowance for crawl needs perDay (in credits)`,
		},
	},
	{
		name: "allowance of zero",
		give: "profiles:\n  - id: p\n    tools: [files_read]\n    grant:\n      connectors: [crawl]\n      allowance:\n        crawl: {perRun: 0, perDay: 2}\n",
		want: []string{`7:25: profile p: the allowance for crawl must have perRun above zero, not 0`},
	},
	{
		name: "allowance for a connector that does not exist",
		give: "profiles:\n  - id: p\n    tools: [files_read]\n    grant:\n      connectors: [crawl]\n      allowance:\n        crawl: {perRun: 1, perDay: 2}\n        crawler: {perRun: 1, perDay: 2}\n",
		want: []string{`8:18: profile p sets an allowance for "crawler", which is not a connector`},
	},
	{
		name: "allowance for a connector not granted",
		give: "profiles:\n  - id: p\n    tools: [files_read]\n    grant:\n      connectors: [shop]\n      allowance:\n        crawl: {perRun: 1, perDay: 2}\n",
		want: []string{`7:16: profile p sets an allowance for crawl, which its grant does not name`},
	},
	{
		name: "allowance for a connector that does not bill",
		give: "profiles:\n  - id: p\n    tools: [files_read]\n    grant:\n      connectors: [shop]\n      allowance:\n        shop: {perRun: 1, perDay: 2}\n",
		want: []string{`7:15: profile p sets an allowance for shop, which does not bill: there is nothing to limit`},
	},
	{
		name: "S7: skill tool without a skill",
		give: "profiles:\n  - {id: p, tools: [files_read, mcp__seo__load]}\n",
		want: []string{`2:33: profile p asks for the skill tool mcp__seo__load without granting a skill`},
	},
	{
		name: "S7: tool riding on a skill the grant does not name",
		give: "profiles:\n  - {id: p, tools: [files_read, mcp__seo__save], grant: {skills: [extra]}}\n",
		want: []string{`2:33: profile p asks for mcp__seo__save, which rides on the skill method, but its grant does not name method`},
	},
	{
		name: "S7: unknown skill",
		give: "profiles:\n  - {id: p, tools: [files_read], grant: {skills: [method, seo-method]}}\n",
		want: []string{`2:59: profile p's grant names the skill "seo-method", which is not bundled`},
	},
	{
		name: "grant naming a skill twice",
		give: "profiles:\n  - {id: p, tools: [files_read], grant: {skills: [method, method]}}\n",
		want: []string{`2:59: profile p's grant names the skill method twice`},
	},
	{
		name: "grant of a connector that does not exist",
		give: "profiles:\n  - {id: p, tools: [files_read], grant: {connectors: [shopify]}}\n",
		want: []string{`2:55: profile p grants the connector "shopify", which does not exist`},
	},
	{
		name: "grant of a platform server",
		give: "profiles:\n  - {id: p, tools: [files_read], grant: {connectors: [memory]}}\n",
		want: []string{`2:55: profile p grants "memory", which is a platform server, not a connector`},
	},
	{
		name: "grant of a connector twice",
		give: "profiles:\n  - {id: p, tools: [files_read], grant: {connectors: [shop, shop]}}\n",
		want: []string{`2:61: profile p grants shop twice`},
	},
	{
		name: "S7: hand-off tool at depth 0",
		give: "profiles:\n  - {id: p, tools: [files_read, mcp__seo__hand_off], grant: {skills: [method]}}\n",
		want: []string{`2:33: profile p asks for the hand-off tool mcp__seo__hand_off at maxDelegationDepth 0: it could never hand anything off`},
	},
	{
		name: "S7: every requested tool outside the ceiling",
		give: "profiles:\n  - {id: p, tools: [mcp__project__delete, mcp__seo__load]}\n",
		want: []string{
			`2:20: every tool profile p asks for is outside the ceiling of role coworker: it would start with none`,
			`2:43: profile p asks for the skill tool mcp__seo__load without granting a skill`,
		},
	},
	{
		name: "S7: every requested tool outside a new role's ceiling",
		give: "roles:\n  - {id: auditor, profile: required, ceiling: [files_read]}\nprofiles:\n  - {id: p, role: auditor, tools: [files_write]}\n",
		want: []string{`4:35: every tool profile p asks for is outside the ceiling of role auditor`},
	},
	{
		name: "S7: asks for nothing, granted nothing",
		give: "profiles:\n  - {id: p, description: Idle.}\n",
		want: []string{`2:5: profile p asks for no tools and its grant gives none`},
	},
	{
		name: "S7: grant on a role that takes none",
		give: "profiles:\n  - {id: p, role: coworker, tools: [files_read], grant: {connectors: [shop]}}\n",
		want: []string{`2:57: profile p has a grant, but its role coworker takes none (a grant needs a role such as specialist or goal_agent)`},
	},
	{
		name: "profile whose grant gives what its role forbids",
		give: "roles:\n  - {id: specialist, invariants: {forbid: [mcp__shop__list]}}\nprofiles:\n  - {id: p, tools: [files_read], grant: {connectors: [shop]}}\n",
		want: []string{`4:5: profile p would hold mcp__shop__list, which the invariants of role specialist forbid`},
	},
	{
		name: "goal_reviewer profile asking for a tool",
		give: "profiles:\n  - {id: p, role: goal_reviewer, tools: [files_read]}\n",
		want: []string{`2:41: role goal_reviewer holds no tools at all, but profile p asks for files_read`},
	},
	{
		name: "goal_reviewer profile with a grant",
		give: "profiles:\n  - {id: p, role: goal_reviewer, grant: {skills: [method]}}\n",
		want: []string{
			`2:41: profile p has a grant, but its role goal_reviewer takes none`,
			`2:41: role goal_reviewer may have no grant, but profile p has one`,
		},
	},
	{
		name: "goal_reviewer profile that may delegate",
		give: "profiles:\n  - {id: p, role: goal_reviewer, limits: {maxDelegationDepth: 1}}\n",
		want: []string{`2:63: role goal_reviewer may not delegate, but profile p has maxDelegationDepth 1`},
	},
	{
		name: "goal_reviewer profile that may delegate by the default limits",
		give: "limits: {runBudgetUsd: 1, maxTurns: 5, maxConcurrentRuns: 1, maxDelegationDepth: 1}\nprofiles:\n  - {id: p, role: goal_reviewer}\n",
		want: []string{`3:5: role goal_reviewer may not delegate, but profile p has maxDelegationDepth 1 (from the top-level limits)`},
	},

	// ---- tenants
	{
		name: "tenant declared twice",
		give: "tenants:\n  - {id: main, owner: true}\n  - {id: main}\n",
		want: []string{`3:10: tenant "main" is declared twice (first at line 2)`},
	},
	{
		name: "tenant without an id",
		give: "tenants:\n  - {name: Main}\n",
		want: []string{`2:5: a tenant has no id`},
	},
	{
		name: "two owners",
		give: "tenants:\n  - {id: main, owner: true}\n  - {id: other, owner: true}\n",
		want: []string{`3:24: tenant other is marked as the owner's, but main already is: the deployment has one owner's tenant`},
	},
	{
		name: "tenant skill listed twice",
		give: "tenants:\n  - {id: main, skills: [voice, voice]}\n",
		want: []string{`2:32: tenant main: skill "voice" is empty or listed twice`},
	},
	{
		name: "unknown coworker",
		give: "tenants:\n  - {id: main, coworkers: [helper]}\n",
		want: []string{`2:28: tenant main names the coworker "helper", which is not a profile`},
	},
	{
		name: "coworker twice",
		give: "profiles:\n  - {id: p, tools: [files_read]}\ntenants:\n  - {id: main, coworkers: [p, p]}\n",
		want: []string{`4:31: tenant main names the coworker p twice`},
	},
	{
		name: "connection without an id",
		give: "tenants:\n  - id: main\n    connections:\n      - {connector: shop}\n",
		want: []string{`4:9: a connection has no id`},
	},
	{
		name: "duplicate connection ids across tenants",
		give: `
tenants:
  - id: main
    connections:
      - {id: store, connector: shop}
  - id: other
    connections:
      - {id: store, connector: shop}
`,
		want: []string{`7:14: connection "store" is declared twice (first at line 4); connection ids are unique across tenants`},
	},
	{
		name: "connection without a connector",
		give: "tenants:\n  - id: main\n    connections:\n      - {id: store}\n",
		want: []string{`4:9: connection store names no connector`},
	},
	{
		name: "connection for a connector that does not exist",
		give: "tenants:\n  - id: main\n    connections:\n      - {id: store, connector: shopify}\n",
		want: []string{`4:32: connection store is for the connector "shopify", which does not exist`},
	},
	{
		name: "connection for a platform server",
		give: "tenants:\n  - id: main\n    connections:\n      - {id: store, connector: memory}\n",
		want: []string{`4:32: connection store is for "memory", which is a platform server, not a connector`},
	},
	{
		name: "sharing with a tenant that does not exist",
		give: "tenants:\n  - id: main\n    account: acme\n    connections:\n      - {id: store, connector: shop, sharedWith: [acme-eu]}\n",
		want: []string{`5:51: connection store is shared with the tenant "acme-eu", which does not exist`},
	},
	{
		name: "sharing with its own tenant",
		give: "tenants:\n  - id: main\n    account: acme\n    connections:\n      - {id: store, connector: shop, sharedWith: [main]}\n",
		want: []string{`5:51: connection store is shared with its own tenant`},
	},
	{
		name: "sharing across accounts",
		give: `
tenants:
  - id: main
    account: acme
    connections:
      - {id: store, connector: shop, sharedWith: [beta]}
  - {id: beta, account: beta}
`,
		want: []string{`5:51: connection store can be shared only within its account: main belongs to account "acme", beta to "beta"`},
	},
	{
		name: "sharing without an account",
		give: `
tenants:
  - id: main
    connections:
      - {id: store, connector: shop, sharedWith: [other]}
  - {id: other}
`,
		want: []string{`4:51: connection store can be shared only within its account: main belongs to account "", other to ""`},
	},

	// ---- the alias bound
	{
		name: "billion laughs",
		give: billionLaughs(),
		raw:  true,
		want: []string{`2:31: the document expands to more than 250000 nodes through its aliases`},
	},
	// Input mappings, declared arguments and argument constraints (A8).
	{
		name: "a built-in declaring args",
		give: "builtins:\n  - {name: files_read, args: {path: string}}\n",
		want: []string{`2:30: built-in files_read: its arguments come from its kind and input`},
	},
	{
		name: "a built-in mapping an input its kind lacks",
		give: "builtins:\n  - {name: Read, kind: files_read, input: {command: cmd}}\n",
		want: []string{`2:43: built-in Read: "command" is not an input of files_read (its inputs are path)`},
	},
	{
		name: "a built-in mapping an input to no field",
		give: "builtins:\n  - {name: Read, kind: files_read, input: {path: \"\"}}\n",
		want: []string{`2:43: built-in Read: input path must name a field, not ""`},
	},
	{
		name: "input on a server tool",
		give: "servers:\n  - id: memory\n    effect: read\n    tools:\n      - {name: mcp__memory__read, input: {path: p}}\n",
		want: []string{`5:42: mcp__memory__read: input applies only to built-ins`},
	},
	{
		name: "an argument of an unknown type",
		give: "servers:\n  - id: memory\n    effect: read\n    tools:\n      - {name: mcp__memory__read, args: {key: text}}\n",
		want: []string{`5:41: mcp__memory__read: argument key has the type "text"; the types are string, number, integer, boolean, list, object, any`},
	},
	{
		name: "a constraint deciding neither deny nor ask",
		give: "builtins:\n  - name: files_read\n    constraints:\n      - {require: \"true\", otherwise: allow}\n",
		want: []string{`4:38: files_read: otherwise must be deny or ask, not "allow"`},
	},
	{
		name: "a constraint without require",
		give: "builtins:\n  - name: files_read\n    constraints:\n      - {message: why}\n",
		want: []string{`4:9: files_read: a constraint needs require: a CEL expression that must hold`},
	},
	{
		name: "a constraint that does not parse, at its column",
		give: "builtins:\n  - name: files_read\n    constraints:\n      - require: \"args.path.startsWith(\"\n",
		want: []string{`4:40: files_read: constraint: Syntax error: mismatched input '<EOF>'`},
	},
	{
		name: "a constraint that does not type-check",
		give: "builtins:\n  - name: files_read\n    constraints:\n      - require: \"args.path + 1 > 2\"\n",
		want: []string{`4:29: files_read: constraint: found no matching overload for '_+_' applied to '(string, int)'`},
	},
	{
		name: "a constraint that is not true or false",
		give: "builtins:\n  - name: files_read\n    constraints:\n      - require: \"'a' + 'b'\"\n",
		want: []string{`4:19: files_read: a constraint must be true or false, and this one is string`},
	},
	{
		name: "a constraint reading an argument the built-in does not take",
		give: "builtins:\n  - name: files_read\n    constraints:\n      - require: \"args.pth != '/etc'\"\n",
		want: []string{`4:23: files_read: constraint: undefined field 'pth' (files_read takes path;`},
	},
	{
		name: "a constraint reading a switch that is not declared",
		give: "builtins:\n  - name: files_read\n    constraints:\n      - require: \"switches.FLAGG\"\n",
		want: []string{`4:27: files_read: constraint: undefined field 'FLAGG'`},
	},
	{
		name: "a constraint comparing a mode switch with a number",
		give: "builtins:\n  - name: files_read\n    constraints:\n      - require: \"switches.MODE == 1\"\n",
		want: []string{`4:33: files_read: constraint: found no matching overload for '_==_' applied to '(string, int)'`},
	},
	{
		name: "a constraint indexing the arguments of a server tool",
		give: "servers:\n  - id: memory\n    effect: read\n    tools:\n      - name: mcp__memory__read\n        args: {key: string}\n        constraints:\n          - require: \"args['ky'] != ''\"\n",
		want: []string{`8:27: mcp__memory__read: constraint: found no matching overload for '_[_]' applied to '(warden.Args, string)'; read an argument as args.name`},
	},
	// Billing costs and the monthly model cap.
	{
		name: "a cost that is neither a number nor one kind",
		give: "connectors:\n  - id: crawl\n    effect: read\n    billing: {unit: credits, cost: {fixed: 1, arg: n}}\n    tools: [{name: mcp__crawl__scrape}]\n",
		want: []string{`4:36: connector crawl: a cost is a number, or exactly one of fixed, arg and result`},
	},
	{
		name: "a negative cost",
		give: "connectors:\n  - id: crawl\n    effect: read\n    billing: {unit: credits, cost: -2}\n    tools: [{name: mcp__crawl__scrape}]\n",
		want: []string{`4:36: connector crawl: a cost cannot be negative (fixed is -2)`},
	},
	{
		name: "a negative reserve",
		give: "connectors:\n  - id: crawl\n    effect: read\n    billing: {unit: credits, cost: {result: used, reserve: -1}}\n    tools: [{name: mcp__crawl__scrape}]\n",
		want: []string{`4:60: connector crawl: a cost cannot be negative (reserve is -1)`},
	},
	{
		name: "times of zero",
		give: "connectors:\n  - id: crawl\n    effect: read\n    billing: {unit: credits, cost: {arg: pages, times: 0}}\n    tools: [{name: mcp__crawl__scrape}]\n",
		want: []string{`4:56: connector crawl: times must be above zero`},
	},
	{
		name: "times without an argument",
		give: "connectors:\n  - id: crawl\n    effect: read\n    billing: {unit: credits, cost: {fixed: 1, times: 2}}\n    tools: [{name: mcp__crawl__scrape}]\n",
		want: []string{`4:54: connector crawl: times applies to a cost taken from an argument`},
	},
	{
		name: "an empty cost argument",
		give: "connectors:\n  - id: crawl\n    effect: read\n    billing: {unit: credits, cost: {arg: \"\"}}\n    tools: [{name: mcp__crawl__scrape}]\n",
		want: []string{`4:43: connector crawl: arg must name the argument the cost comes from`},
	},
	{
		name: "a cost argument the tool does not declare as a number",
		give: "connectors:\n  - id: crawl\n    effect: read\n    billing: {unit: credits}\n    tools: [{name: mcp__crawl__scrape, args: {pages: string}, cost: {arg: pages}}]\n",
		want: []string{`5:75: mcp__crawl__scrape: the cost comes from the argument pages, which the tool does not declare as a number`},
	},
	{
		name: "an empty result field",
		give: "connectors:\n  - id: crawl\n    effect: read\n    billing: {unit: credits, cost: {result: \"\", reserve: 1}}\n    tools: [{name: mcp__crawl__scrape}]\n",
		want: []string{`4:46: connector crawl: result must name the field of the result that says what the call cost`},
	},
	{
		name: "a result cost without a reserve",
		give: "connectors:\n  - id: crawl\n    effect: read\n    billing: {unit: credits, cost: {result: used}}\n    tools: [{name: mcp__crawl__scrape}]\n",
		want: []string{`4:36: connector crawl: a cost settled from the result needs reserve: what to hold before the call`},
	},
	{
		name: "a cost on a tool of a connector that does not bill",
		give: "connectors:\n  - id: shop\n    effect: read\n    tools: [{name: mcp__shop__list, cost: 1}]\n",
		want: []string{`4:43: mcp__shop__list: cost applies to tools of a connector that bills (give shop a billing)`},
	},
	{
		name: "a negative monthly cap",
		give: "tenants:\n  - {id: main, account: acme, owner: true, monthlyModelCapUsd: -5}\n",
		want: []string{`2:64: tenant main: monthlyModelCapUsd cannot be negative`},
	},
	// Upstreams and connection secrets.
	{
		name: "an upstream with both a command and a url",
		give: "connectors:\n  - id: shop\n    effect: read\n    upstream: {command: [srv], url: \"http://x/mcp\"}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:15: connector shop: an upstream is a command or a url, not both`},
	},
	{
		name: "an upstream with neither",
		give: "connectors:\n  - id: shop\n    effect: read\n    upstream: {timeoutMs: 5}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:15: connector shop: an upstream needs a command (stdio) or a url (streamable HTTP)`},
	},
	{
		name: "an upstream url that is not http",
		give: "connectors:\n  - id: shop\n    effect: read\n    upstream: {url: \"ftp://x\"}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:22: connector shop: upstream url "ftp://x" must be an http or https URL`},
	},
	{
		name: "env on a url upstream",
		give: "connectors:\n  - id: shop\n    effect: read\n    upstream: {url: \"http://x/mcp\", env: {A: b}}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:42: connector shop: env applies to a command upstream`},
	},
	{
		name: "an upstream command with no program",
		give: "connectors:\n  - id: shop\n    effect: read\n    upstream: {command: [\"\"]}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:25: connector shop: the upstream command has no program`},
	},
	{
		name: "a bad env name for the command",
		give: "connectors:\n  - id: shop\n    effect: read\n    upstream: {command: [srv], env: {\"1X\": y}}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:37: connector shop: "1X" is not an environment variable name`},
	},
	{
		name: "a credential in both places",
		give: "connectors:\n  - id: shop\n    effect: read\n    upstream: {command: [srv], credential: {env: K, header: Authorization}}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:44: connector shop: a credential goes in an env variable (command) or a header (url), one of them`},
	},
	{
		name: "a url upstream's credential in an env variable",
		give: "connectors:\n  - id: shop\n    effect: read\n    upstream: {url: \"http://x/mcp\", credential: {env: K}}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:55: connector shop: a url upstream takes its credential in a header`},
	},
	{
		name: "a command upstream's credential in a header",
		give: "connectors:\n  - id: shop\n    effect: read\n    upstream: {command: [srv], credential: {header: Authorization}}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:53: connector shop: a command upstream takes its credential in an env variable`},
	},
	{
		name: "a negative upstream timeout",
		give: "connectors:\n  - id: shop\n    effect: read\n    upstream: {command: [srv], timeoutMs: -1}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:43: connector shop: timeoutMs cannot be negative`},
	},
	{
		name: "a secrets host the allowlist cannot read",
		give: "connectors:\n  - id: gh\n    upstream: {command: [server]}\n    secrets:\n      hosts:\n        - api.example.com\n        - \"exa mple.com\"\n",
		want: []string{`7:12: gh: secrets: host "exa mple.com": malformed entry: "exa mple.com": want host[:port]`},
	},
	{
		name: "a secrets host never allowed",
		give: "connectors:\n  - id: gh\n    upstream: {command: [server]}\n    secrets:\n      hosts: [169.254.169.254]\n",
		want: []string{`5:15: gh: secrets: host "169.254.169.254": never allowed: 169.254.169.254 is cloud instance metadata (link-local) (169.254.169.254/32)`},
	},
	{
		name: "a secrets host listed twice",
		give: "connectors:\n  - id: gh\n    upstream: {command: [server]}\n    secrets:\n      hosts: [api.example.com, api.example.com]\n",
		want: []string{`5:32: gh: secrets: host "api.example.com" is listed twice`},
	},
	{
		name: "secrets hosts with exposeToProcess",
		give: "connectors:\n  - id: gh\n    upstream: {command: [server]}\n    secrets:\n      exposeToProcess: true\n      hosts: [api.example.com]\n",
		want: []string{`6:14: gh: secrets: a process given the values themselves (exposeToProcess) reaches any host it may; hosts would never be used`},
	},
	{
		name: "secrets with an unknown key",
		give: "connectors:\n  - id: gh\n    upstream: {command: [server]}\n    secrets:\n      host: [api.example.com]\n",
		want: []string{`5:7: unknown field "host" in the secrets (did you mean "hosts"?)`},
	},
	{
		name: "secrets hosts not a list",
		give: "connectors:\n  - id: gh\n    upstream: {command: [server]}\n    secrets:\n      hosts: api.example.com\n",
		want: []string{`5:14: "hosts" must be a list, not "api.example.com"`},
	},
	{
		name: "a sandboxed connector without an upstream",
		give: "connectors:\n  - id: shop\n    effect: read\n    sandbox: true\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:14: connector shop: sandbox runs the connector's stdio command, and it has no upstream`},
	},
	{
		name: "a sandboxed connector reached by url",
		give: "connectors:\n  - id: shop\n    effect: read\n    sandbox: true\n    upstream: {url: \"http://x/mcp\"}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`4:14: connector shop: sandbox applies to a command (stdio) upstream; a url upstream runs elsewhere`},
	},
	{
		name: "a sandboxed connector whose upstream is both",
		give: "connectors:\n  - id: shop\n    effect: read\n    sandbox: true\n    upstream: {command: [srv], url: \"http://x/mcp\"}\n    tools: [{name: mcp__shop__list}]\n",
		want: []string{`5:15: connector shop: an upstream is a command or a url, not both`},
	},
	{
		name: "sandbox on a platform server",
		give: "servers:\n  - id: memory\n    effect: read\n    sandbox: true\n    tools: [{name: mcp__memory__read}]\n",
		want: []string{`4:14: server memory: sandbox applies only to connectors`},
	},
	{
		name: "an upstream on a platform server",
		give: "servers:\n  - id: memory\n    effect: read\n    upstream: {command: [srv]}\n    tools: [{name: mcp__memory__read}]\n",
		want: []string{`4:15: server memory: upstream applies only to connectors (platform servers are Warden's own)`},
	},
	{
		name: "a connection secret written as its value",
		give: "tenants:\n  - id: main\n    account: acme\n    owner: true\n    connections: [{id: c, connector: shop, secret: hunter2}]\n",
		want: []string{`5:52: connection c: secret must be a reference, env:NAME or file:/path, never the value itself`},
	},

	// ---- hard blocks: the shape of boundaries (the rules are judged by boundary.FromPolicy)
	{
		name: "boundaries as a list",
		give: "boundaries: [a]\n",
		want: []string{`1:13: boundaries must be a hard-block document (version, hardBlocks) or {file: FILE}, not a list`},
	},
	{
		name: "boundaries with a file and a document",
		give: "boundaries: {file: rules.json, version: 1}\n",
		want: []string{`1:13: boundaries: give either file or the document (version, hardBlocks), not both`},
	},
	{
		name: "a boundaries file that is not there",
		give: "boundaries: {file: testdata/no-such-rules.json}\n",
		want: []string{`1:20: boundaries: read testdata/no-such-rules.json: open`},
	},
	{
		name: "boundaries YAML that does not decode",
		give: "boundaries: {version: !!int one}\n",
		want: []string{`1:13: boundaries: yaml:`},
	},
	{
		name: "boundaries with a key JSON cannot hold",
		give: "boundaries: {version: 1, 2: b}\n",
		want: []string{`1:13: boundaries: the document cannot be read as JSON`},
	},
}

// billionLaughs is a small document (about 20 kB) whose aliases stand for 10^9 names: a
// thousand tenants, each with the same thousand connections, each shared with a thousand names.
func billionLaughs() string {
	aliases := func(anchor string, n int) string {
		return strings.TrimSuffix(strings.Repeat("*"+anchor+", ", n), ", ")
	}
	var b strings.Builder
	b.WriteString("version: 1\n")
	b.WriteString("skills: [{id: s, description: &n0 x}]\n")
	fmt.Fprintf(&b, "tenants: [&t0 {id: a, connections: [&c0 {id: c, connector: x, sharedWith: [%s]}, %s]}, %s]\n",
		aliases("n0", 1000), aliases("c0", 999), aliases("t0", 999))
	return b.String()
}

func TestParseBadDocuments(t *testing.T) {
	for _, tt := range badDocs {
		t.Run(tt.name, func(t *testing.T) {
			got := parseErrors(t, tt.text())
			if diff := cmp.Diff(tt.want, matchErrors(tt.want, got)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\ndocument:\n%s", diff, numbered(tt.text()))
			}
		})
	}
}

// parseErrors parses a document that must be invalid, checks the error's shape, and returns
// its lines.
func parseErrors(t *testing.T, text string) []string {
	t.Helper()
	p, err := policy.Parse(fileName, []byte(text))
	if err == nil {
		t.Fatalf("Parse succeeded (revision %s); want errors. Document:\n%s", p.Revision, numbered(text))
	}
	if p != nil {
		t.Errorf("Parse returned a policy with its errors")
	}
	if !errors.Is(err, policy.ErrInvalid) {
		t.Errorf("errors.Is(err, ErrInvalid) = false for %v", err)
	}
	var list policy.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("error %T is not a non-empty ErrorList", err)
	}
	var one *policy.Error
	if !errors.As(err, &one) || one != list[0] {
		t.Errorf("errors.As(err, *Error) does not find the first error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(list) {
		t.Errorf("%d errors print as %d lines:\n%s", len(list), len(lines), err)
	}
	return lines
}

var errorLine = regexp.MustCompile(`^` + regexp.QuoteMeta(fileName) + `(?::(\d+):(\d+))?: (.+)$`)

// matchErrors rewrites each error line that matches the wanted one at the same index as that
// wanted string, so a diff against want shows only the errors that differ.
func matchErrors(want, got []string) []string {
	out := make([]string, len(got))
	for i, line := range got {
		out[i] = line
		m := errorLine.FindStringSubmatch(line)
		if m == nil || i >= len(want) {
			continue
		}
		place, sub, _ := strings.Cut(want[i], ": ")
		gotPlace := ""
		if m[1] != "" {
			gotPlace = m[1] + ":" + m[2]
		}
		if place == gotPlace && strings.Contains(m[3], sub) {
			out[i] = want[i]
		}
	}
	return out
}

// numbered prefixes each line of a document with its number, for failure messages.
func numbered(text string) string {
	var b strings.Builder
	for i, line := range strings.Split(text, "\n") {
		fmt.Fprintf(&b, "%3d  %s\n", i+1, line)
	}
	return b.String()
}

func TestParseReportsEveryMistakeInDocumentOrder(t *testing.T) {
	// The sections are in the reverse of the order they are compiled in, so the errors come out
	// in document order only if they are sorted.
	give := `version: 1
tenants:
  - {id: a, owner: true}
  - {id: b, owner: true}
profiles:
  - {id: p, tools: [files_raed]}
limits: {runBudgetUsd: 0, maxTurns: 5, maxConcurrentRuns: 1}
roles:
  - {id: inbound, approvalChannel: true}
servers:
  - id: memory
    effect: read
    when: "owner && FLGA"
    tools:
      - name: mcp__memory__read
      - name: mcp__project__read
switches:
  - {name: flag, rule: exactly-true}
builtins:
  - name: files_read
  - {name: Bash}
`
	want := []string{
		`4:20: tenant b is marked as the owner's, but a already is`,
		`6:21: profile p asks for the tool "files_raed", which does not exist`,
		`7:24: the default limits: runBudgetUsd must be above zero, not 0`,
		`9:36: role inbound is standard: approvalChannel is fixed at false for it`,
		`13:21: unknown switch FLGA`,
		`16:15: the tool mcp__project__read is declared in memory, but its name says server project`,
		`18:12: switch name "flag" must be an environment variable name in upper case`,
		`21:5: built-in Bash needs a kind`,
	}
	got := parseErrors(t, give)
	if diff := cmp.Diff(want, matchErrors(want, got)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestParseReportsEveryShapeMistake(t *testing.T) {
	// Problems of shape are all reported together (and before any problem of meaning).
	give := `version: 1
builtins:
  - {name: files_read, kind: files_read, optin: true}
  - {name: Bash, kind: shell_exec, optIn: maybe}
limits: {runBudgetUsd: 1, maxTurns: 5, maxTurns: 6}
tenants: {id: a}
`
	want := []string{
		`3:42: unknown field "optin" in a tool (did you mean "optIn"?)`,
		`4:43: "optIn" must be true or false, not "maybe"`,
		`5:40: "maxTurns" is given twice in one mapping (first at line 5)`,
		`6:10: "tenants" must be a list, not a mapping`,
	}
	got := parseErrors(t, give)
	if diff := cmp.Diff(want, matchErrors(want, got)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// warningDocs are valid documents with the warnings they must produce.
var warningDocs = []struct {
	name string
	give string
	want []string
}{
	{
		name: "a standard role misspelt",
		give: "roles:\n  - {id: persn, description: a typo}\n  - {id: coworkr, description: runs a profile, profile: required, ceiling: ['files_read']}\nprofiles:\n  - {id: r, role: coworkr, tools: [files_read], limits: {runBudgetUsd: 1, maxTurns: 5, maxConcurrentRuns: 1}}\n",
		want: []string{
			`2:10: role "persn" is a new role that no profile runs as; did you mean the standard role "person"?`,
		},
	},
	{
		name: "ceiling patterns matching nothing",
		give: "roles:\n  - {id: person, ceiling: ['*', 'mcp__mail__*', 'builtin:*#send', 'files_read#write']}\n",
		want: []string{
			`2:34: the ceiling of role person: selector "mcp__mail__*" matches no tool`,
			`2:50: the ceiling of role person: selector "builtin:*#send" matches no tool`,
			`2:68: the ceiling of role person: selector "files_read#write" matches no tool`,
		},
	},
	{
		name: "invariant pattern matching nothing",
		give: "roles:\n  - {id: coworker, invariants: {forbid: ['connector:mail*']}}\n",
		want: []string{`2:43: the invariants of role coworker: selector "connector:mail*" matches no tool`},
	},
	{
		name: "profile asking for a tool twice",
		give: "profiles:\n  - {id: p, tools: [files_read, files_write, files_read]}\n",
		want: []string{`2:46: profile p asks for files_read twice`},
	},
	{
		name: "withheld tool listed twice",
		give: "connectors:\n  - id: shop\n    effect: read\n    withheld:\n      - {what: Deletes, reason: Final., tools: [mcp__shop__delete, mcp__shop__delete]}\n",
		want: []string{`5:68: withheld tool "mcp__shop__delete" of shop is listed twice`},
	},
	{
		name: "two enabled connections for one connector",
		give: `
tenants:
  - id: main
    connections:
      - {id: store, connector: shop}
      - {id: store2, connector: shop}
      - {id: store3, connector: shop, enabled: false}
`,
		want: []string{`5:9: tenant main has two enabled connections for shop; store is used`},
	},
}

func TestParseWarnings(t *testing.T) {
	for _, tt := range warningDocs {
		t.Run(tt.name, func(t *testing.T) {
			got := parseWarnings(t, doc(tt.give))
			if diff := cmp.Diff(tt.want, matchErrors(tt.want, got)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// parseWarnings parses a document that must be valid and returns its warnings as printed.
func parseWarnings(t *testing.T, text string) []string {
	t.Helper()
	p, err := policy.Parse(fileName, []byte(text))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var out []string
	for _, w := range p.Warnings() {
		out = append(out, w.Error())
	}
	return out
}

func TestBaseDocumentIsValid(t *testing.T) {
	p, err := policy.Parse(fileName, []byte(doc("")))
	if err != nil {
		t.Fatalf("the base document is invalid:\n%v", err)
	}
	if w := p.Warnings(); len(w) > 0 {
		t.Errorf("the base document has warnings:\n%v", w)
	}
}

// examples are the valid policies that ship with Warden.
var examples = []string{"../examples/quickstart.yaml", "../examples/scout/warden.yaml"}

func TestLoadExamples(t *testing.T) {
	for _, path := range examples {
		t.Run(path, func(t *testing.T) {
			p, err := policy.Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if w := p.Warnings(); len(w) > 0 {
				t.Errorf("warnings:\n%v", w)
			}
			if p.File != path {
				t.Errorf("File = %q, want %q", p.File, path)
			}
			if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(p.Revision) {
				t.Errorf("Revision = %q, want 16 hex digits", p.Revision)
			}
			again, err := policy.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if again.Revision != p.Revision {
				t.Errorf("loading twice gives revisions %s and %s", p.Revision, again.Revision)
			}
		})
	}
}

func TestRevisionFollowsTheText(t *testing.T) {
	a, err := policy.Parse(fileName, []byte(doc("")))
	if err != nil {
		t.Fatal(err)
	}
	// A comment changes nothing the policy says, but it is another text: another revision.
	b, err := policy.Parse(fileName, []byte(doc("# changed\n")))
	if err != nil {
		t.Fatal(err)
	}
	if a.Revision == b.Revision {
		t.Errorf("two texts share the revision %s", a.Revision)
	}
	c, err := policy.Parse("other.yaml", []byte(doc("")))
	if err != nil {
		t.Fatal(err)
	}
	if c.Revision != a.Revision {
		t.Errorf("the file name changed the revision: %s, then %s", a.Revision, c.Revision)
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/bad.yaml"
	if err := os.WriteFile(path, []byte("version: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := policy.Load(path)
	if want := path + ":1:10: version 2 is not supported"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Load = %v, want %s...", err, want)
	}
	_, err = policy.Load(dir + "/missing.yaml")
	if err == nil || errors.Is(err, policy.ErrInvalid) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing file = %v, want a not-exist error that is not ErrInvalid", err)
	}
}

func TestErrorWithoutAPlace(t *testing.T) {
	tests := []struct {
		give *policy.Error
		want string
	}{
		{&policy.Error{File: "a.yaml", Pos: policy.Pos{Line: 3, Col: 7}, Msg: "bad"}, "a.yaml:3:7: bad"},
		{&policy.Error{File: "a.yaml", Msg: "bad"}, "a.yaml: bad"},
		{&policy.Error{Pos: policy.Pos{Line: 1, Col: 1}, Msg: "bad"}, "<policy>:1:1: bad"},
	}
	for _, tt := range tests {
		if got := tt.give.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestDecodeChecksShapeOnly(t *testing.T) {
	// Decode reads the written form: a problem of meaning is not its business.
	cfg, err := policy.Decode(fileName, []byte(doc("version: 2\n")))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if cfg.Version != 2 || cfg.At("version") != (policy.Pos{Line: 1, Col: 10}) {
		t.Errorf("Decode: version %d at %v, want 2 at 1:10", cfg.Version, cfg.At("version"))
	}
	_, err = policy.Decode(fileName, []byte(doc("verison: 1\n")))
	if err == nil || !errors.Is(err, policy.ErrInvalid) {
		t.Errorf("Decode of an unknown field = %v, want ErrInvalid", err)
	}
}

func TestAliasExpansionIsBounded(t *testing.T) {
	text := billionLaughs()
	if len(text) > 32<<10 {
		t.Fatalf("the document is %d bytes; it should be small", len(text))
	}
	start := time.Now()
	_, err := policy.Parse(fileName, []byte(text))
	elapsed := time.Since(start)
	if err == nil {
		t.Fatal("Parse accepted a document of 10^9 nodes")
	}
	var list policy.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || !strings.Contains(list[0].Msg, "expands to more than 250000 nodes through its aliases") {
		t.Errorf("Parse = %v, want the one error that the aliases expand too far", err)
	}
	// Visiting a million nodes takes well under a second; expanding 10^9 would take minutes.
	if elapsed > 10*time.Second {
		t.Errorf("Parse took %v", elapsed)
	}
}

// TestEveryMessageIsTested checks that each message the package can report (each format string
// given to errorf, warnf or the condition parser's fail) is produced by at least one document
// above, so a new validation rule cannot go untested.
func TestEveryMessageIsTested(t *testing.T) {
	untestable := map[string]bool{
		// yaml.v3 panicking on a document: recovered, but no known document does it.
		"YAML parser failed on this document: %v": true,
		// The constraint environment is fixed and builds; a compiled CEL expression that cannot
		// be planned has not been seen.
		"%s: the constraint environment could not be built: %v": true,
		"%s: constraint: %v": true,
	}
	var produced []string
	for _, tt := range badDocs {
		_, err := policy.Parse(fileName, []byte(tt.text()))
		if err != nil {
			produced = append(produced, strings.Split(err.Error(), "\n")...)
		}
	}
	for _, tt := range warningDocs {
		produced = append(produced, parseWarnings(t, doc(tt.give))...)
	}
	produced = append(produced, overlayMessages(t)...)

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	formats := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "errorf" && sel.Sel.Name != "warnf" && sel.Sel.Name != "fail") {
				return true
			}
			lit, ok := call.Args[1].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true // the format is passed through (fail's own errorf)
			}
			format, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			formats++
			if untestable[format] {
				return true
			}
			re := regexp.MustCompile(`: ` + verbs.ReplaceAllString(regexp.QuoteMeta(format), `.*`) + `$`)
			for _, msg := range produced {
				if re.MatchString(msg) {
					return true
				}
			}
			t.Errorf("%s: no test document produces %q", fset.Position(call.Pos()), format)
			return true
		})
	}
	if formats < 150 {
		t.Errorf("found only %d messages; is the search still right?", formats)
	}
}

// verbs matches the formatting verbs of a format string after regexp.QuoteMeta.
var verbs = regexp.MustCompile(`%[qsvd]`)

func TestSessionsBlock(t *testing.T) {
	p, err := policy.Parse(fileName, []byte(doc("sessions: {idleTimeout: 10m, maxPerToken: 0}\n")))
	if err != nil {
		t.Fatal(err)
	}
	got := p.Sessions()
	if !got.IdleSet || got.IdleTimeout != 10*time.Minute || got.MaxPerToken != 0 || got.MaxPerTenant != -1 {
		t.Errorf("sessions: %+v; want 10m, no cap per token, the tenant's cap unset", got)
	}
	p, err = policy.Parse(fileName, []byte(doc("")))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Sessions(); got.IdleSet || got.MaxPerToken != -1 || got.MaxPerTenant != -1 {
		t.Errorf("no sessions block: %+v; want everything unset", got)
	}
}
