package policy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/policy"
)

// switchPolicy declares one switch of every truth rule (S6).
const switchPolicy = `version: 1
switches:
  - {name: EXACT, rule: exactly-true}
  - {name: LOOSE, rule: true-1-yes}
  - {name: UNLESS, rule: on-unless-false-0-no}
  - {name: ANY, rule: non-empty}
  - {name: EGRESS, modes: [open, allowlist], default: allowlist}
  - {name: COUNT, rule: integer, default: "7"}
  - {name: LISTED, on: ["1", enabled]}
  - {name: UNLISTED, off: [disabled]}
connectors:
  - {id: shop, effect: read, hostEnv: [SHOP_DOMAIN, SHOP_TOKEN]}
`

func parseSwitchPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("switches.yaml", []byte(switchPolicy))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// unset stands for a variable that is not in the environment at all.
const unset = "\x00unset"

func envOf(name, value string) map[string]string {
	if value == unset {
		return map[string]string{}
	}
	return map[string]string{name: value}
}

func TestSwitchOnOff(t *testing.T) {
	p := parseSwitchPolicy(t)
	tests := []struct {
		sw         string
		give       string
		want       bool
		wantReport bool // the value is one the rule does not recognise
	}{
		// exactly-true: only the exact value true.
		{"EXACT", "true", true, false},
		{"EXACT", "True", false, true},
		{"EXACT", "TRUE", false, true},
		{"EXACT", "yes", false, true},
		{"EXACT", "1", false, true},
		{"EXACT", " true", false, true},
		{"EXACT", "false", false, false},
		{"EXACT", "0", false, false},
		{"EXACT", "no", false, false},
		{"EXACT", "off", false, false},
		{"EXACT", "", false, false},
		{"EXACT", unset, false, false},

		// true-1-yes.
		{"LOOSE", "true", true, false},
		{"LOOSE", "1", true, false},
		{"LOOSE", "yes", true, false},
		{"LOOSE", "Yes", false, true},
		{"LOOSE", "on", false, true},
		{"LOOSE", "2", false, true},
		{"LOOSE", "false", false, false},
		{"LOOSE", "no", false, false},
		{"LOOSE", unset, false, false},

		// on-unless-false-0-no: unset is on.
		{"UNLESS", unset, true, false},
		{"UNLESS", "false", false, false},
		{"UNLESS", "0", false, false},
		{"UNLESS", "no", false, false},
		{"UNLESS", "False", true, true},
		{"UNLESS", "NO", true, true},
		{"UNLESS", "off", true, true},
		{"UNLESS", "disable", true, true},
		{"UNLESS", "true", true, false},
		{"UNLESS", "yes", true, false},
		{"UNLESS", "1", true, false},

		// non-empty.
		{"ANY", unset, false, false},
		{"ANY", "", false, false},
		{"ANY", "x", true, false},
		{"ANY", "false", true, false},
		{"ANY", " ", true, false},

		// on: [...]: exactly one of the values.
		{"LISTED", "1", true, false},
		{"LISTED", "enabled", true, false},
		{"LISTED", "Enabled", false, true},
		{"LISTED", "true", false, true},
		{"LISTED", "0", false, false},
		{"LISTED", unset, false, false},

		// off: [...]: anything but the values.
		{"UNLISTED", unset, true, false},
		{"UNLISTED", "disabled", false, false},
		{"UNLISTED", "Disabled", true, true},
		{"UNLISTED", "on", true, false},
	}
	for _, tt := range tests {
		name := tt.sw + "=" + tt.give
		if tt.give == unset {
			name = tt.sw + " unset"
		}
		t.Run(name, func(t *testing.T) {
			env := p.Env(policy.MapLookup(envOf(tt.sw, tt.give)))
			st, ok := env.Switch(tt.sw)
			if !ok {
				t.Fatalf("no switch %s", tt.sw)
			}
			if st.On != tt.want {
				t.Errorf("On = %v, want %v (%s)", st.On, tt.want, st.Describe())
			}
			if got := st.Report != ""; got != tt.wantReport {
				t.Errorf("reported = %v (%q), want %v", got, st.Report, tt.wantReport)
			}
			if st.Set != (tt.give != unset) {
				t.Errorf("Set = %v for %q", st.Set, tt.give)
			}
			reports := env.Reports()
			if tt.wantReport && (len(reports) != 1 || reports[0] != st.Report) {
				t.Errorf("Reports() = %q, want [%q]", reports, st.Report)
			}
			if !tt.wantReport && len(reports) != 0 {
				t.Errorf("Reports() = %q, want none", reports)
			}
		})
	}
}

func TestSwitchReportText(t *testing.T) {
	p := parseSwitchPolicy(t)
	tests := []struct {
		sw, give string
		want     string
	}{
		{"EXACT", "True", `EXACT="True" is not a value this switch recognises, so it counts as off (on only when exactly "true")`},
		{"LOOSE", "on", `LOOSE="on" is not a value this switch recognises, so it counts as off (on when "true", "1" or "yes")`},
		{"UNLESS", "False", `UNLESS="False" is not a value this switch recognises, so it counts as on (on unless "false", "0" or "no" (unset is on))`},
		{"EGRESS", "opne", `EGRESS="opne" is not one of its modes (open, allowlist), so it counts as "allowlist"`},
		{"COUNT", "ten", `COUNT="ten" is not a whole number, so it counts as 7`},
	}
	for _, tt := range tests {
		t.Run(tt.sw+"="+tt.give, func(t *testing.T) {
			st, _ := p.Env(policy.MapLookup(envOf(tt.sw, tt.give))).Switch(tt.sw)
			if st.Report != tt.want {
				t.Errorf("Report = %q\nwant     %q", st.Report, tt.want)
			}
		})
	}
}

func TestSwitchModes(t *testing.T) {
	p := parseSwitchPolicy(t)
	tests := []struct {
		give       string
		want       string
		wantReport bool
	}{
		{unset, "allowlist", false},
		{"", "allowlist", false},
		{"open", "open", false},
		{"OPEN", "open", false},
		{"Open", "open", false},
		{"allowList", "allowlist", false},
		{"opne", "allowlist", true},
		{"open ", "allowlist", true},
		{"closed", "allowlist", true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			st, _ := p.Env(policy.MapLookup(envOf("EGRESS", tt.give))).Switch("EGRESS")
			if st.Mode != tt.want {
				t.Errorf("Mode = %q, want %q", st.Mode, tt.want)
			}
			if got := st.Report != ""; got != tt.wantReport {
				t.Errorf("reported = %v (%q), want %v", got, st.Report, tt.wantReport)
			}
		})
	}
}

func TestSwitchInteger(t *testing.T) {
	p := parseSwitchPolicy(t)
	tests := []struct {
		give       string
		want       int
		wantReport bool
	}{
		{unset, 7, false},
		{"", 7, false},
		{"0", 0, false},
		{"42", 42, false},
		{"007", 7, false},
		{"ten", 7, true},
		{"-1", 7, true},
		{"1.5", 7, true},
		{" 5", 7, true},
		{"99999999999999999999999", 7, true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			st, _ := p.Env(policy.MapLookup(envOf("COUNT", tt.give))).Switch("COUNT")
			if st.Int != tt.want {
				t.Errorf("Int = %d, want %d", st.Int, tt.want)
			}
			if got := st.Report != ""; got != tt.wantReport {
				t.Errorf("reported = %v (%q), want %v", got, st.Report, tt.wantReport)
			}
		})
	}
}

func TestSwitchDescribe(t *testing.T) {
	p := parseSwitchPolicy(t)
	env := p.Env(policy.MapLookup(map[string]string{"EXACT": "yes", "EGRESS": "OPEN", "COUNT": "3"}))
	var got []string
	for _, st := range env.Switches() {
		got = append(got, st.Describe())
	}
	want := []string{
		`REQUIRE_WRITE_APPROVAL is on (unset; on unless "false", "0" or "no" (unset is on))`,
		`APPROVAL_TIMEOUT_MS is 300000 (unset)`,
		`SANDBOX_EGRESS is allowlist (unset)`,
		`EXACT is off ("yes"; on only when exactly "true")`,
		`LOOSE is off (unset; on when "true", "1" or "yes")`,
		`UNLESS is on (unset; on unless "false", "0" or "no" (unset is on))`,
		`ANY is off (unset; on when set to any non-empty value)`,
		`EGRESS is open ("OPEN")`,
		`COUNT is 3 ("3")`,
		`LISTED is off (unset; on when "1" or "enabled")`,
		`UNLISTED is on (unset; on unless "disabled" (unset is on))`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Describe (-want +got):\n%s", diff)
	}
}

func TestEnvReadsOnlyTheLookup(t *testing.T) {
	p := parseSwitchPolicy(t)
	// (SHOP_TOKEN is not read once SHOP_DOMAIN is missing.)
	var asked []string
	p.Env(func(name string) (string, bool) {
		asked = append(asked, name)
		return "", false
	})
	want := []string{"REQUIRE_WRITE_APPROVAL", "APPROVAL_TIMEOUT_MS", "SANDBOX_EGRESS", "EXACT", "LOOSE", "UNLESS", "ANY", "EGRESS", "COUNT", "LISTED", "UNLISTED", "SHOP_DOMAIN"}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("variables read (-want +got):\n%s", diff)
	}
}

func TestEnvHostCredentials(t *testing.T) {
	p := parseSwitchPolicy(t)
	shop, _ := p.Server("shop")
	tests := []struct {
		give map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"SHOP_DOMAIN": "a.example"}, false},
		{map[string]string{"SHOP_DOMAIN": "a.example", "SHOP_TOKEN": ""}, false},
		{map[string]string{"SHOP_DOMAIN": "a.example", "SHOP_TOKEN": "t"}, true},
	}
	for _, tt := range tests {
		if got := p.Env(policy.MapLookup(tt.give)).HostCredentials(shop); got != tt.want {
			t.Errorf("HostCredentials with %v = %v, want %v", tt.give, got, tt.want)
		}
	}
}

func TestEnvApprovals(t *testing.T) {
	p := parseSwitchPolicy(t)
	tests := []struct {
		give        map[string]string
		wantOn      bool
		wantTimeout int
		wantReports int
	}{
		{map[string]string{}, true, 300000, 0},
		{map[string]string{"REQUIRE_WRITE_APPROVAL": "false"}, false, 300000, 0},
		{map[string]string{"REQUIRE_WRITE_APPROVAL": "0", "APPROVAL_TIMEOUT_MS": "0"}, false, 0, 0},
		{map[string]string{"REQUIRE_WRITE_APPROVAL": "no", "APPROVAL_TIMEOUT_MS": "1500"}, false, 1500, 0},
		{map[string]string{"REQUIRE_WRITE_APPROVAL": "FALSE"}, true, 300000, 1},
		{map[string]string{"APPROVAL_TIMEOUT_MS": "5m"}, true, 300000, 1},
	}
	for _, tt := range tests {
		env := p.Env(policy.MapLookup(tt.give))
		if got := env.ApprovalsOn(); got != tt.wantOn {
			t.Errorf("%v: ApprovalsOn = %v, want %v", tt.give, got, tt.wantOn)
		}
		if got := env.ApprovalTimeoutMS(); got != tt.wantTimeout {
			t.Errorf("%v: ApprovalTimeoutMS = %d, want %d", tt.give, got, tt.wantTimeout)
		}
		if got := len(env.Reports()); got != tt.wantReports {
			t.Errorf("%v: %d reports (%q), want %d", tt.give, got, env.Reports(), tt.wantReports)
		}
	}
}

func TestBuiltinSwitchRestated(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		wantErr string // empty: the document is valid
	}{
		{
			name: "same rule, new description",
			give: "  - {name: REQUIRE_WRITE_APPROVAL, rule: on-unless-false-0-no, description: Ask first.}\n",
		},
		{
			name: "integer with the same default",
			give: "  - {name: APPROVAL_TIMEOUT_MS, rule: integer, default: \"300000\"}\n",
		},
		{
			name:    "another named rule",
			give:    "  - {name: REQUIRE_WRITE_APPROVAL, rule: true-1-yes}\n",
			wantErr: `switches.yaml:3:5: REQUIRE_WRITE_APPROVAL is built into Warden with the rule on unless "false", "0" or "no" (unset is on); a policy may describe it but not change its rule`,
		},
		{
			name:    "the same values as a list",
			give:    "  - {name: REQUIRE_WRITE_APPROVAL, off: [\"false\", \"0\"]}\n",
			wantErr: `switches.yaml:3:5: REQUIRE_WRITE_APPROVAL is built into Warden with the rule`,
		},
		{
			name:    "another default",
			give:    "  - {name: APPROVAL_TIMEOUT_MS, rule: integer, default: \"60000\"}\n",
			wantErr: `switches.yaml:3:5: APPROVAL_TIMEOUT_MS is built into Warden with the rule a whole number; 300000 when unset`,
		},
		{
			name:    "not an integer",
			give:    "  - {name: APPROVAL_TIMEOUT_MS, rule: non-empty}\n",
			wantErr: `switches.yaml:3:5: APPROVAL_TIMEOUT_MS is built into Warden`,
		},
		{
			// As the Scout example writes it: the same modes in another order.
			name: "the egress modes in another order",
			give: "  - {name: SANDBOX_EGRESS, modes: [open, allowlist], default: allowlist, description: Egress.}\n",
		},
		{
			name: "the egress modes in another case",
			give: "  - {name: SANDBOX_EGRESS, modes: [Allowlist, OPEN], default: ALLOWLIST}\n",
		},
		{
			name:    "another egress default",
			give:    "  - {name: SANDBOX_EGRESS, modes: [allowlist, open], default: open}\n",
			wantErr: `switches.yaml:3:5: SANDBOX_EGRESS is built into Warden with the rule one of "allowlist" or "open" in any case; unset or anything else is "allowlist"; a policy may describe it but not change its rule`,
		},
		{
			name:    "another egress mode",
			give:    "  - {name: SANDBOX_EGRESS, modes: [allowlist, open, closed], default: allowlist}\n",
			wantErr: `switches.yaml:3:5: SANDBOX_EGRESS is built into Warden with the rule one of "allowlist" or "open"`,
		},
		{
			name:    "egress as a yes/no switch",
			give:    "  - {name: SANDBOX_EGRESS, on: [open]}\n",
			wantErr: `switches.yaml:3:5: SANDBOX_EGRESS is built into Warden`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "version: 1\nswitches:\n" + tt.give
			p, err := policy.Parse("switches.yaml", []byte(text))
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Errorf("Parse = %v\nwant the one error %s...", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var names []string
			for s := range p.Switches() {
				names = append(names, s.Name)
				if !s.Builtin {
					t.Errorf("switch %s is no longer built in", s.Name)
				}
				if restated := strings.Contains(tt.give, s.Name); restated != (s.Pos == policy.Pos{Line: 3, Col: 5}) {
					t.Errorf("switch %s is at %v", s.Name, s.Pos)
				}
			}
			if diff := cmp.Diff([]string{"REQUIRE_WRITE_APPROVAL", "APPROVAL_TIMEOUT_MS", "SANDBOX_EGRESS"}, names); diff != "" {
				t.Errorf("a restated switch is declared again (-want +got):\n%s", diff)
			}
			env := p.Env(policy.MapLookup(nil))
			if !env.ApprovalsOn() || env.ApprovalTimeoutMS() != 300000 || env.EgressOpen() {
				t.Errorf("defaults changed: approvals %v, timeout %d, egress open %v", env.ApprovalsOn(), env.ApprovalTimeoutMS(), env.EgressOpen())
			}
			if sw, _ := p.Switch(policy.SwitchSandboxEgress); !slices.Equal(sw.Modes, []string{"allowlist", "open"}) || sw.Default != "allowlist" {
				t.Errorf("the egress switch is %v, default %q: a restatement replaced the built-in rule", sw.Modes, sw.Default)
			}
		})
	}

	p, err := policy.Parse("switches.yaml", []byte("version: 1\nswitches:\n  - {name: REQUIRE_WRITE_APPROVAL, rule: on-unless-false-0-no, description: Ask first.}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := p.Switch(policy.SwitchRequireApproval); s.Description != "Ask first." {
		t.Errorf("the restated description is %q", s.Description)
	}
}

// TestEgressOpen checks the built-in SANDBOX_EGRESS: allowlist unless it names open, in any
// case and untrimmed, as egress.ParseMode reads it; anything but the two modes is reported.
func TestEgressOpen(t *testing.T) {
	p := parseSwitchPolicy(t)
	sw, ok := p.Switch(policy.SwitchSandboxEgress)
	if !ok || !sw.Builtin || sw.Kind != policy.RuleModes || sw.Default != "allowlist" {
		t.Fatalf("SANDBOX_EGRESS is %+v", sw)
	}
	tests := []struct {
		give       string
		want       bool
		wantReport bool
	}{
		{unset, false, false},
		{"", false, false},
		{"allowlist", false, false},
		{"ALLOWLIST", false, false},
		{"open", true, false},
		{"OPEN", true, false},
		{"oPeN", true, false},
		{" open", false, true},
		{"open\n", false, true},
		{"opne", false, true},
		{"closed", false, true},
		{"true", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			env := p.Env(policy.MapLookup(envOf(policy.SwitchSandboxEgress, tt.give)))
			if got := env.EgressOpen(); got != tt.want {
				t.Errorf("EgressOpen = %v, want %v", got, tt.want)
			}
			if got := len(env.Reports()) > 0; got != tt.wantReport {
				t.Errorf("reported = %v (%q), want %v", got, env.Reports(), tt.wantReport)
			}
		})
	}
}
