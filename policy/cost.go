package policy

import (
	"fmt"
	"math"
)

// Estimate is what to reserve before a call: the fixed cost, the argument's value times Times,
// or Reserve for a cost known only from the result (or from an argument the call does not
// give). A negative or non-numeric argument is an error: the call cannot be priced.
func (c *Cost) Estimate(args map[string]any) (float64, error) {
	switch {
	case c == nil:
		return 0, nil
	case c.Fixed != nil:
		return *c.Fixed, nil
	case c.Arg != "":
		v, ok := args[c.Arg]
		if !ok || v == nil {
			return c.Reserve, nil
		}
		n, ok := number(v)
		if !ok {
			return 0, fmt.Errorf("the cost comes from %s, which is not a number (%v)", c.Arg, v)
		}
		if n < 0 {
			return 0, fmt.Errorf("the cost comes from %s, which is negative (%v)", c.Arg, n)
		}
		return n * c.Times, nil
	}
	return c.Reserve, nil
}

// Actual is what a call cost, given its result: the result's field for a cost settled from the
// result, else the estimate. ok is false when the result does not say (the reservation then
// stands as the cost).
func (c *Cost) Actual(args, result map[string]any) (cost float64, ok bool, err error) {
	if c == nil || c.Result == "" {
		est, err := c.Estimate(args)
		return est, err == nil, err
	}
	v, present := result[c.Result]
	if !present {
		return 0, false, nil
	}
	n, isNum := number(v)
	if !isNum || n < 0 {
		return 0, false, fmt.Errorf("the result's %s is %v, not a cost", c.Result, v)
	}
	return n, true, nil
}

func number(v any) (float64, bool) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case float32:
		f = float64(n)
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	default:
		return 0, false
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}
