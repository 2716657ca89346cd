package gate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/surface"
)

// harnessPolicy has Scout's loop harness with the seed's caps: $0.25 and eight model calls a
// session.
const harnessPolicy = `
version: 1
builtins:
  - name: files_read
harnesses:
  - id: loop
    builtins: false
    limits: {sessionBudgetUsd: 0.25, maxModelCalls: 8}
tenants:
  - {id: default, owner: true}
`

// A harness's caps hold for each session on it, a person's chat included (which has no run):
// the ninth model call, and dollars above $0.25, stop the session, as the harness reports them
// through the usage path (gate.Report). Another session starts afresh.
func TestHarnessLimits(t *testing.T) {
	scout, err := policy.Parse("scout.yaml", examples.Scout)
	if err != nil {
		t.Fatal(err)
	}
	for h := range scout.Harnesses() {
		if (h.ID == "loop" || h.ID == "hermes") && (h.SessionBudgetUsd != 0.25 || h.MaxModelCalls != 8) {
			t.Errorf("Scout's %s harness caps each session at $%v and %d calls; the seed says $0.25 and eight", h.ID, h.SessionBudgetUsd, h.MaxModelCalls)
		}
	}
	r := newRig(t, time.Minute)
	ctx := context.Background()
	spec := surface.Spec{Role: "person", Tenant: "default", Harness: "loop"}
	s := r.session([]byte(harnessPolicy), nil, spec, "h1")
	if s.Run != nil {
		t.Fatalf("a person's chat has a run: %+v", s.Run)
	}
	st, err := r.gate.Report(ctx, s, gate.Usage{Turns: 8, ModelUsd: 0.2})
	if err != nil || st.Stopped != "" || st.Recorded.Turns != 8 {
		t.Fatalf("eight calls and $0.20: %+v, %v", st, err)
	}
	st, err = r.gate.Report(ctx, s, gate.Usage{Turns: 1})
	if err != nil || st.Recorded.Turns != 0 || !strings.Contains(st.Stopped, "made 8 model calls on harness loop, its cap") {
		t.Fatalf("the ninth call: %+v, %v; want the session stopped", st, err)
	}

	s2 := r.session([]byte(harnessPolicy), nil, spec, "h2")
	if st, err := r.gate.Report(ctx, s2, gate.Usage{Turns: 1, ModelUsd: 0.25}); err != nil || st.Stopped != "" {
		t.Fatalf("another session, $0.25: %+v, %v", st, err)
	}
	// A rebound session (a policy reload) keeps what it used.
	s2 = s2.Rebind(s2.Review)
	st, err = r.gate.Report(ctx, s2, gate.Usage{ModelUsd: 0.01})
	if err != nil || !strings.Contains(st.Stopped, "above its cap of 0.2500") {
		t.Fatalf("$0.26 on a $0.25 harness: %+v, %v; want the session stopped", st, err)
	}
}
