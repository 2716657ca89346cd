package console

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"sort"
	"strings"
	"time"
)

// The charts are inline SVG drawn here, on the server: no script, no library.

// decisionColors are the colours of the decisions (and their labels in the legend).
var decisionOrder = []string{"allow", "ask", "deny"}

// decisionChart draws the decisions of the events over time, stacked per bucket: a minute
// when the events span less than three hours, else an hour.
func decisionChart(events []auditEvent) template.HTML {
	type bucket map[string]int
	var times []time.Time
	for _, e := range events {
		if e.Decision != "" && e.Kind == "decision" {
			times = append(times, e.Time)
		}
	}
	if len(times) == 0 {
		return template.HTML(`<p class="muted">No decisions in these events.</p>`)
	}
	lo, hi := times[0], times[0]
	for _, t := range times {
		if t.Before(lo) {
			lo = t
		}
		if t.After(hi) {
			hi = t
		}
	}
	step, label := time.Minute, "15:04"
	if hi.Sub(lo) >= 3*time.Hour {
		step, label = time.Hour, "01-02 15h"
	}
	start := lo.UTC().Truncate(step)
	n := int(hi.UTC().Truncate(step).Sub(start)/step) + 1
	if n > 120 { // at most 120 bars: widen the buckets
		k := (n + 119) / 120
		step *= time.Duration(k)
		start = lo.UTC().Truncate(step)
		n = int(hi.UTC().Truncate(step).Sub(start)/step) + 1
	}
	buckets := make([]bucket, n)
	maxN := 0
	for _, e := range events {
		if e.Decision == "" || e.Kind != "decision" {
			continue
		}
		i := int(e.Time.UTC().Truncate(step).Sub(start) / step)
		if i < 0 || i >= n {
			continue
		}
		if buckets[i] == nil {
			buckets[i] = bucket{}
		}
		buckets[i][e.Decision]++
	}
	for _, b := range buckets {
		sum := 0
		for _, v := range b {
			sum += v
		}
		maxN = max(maxN, sum)
	}
	const w, h, left, bottom = 640.0, 180.0, 36.0, 24.0
	bw := math.Min((w-left)/float64(n), 48)
	var s strings.Builder
	fmt.Fprintf(&s, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="Calls by decision over time, %d decisions"><title>Calls by decision over time</title>`, w, h, len(times))
	fmt.Fprintf(&s, `<line x1="%g" y1="0" x2="%g" y2="%g" class="axis"/><line x1="%g" y1="%g" x2="%g" y2="%g" class="axis"/>`, left, left, h-bottom, left, h-bottom, w, h-bottom)
	fmt.Fprintf(&s, `<text x="%g" y="12" class="tick" text-anchor="end">%d</text><text x="%g" y="%g" class="tick" text-anchor="end">0</text>`, left-4, maxN, left-4, h-bottom)
	for i, b := range buckets {
		y := h - bottom
		for _, d := range decisionOrder {
			v := b[d]
			if v == 0 {
				continue
			}
			bh := float64(v) / float64(maxN) * (h - bottom - 8)
			y -= bh
			fmt.Fprintf(&s, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="d-%s"><title>%s: %d %s</title></rect>`,
				left+float64(i)*bw+1, y, math.Max(bw-2, 1), bh, d, start.Add(time.Duration(i)*step).Format(label), v, d)
		}
	}
	fmt.Fprintf(&s, `<text x="%g" y="%g" class="tick">%s</text><text x="%g" y="%g" class="tick" text-anchor="end">%s (UTC, by %s)</text>`,
		left, h-6, start.Format(label), w, h-6, start.Add(time.Duration(n-1)*step).Format(label), step)
	s.WriteString(`</svg><p class="legend">`)
	for _, d := range decisionOrder {
		fmt.Fprintf(&s, `<span class="key d-%s"></span>%s `, d, d)
	}
	s.WriteString(`</p>`)
	return template.HTML(s.String())
}

// allowance is one row of GET /api/v1/tenants/{tenant}/allowances.
type allowance struct {
	Profile    string   `json:"profile"`
	Connector  string   `json:"connector"`
	Unit       string   `json:"unit"`
	PerRun     *float64 `json:"perRun"`
	PerDay     *float64 `json:"perDay"`
	SpentToday float64  `json:"spentToday"`
}

// spendChart draws each profile's and connector's spend today against its daily allowance.
func spendChart(body []byte) template.HTML {
	var list struct {
		Allowances []allowance `json:"allowances"`
		Items      []allowance `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return template.HTML(`<p class="muted">The allowances could not be read.</p>`)
	}
	rows := append(list.Allowances, list.Items...)
	if len(rows) == 0 {
		return template.HTML(`<p class="muted">No profile of this tenant has an allowance.</p>`)
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].Profile+"/"+rows[i].Connector < rows[j].Profile+"/"+rows[j].Connector
	})
	const w, rowH, left = 640.0, 28.0, 200.0
	h := rowH*float64(len(rows)) + 8
	var s strings.Builder
	fmt.Fprintf(&s, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="Spend today against the daily allowance"><title>Spend today against the daily allowance</title>`, w, h)
	for i, a := range rows {
		y := float64(i)*rowH + 4
		limit := a.SpentToday
		if a.PerDay != nil && *a.PerDay > 0 {
			limit = *a.PerDay
		}
		frac := 0.0
		if limit > 0 {
			frac = math.Min(a.SpentToday/limit, 1)
		}
		over, cap := "", "no daily allowance"
		if a.PerDay != nil && *a.PerDay > 0 {
			cap = fmt.Sprintf("%g %s a day", *a.PerDay, a.Unit)
			if a.SpentToday >= *a.PerDay {
				over = " over"
			}
		}
		fmt.Fprintf(&s, `<text x="0" y="%g" class="tick">%s</text>`, y+16, template.HTMLEscapeString(a.Profile+" · "+a.Connector))
		fmt.Fprintf(&s, `<rect x="%g" y="%g" width="%g" height="18" class="track"/>`, left, y+3, w-left-100)
		fmt.Fprintf(&s, `<rect x="%g" y="%g" width="%.1f" height="18" class="spent%s"><title>%g of %s</title></rect>`,
			left, y+3, frac*(w-left-100), over, a.SpentToday, template.HTMLEscapeString(cap))
		fmt.Fprintf(&s, `<text x="%g" y="%g" class="tick">%g / %s</text>`, w-96, y+16, a.SpentToday, template.HTMLEscapeString(strings.TrimSuffix(cap, " a day")))
	}
	s.WriteString(`</svg>`)
	return template.HTML(s.String())
}
