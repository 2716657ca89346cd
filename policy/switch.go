package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// RuleKind is the shape of a switch's truth rule.
type RuleKind uint8

const (
	// RuleOn: on exactly when the value is one of Values.
	RuleOn RuleKind = iota + 1
	// RuleOff: on unless the value is one of Values (unset is on).
	RuleOff
	// RuleNonEmpty: on when the value is not empty.
	RuleNonEmpty
	// RuleModes: the value names one of Modes, in any case; unset or unknown is Default.
	RuleModes
	// RuleInteger: a whole number, Default when unset or unreadable.
	RuleInteger
)

// Switch is an operator switch: an environment variable of the host, with its truth rule.
// Switches are read only from the host environment, never per tenant and never from inside a
// session.
type Switch struct {
	Name        string
	Description string
	Kind        RuleKind
	// RuleName is the named rule the switch was declared with ("exactly-true", ...), or empty
	// when it was declared with an explicit list.
	RuleName string
	// Values are the on values (RuleOn) or off values (RuleOff).
	Values []string
	// Modes are the named modes of a RuleModes switch; Default is one of them.
	Modes []string
	// Default is the mode (RuleModes) or number (RuleInteger) that an unset value means.
	Default string
	// Builtin marks the switches Warden itself defines.
	Builtin bool
	Index   int
	Pos     Pos

	defaultMode int
	defaultInt  int
}

// Rule describes the truth rule for people: `exactly "true"`, `"true", "1" or "yes"`, ...
func (s *Switch) Rule() string {
	switch s.Kind {
	case RuleOn:
		if len(s.Values) == 1 {
			return fmt.Sprintf("on only when exactly %q", s.Values[0])
		}
		return "on when " + quoteList(s.Values, "or")
	case RuleOff:
		return "on unless " + quoteList(s.Values, "or") + " (unset is on)"
	case RuleNonEmpty:
		return "on when set to any non-empty value"
	case RuleModes:
		return fmt.Sprintf("one of %s in any case; unset or anything else is %q", quoteList(s.Modes, "or"), s.Default)
	case RuleInteger:
		return fmt.Sprintf("a whole number; %s when unset", s.Default)
	}
	return "unknown rule"
}

func quoteList(vals []string, conj string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = strconv.Quote(v)
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " " + conj + " " + q[len(q)-1]
}

// SwitchState is one switch as read from one environment.
type SwitchState struct {
	Switch *Switch
	// Raw is the value as found; Set says whether the variable was present.
	Raw string
	Set bool
	// On is the switch's truth under its rule (RuleOn, RuleOff, RuleNonEmpty).
	On bool
	// Mode is the selected mode (RuleModes).
	Mode string
	// Int is the number (RuleInteger).
	Int int
	// Report is non-empty when the value was not one the rule recognises: a likely typo, shown
	// in the start-up banner.
	Report string

	mode int
}

// Words that read as a deliberate "off" or "on": a value outside a rule's list that is one of
// these is not reported as a typo.
var (
	offWords = []string{"", "false", "0", "no", "off"}
	onWords  = []string{"true", "1", "yes", "on"}
)

// read evaluates the switch for one raw value.
func (s *Switch) read(raw string, set bool) SwitchState {
	st := SwitchState{Switch: s, Raw: raw, Set: set}
	switch s.Kind {
	case RuleOn:
		st.On = set && slices.Contains(s.Values, raw)
		if set && !st.On && !slices.Contains(offWords, raw) {
			st.Report = fmt.Sprintf("%s=%q is not a value this switch recognises, so it counts as off (%s)", s.Name, raw, s.Rule())
		}
	case RuleOff:
		st.On = !set || !slices.Contains(s.Values, raw)
		if set && st.On && !slices.Contains(onWords, raw) {
			st.Report = fmt.Sprintf("%s=%q is not a value this switch recognises, so it counts as on (%s)", s.Name, raw, s.Rule())
		}
	case RuleNonEmpty:
		st.On = raw != ""
	case RuleModes:
		st.mode = s.defaultMode
		if set && raw != "" {
			if i := slices.IndexFunc(s.Modes, func(m string) bool { return strings.EqualFold(m, raw) }); i >= 0 {
				st.mode = i
			} else {
				st.Report = fmt.Sprintf("%s=%q is not one of its modes (%s), so it counts as %q", s.Name, raw, strings.Join(s.Modes, ", "), s.Default)
			}
		}
		st.Mode = s.Modes[st.mode]
	case RuleInteger:
		st.Int = s.defaultInt
		if set && raw != "" {
			if n, err := strconv.Atoi(raw); err == nil && n >= 0 {
				st.Int = n
			} else {
				st.Report = fmt.Sprintf("%s=%q is not a whole number, so it counts as %s", s.Name, raw, s.Default)
			}
		}
	}
	return st
}

// Describe says what the switch is in this state, for explanations: `AGENTMAIL_ALLOW_SENDS is
// off ("yes"; on only when exactly "true")`.
func (st SwitchState) Describe() string {
	s := st.Switch
	val := "unset"
	if st.Set {
		val = strconv.Quote(st.Raw)
	}
	switch s.Kind {
	case RuleModes:
		return fmt.Sprintf("%s is %s (%s)", s.Name, st.Mode, val)
	case RuleInteger:
		return fmt.Sprintf("%s is %d (%s)", s.Name, st.Int, val)
	}
	word := "off"
	if st.On {
		word = "on"
	}
	return fmt.Sprintf("%s is %s (%s; %s)", s.Name, word, val, s.Rule())
}

// Env is a policy's switches as read from one host environment, with the connectors whose host
// credentials are present. It is computed once per environment (at start-up, on reload) and is
// immutable and safe for concurrent use.
type Env struct {
	policy *Policy
	states []SwitchState
	// hostCreds[i] reports whether server i is a connector whose hostEnv variables are all set.
	hostCreds []bool
}

// Env reads the policy's switches and host credentials through lookup, which is os.LookupEnv
// for the real host environment.
func (p *Policy) Env(lookup func(string) (string, bool)) *Env {
	e := &Env{policy: p, states: make([]SwitchState, len(p.switches)), hostCreds: make([]bool, len(p.servers))}
	for i, s := range p.switches {
		raw, set := lookup(s.Name)
		e.states[i] = s.read(raw, set)
	}
	for i, srv := range p.servers {
		if srv.Kind != KindConnector || len(srv.HostEnv) == 0 {
			continue
		}
		all := true
		for _, name := range srv.HostEnv {
			if v, ok := lookup(name); !ok || v == "" {
				all = false
				break
			}
		}
		e.hostCreds[i] = all
	}
	return e
}

// MapLookup adapts a map to the lookup function Env takes.
func MapLookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// Policy returns the policy the environment was read for.
func (e *Env) Policy() *Policy { return e.policy }

// Switch returns the state of the named switch.
func (e *Env) Switch(name string) (SwitchState, bool) {
	i, ok := e.policy.switchIndex[name]
	if !ok {
		return SwitchState{}, false
	}
	return e.states[i], true
}

// Switches returns every switch's state, in declaration order.
func (e *Env) Switches() []SwitchState { return slices.Clone(e.states) }

// Reports lists the values a switch's rule did not recognise, for the start-up banner.
func (e *Env) Reports() []string {
	var out []string
	for _, st := range e.states {
		if st.Report != "" {
			out = append(out, st.Report)
		}
	}
	return out
}

// HostCredentials reports whether the host environment holds credentials for the connector.
func (e *Env) HostCredentials(s *Server) bool { return e.hostCreds[s.Index] }

// ApprovalsOn reports whether per-call approvals are on (REQUIRE_WRITE_APPROVAL).
func (e *Env) ApprovalsOn() bool { return e.states[e.policy.approvalSwitch].On }

// ApprovalTimeoutMS is how long a pending approval waits before it denies (APPROVAL_TIMEOUT_MS).
func (e *Env) ApprovalTimeoutMS() int { return e.states[e.policy.timeoutSwitch].Int }

// EgressOpen reports whether the sandbox's egress is open (SANDBOX_EGRESS=open, in any case):
// every public host is reachable, and the sandbox_allow_host tools are absent. Any other value,
// unset included, is the allowlist; a value that is neither mode is reported (Reports).
// egress.ParseMode reads the variable the same way.
func (e *Env) EgressOpen() bool {
	return strings.EqualFold(e.states[e.policy.egressSwitch].Mode, egressOpen)
}

// The switches Warden defines itself.
const (
	SwitchRequireApproval = "REQUIRE_WRITE_APPROVAL"
	SwitchApprovalTimeout = "APPROVAL_TIMEOUT_MS"
	// SwitchSandboxEgress is the sandbox's egress mode: "allowlist" (the default: only listed
	// hosts, plus those a person allows through sandbox_allow_host) or "open" (every public
	// host; nothing is asked). See Env.EgressOpen.
	SwitchSandboxEgress = "SANDBOX_EGRESS"
)

// The modes of SANDBOX_EGRESS, as egress.ParseMode names them.
const (
	egressAllowlist = "allowlist"
	egressOpen      = "open"
)

// namedRules are the rules a switch may name with `rule:`.
var namedRules = map[string]struct {
	kind   RuleKind
	values []string
}{
	"exactly-true":         {RuleOn, []string{"true"}},
	"true-1-yes":           {RuleOn, []string{"true", "1", "yes"}},
	"on-unless-false-0-no": {RuleOff, []string{"false", "0", "no"}},
	"non-empty":            {RuleNonEmpty, nil},
	"integer":              {RuleInteger, nil},
}

func ruleNames() []string {
	names := make([]string, 0, len(namedRules))
	for n := range namedRules {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// builtinSwitches are always declared.
func builtinSwitches() []SwitchConfig {
	return []SwitchConfig{
		{Name: SwitchRequireApproval, Rule: "on-unless-false-0-no",
			Description: "Per-call approvals for gated tools."},
		{Name: SwitchApprovalTimeout, Rule: "integer", Default: "300000",
			Description: "How long a pending approval waits before it denies, in milliseconds; 0 denies at once."},
		{Name: SwitchSandboxEgress, Modes: []string{egressAllowlist, egressOpen}, Default: egressAllowlist,
			Description: "The sandbox's egress: allowlist (only listed hosts, plus what a person allows through sandbox_allow_host) or open (the whole internet minus the never-allowed ranges, no cards)."},
	}
}

// sameRule reports whether two switches have the same truth rule. Modes are a set of words
// compared in any case: [open, allowlist] is the rule of [allowlist, open].
func sameRule(a, b *Switch) bool {
	if a.Kind != b.Kind || !slices.Equal(a.Values, b.Values) {
		return false
	}
	if a.Kind == RuleModes {
		am, bm := lower(a.Modes), lower(b.Modes)
		slices.Sort(am)
		slices.Sort(bm)
		return slices.Equal(am, bm) && strings.EqualFold(a.Default, b.Default)
	}
	return a.Default == b.Default
}
