package policy_test

import (
	"testing"

	"github.com/wardenhq/warden/policy"
)

func TestCost(t *testing.T) {
	p, err := policy.Parse("t.yaml", []byte(`
version: 1
connectors:
  - id: crawl
    effect: read
    billing:
      unit: credits
      cost: 1
    tools:
      - name: mcp__crawl__scrape
      - name: mcp__crawl__crawl
        args: {limit: integer}
        cost: {arg: limit, times: 2, reserve: 10}
      - name: mcp__crawl__search
        cost: {result: creditsUsed, reserve: 5}
`))
	if err != nil {
		t.Fatal(err)
	}
	cost := func(name string) *policy.Cost {
		tool, _ := p.Tool(name)
		return tool.Cost
	}
	tests := []struct {
		tool       string
		args       map[string]any
		result     map[string]any
		estimate   float64
		actual     float64
		actualOK   bool
		estimateOK bool
	}{
		{"mcp__crawl__scrape", nil, nil, 1, 1, true, true},
		{"mcp__crawl__crawl", map[string]any{"limit": 30.0}, nil, 60, 60, true, true},
		{"mcp__crawl__crawl", map[string]any{}, nil, 10, 10, true, true},
		{"mcp__crawl__crawl", map[string]any{"limit": -3.0}, nil, 0, 0, false, false},
		{"mcp__crawl__crawl", map[string]any{"limit": "many"}, nil, 0, 0, false, false},
		{"mcp__crawl__search", nil, map[string]any{"creditsUsed": 3.0}, 5, 3, true, true},
		{"mcp__crawl__search", nil, map[string]any{}, 5, 0, false, true},
	}
	for _, tt := range tests {
		c := cost(tt.tool)
		est, err := c.Estimate(tt.args)
		if (err == nil) != tt.estimateOK || (err == nil && est != tt.estimate) {
			t.Errorf("%s %v: Estimate = %v, %v; want %v (ok %v)", tt.tool, tt.args, est, err, tt.estimate, tt.estimateOK)
		}
		act, ok, _ := c.Actual(tt.args, tt.result)
		if ok != tt.actualOK || (ok && act != tt.actual) {
			t.Errorf("%s: Actual = %v, %v; want %v, %v", tt.tool, act, ok, tt.actual, tt.actualOK)
		}
	}
	var none *policy.Cost
	if est, err := none.Estimate(nil); est != 0 || err != nil {
		t.Errorf("a tool that does not bill costs nothing: %v, %v", est, err)
	}
}
