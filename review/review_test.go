package review_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/action"
	"github.com/wardenhq/warden/boundary"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/review"
	"github.com/wardenhq/warden/surface"
	"github.com/wardenhq/warden/verdict"
)

// fixture is a workspace with real symbolic links, a secret directory outside it, and a rule
// set guarding the secret.
type fixture struct {
	dir, ws, secret string
	rules           *boundary.Set
}

const rulesJSON = `{"version":1,"hardBlocks":[
 {"id":"secret","enabled":true,"type":"path","pattern":"SECRET","match":"prefix","operations":["read","write","delete"],"reason":"credentials live here"},
 {"id":"keys","enabled":true,"type":"path","pattern":"SECRET/**/*.key","match":"glob","operations":["read"]},
 {"id":"rm-rf","enabled":true,"type":"command","pattern":"rm -rf *","match":"glob","operations":["execute"],"reason":"no recursive force deletes"},
 {"id":"agents","enabled":true,"type":"path","pattern":"SECRET","match":"prefix","operations":["delegate"]},
 {"id":"off","enabled":false,"type":"path","pattern":"WS/src/","match":"prefix","operations":["write"]}
]}`

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{dir: dir, ws: dir + "/ws", secret: dir + "/secret"}
	for _, d := range []string{f.ws + "/src", f.secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(f.secret+"/token", []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.secret, f.ws+"/link"); err != nil {
		t.Fatal(err)
	}
	doc := strings.NewReplacer("SECRET", f.secret, "WS", f.ws, "DIR", dir).Replace(rulesJSON)
	f.rules, err = boundary.Compile(mustDoc(t, doc), boundary.Options{Home: dir + "/home"})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustDoc(t *testing.T, s string) *boundary.Document {
	t.Helper()
	d, err := boundary.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func quickstart(t testing.TB) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("quickstart.yaml", examples.Quickstart)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fixture) session(t testing.TB, p *policy.Policy, env map[string]string, spec surface.Spec) *review.Session {
	t.Helper()
	if spec.Tenant == "" {
		spec.Tenant = "default"
	}
	if spec.Model == "" {
		// A session runs a model Scout certifies (a policy without models ignores it), so
		// that a customer's session keeps its role's tools rather than the read-only route.
		spec.Model = "google/gemini-3.8-flash"
	}
	sf, err := surface.Open(p.Env(policy.MapLookup(env)), spec)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := action.NewResolver(f.ws, f.dir+"/home")
	if err != nil {
		t.Fatal(err)
	}
	// Unconfined, so that the hard blocks are what these tests see; TestConfinedToTheWorkspace
	// checks the confinement.
	return &review.Session{ID: "s1", Surface: sf, Paths: paths, Boundaries: f.rules, Unconfined: true}
}

func newReviewer(t testing.TB, now func() time.Time) *review.Reviewer {
	t.Helper()
	r, err := review.New(review.Options{Key: []byte("0123456789abcdef0123456789abcdef"), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type want struct {
	decision verdict.Decision
	codes    []verdict.Code
	rules    []string
	effects  []string // "op path" with WS and SECRET standing for the directories
}

func check(t *testing.T, f *fixture, v review.Verdict, w want) {
	t.Helper()
	if v.Decision != w.decision {
		t.Errorf("decision %s; want %s (%s)", v.Decision, w.decision, v.Summary())
	}
	var codes []verdict.Code
	for _, b := range v.Blockers {
		codes = append(codes, b.Code)
	}
	if !slices.Equal(codes, w.codes) {
		t.Errorf("blockers %v; want %v\n%+v", codes, w.codes, v.Blockers)
	}
	if w.rules != nil && !slices.Equal(v.Rules, w.rules) {
		t.Errorf("rules %v; want %v", v.Rules, w.rules)
	}
	if w.effects != nil {
		r := strings.NewReplacer(f.ws, "WS", f.secret, "SECRET")
		var got []string
		for _, e := range v.Effects {
			s := string(e.Op) + " " + r.Replace(e.Path)
			if e.Recursive {
				s += "/**"
			}
			got = append(got, s)
		}
		if !slices.Equal(got, w.effects) {
			t.Errorf("effects %q; want %q", got, w.effects)
		}
	}
	if (v.Decision == verdict.Deny) != (v.Token == "") {
		t.Errorf("token %q with decision %s: denials carry no token, the rest do", v.Token, v.Decision)
	}
}

// TestBURROWMapping checks each native action against the operations it is judged for. BURROW
// evaluates only writes, patches, shell execution and delegation; Warden evaluates every kind,
// reads and deletes included.
func TestBURROWMapping(t *testing.T) {
	f := newFixture(t)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	r := newReviewer(t, nil)
	tests := []struct {
		name string
		tool string
		args map[string]any
		want want
	}{
		{"files_write inside the workspace", "files_write", map[string]any{"path": "src/a.go", "content": "x"},
			want{decision: verdict.Allow, effects: []string{"write WS/src/a.go"}}},
		{"files_write through a link to the secret", "files_write", map[string]any{"path": "link/token", "content": "x"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock}, rules: []string{"secret"}, effects: []string{"write SECRET/token"}}},
		{"files_edit reads and writes", "files_edit", map[string]any{"path": "link/token", "old": "a", "new": "b"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock, review.CodeHardBlock}, effects: []string{"read SECRET/token", "write SECRET/token"}}},
		{"files_read: a read BURROW never checks", "files_read", map[string]any{"path": "../secret/token"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock}, effects: []string{"read SECRET/token"}}},
		{"Read (Claude Code's name) maps to files_read", "Read", map[string]any{"file_path": "link/x.key"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock, review.CodeHardBlock}, rules: []string{"secret", "keys"}}},
		{"files_list", "files_list", map[string]any{"path": "link"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock}, effects: []string{"read SECRET"}}},
		// A recursive read matches every rule that could match something below it; then what
		// is really below is looked at: here the secret itself, which holds no *.key file.
		{"files_find under the secret", "files_find", map[string]any{"path": ".", "pattern": "link/**/*.txt"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock}, rules: []string{"secret"}, effects: []string{"read SECRET/**"}}},
		{"Grep reads its path recursively", "Grep", map[string]any{"pattern": "password", "path": "src"},
			want{decision: verdict.Allow, effects: []string{"read WS/src/**"}}},
		{"a recursive read that could reach a *.key file", "Grep", map[string]any{"pattern": "password", "path": ".."},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock, review.CodeHardBlock}, rules: []string{"secret", "keys"}}},
		{"files_delete: a delete BURROW never checks", "files_delete", map[string]any{"path": "link/token"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock, verdict.ApprovalRequired}, effects: []string{"delete SECRET/token"}}},
		{"git_status reads the repository", "git_status", map[string]any{"cwd": "src"},
			want{decision: verdict.Allow, effects: []string{"read WS/src/**"}}},
		{"spawn_subagent delegates at its root", "spawn_subagent", map[string]any{"root": "link", "task": "t"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock}, rules: []string{"agents"}, effects: []string{"delegate SECRET"}}},
		{"a disabled rule blocks nothing", "files_write", map[string]any{"path": "src/b.go", "content": ""},
			want{decision: verdict.Allow}},
		{"net_fetch has no path", "net_fetch", map[string]any{"url": "https://example.com/"},
			want{decision: verdict.Allow, effects: []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, f, r.Review(s, tt.tool, tt.args), tt.want)
		})
	}
}

func TestShellAndPatch(t *testing.T) {
	f := newFixture(t)
	p := quickstart(t)
	person := f.session(t, p, nil, surface.Spec{Role: "person"})
	r := newReviewer(t, nil)
	if err := os.WriteFile(f.ws+"/a.log", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.secret+"/token", f.ws+"/b.log"); err != nil {
		t.Fatal(err)
	}
	patchDeletingSecret := "diff --git a/link/token b/link/token\ndeleted file mode 100644\nindex 1111111..0000000\n--- a/link/token\n+++ /dev/null\n@@ -1 +0,0 @@\n-t\n"
	tests := []struct {
		name string
		tool string
		args map[string]any
		want want
	}{
		{"plain data is not an effect", "Bash", map[string]any{"command": "echo 'rm -rf /' && grep rm notes.txt"},
			want{decision: verdict.Allow, effects: []string{"execute WS", "read WS/notes.txt"}}},
		{"a read through a link, in a pipeline", "Bash", map[string]any{"command": "cat link/token | wc -c"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock}, rules: []string{"secret"}}},
		{"a redirect into the secret", "shell_exec", map[string]any{"command": "date > " + "link/out"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock}}},
		// (a delete also meets the quickstart's approval gate; the hard block denies first)
		{"cd is tracked", "Bash", map[string]any{"command": "cd link && rm token"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock, verdict.ApprovalRequired}}},
		{"the command rule matches the normalised argv", "Bash", map[string]any{"command": `/bin/"r""m" -rf build`},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock, verdict.ApprovalRequired}, rules: []string{"rm-rf"}}},
		{"inside bash -c", "Bash", map[string]any{"command": `bash -c 'rm -rf build'`},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock, verdict.ApprovalRequired}, rules: []string{"rm-rf"}}},
		{"inline interpreter code asks a person", "Bash", map[string]any{"command": `python3 -c 'import os; os.remove("x")'`},
			want{decision: verdict.Ask, codes: []verdict.Code{review.CodeUnknownEffect}}},
		{"a program from a variable asks", "Bash", map[string]any{"command": `$TOOL --flag`},
			want{decision: verdict.Ask, codes: []verdict.Code{review.CodeUnknownEffect}}},
		{"a command that does not parse is denied", "Bash", map[string]any{"command": "echo 'unterminated"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeUnparseableCmd}}},
		{"a glob is expanded against the file system", "Bash", map[string]any{"command": "cat *.log"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock}, effects: []string{"execute WS", "read WS", "read WS/a.log", "read SECRET/token"}}},
		{"a glob that matches nothing is passed as written", "Bash", map[string]any{"command": "cat *.txt"},
			want{decision: verdict.Allow, effects: []string{"execute WS", "read WS", "read WS/*.txt"}}},
		{"a patch deleting through a link", "files_patch", map[string]any{"patch": patchDeletingSecret},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeHardBlock, verdict.ApprovalRequired}, effects: []string{"delete SECRET/token"}}},
		{"a patch that does not parse is denied", "files_patch", map[string]any{"patch": "@@ -1 +1 @@\n-a\n+b\n"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeUnparseablePat}}},
		{"missing input", "files_write", map[string]any{"content": "x"},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeInvalidInput}}},
		{"input of the wrong type", "Bash", map[string]any{"command": 42.0},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeInvalidInput}}},
		{"a tool outside the surface", "NotebookEdit", map[string]any{},
			want{decision: verdict.Deny, codes: []verdict.Code{verdict.PermissionDenied}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, f, r.Review(person, tt.tool, tt.args), tt.want)
		})
	}
}

func TestNobodyToAsk(t *testing.T) {
	f := newFixture(t)
	p := quickstart(t)
	r := newReviewer(t, nil)
	// A coworker has no approval channel: what would ask a person is refused.
	reviewer := f.session(t, p, nil, surface.Spec{Role: "coworker", Profile: "reviewer"})
	v := r.Review(reviewer, "files_read", map[string]any{"path": "src/a.go"})
	check(t, f, v, want{decision: verdict.Allow})
	v = r.Review(reviewer, "shell_exec", map[string]any{"command": "ls"})
	check(t, f, v, want{decision: verdict.Deny, codes: []verdict.Code{verdict.PermissionDenied}})
	// A child of a person's chat opened as person, under a coworker: no channel either.
	parent := f.session(t, p, nil, surface.Spec{Role: "person"})
	child, err := parent.Surface.Child("person", "")
	if err != nil {
		t.Fatal(err)
	}
	if !child.ApprovalChannel() {
		t.Fatal("a person's child should keep the channel")
	}
	cs := *parent
	cs.Surface = child
	v = r.Review(&cs, "Bash", map[string]any{"command": "node -e 'x()'"})
	check(t, f, v, want{decision: verdict.Ask, codes: []verdict.Code{review.CodeUnknownEffect}})
}

func TestInvalidStoredRulesBlockEverything(t *testing.T) {
	f := newFixture(t)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	// A stored document that does not validate (an unknown match method). BURROW falls back to
	// no rules; Warden blocks every action until the rules are fixed.
	s.Boundaries = boundary.Load([]byte(`{"version":1,"hardBlocks":[{"id":"x","enabled":true,"type":"path","pattern":"/x","match":"globs","operations":["read"]}]}`), boundary.Options{})
	r := newReviewer(t, nil)
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"files_read", map[string]any{"path": "src/a.go"}},
		{"Bash", map[string]any{"command": "ls"}},
		{"net_fetch", map[string]any{"url": "https://example.com"}},
	} {
		v := r.Review(s, call.tool, call.args)
		if v.Decision != verdict.Deny || len(v.Blockers) == 0 || v.Blockers[0].Code != review.CodeBoundaryInvalid {
			t.Errorf("%s: %s; want deny with boundary_config_invalid", call.tool, v.Summary())
		}
	}
}

func TestConstraintsOnTheScoutShopifyTool(t *testing.T) {
	p, err := policy.Parse("scout.yaml", examples.Scout)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.rules = nil
	r := newReviewer(t, nil)
	const tool = "mcp__shopify__shopify_admin_graphql"
	read := map[string]any{"query": "{ shop { name } }"}
	mutation := map[string]any{"query": "mutation { productDelete(input: {id: 1}) { deletedProductId } }"}
	tests := []struct {
		name string
		env  map[string]string
		args map[string]any
		want want
	}{
		{"a read runs freely", nil, read, want{decision: verdict.Allow}},
		{"a mutation without SHOPIFY_ALLOW_WRITES is refused", nil, mutation,
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeConstraint, review.CodeConstraint}}},
		{"with writes on, a mutation asks", map[string]string{"SHOPIFY_ALLOW_WRITES": "yes"}, mutation,
			want{decision: verdict.Ask, codes: []verdict.Code{review.CodeConstraint}}},
		{"with approvals off, it runs on the switch alone", map[string]string{"SHOPIFY_ALLOW_WRITES": "1", "REQUIRE_WRITE_APPROVAL": "false"}, mutation,
			want{decision: verdict.Allow}},
		{"a query without its argument cannot be judged", nil, map[string]any{},
			want{decision: verdict.Deny, codes: []verdict.Code{review.CodeConstraint, review.CodeConstraint}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := f.session(t, p, tt.env, surface.Spec{Role: "person", Tenant: "acme"})
			check(t, f, r.Review(s, tool, tt.args), tt.want)
		})
	}
}

func TestGateInTheVerdict(t *testing.T) {
	p, err := policy.Parse("scout.yaml", examples.Scout)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.rules = nil
	r := newReviewer(t, nil)
	s := f.session(t, p, nil, surface.Spec{Role: "person", Tenant: "acme"})
	check(t, f, r.Review(s, "mcp__github__github_commit_files", map[string]any{}),
		want{decision: verdict.Deny, codes: []verdict.Code{verdict.SwitchOff}})
	check(t, f, r.Review(s, "mcp__sheets__sheets_append", map[string]any{}),
		want{decision: verdict.Ask, codes: []verdict.Code{verdict.ApprovalRequired}})
}

func TestTokens(t *testing.T) {
	f := newFixture(t)
	p := quickstart(t)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	r := newReviewer(t, clock)
	s := f.session(t, p, nil, surface.Spec{Role: "person"})
	args := map[string]any{"path": "src/a.go", "content": "x"}
	v := r.Review(s, "files_write", args)
	if v.Decision != verdict.Allow || v.Token == "" {
		t.Fatalf("%s; want an allowed, signed verdict", v.Summary())
	}
	ran := 0
	run := func(*action.Action) error { ran++; return nil }

	if _, err := r.Execute(s, v.Token, "files_write", args, run); err != nil || ran != 1 {
		t.Fatalf("a good token: %v (ran %d)", err, ran)
	}

	other := *s
	other.ID = "s2"
	otherPolicy := f.session(t, mustPolicy(t, string(examples.Quickstart)+"\n# changed\n"), nil, surface.Spec{Role: "person"})
	otherRules := *s
	otherRules.Boundaries = boundary.Empty()
	stranger, err := review.New(review.Options{Key: []byte("another key, another deployment"), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	strangerToken := stranger.Review(s, "files_write", args).Token
	ask := r.Review(s, "Bash", map[string]any{"command": "python3 -c 'x'"})
	tampered := v.Token[:len(v.Token)-2] + "xx"

	tests := []struct {
		name    string
		session *review.Session
		token   string
		tool    string
		args    map[string]any
		later   time.Duration
		want    string
	}{
		{"fabricated", s, "wrv1.eyJzIjoiczEifQ.AAAA", "files_write", args, 0, "signature does not match"},
		{"altered", s, tampered, "files_write", args, 0, "signature does not match"},
		{"signed with another key", s, strangerToken, "files_write", args, 0, "signature does not match"},
		{"not a token", s, "allow", "files_write", args, 0, "not a review token"},
		{"another session", &other, v.Token, "files_write", args, 0, "another session"},
		{"another call", s, v.Token, "files_write", map[string]any{"path": "src/b.go", "content": "x"}, 0, "different call"},
		{"another tool", s, v.Token, "files_edit", args, 0, "different call"},
		{"an older policy revision", otherPolicy, v.Token, "files_write", args, 0, "policy revision"},
		{"changed hard blocks", &otherRules, v.Token, "files_write", args, 0, "hard-block rules changed"},
		{"expired", s, v.Token, "files_write", args, review.DefaultTTL + time.Second, "expired"},
		{"an ask is not an allow", s, ask.Token, "Bash", map[string]any{"command": "python3 -c 'x'"}, 0, "not allow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Add(tt.later)
			before := ran
			got, err := r.Execute(tt.session, tt.token, tt.tool, tt.args, run)
			if !errors.Is(err, review.ErrToken) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Execute: %v; want a refused token mentioning %q", err, tt.want)
			}
			if ran != before {
				t.Fatal("the call ran")
			}
			if got.Decision != verdict.Deny || got.Blockers[0].Code != review.CodeTokenInvalid {
				t.Errorf("verdict %s; want deny with review_token_invalid", got.Summary())
			}
		})
	}
}

func TestExecuteReviewsAgain(t *testing.T) {
	// Between the review and the execution, a link in the workspace is swapped to point at the
	// secret: the token still matches the call, but the second review sees the new target.
	f := newFixture(t)
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	if err := os.MkdirAll(f.ws+"/out", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.ws+"/out", f.ws+"/dest"); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"path": "dest/token", "content": "x"}
	v := r.Review(s, "files_write", args)
	if v.Decision != verdict.Allow {
		t.Fatalf("first review: %s", v.Summary())
	}
	if err := os.Remove(f.ws + "/dest"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.secret, f.ws+"/dest"); err != nil {
		t.Fatal(err)
	}
	got, err := r.Execute(s, v.Token, "files_write", args, func(*action.Action) error {
		t.Fatal("the call ran")
		return nil
	})
	if err == nil || got.Decision != verdict.Deny || got.Blockers[0].Code != review.CodeHardBlock {
		t.Fatalf("Execute after the swap: %v, %s; want the second review to deny", err, got.Summary())
	}
}

func TestEachReviewLooksAfresh(t *testing.T) {
	// A review looks at each path once and remembers it for that review only: a link swapped
	// between two reviews of the same command, in a name the command's glob and tree walk list,
	// is seen by the second.
	f := newFixture(t)
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	if err := os.MkdirAll(f.ws+"/out", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.ws+"/out", f.ws+"/dest"); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"command": "cat dest/token; ls dest/*; grep -r x ."}
	if v := r.Review(s, "shell_exec", args); v.Decision != verdict.Allow {
		t.Fatalf("first review: %s", v.Summary())
	}
	if err := os.Remove(f.ws + "/dest"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.secret, f.ws+"/dest"); err != nil {
		t.Fatal(err)
	}
	if v := r.Review(s, "shell_exec", args); v.Decision != verdict.Deny || !slices.Contains(v.Rules, "secret") {
		t.Fatalf("second review, after the swap: %s %v; want a deny by the rule secret", v.Summary(), v.Rules)
	}
}

func TestZeroVerdictDenies(t *testing.T) {
	var v review.Verdict
	if v.Decision != verdict.Deny {
		t.Fatal("the zero verdict must deny")
	}
}

func mustPolicy(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("quickstart.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCodesOnThePage checks that every code the review can produce is documented (and so
// appears on the permissions page, which lists verdict.Codes).
func TestCodesOnThePage(t *testing.T) {
	documented := map[verdict.Code]bool{}
	for _, c := range verdict.Codes() {
		documented[c.Code] = true
	}
	for _, c := range []verdict.Code{review.CodeHardBlock, review.CodeBoundaryInvalid, review.CodeInvalidInput,
		review.CodeUnparseableCmd, review.CodeUnparseablePat, review.CodeUnresolvable, review.CodeUnsupported,
		review.CodeUnknownEffect, review.CodeConstraint, review.CodeTokenInvalid,
		verdict.PermissionDenied, verdict.NoApprovalChannel, verdict.ApprovalRequired, verdict.SwitchOff} {
		if !documented[c] {
			t.Errorf("%s is not in verdict.Codes(), so the permissions page does not list it", c)
		}
	}
}

func TestApprovedTokens(t *testing.T) {
	f := newFixture(t)
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	args := map[string]any{"command": "python3 -c 'print(1)'"}
	ask := r.Review(s, "Bash", args)
	if ask.Decision != verdict.Ask {
		t.Fatalf("%s; want ask", ask.Summary())
	}
	if _, err := r.Execute(s, ask.Token, "Bash", args, func(*action.Action) error { return nil }); err == nil {
		t.Fatal("an ask token ran without an approval")
	}
	approved, err := r.Approved(s, ask.Token, "Bash", args)
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	if _, err := r.Execute(s, approved, "Bash", args, func(*action.Action) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("an approved call: %v (ran %v)", err, ran)
	}
	if _, err := r.Approved(s, ask.Token, "Bash", map[string]any{"command": "python3 -c 'evil()'"}); !errors.Is(err, review.ErrToken) {
		t.Errorf("approving another call: %v; want a refused token", err)
	}
	allow := r.Review(s, "files_read", map[string]any{"path": "src/a.go"})
	if _, err := r.Approved(s, allow.Token, "files_read", map[string]any{"path": "src/a.go"}); !errors.Is(err, review.ErrToken) {
		t.Errorf("approving an allow: %v; want a refused token", err)
	}
	// An approval does not survive a second review that denies: the rules changed underneath.
	s.Boundaries = boundary.Load([]byte(`{"version":1,"hardBlocks":[]}`), boundary.Options{})
	approved2, err := r.Approved(s, r.Review(s, "Bash", args).Token, "Bash", args)
	if err != nil {
		t.Fatal(err)
	}
	s.Boundaries = boundary.Load([]byte(`not json`), boundary.Options{})
	if _, err := r.Execute(s, approved2, "Bash", args, func(*action.Action) error { t.Fatal("ran"); return nil }); err == nil {
		t.Error("an approved token ran after the rules changed")
	}
}

func TestConfinedToTheWorkspace(t *testing.T) {
	f := newFixture(t)
	f.rules = nil
	r := newReviewer(t, nil)
	s := f.session(t, quickstart(t), nil, surface.Spec{Role: "person"})
	s.Unconfined = false
	tests := []struct {
		tool string
		args map[string]any
		want verdict.Decision
	}{
		{"files_read", map[string]any{"path": "src/a.go"}, verdict.Allow},
		{"files_read", map[string]any{"path": "link/token"}, verdict.Deny}, // a link out of it
		{"files_write", map[string]any{"path": "../secret/x", "content": ""}, verdict.Deny},
		{"Glob", map[string]any{"pattern": "/etc/**/*.conf"}, verdict.Deny},
		{"git_status", map[string]any{"cwd": "/"}, verdict.Deny},
		{"shell_exec", map[string]any{"command": "ls", "cwd": "/tmp"}, verdict.Deny},
		// A command's own effects are the sandbox's to confine: reading /etc/hostname from the
		// workspace is not refused here.
		{"shell_exec", map[string]any{"command": "cat /etc/hostname"}, verdict.Allow},
	}
	for _, tt := range tests {
		v := r.Review(s, tt.tool, tt.args)
		if v.Decision != tt.want {
			t.Errorf("%s %v: %s; want %s", tt.tool, tt.args, v.Summary(), tt.want)
		}
		if tt.want == verdict.Deny && !slices.ContainsFunc(v.Blockers, func(b review.Blocker) bool { return b.Code == review.CodeOutsideWorkspace }) {
			t.Errorf("%s %v: %s; want outside_workspace", tt.tool, tt.args, v.Summary())
		}
	}
}
