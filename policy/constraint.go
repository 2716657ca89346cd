package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"

	"github.com/wardenhq/warden/verdict"
)

// Argument constraints (A8) are CEL expressions over a call, compiled and type-checked when the
// policy loads. An expression sees:
//
//	args      the call's arguments (a map)
//	session   {role, tenant, profile, owner}
//	switches  each switch by name: true/false, its mode, or its number
//
// and must be true for the call to go ahead; otherwise the call is denied or asked, with the
// constraint's message. Expressions are type-checked against the tool's arguments when they are
// known (every built-in's are; a server tool's when it declares args) and against the declared
// switches, so args.ammount, args.path + 1 or switches.TYPO is an error at load.

// argTypes are the types a declared argument may have.
var argTypes = []string{"string", "number", "integer", "boolean", "list", "object", "any"}

// Constraint is one compiled argument constraint.
type Constraint struct {
	// Source is the expression as written.
	Source string
	// Otherwise is Deny or Ask.
	Otherwise verdict.Decision
	Message   string
	Pos       Pos

	prog cel.Program
}

// Activation is what a constraint is evaluated against.
type Activation struct {
	Args     map[string]any
	Session  map[string]any
	Switches map[string]any
}

// Eval reports whether the constraint holds for a call. An error (a missing argument, a type
// mismatch at run time) is returned as such; the caller must treat it as not holding.
func (c *Constraint) Eval(a Activation) (bool, error) {
	out, _, err := c.prog.Eval(map[string]any{"args": a.Args, "session": a.Session, "switches": a.Switches})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok || out.Type() != types.BoolType {
		return false, fmt.Errorf("the constraint gave %v, not true or false", out)
	}
	return b, nil
}

// CEL object types: the checker reads their fields from the policy (a tool's arguments, the
// switches), while at run time the values are plain maps, which CEL selects from by key.
const (
	celArgs     = "warden.Args"
	celSession  = "warden.Session"
	celSwitches = "warden.Switches"
)

// objectTypes is a CEL type provider that knows Warden's object types, over the standard one.
type objectTypes struct {
	types.Provider
	objects map[string]map[string]*types.Type
}

func (o *objectTypes) FindStructType(name string) (*types.Type, bool) {
	if _, ok := o.objects[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return o.Provider.FindStructType(name)
}

func (o *objectTypes) FindStructFieldNames(name string) ([]string, bool) {
	if fields, ok := o.objects[name]; ok {
		return slices.Sorted(maps.Keys(fields)), true
	}
	return o.Provider.FindStructFieldNames(name)
}

func (o *objectTypes) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	fields, ok := o.objects[name]
	if !ok {
		return o.Provider.FindStructFieldType(name, field)
	}
	t, ok := fields[field]
	if !ok {
		return nil, false
	}
	return &types.FieldType{
		Type: t,
		IsSet: func(v any) bool {
			m, ok := v.(map[string]any)
			_, has := m[field]
			return ok && has
		},
		GetFrom: func(v any) (any, error) {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("not an object")
			}
			return m[field], nil
		},
	}, true
}

var celTypeOf = map[string]*types.Type{
	"string":  types.StringType,
	"number":  types.DoubleType,
	"integer": types.IntType,
	"boolean": types.BoolType,
	"list":    types.NewListType(types.DynType),
	"object":  types.NewMapType(types.StringType, types.DynType),
	"any":     types.DynType,
}

// constraintEnv builds the CEL environment for one tool's constraints: args typed by the tool's
// arguments when they are known (so args.ammount is an error at load), session and switches
// typed always.
func (c *compiler) constraintEnv(t *Tool) (*cel.Env, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	objects := map[string]map[string]*types.Type{
		celSession: {"role": types.StringType, "tenant": types.StringType, "profile": types.StringType, "owner": types.BoolType},
	}
	switches := map[string]*types.Type{}
	for _, sw := range c.pol.switches {
		switch sw.Kind {
		case RuleModes:
			switches[sw.Name] = types.StringType
		case RuleInteger:
			switches[sw.Name] = types.IntType
		default:
			switches[sw.Name] = types.BoolType
		}
	}
	objects[celSwitches] = switches
	argsType := types.NewMapType(types.StringType, types.DynType)
	if t.Args != nil {
		fields := map[string]*types.Type{}
		for name, typ := range t.Args {
			fields[name] = celTypeOf[typ]
		}
		objects[celArgs] = fields
		argsType = types.NewObjectType(celArgs)
	}
	return cel.NewEnv(
		cel.CustomTypeProvider(&objectTypes{Provider: reg, objects: objects}),
		cel.Variable("args", argsType),
		cel.Variable("session", types.NewObjectType(celSession)),
		cel.Variable("switches", types.NewObjectType(celSwitches)),
		ext.Strings(),
	)
}

func (c *compiler) compileConstraints(t *Tool, list []ConstraintConfig) []*Constraint {
	if len(list) == 0 {
		return nil
	}
	env, err := c.constraintEnv(t)
	if err != nil {
		c.errorf(t.Pos, "%s: the constraint environment could not be built: %v", t.Name, err)
		return nil
	}
	var out []*Constraint
	for i := range list {
		cc := &list[i]
		con := &Constraint{Source: cc.Require.Src, Message: cc.Message, Pos: cc.Require.Pos}
		switch cc.Otherwise {
		case "", "deny":
			con.Otherwise = verdict.Deny
		case "ask":
			con.Otherwise = verdict.Ask
		default:
			c.errorf(cc.At("otherwise"), "%s: otherwise must be deny or ask, not %q", t.Name, cc.Otherwise)
			continue
		}
		if strings.TrimSpace(cc.Require.Src) == "" {
			c.errorf(cc.Pos, "%s: a constraint needs require: a CEL expression that must hold", t.Name)
			continue
		}
		ast, iss := env.Compile(cc.Require.Src)
		if iss != nil && iss.Err() != nil {
			for _, e := range iss.Errors() {
				msg := e.Message
				if strings.Contains(msg, "'_[_]' applied to '("+celArgs) {
					msg += "; read an argument as args.name"
				}
				if strings.HasPrefix(msg, "undefined field") && t.Args != nil {
					msg += fmt.Sprintf(" (%s takes %s; session has role, tenant, profile, owner; switches has every declared switch)",
						t.Name, describeArgs(slices.Sorted(maps.Keys(t.Args))))
				}
				c.errorf(c.celPos(cc.Require, e.Location.Line(), e.Location.Column()), "%s: constraint: %s", t.Name, msg)
			}
			continue
		}
		if !ast.OutputType().IsExactType(types.BoolType) && !ast.OutputType().IsExactType(types.DynType) {
			c.errorf(cc.Require.Pos, "%s: a constraint must be true or false, and this one is %s", t.Name, ast.OutputType())
			continue
		}
		prog, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
		if err != nil {
			c.errorf(cc.Require.Pos, "%s: constraint: %v", t.Name, err)
			continue
		}
		con.prog = prog
		out = append(out, con)
	}
	return out
}

func describeArgs(names []string) string {
	if len(names) == 0 {
		return "no arguments"
	}
	return strings.Join(names, ", ")
}

// celPos turns a CEL location (1-based line, 0-based column) into a place in the document.
func (c *compiler) celPos(e Expr, line, col int) Pos {
	if line == 1 && !e.approx && e.Pos.IsValid() && col >= 0 {
		return Pos{Line: e.Pos.Line, Col: e.Pos.Col + col, Doc: e.Pos.Doc}
	}
	return e.Pos
}
