package surface_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/surface"
)

// TestGateKept checks that a gate asked for again is the gate worked out the first time, for
// every tool of the policy and a name outside it, and that each surface works out its own:
// one opened with approvals off, or a child of another role, does not get another's gate.
func TestGateKept(t *testing.T) {
	p, err := policy.Parse("quickstart.yaml", examples.Quickstart)
	if err != nil {
		t.Fatal(err)
	}
	on := openOK(t, p, nil, surface.Spec{Role: "person", Tenant: "default"})
	off := openOK(t, p, map[string]string{"REQUIRE_WRITE_APPROVAL": "false"}, surface.Spec{Role: "person", Tenant: "default"})
	child := childOK(t, on, "coworker", "reviewer")
	names := append(slices.Clone(on.Tools()), "no_such_tool", "mcp__nobody__x")
	for _, s := range []*surface.Surface{on, off, child} {
		for _, name := range names {
			first, again := s.Gate(name), s.Gate(name)
			if !reflect.DeepEqual(first, again) {
				t.Errorf("%s: the gate asked again %+v; first %+v", name, again, first)
			}
		}
	}
	if g, h := on.Gate("files_delete"), off.Gate("files_delete"); g.Code == h.Code {
		t.Errorf("files_delete: the same gate (%s) with approvals on and off", g.Code)
	}
	if g, h := on.Gate("files_delete"), child.Gate("files_delete"); g.Code == h.Code {
		t.Errorf("files_delete: the same gate (%s) for a person and a coworker child", g.Code)
	}
}
