package gate

import (
	"context"
	"time"

	"github.com/wardenhq/warden/audit"
)

// An Observer is told of each call's events as the gate records them: its decision (and, for a
// call that asked, the answer and the decision after it) once durable, and its outcome once
// queued for writing. elapsed is how long the call had been in the gate then, on the real
// clock (so a decision's elapsed is its decision latency, approval wait included). It is
// called on the call's goroutine: it must be quick, and must not keep e. The gate knows
// nothing of what an observer does with them (package metrics counts them).
type Observer func(e *audit.Event, elapsed time.Duration)

type callStartKey struct{}

// unknownToolKey marks the context of a call whose tool the policy does not know (one named by
// a client of Judge, which may name anything): the observer sees its tool as unknownTool, so
// that no client can grow a metric's labels without end. The audit trail keeps the name.
type unknownToolKey struct{}

// unknownTool is what an observer sees as the tool of a call whose tool the policy does not
// know.
const unknownTool = "(unknown)"

// withCallStart marks ctx with the moment a call came to the gate.
func withCallStart(ctx context.Context) context.Context {
	return context.WithValue(ctx, callStartKey{}, time.Now())
}

// observe tells the observer of an event of the call ctx carries.
func (g *Gate) observe(ctx context.Context, e *audit.Event) {
	if g.observer == nil {
		return
	}
	var elapsed time.Duration
	if start, ok := ctx.Value(callStartKey{}).(time.Time); ok {
		elapsed = time.Since(start)
	}
	if ctx.Value(unknownToolKey{}) != nil {
		c := *e
		c.Tool = unknownTool
		e = &c
	}
	g.observer(e, elapsed)
}
