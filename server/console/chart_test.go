package console

import (
	"strings"
	"testing"
	"time"
)

// The decision chart stacks each bucket's decisions; the spend chart marks a connector whose
// spend reached its daily allowance, and escapes what the API names.
func TestCharts(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	ev := func(min int, d string) auditEvent {
		return auditEvent{Kind: "decision", Decision: d, Time: at.Add(time.Duration(min) * time.Minute)}
	}
	svg := string(decisionChart([]auditEvent{ev(0, "allow"), ev(0, "deny"), ev(2, "ask"), {Kind: "outcome", Outcome: "ok", Time: at}}))
	for _, want := range []string{"09:00: 1 allow", "09:00: 1 deny", "09:02: 1 ask", "by 1m0s"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the decision chart lacks %q:\n%s", want, svg)
		}
	}
	if got := strings.Count(svg, "<rect"); got != 3 {
		t.Errorf("the decision chart has %d bars; want 3", got)
	}
	if svg := string(decisionChart(nil)); !strings.Contains(svg, "No decisions") {
		t.Errorf("the chart of no events: %s", svg)
	}
	spend := string(spendChart([]byte(`{"allowances":[
		{"profile":"<b>","connector":"search","unit":"usd","perDay":2,"spentToday":2.5},
		{"profile":"p","connector":"maps","unit":"usd","perDay":0,"spentToday":1}]}`)))
	if !strings.Contains(spend, `class="spent over"`) || strings.Count(spend, "spent over") != 1 ||
		strings.Contains(spend, "<b>") || !strings.Contains(spend, "no daily allowance") {
		t.Errorf("the spend chart:\n%s", spend)
	}
}
