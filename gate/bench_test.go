package gate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/examples"
	"github.com/wardenhq/warden/gate"
	"github.com/wardenhq/warden/metrics"
	"github.com/wardenhq/warden/surface"
)

// memoryLog keeps events in memory: it isolates the gate's own work from the store's commit.
type memoryLog struct {
	mu     sync.Mutex
	events []*audit.Event
}

func (m *memoryLog) Append(_ context.Context, e *audit.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.ID = int64(len(m.events) + 1)
	m.events = append(m.events, e)
	if len(m.events) > 1<<16 {
		m.events = m.events[:0]
	}
	return nil
}

func (m *memoryLog) Query(context.Context, audit.Filter) ([]*audit.Event, error) { return nil, nil }

// BenchmarkGate measures what the gate adds to a call that needs neither a card nor money: the
// review alone; the whole gate with an in-memory audit log (the gate's own work: pricing, the
// second review at execution, building the events); and the whole gate on the SQLite store,
// where the decision's durable commit comes before the call runs.
func BenchmarkGate(b *testing.B) {
	t := &testing.T{}
	r := newRig(t, time.Minute)
	s := r.session(examples.Quickstart, nil, surface.Spec{Role: "person", Tenant: "default"}, "bench")
	args := map[string]any{"path": "notes.txt", "content": "x"}
	b.Run("review-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.rv.Review(s.Review, "files_write", args)
		}
	})
	mem, err := gate.New(gate.Options{Reviewer: r.rv, Broker: r.broker, Ledger: r.db, Log: &memoryLog{}, Clock: r.clock})
	if err != nil {
		b.Fatal(err)
	}
	defer mem.Close()
	b.Run("gate-memory-log", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			out, err := mem.Call(ctx, s, "files_write", args, ok)
			if err != nil || !out.Ran {
				b.Fatal(err)
			}
		}
	})
	// The same with the metrics observer `warden serve` gives the gate: what /metrics costs a
	// call, against gate-memory-log.
	observed, err := gate.New(gate.Options{Reviewer: r.rv, Broker: r.broker, Ledger: r.db, Log: &memoryLog{}, Clock: r.clock,
		Observe: metrics.New(metrics.Sources{}).Observe})
	if err != nil {
		b.Fatal(err)
	}
	defer observed.Close()
	b.Run("gate-memory-log-observed", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			out, err := observed.Call(ctx, s, "files_write", args, ok)
			if err != nil || !out.Ran {
				b.Fatal(err)
			}
		}
	})
	b.Run("gate", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			out, err := r.gate.Call(ctx, s, "files_write", args, ok)
			if err != nil || !out.Ran {
				b.Fatal(err)
			}
		}
	})
}
