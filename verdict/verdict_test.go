package verdict_test

import (
	"testing"

	"github.com/wardenhq/warden/verdict"
)

func TestZeroDecisionDenies(t *testing.T) {
	var d verdict.Decision
	if d != verdict.Deny || d.String() != "deny" {
		t.Fatalf("the zero Decision is %v; it must deny", d)
	}
}

func TestDecisionText(t *testing.T) {
	for _, d := range []verdict.Decision{verdict.Allow, verdict.Ask, verdict.Deny} {
		b, _ := d.MarshalText()
		var back verdict.Decision
		if err := back.UnmarshalText(b); err != nil || back != d {
			t.Errorf("%v round-trips to %v (%v)", d, back, err)
		}
	}
	var d verdict.Decision = verdict.Allow
	if err := d.UnmarshalText([]byte("maybe")); err == nil || d != verdict.Allow {
		t.Errorf("an unknown decision must be an error and leave the value alone; got %v, %v", d, err)
	}
	if got := verdict.Decision(7).String(); got != "deny" {
		t.Errorf("an out-of-range Decision prints %q; it must read as deny", got)
	}
}

func TestCodesAreDocumented(t *testing.T) {
	seen := map[verdict.Code]bool{}
	for _, c := range verdict.Codes() {
		if c.Code == "" || c.Meaning == "" || seen[c.Code] {
			t.Errorf("code %+v: every code is named once and explained", c)
		}
		seen[c.Code] = true
	}
}
