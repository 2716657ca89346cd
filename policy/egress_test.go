package policy_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/policy"
)

// fixedEgressGate is the gate every sandbox_allow_host built-in has, whatever the policy writes.
var fixedEgressGate = policy.Gate{Approval: true, AbsentWithoutChannel: true, AbsentWithoutApprovals: true}

func TestEgressCardGate(t *testing.T) {
	tests := []struct {
		name string
		give string // the builtins section
		want policy.Gate
		// wantRequires is the name of the switch the gate requires (want.Requires is nil).
		wantRequires string
	}{
		{
			name: "no gate",
			give: "  - name: sandbox_allow_host\n",
			want: fixedEgressGate,
		},
		{
			name: "the whole gate, as it would be filled in",
			give: "  - {name: sandbox_allow_host, gate: {approval: true, withoutChannel: absent, withoutApprovals: absent}}\n",
			want: fixedEgressGate,
		},
		{
			name: "a gate that only asks",
			give: "  - {name: sandbox_allow_host, gate: {approval: true}}\n",
			want: fixedEgressGate,
		},
		{
			name: "a gate with a note and without approval",
			give: "  - {name: sandbox_allow_host, gate: {note: every host}}\n",
			want: policy.Gate{Approval: true, AbsentWithoutChannel: true, AbsentWithoutApprovals: true, Note: "every host"},
		},
		{
			name:         "another name, with a switch to require",
			give:         "  - {name: allow_host, kind: sandbox_allow_host, gate: {requires: FLAG, withoutChannel: absent}}\n",
			want:         fixedEgressGate,
			wantRequires: "FLAG",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := policy.Parse(fileName, []byte(doc("builtins:\n"+tt.give+"  - name: files_read\n")))
			if err != nil {
				t.Fatal(err)
			}
			var card *policy.Tool
			for tool := range p.Tools() {
				if tool.Kind == "sandbox_allow_host" {
					card = tool
				}
			}
			if card == nil {
				t.Fatal("no tool of kind sandbox_allow_host")
			}
			if card.Gate == nil {
				t.Fatal("no gate")
			}
			got := *card.Gate
			requires := ""
			if got.Requires != nil {
				requires, got.Requires = got.Requires.Name, nil
			}
			if requires != tt.wantRequires {
				t.Errorf("the gate requires %q, want %q", requires, tt.wantRequires)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("gate (-want +got):\n%s", diff)
			}
			if card.Effect != policy.EffectWrite {
				t.Errorf("effect %s, want write", card.Effect)
			}
			for name, set := range map[string]policy.Bitset{
				"EgressCards":            p.EgressCards(),
				"AbsentWithoutChannel":   p.AbsentWithoutChannel(),
				"AbsentWithoutApprovals": p.AbsentWithoutApprovals(),
			} {
				if !set.Has(card.Index) {
					t.Errorf("%s does not hold %s", name, card.Name)
				}
			}
			if n := p.EgressCards().Len(); n != 1 {
				t.Errorf("EgressCards holds %d tools, want 1", n)
			}
		})
	}
}

func TestEgressCardInputs(t *testing.T) {
	p, err := policy.Parse(fileName, []byte(doc(`builtins:
  - name: sandbox_allow_host
  - {name: AllowHost, kind: sandbox_allow_host, input: {host: hostname}}
`)))
	if err != nil {
		t.Fatal(err)
	}
	native, _ := p.Tool("sandbox_allow_host")
	if diff := cmp.Diff(map[string]string{"host": "host", "reason": "reason"}, native.Input); diff != "" {
		t.Errorf("inputs of sandbox_allow_host (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"host": "string", "reason": "string"}, native.Args); diff != "" {
		t.Errorf("args of sandbox_allow_host (-want +got):\n%s", diff)
	}
	renamed, _ := p.Tool("AllowHost")
	if diff := cmp.Diff(map[string]string{"hostname": "string", "reason": "string"}, renamed.Args); diff != "" {
		t.Errorf("args of AllowHost (-want +got):\n%s", diff)
	}
	var cards []string
	for i := range p.EgressCards().All() {
		cards = append(cards, p.ToolAt(i).Name)
	}
	if !slices.Equal(cards, []string{"sandbox_allow_host", "AllowHost"}) {
		t.Errorf("EgressCards = %v", cards)
	}
}

func TestEgressCardsOfTheExamples(t *testing.T) {
	p, err := policy.Load("../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	card, ok := p.Tool("sandbox_allow_host")
	if !ok || card.Gate == nil || !cmp.Equal(*card.Gate, fixedEgressGate) || !p.EgressCards().Has(card.Index) || p.EgressCards().Len() != 1 {
		t.Errorf("the quickstart's sandbox_allow_host: %+v", card)
	}

	// Scout's card is a platform tool of its own (mcp__sandbox_egress__sandbox_allow_host),
	// not the native kind; and it restates SANDBOX_EGRESS with its modes in another order.
	p, err = policy.Load("../examples/scout/warden.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !p.EgressCards().Empty() {
		t.Errorf("Scout has egress cards: %v", p.EgressCards())
	}
	sw, _ := p.Switch(policy.SwitchSandboxEgress)
	if !sw.Builtin || !slices.Equal(sw.Modes, []string{"allowlist", "open"}) || !sw.Pos.IsValid() {
		t.Errorf("Scout's SANDBOX_EGRESS: %+v", sw)
	}
	if sw.Description == "" || sw.Description[:4] != "open" {
		t.Errorf("Scout's description of SANDBOX_EGRESS was not kept: %q", sw.Description)
	}
}

func TestConnectorSandbox(t *testing.T) {
	p, err := policy.Parse(fileName, []byte(doc(`connectors:
  - id: files
    effect: read
    sandbox: true
    upstream: {command: [files-mcp, --root, /data]}
    tools: [{name: mcp__files__list}]
  - id: docs
    effect: read
    sandbox: false
    upstream: {url: "https://docs.example/mcp"}
    tools: [{name: mcp__docs__search}]
  - id: plain
    effect: read
    upstream: {command: [plain-mcp]}
    tools: [{name: mcp__plain__list}]
`)))
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"files": true, "docs": false, "plain": false} {
		s, _ := p.Server(id)
		if s.Sandbox != want {
			t.Errorf("%s: Sandbox = %v, want %v", id, s.Sandbox, want)
		}
	}
}
