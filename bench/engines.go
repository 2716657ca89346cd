package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cedar-policy/cedar-go"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/wardenhq/warden/boundary"
)

// An engine answers the workload's queries: which rules block this query? check returns the
// IDs of the rules, sorted; it is what is timed, so it does the whole decision the engine
// does for a caller, and no more.
type engine struct {
	name  string
	check func(q query) ([]string, error)
}

// engineNames are the engines, in the tables' order; the first is the baseline.
var engineNames = []string{"naive Go loop", "Warden boundary index", "OPA, rules as data", "OPA, one rule per block", "cedar-go, one forbid per rule"}

// newEngines builds every engine for d. Compiling is not timed: each engine is used as its
// documentation says it should be, compiled (prepared) once and evaluated per query.
func newEngines(ctx context.Context, d *boundary.Document) ([]engine, error) {
	nv := newNaive(d)
	set, err := boundary.Compile(d, boundary.Options{})
	if err != nil {
		return nil, fmt.Errorf("boundary: %w", err)
	}
	opaData, err := newOPAData(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("OPA, rules as data: %w", err)
	}
	opaRules, err := newOPARules(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("OPA, one rule per block: %w", err)
	}
	cd, err := newCedar(d)
	if err != nil {
		return nil, fmt.Errorf("cedar-go: %w", err)
	}
	var hits []boundary.Hit
	return []engine{
		{engineNames[0], func(q query) ([]string, error) {
			ids := nv.check(q.op, q.path, nil)
			slices.Sort(ids)
			return ids, nil
		}},
		{engineNames[1], func(q query) ([]string, error) {
			// hits is reused, as the gateway reuses it; the IDs are what the others give.
			hits = set.CheckPath(q.op, q.path, false, hits[:0])
			if len(hits) == 0 {
				return nil, nil
			}
			ids := make([]string, len(hits))
			for i, h := range hits {
				ids[i] = h.Rule.ID
			}
			slices.Sort(ids)
			return ids, nil
		}},
		{engineNames[2], opaData},
		{engineNames[3], opaRules},
		{engineNames[4], cd},
	}, nil
}

// opaModuleData is the rules-as-data form: one Rego policy that iterates over data.rules.
// glob.match with "/" as its delimiter is the closest Rego has to doublestar: "*" stops at
// "/", "**" crosses it.
const opaModuleData = `package hb

deny contains r.id if {
	some r in data.rules
	input.op in r.ops
	matches(r, input.path)
}

matches(r, p) if {
	r.match == "exact"
	p == r.pattern
}

matches(r, p) if {
	r.match == "prefix"
	startswith(p, r.pattern)
}

matches(r, p) if {
	r.match == "glob"
	glob.match(r.pattern, ["/"], p)
}

matches(r, p) if {
	r.match == "contains"
	contains(p, r.pattern)
}

matches(r, p) if {
	r.match == "regex"
	regex.match(r.pattern, p)
}
`

func newOPAData(ctx context.Context, d *boundary.Document) (func(query) ([]string, error), error) {
	rules := make([]any, len(d.HardBlocks))
	for i, r := range d.HardBlocks {
		ops := make([]any, len(r.Operations))
		for j, op := range r.Operations {
			ops[j] = op
		}
		rules[i] = map[string]any{"id": r.ID, "match": r.Match, "pattern": r.Pattern, "ops": ops}
	}
	pq, err := rego.New(rego.Query("data.hb.deny"), rego.Module("hb.rego", opaModuleData),
		rego.Store(inmem.NewFromObject(map[string]any{"rules": rules}))).PrepareForEval(ctx)
	if err != nil {
		return nil, err
	}
	return opaCheck(ctx, pq), nil
}

// opaRegoRule is one hard block as a static Rego rule, the form OPA indexes best.
func opaRegoRule(r boundary.Rule) string {
	ops := make([]string, len(r.Operations))
	for i, op := range r.Operations {
		ops[i] = fmt.Sprintf("%q", op)
	}
	var cond string
	switch r.Match {
	case boundary.MatchExact:
		cond = fmt.Sprintf("input.path == `%s`", r.Pattern)
	case boundary.MatchPrefix:
		cond = fmt.Sprintf("startswith(input.path, `%s`)", r.Pattern)
	case boundary.MatchGlob:
		cond = fmt.Sprintf(`glob.match(`+"`%s`"+`, ["/"], input.path)`, r.Pattern)
	case boundary.MatchContains:
		cond = fmt.Sprintf("contains(input.path, `%s`)", r.Pattern)
	case boundary.MatchRegex:
		cond = fmt.Sprintf("regex.match(`%s`, input.path)", r.Pattern)
	}
	return fmt.Sprintf("deny contains %q if {\n\tinput.op in {%s}\n\t%s\n}\n", r.ID, strings.Join(ops, ", "), cond)
}

func newOPARules(ctx context.Context, d *boundary.Document) (func(query) ([]string, error), error) {
	var b strings.Builder
	b.WriteString("package hb\n\n")
	for _, r := range d.HardBlocks {
		b.WriteString(opaRegoRule(r))
	}
	pq, err := rego.New(rego.Query("data.hb.deny"), rego.Module("hb.rego", b.String())).PrepareForEval(ctx)
	if err != nil {
		return nil, err
	}
	return opaCheck(ctx, pq), nil
}

// opaCheck evaluates pq with the query as input, given already as an AST value so that OPA
// does not convert Go values per query, and reads the set of rule IDs it returns.
func opaCheck(ctx context.Context, pq rego.PreparedEvalQuery) func(query) ([]string, error) {
	return func(q query) ([]string, error) {
		in := ast.NewObject(
			[2]*ast.Term{ast.StringTerm("op"), ast.StringTerm(string(q.op))},
			[2]*ast.Term{ast.StringTerm("path"), ast.StringTerm(q.path)})
		rs, err := pq.Eval(ctx, rego.EvalParsedInput(in))
		if err != nil {
			return nil, err
		}
		if len(rs) != 1 || len(rs[0].Expressions) != 1 {
			return nil, fmt.Errorf("%d results for %s %s, want one", len(rs), q.op, q.path)
		}
		set, ok := rs[0].Expressions[0].Value.([]any)
		if !ok {
			return nil, fmt.Errorf("deny is %T for %s %s, want a set", rs[0].Expressions[0].Value, q.op, q.path)
		}
		var ids []string
		for _, v := range set {
			id, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("deny holds %T for %s %s, want strings", v, q.op, q.path)
			}
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return ids, nil
	}
}

// cedarLike is a doublestar glob, prefix or contains pattern as a Cedar like pattern. Cedar's
// "*" crosses "/", so "**" and "*" both become "*": wider than doublestar. A regex
// ^/var/log/<w><i>-[0-9]+\.log$ becomes "/var/log/<w><i>-*.log", wider too: Cedar has no
// regular expressions. The workload's queries never fall in the difference, and the agreement
// check would say so if one did.
func cedarLike(r boundary.Rule) (string, error) {
	esc := func(s string) string { return strings.ReplaceAll(s, "*", `\*`) }
	switch r.Match {
	case boundary.MatchPrefix:
		return esc(r.Pattern) + "*", nil
	case boundary.MatchContains:
		return "*" + esc(r.Pattern) + "*", nil
	case boundary.MatchGlob:
		if strings.ContainsAny(r.Pattern, "?[{\\") {
			return "", fmt.Errorf("rule %s: the glob %s has no Cedar form", r.ID, r.Pattern)
		}
		return strings.ReplaceAll(r.Pattern, "**", "*"), nil
	case boundary.MatchRegex:
		inner, ok := strings.CutPrefix(r.Pattern, "^")
		inner, ok2 := strings.CutSuffix(inner, `-[0-9]+\.log$`)
		if !ok || !ok2 || strings.ContainsAny(inner, `\.*+?[](){}|^$`) {
			return "", fmt.Errorf("rule %s: the regex %s has no Cedar form", r.ID, r.Pattern)
		}
		return inner + "-*.log", nil
	}
	return "", fmt.Errorf("rule %s: match %s has no Cedar like form", r.ID, r.Match)
}

// cedarPolicy is one hard block as a Cedar forbid.
func cedarPolicy(r boundary.Rule) (string, error) {
	acts := make([]string, len(r.Operations))
	for i, op := range r.Operations {
		acts[i] = fmt.Sprintf("Action::%q", op)
	}
	var cond string
	if r.Match == boundary.MatchExact {
		cond = fmt.Sprintf("context.path == %q", r.Pattern)
	} else {
		like, err := cedarLike(r)
		if err != nil {
			return "", err
		}
		cond = fmt.Sprintf("context.path like %q", like)
	}
	return fmt.Sprintf("forbid (principal, action in [%s], resource) when { %s };", strings.Join(acts, ", "), cond), nil
}

func newCedar(d *boundary.Document) (func(query) ([]string, error), error) {
	ps := cedar.NewPolicySet()
	var allow cedar.Policy
	if err := allow.UnmarshalCedar([]byte("permit (principal, action, resource);")); err != nil {
		return nil, err
	}
	ps.Add("allow-all", &allow) // so that a query no forbid matches is allowed, with no reason
	for _, r := range d.HardBlocks {
		text, err := cedarPolicy(r)
		if err != nil {
			return nil, err
		}
		var p cedar.Policy
		if err := p.UnmarshalCedar([]byte(text)); err != nil {
			return nil, fmt.Errorf("rule %s: %s: %w", r.ID, text, err)
		}
		ps.Add(cedar.PolicyID(r.ID), &p)
	}
	principal := cedar.NewEntityUID("Agent", "bench")
	resource := cedar.NewEntityUID("Path", "any")
	return func(q query) ([]string, error) {
		dec, diag := cedar.Authorize(ps, nil, cedar.Request{
			Principal: principal,
			Action:    cedar.NewEntityUID("Action", cedar.String(q.op)),
			Resource:  resource,
			Context:   cedar.NewRecord(cedar.RecordMap{"path": cedar.String(q.path)}),
		})
		if len(diag.Errors) > 0 {
			return nil, fmt.Errorf("%s %s: %v", q.op, q.path, diag.Errors[0])
		}
		if dec == cedar.Allow {
			return nil, nil
		}
		ids := make([]string, len(diag.Reasons))
		for i, r := range diag.Reasons {
			ids[i] = string(r.PolicyID)
		}
		slices.Sort(ids)
		return ids, nil
	}, nil
}
