package boundary

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/action"
)

// naive is the reference: every rule, one after the other, matched the obvious way.
type naive struct {
	rules []naiveRule
}

type naiveRule struct {
	Rule
	pat  string // "~/" expanded; exact and prefix cleaned
	re   *regexp.Regexp
	tree *treeGlob
}

func newNaive(d *Document, home string) *naive {
	n := &naive{}
	for _, r := range d.HardBlocks {
		nr := naiveRule{Rule: r, pat: r.Pattern}
		if r.Type == TypePath && strings.HasPrefix(r.Pattern, "~/") {
			switch r.Match {
			case MatchExact, MatchPrefix:
				nr.pat = home + r.Pattern[1:]
			case MatchGlob:
				nr.pat = escapeGlob(home) + r.Pattern[1:]
			}
		}
		if r.Type == TypePath && r.Match == MatchExact {
			nr.pat = filepath.Clean(nr.pat)
		}
		if r.Type == TypePath && r.Match == MatchPrefix {
			trailing := strings.HasSuffix(nr.pat, "/")
			nr.pat = filepath.Clean(nr.pat)
			if trailing && nr.pat != "/" {
				nr.pat += "/"
			}
		}
		if r.Match == MatchRegex {
			nr.re = regexp.MustCompile(r.Pattern)
		}
		if r.Type == TypePath && r.Match == MatchGlob {
			nr.tree = newTreeGlob(nr.pat)
		}
		n.rules = append(n.rules, nr)
	}
	return n
}

func (n *naive) path(op action.Op, path string, recursive bool) []string {
	path = filepath.Clean(path)
	dir := strings.TrimSuffix(path, "/")
	under := dir + "/"
	var out []string
	for _, r := range n.rules {
		if !r.Enabled || r.Type != TypePath {
			continue
		}
		if _, known := action.ParseOp(string(op)); known && !slices.Contains(r.Operations, string(op)) {
			continue
		}
		var m bool
		switch r.Match {
		case MatchExact:
			m = path == r.pat || recursive && strings.HasPrefix(r.pat, under)
		case MatchPrefix:
			m = strings.HasPrefix(path, r.pat) || recursive && strings.HasPrefix(r.pat, under)
		case MatchGlob:
			if recursive {
				m = r.tree.couldMatchUnder(r.pat, path, dir)
			} else {
				m, _ = doublestar.Match(r.pat, path)
			}
		case MatchRegex:
			m = r.re.MatchString(path)
		case MatchContains:
			m = strings.Contains(path, r.pat)
		}
		if m {
			out = append(out, r.ID)
		}
	}
	return out
}

func (n *naive) command(raw string, normalized []string) []string {
	var out []string
	for _, r := range n.rules {
		if !r.Enabled || r.Type != TypeCommand {
			continue
		}
		for _, text := range append([]string{raw}, normalized...) {
			var m bool
			switch r.Match {
			case MatchExact:
				m = text == r.pat
			case MatchPrefix:
				m = strings.HasPrefix(text, r.pat)
			case MatchGlob:
				m = cmdGlobMatch(r.pat, text)
			case MatchRegex:
				m = r.re.MatchString(text)
			case MatchContains:
				m = strings.Contains(text, r.pat)
			}
			if m {
				out = append(out, r.ID)
				break
			}
		}
	}
	return out
}

func hitIDs(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Rule.ID)
	}
	return out
}

func mustCompile(t testing.TB, home string, rules ...Rule) *Set {
	t.Helper()
	s, err := Compile(&Document{Version: 1, HardBlocks: rules}, Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pathRule(id, match, pattern string, ops ...action.Op) Rule {
	r := Rule{ID: id, Enabled: true, Type: TypePath, Match: match, Pattern: pattern}
	for _, op := range ops {
		r.Operations = append(r.Operations, string(op))
	}
	return r
}

const (
	R = action.OpRead
	W = action.OpWrite
	D = action.OpDelete
	X = action.OpExecute
	G = action.OpDelegate
)

// TestCheckPath is each match method against each kind of path, per operation, with and
// without recursion.
func TestCheckPath(t *testing.T) {
	type check struct {
		op        action.Op
		path      string
		recursive bool
		want      bool
	}
	tests := []struct {
		name   string
		rule   Rule
		checks []check
	}{
		{"exact", pathRule("r", MatchExact, "/etc/./passwd", R, W), []check{
			{R, "/etc/passwd", false, true},
			{W, "/etc/passwd", false, true},
			{D, "/etc/passwd", false, false}, // not one of its operations
			{R, "/etc//passwd", false, true}, // cleaned
			{R, "/etc/passwd2", false, false},
			{R, "/etc", false, false},
			{R, "/etc", true, true}, // rm -r /etc reaches it
			{R, "/", true, true},
			{R, "/etc/passwd", true, true},
			{R, "/et", true, false},
			{R, "/etc/passwd/x", true, false},
		}},
		{"prefix, a directory", pathRule("r", MatchPrefix, "/srv/data/", D), []check{
			{D, "/srv/data/x", false, true},
			{D, "/srv/data", false, false}, // the string prefix is "/srv/data/"
			{R, "/srv/data/x", false, false},
			{D, "/srv/data", true, true},
			{D, "/srv", true, true},
			{D, "/srv/data/x/y", true, true},
			{D, "/srv/dat", true, false},
			{D, "/srv/database", true, false},
		}},
		{"prefix, a string", pathRule("r", MatchPrefix, "/srv/data", W), []check{
			{W, "/srv/data", false, true},
			{W, "/srv/database/x", false, true}, // BURROW's string prefix
			{W, "/srv/dat", false, false},
			{W, "/srv/dat", true, false},
			{W, "/srv", true, true},
		}},
		{"glob with **/ in the middle", pathRule("r", MatchGlob, "/x/**/*.key", R), []check{
			{R, "/x/a.key", false, true}, // doublestar: **/ is zero or more directories
			{R, "/x/a/b/c.key", false, true},
			{R, "/x/a.pem", false, false},
			{R, "/y/a.key", false, false},
			{R, "/x/a.key/b", false, false},
			{W, "/x/a.key", false, false},
			{R, "/x", true, true},
			{R, "/x/a/b", true, true},
			{R, "/", true, true},
			{R, "/y", true, false},
			{R, "/xy", true, false},
		}},
		{"glob with a leading **", pathRule("r", MatchGlob, "**/w.env", R, G), []check{
			{R, "/w.env", false, true},
			{G, "/a/b/w.env", false, true},
			{R, "/a/b/xw.env", false, false},
			{R, "/a/w.env/c", false, false},
			{R, "/anything", true, true}, // a w.env could be below
		}},
		{"glob with single stars", pathRule("r", MatchGlob, "/srv/*/w/*.pem", R), []check{
			{R, "/srv/a/w/c.pem", false, true},
			{R, "/srv/a/b/w/c.pem", false, false}, // * stops at /
			{R, "/srv/a", true, true},
			{R, "/srv/a/w", true, true},
			{R, "/srv/a/x", true, false},
			{R, "/srv/a/w/c", true, false}, // nothing below it has four segments
			{R, "/srv/a/w/c.pem", true, true},
		}},
		{"glob ending in /**", pathRule("r", MatchGlob, "/var/lib/w/**", D), []check{
			{D, "/var/lib/w", false, true},
			{D, "/var/lib/w/x/y", false, true},
			{D, "/var/lib/wx", false, false},
			{D, "/var", true, true},
			{D, "/var/lib/wx", true, false},
		}},
		{"glob with alternatives and classes", pathRule("r", MatchGlob, "/{etc,usr/local/etc}/[ps]asswd", R), []check{
			{R, "/etc/passwd", false, true},
			{R, "/usr/local/etc/sasswd", false, true},
			{R, "/usr/etc/passwd", false, false},
			{R, "/usr", true, true},
			{R, "/usr/local", true, true},
			{R, "/usr/lib", true, false},
			{R, "/opt", true, false},
		}},
		{"glob with a class that matches /", pathRule("r", MatchGlob, "/a[!x]b", R), []check{
			{R, "/a/b", false, true}, // doublestar lets a class match /
			{R, "/a", true, true},
			{R, "/b", true, false},
		}},
		{"regex", pathRule("r", MatchRegex, `^/var/log/a[0-9]+\.log$`, R), []check{
			{R, "/var/log/a1.log", false, true},
			{R, "/var/log/a.log", false, false},
			{R, "/x/var/log/a1.log", false, false},
			{R, "/var/log", true, false}, // regexes see the path text only
		}},
		{"unanchored regex", pathRule("r", MatchRegex, `secret[0-9]`, R), []check{
			{R, "/a/secret7/b", false, true},
			{R, "/a/secret/b", false, false},
		}},
		{"case-insensitive regex", pathRule("r", MatchRegex, `(?i)/PRIVATE/`, R), []check{
			{R, "/home/u/private/x", false, true},
		}},
		{"contains", pathRule("r", MatchContains, "secret", R, X), []check{
			{R, "/a/my-secret-file", false, true},
			{X, "/a/secret", false, true},
			{W, "/a/secret", false, false},
			{R, "/a/secre", false, false},
			{R, "/a", true, false}, // contains sees the path text only
			{R, "/a/secret", true, true},
		}},
	}
	for _, tt := range tests {
		s := mustCompile(t, "/home/u", tt.rule)
		for _, c := range tt.checks {
			t.Run(fmt.Sprintf("%s/%s %s recursive=%v", tt.name, c.op, c.path, c.recursive), func(t *testing.T) {
				hits := s.CheckPath(c.op, c.path, c.recursive, nil)
				if got := len(hits) > 0; got != c.want {
					t.Errorf("matched = %v, want %v", got, c.want)
				}
				for _, h := range hits {
					if h.Target != filepath.Clean(c.path) {
						t.Errorf("Target = %q, want %q", h.Target, c.path)
					}
				}
			})
		}
	}
}

func TestDisabledRulesNeverMatch(t *testing.T) {
	off := pathRule("off", MatchPrefix, "/", R)
	off.Enabled = false
	cmdOff := Rule{ID: "cmd-off", Type: TypeCommand, Match: MatchContains, Pattern: "rm", Operations: []string{"execute"}}
	s := mustCompile(t, "", off, cmdOff)
	if hits := s.CheckPath(R, "/etc/passwd", false, nil); len(hits) != 0 {
		t.Errorf("CheckPath = %v", hitIDs(hits))
	}
	if hits := s.CheckPath(R, "/", true, nil); len(hits) != 0 {
		t.Errorf("CheckPath recursive = %v", hitIDs(hits))
	}
	if hits := s.CheckCommand("rm -rf /", []string{"rm -rf /"}, nil); len(hits) != 0 {
		t.Errorf("CheckCommand = %v", hitIDs(hits))
	}
}

// TestUnknownOperation: an operation outside the five is checked against every rule.
func TestUnknownOperation(t *testing.T) {
	s := mustCompile(t, "", pathRule("a", MatchPrefix, "/x/", R), pathRule("b", MatchExact, "/x/y", D, W))
	for _, op := range []action.Op{"", "chmod"} {
		if got, want := hitIDs(s.CheckPath(op, "/x/y", false, nil)), []string{"a", "b"}; !cmp.Equal(got, want) {
			t.Errorf("CheckPath(%q) = %v, want %v", op, got, want)
		}
	}
}

// TestHitsInDocumentOrder: hits come in the document's order, each rule once, and are
// appended after what the caller passed in.
func TestHitsInDocumentOrder(t *testing.T) {
	s := mustCompile(t, "",
		pathRule("z-contains", MatchContains, "a", R),
		pathRule("y-glob", MatchGlob, "/a/**", R),
		pathRule("x-exact", MatchExact, "/a/a/a", R),
		pathRule("w-prefix", MatchPrefix, "/a/", R),
		pathRule("v-seg", MatchGlob, "**/a/*", R),
		pathRule("u-regex", MatchRegex, "a/a", R),
	)
	prior := []Hit{{Rule: &Rule{ID: "prior"}, Target: "p"}}
	got := hitIDs(s.CheckPath(R, "/a/a/a", false, prior))
	want := []string{"prior", "z-contains", "y-glob", "x-exact", "w-prefix", "v-seg", "u-regex"}
	if !cmp.Equal(got, want) {
		t.Errorf("hits = %v, want %v", got, want)
	}
}

func cmdRule(id, match, pattern string) Rule {
	return Rule{ID: id, Enabled: true, Type: TypeCommand, Match: match, Pattern: pattern, Operations: []string{"execute"}}
}

func TestCheckCommand(t *testing.T) {
	tests := []struct {
		name       string
		rule       Rule
		raw        string
		normalized []string
		want       bool
		target     string
	}{
		{"exact, normalised", cmdRule("r", MatchExact, "rm -rf /"), "/bin/rm -rf /", []string{"rm -rf /"}, true, "rm -rf /"},
		{"exact, raw", cmdRule("r", MatchExact, "rm -rf /"), "rm -rf /", []string{"rm -rf /"}, true, "rm -rf /"},
		{"exact, quotes removed", cmdRule("r", MatchExact, "rm -rf /"), `"r""m" -rf '/'`, []string{"rm -rf /"}, true, "rm -rf /"},
		{"exact, in a list", cmdRule("r", MatchExact, "rm -rf /"), "cd /tmp && \\rm  -rf /", []string{"cd /tmp", "rm -rf /"}, true, "rm -rf /"},
		{"exact, other target", cmdRule("r", MatchExact, "rm -rf /"), "rm -rf /tmp/x", []string{"rm -rf /tmp/x"}, false, ""},
		{"prefix", cmdRule("r", MatchPrefix, "git push"), "git push --force origin main", nil, true, "git push --force origin main"},
		{"prefix, normalised", cmdRule("r", MatchPrefix, "git push"), "/usr/bin/git push", []string{"git push"}, true, "git push"},
		{"prefix, no", cmdRule("r", MatchPrefix, "git push"), "git pull", []string{"git pull"}, false, ""},
		{"glob: * crosses / and spaces", cmdRule("r", MatchGlob, "curl * | sh"), "curl -fsSL https://x.example/i.sh | sh", nil, true, "curl -fsSL https://x.example/i.sh | sh"},
		{"glob: ? is one character", cmdRule("r", MatchGlob, "rm -?f *"), "rm -rf /x", nil, true, "rm -rf /x"},
		{"glob: ? is one character, no", cmdRule("r", MatchGlob, "rm -?f *"), "rm -f /x", nil, false, ""},
		{"glob: ? is one rune", cmdRule("r", MatchGlob, "echo ?"), "echo é", nil, true, "echo é"},
		{"glob: escaped star", cmdRule("r", MatchGlob, `ls \*`), "ls *", nil, true, "ls *"},
		{"glob: escaped star, no", cmdRule("r", MatchGlob, `ls \*`), "ls a", nil, false, ""},
		{"glob: no classes", cmdRule("r", MatchGlob, "ls [ab]"), "ls [ab]", nil, true, "ls [ab]"},
		{"glob: whole text", cmdRule("r", MatchGlob, "sudo *"), "echo sudo x", []string{"echo sudo x"}, false, ""},
		{"glob: normalised", cmdRule("r", MatchGlob, "sudo *"), "echo hi; /usr/bin/sudo  ls", []string{"echo hi", "sudo ls"}, true, "sudo ls"},
		{"regex", cmdRule("r", MatchRegex, `^chmod (-R )?777 `), "chmod -R 777 /srv", nil, true, "chmod -R 777 /srv"},
		{"regex, no", cmdRule("r", MatchRegex, `^chmod (-R )?777 `), "chmod 755 /srv", nil, false, ""},
		{"contains", cmdRule("r", MatchContains, "mkfs"), "sudo mkfs.ext4 /dev/sda", nil, true, "sudo mkfs.ext4 /dev/sda"},
		{"contains, no", cmdRule("r", MatchContains, "mkfs"), "ls", []string{"ls"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, "", tt.rule)
			hits := s.CheckCommand(tt.raw, tt.normalized, nil)
			if got := len(hits) > 0; got != tt.want {
				t.Fatalf("matched = %v, want %v", got, tt.want)
			}
			if tt.want && (len(hits) != 1 || hits[0].Target != tt.target) {
				t.Errorf("hits = %+v, want one with Target %q", hits, tt.target)
			}
		})
	}
}

// TestCommandRulesAreNotPathRules: each kind of rule answers only its own check.
func TestCommandRulesAreNotPathRules(t *testing.T) {
	s := mustCompile(t, "", cmdRule("cmd", MatchContains, "/etc"), pathRule("path", MatchContains, "/etc", X))
	if got := hitIDs(s.CheckPath(X, "/etc/passwd", false, nil)); !cmp.Equal(got, []string{"path"}) {
		t.Errorf("CheckPath = %v", got)
	}
	if got := hitIDs(s.CheckCommand("cat /etc/passwd", nil, nil)); !cmp.Equal(got, []string{"cmd"}) {
		t.Errorf("CheckCommand = %v", got)
	}
}

func TestCommandText(t *testing.T) {
	tests := []struct {
		give []string
		want string
	}{
		{[]string{"/bin/rm", "-rf", "/"}, "rm -rf /"},
		{[]string{"rm"}, "rm"},
		{[]string{"./scripts/deploy.sh", "prod"}, "deploy.sh prod"},
		{[]string{"echo", "two  spaces", ""}, "echo two  spaces "},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := CommandText(tt.give); got != tt.want {
			t.Errorf("CommandText(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

// gen makes random rules and paths over a small alphabet, so that they meet often.
type gen struct {
	r *rand.Rand
}

var words = []string{"a", "b", "ab", "x", "key", "x.key", "w.env", "secret", "log", "1", "a1", ".ssh"}

func (g gen) pick(list []string) string { return list[g.r.IntN(len(list))] }

func (g gen) path() string {
	n := g.r.IntN(5)
	segs := make([]string, n)
	for i := range segs {
		segs[i] = g.pick(words)
		if g.r.IntN(4) == 0 {
			segs[i] += g.pick(words)
		}
	}
	p := "/" + strings.Join(segs, "/")
	if g.r.IntN(10) == 0 {
		p = "/home/u" + p
	}
	return p
}

var globPieces = []string{"*", "?", "[ab]", "[!a]", "[a-c]", "{a,b}", "{a,b/x}", "{,x}", "{a,**}", `\*`, "[/]", "**", "{x,{a,b}}", "[.]"}

func (g gen) glob() string {
	var b strings.Builder
	switch g.r.IntN(6) {
	case 0:
		b.WriteString("**/")
	case 1:
		b.WriteString("~/")
	case 2:
		b.WriteString(g.pick([]string{"{/a,/b}/", "*/", "[/]"}))
	default:
		b.WriteString("/")
	}
	n := 1 + g.r.IntN(4)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString("/")
		}
		if g.r.IntN(5) == 0 {
			b.WriteString("**")
			continue
		}
		for k := 1 + g.r.IntN(2); k > 0; k-- {
			if g.r.IntN(2) == 0 {
				b.WriteString(g.pick(words))
			} else {
				b.WriteString(g.pick(globPieces))
			}
		}
	}
	if g.r.IntN(8) == 0 {
		b.WriteString("/")
	}
	return b.String()
}

// instantiate turns a glob into a path it may well match.
func (g gen) instantiate(p string) string {
	alts, ok := expandBraces(p)
	if !ok || len(alts) == 0 {
		return p
	}
	a := strings.Replace(alts[g.r.IntN(len(alts))], "~", "/home/u", 1)
	var b strings.Builder
	for i := 0; i < len(a); i++ {
		switch c := a[i]; c {
		case '*':
			if i+1 < len(a) && a[i+1] == '*' {
				i++
				b.WriteString(g.pick([]string{"", "a", "a/b", "x.key"}))
			} else {
				b.WriteString(g.pick([]string{"", "a", "ab", "w"}))
			}
		case '?':
			b.WriteString(g.pick([]string{"a", "b", "."}))
		case '[':
			end := classEnd(a, i)
			b.WriteString(g.pick([]string{"a", "b", "/", "c", "."}))
			i = end - 1
		case '\\':
			if i+1 < len(a) {
				i++
				b.WriteByte(a[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (g gen) regex() string {
	lit := g.pick(words)
	switch g.r.IntN(8) {
	case 0:
		return "^/" + regexp.QuoteMeta(lit) + "/.*"
	case 1:
		return regexp.QuoteMeta(lit)
	case 2:
		return "(?i)" + strings.ToUpper(lit)
	case 3:
		return `^/a/[0-9a-z]+$`
	case 4:
		return lit + "|" + g.pick(words)
	case 5:
		return `\A/home/u/` + regexp.QuoteMeta(lit)
	case 6:
		return "(?m)^/" + regexp.QuoteMeta(lit)
	default:
		return "x*"
	}
}

func (g gen) rule(i int) Rule {
	r := Rule{ID: fmt.Sprint("r", i), Enabled: g.r.IntN(10) != 0, Type: TypePath}
	for _, op := range action.Ops {
		if g.r.IntN(2) == 0 {
			r.Operations = append(r.Operations, string(op))
		}
	}
	if len(r.Operations) == 0 {
		r.Operations = []string{string(R)}
	}
	r.Match = g.pick([]string{MatchExact, MatchPrefix, MatchGlob, MatchGlob, MatchRegex, MatchContains})
	switch r.Match {
	case MatchExact:
		r.Pattern = g.path()
	case MatchPrefix:
		r.Pattern = g.path()
		if cut := g.r.IntN(3); cut > 0 && len(r.Pattern) > cut {
			r.Pattern = r.Pattern[:len(r.Pattern)-cut]
		}
		if g.r.IntN(3) == 0 {
			r.Pattern = strings.TrimSuffix(r.Pattern, "/") + "/"
		}
		if g.r.IntN(6) == 0 {
			r.Pattern = "~/" + strings.TrimPrefix(r.Pattern, "/")
		}
	case MatchGlob:
		r.Pattern = g.glob()
	case MatchRegex:
		r.Pattern = g.regex()
	case MatchContains:
		p := g.path()
		a := g.r.IntN(len(p))
		r.Pattern = p[a : a+1+g.r.IntN(len(p)-a)]
	}
	return r
}

func (g gen) commandRule(i int) Rule {
	texts := []string{"rm -rf /", "git push", "curl", "sudo", "a b", "x"}
	r := cmdRule(fmt.Sprint("c", i), g.pick([]string{MatchExact, MatchPrefix, MatchGlob, MatchGlob, MatchRegex, MatchContains}), g.pick(texts))
	r.Enabled = g.r.IntN(10) != 0
	switch r.Match {
	case MatchGlob:
		r.Pattern = g.pick([]string{"rm *", "* /", "*sudo*", "git ? *", "??", `a\*b`, "*", "curl * | sh", "x*y*z"})
	case MatchRegex:
		r.Pattern = g.pick([]string{`^rm\s`, `push`, `(?i)SUDO`, `^x$`, `a|b`})
	}
	return r
}

func (g gen) command() string {
	parts := []string{"rm", "-rf", "/", "git", "push", "curl", "|", "sh", "sudo", "x", "a", "b", "*", "y", "z"}
	n := 1 + g.r.IntN(4)
	out := make([]string, n)
	for i := range out {
		out[i] = g.pick(parts)
	}
	return strings.Join(out, g.pick([]string{" ", " ", "  "}))
}

// TestIndexAgreesWithNaive is the property the index must keep: for random rule sets and
// paths, it returns exactly the rules a loop over every rule returns, in the same order.
func TestIndexAgreesWithNaive(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(7, 11))}
	checks, matches := 0, 0
	for round := 0; round < 300; round++ {
		d := &Document{Version: 1}
		for i := 0; i < 1+g.r.IntN(60); i++ {
			if g.r.IntN(5) == 0 {
				d.HardBlocks = append(d.HardBlocks, g.commandRule(i))
			} else {
				d.HardBlocks = append(d.HardBlocks, g.rule(i))
			}
		}
		// Drop what does not validate (a generated glob may be malformed or relative).
		valid := d.HardBlocks[:0]
		for _, r := range d.HardBlocks {
			if (&Document{Version: 1, HardBlocks: []Rule{r}}).Validate() == nil {
				valid = append(valid, r)
			}
		}
		d.HardBlocks = valid
		s, err := Compile(d, Options{Home: "/home/u"})
		if err != nil {
			t.Fatal(err)
		}
		ref := newNaive(d, "/home/u")
		var paths []string
		for i := 0; i < 40; i++ {
			paths = append(paths, g.path())
		}
		for _, r := range d.HardBlocks {
			if r.Type == TypePath && r.Match == MatchGlob {
				for i := 0; i < 4; i++ {
					paths = append(paths, g.instantiate(r.Pattern))
				}
			}
			if r.Type == TypePath && (r.Match == MatchExact || r.Match == MatchPrefix) {
				paths = append(paths, strings.Replace(r.Pattern, "~", "/home/u", 1)+g.pick([]string{"", "a", "/b"}))
			}
		}
		for _, p := range paths {
			if !strings.HasPrefix(p, "/") {
				p = "/" + p
			}
			for _, op := range action.Ops {
				for _, rec := range []bool{false, true} {
					got := hitIDs(s.CheckPath(op, p, rec, nil))
					want := ref.path(op, p, rec)
					checks++
					if len(want) > 0 {
						matches++
					}
					if !cmp.Equal(got, want) {
						t.Fatalf("round %d: CheckPath(%s, %q, recursive=%v) = %v, naive %v\nrules: %s",
							round, op, p, rec, got, want, describe(d))
					}
					if may, _ := s.MayBlock(op, p, rec, nil); may != (len(want) > 0) {
						t.Fatalf("round %d: MayBlock(%s, %q, recursive=%v) = %v, naive %v\nrules: %s",
							round, op, p, rec, may, want, describe(d))
					}
				}
			}
		}
		for i := 0; i < 30; i++ {
			raw := g.command()
			norm := []string{strings.Join(strings.Fields(raw), " ")}
			got := hitIDs(s.CheckCommand(raw, norm, nil))
			want := ref.command(raw, norm)
			if !cmp.Equal(got, want) {
				t.Fatalf("round %d: CheckCommand(%q) = %v, naive %v\nrules: %s", round, raw, got, want, describe(d))
			}
		}
	}
	t.Logf("%d path checks, %d with hits", checks, matches)
	if matches < checks/10 {
		t.Errorf("only %d of %d checks matched: the generator is too weak to test much", matches, checks)
	}
}

func describe(d *Document) string {
	var b strings.Builder
	for _, r := range d.HardBlocks {
		fmt.Fprintf(&b, "\n  %s %v %s %s %q %v", r.ID, r.Enabled, r.Type, r.Match, r.Pattern, r.Operations)
	}
	return b.String()
}

// TestCouldMatchUnderIsSound: when some path below a directory matches a glob, the
// recursive check must say so (it may say so more often).
func TestCouldMatchUnderIsSound(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(3, 5))}
	found := 0
	for i := 0; i < 3000; i++ {
		p := strings.Replace(g.glob(), "~", "/home/u", 1)
		if !doublestar.ValidatePattern(p) {
			continue
		}
		tg := newTreeGlob(p)
		for j := 0; j < 30; j++ {
			full := g.instantiate(p)
			if m, _ := doublestar.Match(p, full); !m || !strings.HasPrefix(full, "/") {
				continue
			}
			full = filepath.Clean(full)
			if m, _ := doublestar.Match(p, full); !m {
				continue
			}
			// Every directory above full, and full itself.
			for k := 0; k <= len(full); k++ {
				if k < len(full) && full[k] != '/' {
					continue
				}
				dir := full[:k]
				path := dir
				if path == "" {
					path = "/"
				}
				found++
				if !tg.couldMatchUnder(p, path, dir) {
					t.Fatalf("glob %q matches %q, but couldMatchUnder(%q) = false", p, full, path)
				}
			}
		}
	}
	if found < 1000 {
		t.Errorf("only %d cases: the generator is too weak", found)
	}
}

// TestGlobKeys pins the literals taken from globs, including the traps.
func TestGlobKeys(t *testing.T) {
	tests := []struct {
		give string
		want globKeys
	}{
		{"/home/*/w/**/*.key", globKeys{prefix: "/home", suffix: ".key", segs: []string{"home", "w"}, subs: []string{"/home", "w", ".key"}}},
		{"**/w.env", globKeys{suffix: "w.env", segs: []string{"w.env"}, subs: []string{"w.env"}}},
		{"/var/lib/w/**", globKeys{prefix: "/var/lib/w", segs: []string{"var", "lib", "w"}, subs: []string{"/var/lib/w"}}},
		{"/x/{a,**}/y", globKeys{prefix: "/x", suffix: "y", segs: []string{"x", "y"}, subs: []string{"/x", "y"}}},
		{"/a[!x]b", globKeys{prefix: "/a", suffix: "b", subs: []string{"/a", "b"}}},
		{`/a\*b/c`, globKeys{prefix: "/a", suffix: "b/c", segs: []string{"c"}, subs: []string{"/a", "b/c"}}},
		{"/é/x", globKeys{prefix: "", suffix: "/x", segs: []string{"x"}, subs: []string{"/", "/x"}}},
		{"/etc/passwd", globKeys{prefix: "/etc/passwd", suffix: "/etc/passwd", segs: []string{"etc", "passwd"}, subs: []string{"/etc/passwd"}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, pathGlobKeys(tt.give), cmp.AllowUnexported(globKeys{})); diff != "" {
			t.Errorf("pathGlobKeys(%q) (-want +got):\n%s", tt.give, diff)
		}
	}
}

func TestRegexKeys(t *testing.T) {
	tests := []struct {
		give, prefix, inner string
	}{
		{`^/var/log/w1-[0-9]+\.log$`, "/var/log/w1-", "/var/log/w1-"},
		{`secret[0-9]`, "", "secret"},
		{`\A/etc/`, "/etc/", "/etc/"},
		{`(?i)abc`, "", ""},
		{`(?m)^/etc`, "", "/etc"},
		{`a|b`, "", ""},
		{`^\x{FFFD}x`, "", "x"},
	}
	for _, tt := range tests {
		p, in := regexKeys(tt.give)
		if p != tt.prefix || in != tt.inner {
			t.Errorf("regexKeys(%q) = %q, %q; want %q, %q", tt.give, p, in, tt.prefix, tt.inner)
		}
	}
}

func TestAutomaton(t *testing.T) {
	keys := []string{"he", "she", "his", "hers", "s"}
	m := map[string]*bucket{}
	for _, k := range keys {
		m[k] = &bucket{contains: []*Rule{{ID: k}}}
	}
	a := newAutomaton(m)
	text := "ushers and his"
	var got []string
	for _, h := range a.scan(text, wantRules, nil) {
		got = append(got, h.Rule.ID)
	}
	slices.Sort(got)
	var want []string
	for _, k := range keys {
		for i := 0; i+len(k) <= len(text); i++ {
			if text[i:i+len(k)] == k {
				want = append(want, k)
			}
		}
	}
	slices.Sort(want)
	if !cmp.Equal(got, want) {
		t.Errorf("occurrences = %v, want %v", got, want)
	}
}

func TestRadix(t *testing.T) {
	keys := []string{"", "/", "/srv/", "/srv/data/", "/srv/database", "/srv/data/x", "/var", "/v"}
	m := map[string]*bucket{}
	for _, k := range keys {
		m[k] = &bucket{prefixRules: []*Rule{{ID: k}}}
	}
	tr := newRadix(m, false)
	walk := func(s string) []string {
		var out []string
		for n, i := tr.root, 0; n != nil; n, i = tr.step(n, s, i) {
			if n.b != nil {
				out = append(out, n.b.prefixRules[0].ID)
			}
		}
		return out
	}
	if got, want := walk("/srv/data/xy"), []string{"", "/", "/srv/", "/srv/data/", "/srv/data/x"}; !cmp.Equal(got, want) {
		t.Errorf("walk = %q, want %q", got, want)
	}
	if got, want := walk("/srv/dat"), []string{"", "/", "/srv/"}; !cmp.Equal(got, want) {
		t.Errorf("walk = %q, want %q", got, want)
	}
	var below func(n *rnode) []string
	below = func(n *rnode) []string {
		var out []string
		if n.b != nil {
			out = append(out, n.b.prefixRules[0].ID)
		}
		for _, k := range n.kids {
			out = append(out, below(k)...)
		}
		return out
	}
	if got, want := below(tr.below("/srv/dat")), []string{"/srv/data/", "/srv/data/x", "/srv/database"}; !cmp.Equal(got, want) {
		t.Errorf("below = %q, want %q", got, want)
	}
	if n := tr.below("/srv/x"); n != nil {
		t.Errorf("below(/srv/x) = %v", below(n))
	}
	rev := newRadix(map[string]*bucket{reverse(".key"): {prefixRules: []*Rule{{ID: "k"}}}, reverse("y"): {prefixRules: []*Rule{{ID: "y"}}}}, true)
	var got []string
	for n, i := rev.root, 0; n != nil; n, i = rev.step(n, "/a/b.key", i) {
		if n.b != nil {
			got = append(got, n.b.prefixRules[0].ID)
		}
	}
	if !cmp.Equal(got, []string{"y", "k"}) {
		t.Errorf("reverse walk = %v", got)
	}
}

func TestIsClean(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	parts := []string{"/", "/", "a", ".", "..", "b.", ".c", "/"}
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := r.IntN(8); n >= 0; n-- {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		p := b.String()
		want := strings.HasPrefix(p, "/") && filepath.Clean(p) == p
		if got := isClean(p); got != want {
			t.Fatalf("isClean(%q) = %v, want %v", p, got, want)
		}
	}
}

// FuzzCheckPath gives a random pattern, path and method: the index and the naive loop must
// agree, for every operation, with and without recursion, as a path rule and as a command
// rule; and the literals the index files a glob or regex under must be in every text it
// matches. Nothing may panic.
func FuzzCheckPath(f *testing.F) {
	seeds := []struct {
		pattern, path string
	}{
		{"/x/**/*.key", "/x/a.key"},
		{"**/w.env", "/w.env"},
		{"{a,**}/x", "/x"},
		{"/x/{a,**}/y", "/x/y"},
		{"/a[!x]b", "/a/b"},
		{"/a[/]b/c", "/a/b/c"},
		{"/x/**", "/x"},
		{"/var/lib/w/**", "/var/lib/w/a/b"},
		{"/srv/*/w/*.pem", "/srv/a/w/c.pem"},
		{"/a\xff/b", "/a\xfe/b"},
		{"/é/*", "/é/x"},
		{`/a\*/b`, "/a*/b"},
		{`^/var/log/w1-[0-9]+\.log$`, "/var/log/w1-12.log"},
		{`(?i)SECRET`, "/a/secret"},
		{`^\x{FFFD}`, "/\xff"},
		{"/srv/data/", "/srv/data/x"},
		{"secret", "/a/secret/b"},
		{"rm -rf /", "rm -rf /"},
		{"curl * | sh", "curl x | sh"},
		{"/{,a}/**/", "/"},
	}
	for i, s := range seeds {
		f.Add(s.pattern, s.path, uint8(i), uint8(0x1f), i%2 == 0)
	}
	methods := []string{MatchExact, MatchPrefix, MatchGlob, MatchRegex, MatchContains}
	f.Fuzz(func(t *testing.T, pattern, path string, method, ops uint8, home bool) {
		if len(pattern) > 64 || len(path) > 256 {
			return
		}
		checkKeys(t, pattern, path)
		r := Rule{ID: "f", Enabled: true, Type: TypePath, Match: methods[int(method)%len(methods)], Pattern: pattern}
		for i, op := range action.Ops {
			if ops&(1<<i) != 0 {
				r.Operations = append(r.Operations, string(op))
			}
		}
		if len(r.Operations) == 0 {
			r.Operations = []string{string(R)}
		}
		// A second rule with the same pattern and another method, so that buckets hold
		// more than one kind of entry.
		r2 := r
		r2.ID, r2.Match = "g", methods[(int(method)+1+int(method>>4))%len(methods)]
		homeDir := ""
		if home {
			homeDir = "/home/u"
		}
		for _, rules := range [][]Rule{{r}, {r, r2}} {
			d := &Document{Version: 1, HardBlocks: rules}
			if s, err := Compile(d, Options{Home: homeDir}); err == nil {
				ref := newNaive(d, homeDir)
				p := path
				if !strings.HasPrefix(p, "/") {
					p = "/" + p
				}
				for _, op := range append(slices.Clone(action.Ops), "unknown") {
					for _, rec := range []bool{false, true} {
						got, want := hitIDs(s.CheckPath(op, p, rec, nil)), ref.path(op, p, rec)
						if !slices.Equal(got, want) {
							t.Fatalf("CheckPath(%s, %q, recursive=%v) = %v; naive %v; rules %s", op, p, rec, got, want, describe(d))
						}
					}
				}
			}
			cmds := make([]Rule, len(rules))
			for i, r := range rules {
				r.Type, r.Operations = TypeCommand, []string{"execute"}
				cmds[i] = r
			}
			d = &Document{Version: 1, HardBlocks: cmds}
			if s, err := Compile(d, Options{}); err == nil {
				ref := newNaive(d, "")
				norm := []string{strings.Join(strings.Fields(path), " ")}
				got, want := hitIDs(s.CheckCommand(path, norm, nil)), ref.command(path, norm)
				if !slices.Equal(got, want) {
					t.Fatalf("CheckCommand(%q) = %v; naive %v; rules %s", path, got, want, describe(d))
				}
			}
		}
	})
}

// checkKeys: whatever a pattern matches holds every literal taken from the pattern.
func checkKeys(t *testing.T, pattern, text string) {
	t.Helper()
	if doublestar.ValidatePattern(pattern) {
		if m, _ := doublestar.Match(pattern, text); m {
			k := pathGlobKeys(pattern)
			if !strings.HasPrefix(text, k.prefix) || !strings.HasSuffix(text, k.suffix) {
				t.Fatalf("glob %q matches %q, which lacks prefix %q or suffix %q", pattern, text, k.prefix, k.suffix)
			}
			for _, s := range k.subs {
				if !strings.Contains(text, s) {
					t.Fatalf("glob %q matches %q, which lacks %q", pattern, text, s)
				}
			}
			for _, s := range k.segs {
				if !slices.Contains(strings.Split(text, "/"), s) {
					t.Fatalf("glob %q matches %q, which lacks the segment %q", pattern, text, s)
				}
			}
			tg := newTreeGlob(pattern)
			for i := 0; strings.HasPrefix(text, "/") && filepath.Clean(text) == text && i <= len(text); i++ {
				if i < len(text) && text[i] != '/' {
					continue
				}
				dir := text[:i]
				p := dir
				if p == "" {
					p = "/"
				}
				if !tg.couldMatchUnder(pattern, p, dir) {
					t.Fatalf("glob %q matches %q, but couldMatchUnder(%q) = false", pattern, text, p)
				}
			}
		}
	}
	if cmdGlobValid(pattern) && cmdGlobMatch(pattern, text) {
		k := cmdGlobKeys(pattern)
		if !strings.HasPrefix(text, k.prefix) || !strings.HasSuffix(text, k.suffix) {
			t.Fatalf("command glob %q matches %q, which lacks prefix %q or suffix %q", pattern, text, k.prefix, k.suffix)
		}
		for _, s := range k.subs {
			if !strings.Contains(text, s) {
				t.Fatalf("command glob %q matches %q, which lacks %q", pattern, text, s)
			}
		}
	}
	if re, err := regexp.Compile(pattern); err == nil && re.MatchString(text) {
		prefix, inner := regexKeys(pattern)
		if !strings.HasPrefix(text, prefix) || !strings.Contains(text, inner) {
			t.Fatalf("regex %q matches %q, which lacks prefix %q or %q", pattern, text, prefix, inner)
		}
	}
}

// TestConcurrentChecks: a Set is shared by goroutines (run with -race).
func TestConcurrentChecks(t *testing.T) {
	d, queries := benchWorkload(1000)
	s, err := Compile(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]string, len(queries))
	for i, q := range queries {
		want[i] = hitIDs(s.CheckPath(q.op, q.path, false, nil))
	}
	done := make(chan error)
	for w := 0; w < 4; w++ {
		go func() {
			var hits []Hit
			for round := 0; round < 20; round++ {
				for i, q := range queries {
					hits = s.CheckPath(q.op, q.path, round%2 == 0, hits[:0])
					if round%2 == 1 && !slices.Equal(hitIDs(hits), want[i]) {
						done <- fmt.Errorf("%s %s: %v, want %v", q.op, q.path, hitIDs(hits), want[i])
						return
					}
					hits = s.CheckCommand(q.path, []string{q.path}, hits[:0])
				}
			}
			done <- nil
		}()
	}
	for w := 0; w < 4; w++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
