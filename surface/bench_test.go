package surface_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/surface"
)

// The benchmark's policy is generated: "a policy with 500 tools and 50 roles". Its shape follows
// a large deployment: 23 built-ins, 8 platform servers and 40 connectors (500 tools in all, with
// every effect, a read table, conditions on switches and facts, joint tools, opt-in tools, tools
// riding on skills, and approval gates of every kind), 10 switches, the 7 standard roles and 43
// declared ones (ceilings mixing exact names, globs, server:, platform:, connector:, effect
// filters and negations; every kind of credential set), 30 profiles and 20 tenants. The seed is
// fixed, so every run measures the same policy.

const (
	benchTools      = 500
	benchConnectors = 40
	benchRoles      = 43 // declared, besides the 7 standard roles
	benchTenants    = 20
)

// benchEnv is the host environment of the benchmark: some switches on, some off, and host
// credentials for every third connector.
func benchEnv() map[string]string {
	env := map[string]string{
		"FEAT_A": "true", "FEAT_B": "yes", "FEAT_D": "on", "REGION": "us", "WRITES_OK": "1",
	}
	for i := 0; i < benchConnectors; i += 3 {
		env[fmt.Sprintf("C%02d_TOKEN", i)] = "token"
		env[fmt.Sprintf("C%02d_ACCOUNT", i)] = "account"
	}
	return env
}

type genTool struct {
	name, effect string
	grantable    bool // in the read table (connectors) and not joint, opt-in or gated
}

// genPolicy writes the benchmark's policy.
func genPolicy() string {
	r := rand.New(rand.NewPCG(500, 50))
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	pick := func(list []string) string { return list[r.IntN(len(list))] }
	chance := func(pct int) bool { return r.IntN(100) < pct }

	w("version: 1")
	w("name: Benchmark")
	w("description: A generated policy with 500 tools and 50 roles.")
	w("limits: {runBudgetUsd: 2, maxTurns: 20, maxConcurrentRuns: 2, maxDelegationDepth: 0, maxAttempts: 1}")

	w("switches:")
	for _, s := range []string{
		"{name: FEAT_A, rule: exactly-true}",
		"{name: FEAT_B, rule: true-1-yes}",
		"{name: FEAT_C, rule: on-unless-false-0-no}",
		"{name: FEAT_D, rule: non-empty}",
		`{name: FEAT_E, on: ["1", "true"]}`,
		`{name: FEAT_F, off: ["0", "off"]}`,
		"{name: REGION, modes: [eu, us, apac], default: eu}",
		"{name: WRITES_OK, rule: true-1-yes}",
		"{name: SENDS_OK, rule: exactly-true}",
		"{name: BETA_TOOLS, rule: non-empty}",
	} {
		w("  - %s", s)
	}
	conds := []string{
		"FEAT_A", "FEAT_B && !FEAT_C", "REGION == us", "REGION != apac", "FEAT_D || FEAT_E",
		"!FEAT_F", "BETA_TOOLS", "owner", "approval_channel", "skills", "harness == default",
	}

	w("harnesses:")
	w("  - {id: batch, when: FEAT_E, builtins: false, roles: [read_only, coworker]}")

	skills := []string{"sk-0", "sk-1", "sk-2", "sk-3", "sk-4", "sk-5"}
	w("skills:")
	for _, s := range skills {
		w("  - {id: %s}", s)
	}

	// Built-ins: every native kind under its own name, and the Claude Code names.
	var builtins []genTool
	w("builtins:")
	kinds := []string{"files_read", "files_list", "files_find", "files_search", "files_inspect", "files_write",
		"files_edit", "files_patch", "files_delete", "shell_exec", "spawn_subagent", "git_status", "git_diff",
		"net_fetch", "net_search"}
	for _, k := range kinds {
		w("  - name: %s", k)
		builtins = append(builtins, genTool{name: k, effect: string(policy.NativeKinds[k])})
	}
	for _, bt := range [][2]string{{"Bash", "shell_exec"}, {"Read", "files_read"}, {"Write", "files_write"},
		{"Edit", "files_edit"}, {"Glob", "files_find"}, {"Grep", "files_search"}, {"WebSearch", "net_search"},
		{"WebFetch", "net_fetch"}} {
		w("  - {name: %s, kind: %s}", bt[0], bt[1])
		builtins = append(builtins, genTool{name: bt[0], effect: string(policy.NativeKinds[bt[1]])})
	}
	n := len(builtins)

	// Platform servers: 40 tools.
	var memory, project []genTool
	w("servers:")
	w("  - id: memory")
	w("    tools:")
	for i, e := range []string{"read", "read", "read", "write", "write", "read", "write", "write"} {
		name := fmt.Sprintf("mcp__memory__m%d", i)
		if i == 7 {
			w("      - {name: %s, effect: %s, gate: {approval: true, withoutChannel: absent}}", name, e)
		} else {
			w("      - {name: %s, effect: %s}", name, e)
		}
		memory = append(memory, genTool{name: name, effect: e})
	}
	w("  - id: project")
	w("    tools:")
	for i, e := range []string{"read", "read", "write", "write", "delete", "write"} {
		name := fmt.Sprintf("mcp__project__p%d", i)
		w("      - {name: %s, effect: %s}", name, e)
		project = append(project, genTool{name: name, effect: e})
	}
	w("  - id: goals")
	w("    when: goals")
	w("    tools:")
	for i, e := range []string{"read", "write", "write", "write"} {
		w("      - {name: mcp__goals__g%d, effect: %s}", i, e)
	}
	w("  - id: transcripts")
	w("    effect: read")
	w("    tools: [{name: mcp__transcripts__search}, {name: mcp__transcripts__read}, {name: mcp__transcripts__list}]")
	w("  - id: skills")
	w("    when: skills")
	w("    effect: read")
	w(`    tools: [{name: mcp__skills__load, skill: "*"}, {name: mcp__skills__read_file, skill: "*"}]`)
	w("  - id: team")
	w("    when: coworkers && harness == default")
	w("    tools:")
	for i, e := range []string{"read", "delegate", "read", "read", "write"} {
		w("      - {name: mcp__team__t%d, effect: %s}", i, e)
	}
	w("  - id: sandbox")
	w("    when: FEAT_D")
	w("    tools:")
	w("      - {name: mcp__sandbox__bash, effect: execute}")
	w("      - {name: mcp__sandbox__read, effect: read}")
	w("      - {name: mcp__sandbox__write, effect: write}")
	w("      - {name: mcp__sandbox__allow_host, effect: write, when: REGION == us, gate: {approval: true, withoutChannel: absent, withoutApprovals: absent}}")
	w("  - id: insights")
	w("    tools:")
	w("      - {name: mcp__insights__i0, effect: read, grantable: true, needs: [c01]}")
	w("      - {name: mcp__insights__i1, effect: read, grantable: true, needs: [c02, c05]}")
	w("      - {name: mcp__insights__i2, effect: read, grantable: true, needs: [c09]}")
	w("      - {name: mcp__insights__i3, effect: read, grantable: true, needs: [c10, c14]}")
	w("      - {name: mcp__insights__i4, effect: write, grantable: true, skill: sk-0}")
	w("      - {name: mcp__insights__i5, effect: read, grantable: true, skill: sk-1}")
	w("      - {name: mcp__insights__i6, effect: write, grantable: true, skill: sk-2, optIn: true}")
	w("      - {name: mcp__insights__i7, effect: delegate, grantable: true, skill: sk-0, handoff: true}")
	n += 8 + 6 + 4 + 3 + 2 + 5 + 4 + 8

	// Connectors: the rest of the 500 tools.
	var grantableConnectors []int
	connTools := make([][]genTool, benchConnectors)
	billing := map[int]bool{}
	per, extra := (benchTools-n)/benchConnectors, (benchTools-n)%benchConnectors
	w("connectors:")
	for i := range benchConnectors {
		id := fmt.Sprintf("c%02d", i)
		grantable := i%4 != 3
		w("  - id: %s", id)
		w("    effect: read")
		w("    grantable: %v", grantable)
		if i%2 == 0 {
			w("    hostEnv: [C%02d_TOKEN, C%02d_ACCOUNT]", i, i)
		} else {
			w("    hostEnv: [C%02d_TOKEN]", i)
		}
		if i%8 == 5 {
			billing[i] = true
			w("    billing: {unit: %s, askAbove: %d}", pick([]string{"usd", "credits"}), 1+r.IntN(50))
		}
		if i%9 == 4 {
			w("    when: %q", pick(conds[:7]))
		}
		if i%6 == 0 {
			w("    withheld:")
			w(`      - {what: Admin tools, reason: They change the account., tools: ["mcp__%s__admin_*"]}`, id)
		}
		if grantable {
			grantableConnectors = append(grantableConnectors, i)
		}
		w("    tools:")
		count := per
		if i < extra {
			count++
		}
		for j := range count {
			name := fmt.Sprintf("mcp__%s__t%02d", id, j)
			var fields []string
			effect := "read"
			if !chance(60) {
				effect = pick([]string{"write", "write", "delete", "send", "spend"})
				fields = append(fields, "effect: "+effect)
				if grantable {
					fields = append(fields, "grantable: false")
				}
			}
			inTable := grantable && effect == "read"
			if chance(10) {
				fields = append(fields, fmt.Sprintf("when: %q", pick(conds)))
				inTable = false
			}
			switch {
			case j == 0 && i%7 == 2:
				fields = append(fields, fmt.Sprintf("needs: [c%02d]", (i+1)%benchConnectors))
				inTable = false
			case inTable && chance(5):
				fields = append(fields, "optIn: true")
				inTable = false
			}
			if effect != "read" && chance(50) {
				var gate []string
				if chance(80) {
					gate = append(gate, "approval: true")
					if chance(30) {
						gate = append(gate, "withoutChannel: absent")
					}
					if chance(20) {
						gate = append(gate, "withoutApprovals: absent")
					}
				}
				if len(gate) == 0 || chance(25) {
					sw := "WRITES_OK"
					if effect == "send" {
						sw = "SENDS_OK"
					}
					gate = append(gate, "requires: "+sw)
				}
				fields = append(fields, "gate: {"+strings.Join(gate, ", ")+"}")
			}
			if len(fields) == 0 {
				w("      - name: %s", name)
			} else {
				w("      - {name: %s, %s}", name, strings.Join(fields, ", "))
			}
			connTools[i] = append(connTools[i], genTool{name: name, effect: effect, grantable: inTable})
		}
	}

	// Roles: the standard ones configured a little, and 43 declared.
	w("roles:")
	w("  - {id: inbound, when: FEAT_B, credentials: [c00, c01]}")
	w(`  - {id: read_only, ceiling: ["builtin:*#read", "server:transcripts", "server:team#read"]}`)
	w(`  - {id: goal_agent, ceiling: ["builtin:*#read", "server:project#read"]}`)

	var allNames []string
	for _, t := range builtins {
		allNames = append(allNames, t.name)
	}
	for _, ts := range connTools {
		for _, t := range ts {
			allNames = append(allNames, t.name)
		}
	}
	selectors := []string{
		"builtin:files_*", "builtin:*#read", "builtin:Bash", "server:memory", "server:project#read",
		"server:team", "platform:*#read", "platform:s*", "connector:c1*", "connector:*#read",
		"connector:c2*#read,write", "mcp__c0*__t0*", "*#read", "mcp__*__t01", "Grep", "WebFetch",
	}
	negations := []string{"!connector:c3*", "!*#send,spend", "!builtin:shell_exec", "!mcp__*__t05", "!server:memory#write"}
	type genRole struct {
		id        string
		grants    bool
		profile   string // none, optional, required
		profileID string // its one profile
	}
	var roles []genRole
	nProfiles := 0
	for k := range benchRoles {
		gr := genRole{id: fmt.Sprintf("r%02d", k), profile: "none"}
		var sels []string
		w("  - id: %s", gr.id)
		switch k % 5 {
		case 0, 4:
			w("    credentials: all")
		case 1:
			w("    credentials: none")
		case 2:
			var ids []string
			for _, c := range r.Perm(benchConnectors)[:1+r.IntN(4)] {
				ids = append(ids, fmt.Sprintf("c%02d", c))
			}
			w("    credentials: [%s]", strings.Join(ids, ", "))
		case 3:
			gr.grants, gr.profile = true, "required"
			w("    credentials: grant")
			w("    grants: true")
			sels = append(sels, "builtin:*#read", "server:project")
		}
		if k == 10 || k == 20 {
			gr.profile = "optional"
			sels = append(sels, "builtin:*#read")
		}
		if gr.profile != "none" {
			gr.profileID = fmt.Sprintf("gp%02d", nProfiles)
			nProfiles++
			w("    profile: %s", gr.profile)
			if gr.grants && nProfiles <= 3 {
				w("    defaultProfile: %s", gr.profileID)
			}
		}
		if k%3 == 0 {
			w("    approvalChannel: true")
		}
		switch {
		case k%11 == 7:
			w("    when: FEAT_C")
		case k%13 == 5:
			w("    when: \"!FEAT_A\"")
		}
		if k == benchRoles-1 {
			// A role like the goal reviewer: nothing at all.
			w("    ceiling: []")
			w("    invariants: {noTools: true, noDelegation: true}")
			roles = append(roles, gr)
			continue
		}
		for range 2 + r.IntN(3) {
			sels = append(sels, pick(selectors))
		}
		for range r.IntN(3) {
			sels = append(sels, pick(allNames))
		}
		for range r.IntN(3) {
			sels = append(sels, pick(negations))
		}
		var forbid []string
		if k%4 == 1 {
			sels, forbid = append(sels, "!*#delete"), append(forbid, "*#delete")
		}
		if k%4 == 2 {
			sels, forbid = append(sels, "!connector:c39"), append(forbid, "connector:c39")
		}
		if !gr.grants && k%6 == 0 {
			w("    limits: {maxDelegationDepth: 1, maxAttempts: 2}")
		}
		slices.Sort(sels)
		sels = slices.Compact(sels)
		w("    ceiling: [%s]", quoteAll(sels))
		if len(forbid) > 0 {
			w("    invariants: {forbid: [%s]}", quoteAll(forbid))
		}
		roles = append(roles, gr)
	}

	// Profiles: coworkers, specialists with grants, and profiles of the declared roles.
	var coworkerPool []string
	for _, t := range slices.Concat(builtins, memory, project) {
		if t.effect != "delete" {
			coworkerPool = append(coworkerPool, t.name)
		}
	}
	var readPool []string
	for _, t := range builtins {
		if t.effect == "read" {
			readPool = append(readPool, t.name)
		}
	}
	grant := func(maxConnectors int) (lines []string, granted []int) {
		perm := r.Perm(len(grantableConnectors))
		for _, gi := range perm[:1+r.IntN(maxConnectors)] {
			granted = append(granted, grantableConnectors[gi])
		}
		slices.Sort(granted)
		var ids, allowances []string
		for _, c := range granted {
			ids = append(ids, fmt.Sprintf("c%02d", c))
			if billing[c] {
				allowances = append(allowances, fmt.Sprintf("c%02d: {perRun: 5, perDay: 20}", c))
			}
		}
		lines = append(lines, fmt.Sprintf("connectors: [%s]", strings.Join(ids, ", ")))
		if len(allowances) > 0 {
			lines = append(lines, fmt.Sprintf("allowance: {%s}", strings.Join(allowances, ", ")))
		}
		if chance(50) {
			lines = append(lines, fmt.Sprintf("skills: [%s]", strings.Join(pickN(r, skills, 1+r.IntN(2)), ", ")))
		}
		return lines, granted
	}
	grantedTools := func(granted []int) []string {
		var out []string
		for _, c := range granted {
			for _, t := range connTools[c] {
				if t.grantable {
					out = append(out, t.name)
				}
			}
		}
		return pickN(r, out, min(len(out), r.IntN(4)))
	}
	var profileIDs []string
	w("profiles:")
	for i := range 10 {
		id := fmt.Sprintf("cw%02d", i)
		profileIDs = append(profileIDs, id)
		w("  - id: %s", id)
		w("    role: coworker")
		w("    tools: [%s]", strings.Join(pickN(r, coworkerPool, 3+r.IntN(5)), ", "))
		if i%3 == 0 {
			w("    limits: {maxDelegationDepth: 1, maxAttempts: 2}")
		}
	}
	for i := range 10 {
		id := fmt.Sprintf("sp%02d", i)
		profileIDs = append(profileIDs, id)
		lines, granted := grant(4)
		w("  - id: %s", id)
		w("    role: specialist")
		w("    tools: [%s]", strings.Join(slices.Concat(pickN(r, coworkerPool, 2+r.IntN(3)), grantedTools(granted)), ", "))
		w("    grant:")
		for _, l := range lines {
			w("      %s", l)
		}
		if i%4 == 0 {
			w("    limits: {maxDelegationDepth: 2, maxAttempts: 3}")
		}
	}
	for _, gr := range roles {
		if gr.profile == "none" {
			continue
		}
		profileIDs = append(profileIDs, gr.profileID)
		w("  - id: %s", gr.profileID)
		w("    role: %s", gr.id)
		tools := pickN(r, readPool, 2+r.IntN(3))
		if !gr.grants {
			w("    tools: [%s]", strings.Join(tools, ", "))
			continue
		}
		lines, granted := grant(3)
		w("    tools: [%s]", strings.Join(slices.Concat(tools, grantedTools(granted)), ", "))
		w("    grant:")
		for _, l := range lines {
			w("      %s", l)
		}
	}

	// Tenants: accounts of three, connections to about half the connectors, some disabled,
	// some shared within the account.
	w("tenants:")
	for i := range benchTenants {
		id := fmt.Sprintf("t%02d", i)
		w("  - id: %s", id)
		w("    account: acct%d", i/3)
		if i == 0 {
			w("    owner: true")
		}
		if i%2 == 0 {
			w("    goals: true")
		}
		if i%3 == 0 {
			w("    skills: [brand-voice]")
		}
		if cw := pickN(r, profileIDs, r.IntN(4)); len(cw) > 0 {
			w("    coworkers: [%s]", strings.Join(cw, ", "))
		}
		w("    connections:")
		for c := range benchConnectors {
			if !chance(50) {
				continue
			}
			line := fmt.Sprintf("{id: %s-c%02d, connector: c%02d", id, c, c)
			if chance(10) {
				line += ", enabled: false"
			}
			if mate := i/3*3 + r.IntN(3); chance(20) && mate != i && mate < benchTenants {
				line += fmt.Sprintf(", sharedWith: [t%02d]", mate)
			}
			w("      - %s}", line)
		}
	}
	return b.String()
}

// pickN returns n distinct elements of list, in a random order.
func pickN(r *rand.Rand, list []string, n int) []string {
	out := make([]string, 0, n)
	for _, i := range r.Perm(len(list))[:n] {
		out = append(out, list[i])
	}
	return out
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

var benchPolicy = sync.OnceValues(func() (*policy.Policy, error) {
	return policy.Parse("bench.yaml", []byte(genPolicy()))
})

// benchSpecs are the sessions the benchmark opens: every role with each of its profiles (or
// none) on every tenant, where the session opens, in a fixed shuffled order so that successive
// iterations change role, tenant and profile.
func benchSpecs(tb testing.TB, env *policy.Env) []surface.Spec {
	tb.Helper()
	p := env.Policy()
	var specs []surface.Spec
	for role := range p.Roles() {
		var profiles []string
		if role.Profile != policy.ProfileRequired {
			profiles = append(profiles, "")
		}
		if role.Profile != policy.ProfileNone {
			for pr := range p.Profiles() {
				if pr.Role == role {
					profiles = append(profiles, pr.ID)
				}
			}
		}
		for tenant := range p.Tenants() {
			for _, pr := range profiles {
				spec := surface.Spec{Role: role.ID, Tenant: tenant.ID, Profile: pr}
				if _, err := surface.Open(env, spec); err == nil {
					specs = append(specs, spec)
				}
			}
		}
	}
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(specs), func(i, j int) { specs[i], specs[j] = specs[j], specs[i] })
	return specs
}

func loadBench(tb testing.TB) (*policy.Env, []surface.Spec) {
	tb.Helper()
	p, err := benchPolicy()
	if err != nil {
		tb.Fatalf("the generated policy does not load:\n%v", err)
	}
	env := p.Env(policy.MapLookup(benchEnv()))
	return env, benchSpecs(tb, env)
}

// TestBenchPolicy checks the generated policy: its size, that sessions of nearly every role
// open, and, for every session the benchmark opens, what checkSurface checks of any surface.
func TestBenchPolicy(t *testing.T) {
	env, specs := loadBench(t)
	p := env.Policy()
	var nRoles, nProfiles, nTenants, nConnectors int
	for range p.Roles() {
		nRoles++
	}
	for range p.Profiles() {
		nProfiles++
	}
	for range p.Tenants() {
		nTenants++
	}
	for s := range p.Servers() {
		if s.Kind == policy.KindConnector {
			nConnectors++
		}
	}
	if p.NumTools() != benchTools || nRoles != 7+benchRoles || nProfiles != 30 || nTenants != benchTenants || nConnectors != benchConnectors {
		t.Fatalf("the generated policy has %d tools, %d roles, %d profiles, %d tenants, %d connectors",
			p.NumTools(), nRoles, nProfiles, nTenants, nConnectors)
	}
	for _, w := range p.Warnings() {
		t.Logf("warning: %v", w)
	}
	opened := map[string]bool{}
	for _, spec := range specs {
		opened[spec.Role] = true
	}
	// Two declared roles exist only when FEAT_C or !FEAT_A; the rest must open somewhere.
	if len(specs) < 500 || len(opened) < 45 {
		t.Fatalf("only %d sessions of %d roles open", len(specs), len(opened))
	}
	t.Logf("%d sessions of %d roles open", len(specs), len(opened))
	if testing.Short() {
		specs = specs[:50]
	}
	for _, spec := range specs {
		s, err := surface.Open(env, spec)
		if err != nil {
			t.Fatal(err)
		}
		checkSurface(t, s)
		if t.Failed() {
			t.Fatalf("in the session %+v", spec)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	env, specs := loadBench(b)
	b.Run("open", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := surface.Open(env, specs[i%len(specs)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open-widest", func(b *testing.B) {
		// A person on the owner's tenant: every credential, the host environment, the widest
		// ceiling; the most connectors live, so the most credentials recorded.
		spec := surface.Spec{Role: "person", Tenant: "t00"}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := surface.Open(env, spec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open+tools", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for i := 0; b.Loop(); i++ {
			s, err := surface.Open(env, specs[i%len(specs)])
			if err != nil {
				b.Fatal(err)
			}
			n += len(s.Tools())
		}
		b.ReportMetric(float64(n)/float64(b.N), "tools/op")
	})
	b.Run("explain-absent", func(b *testing.B) {
		// A tool a declared role's ceiling leaves out: the explanation lists the ceiling.
		s, tool := absentBy(b, env, specs, surface.FilterCeiling)
		b.ReportAllocs()
		for b.Loop() {
			if e := s.Explain(tool); e.Given {
				b.Fatal("given")
			}
		}
	})
}

// absentBy finds a session of a declared role and a tool that filter removes from it.
func absentBy(tb testing.TB, env *policy.Env, specs []surface.Spec, filter surface.Filter) (*surface.Surface, string) {
	tb.Helper()
	for _, spec := range specs {
		if !strings.HasPrefix(spec.Role, "r") {
			continue
		}
		s, err := surface.Open(env, spec)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range s.Absent() {
			if e.Filter == filter {
				return s, e.Tool
			}
		}
	}
	tb.Fatalf("no tool is removed by %s", filter)
	return nil, ""
}

func BenchmarkOpenScout(b *testing.B) {
	p := loadScout(b)
	env := p.Env(policy.MapLookup(nil))
	for _, tt := range []struct {
		name string
		spec surface.Spec
	}{
		{"person", surface.Spec{Role: "person", Tenant: "acme", Model: certifiedScoutModel}},
		{"person_held_back_model", surface.Spec{Role: "person", Tenant: "acme", Model: "claude-haiku-5-5"}},
		{"specialist", surface.Spec{Role: "specialist", Tenant: "acme", Profile: "seo_analyst", Model: certifiedScoutModel}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			if _, err := surface.Open(env, tt.spec); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := surface.Open(env, tt.spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
