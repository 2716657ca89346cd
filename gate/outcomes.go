package gate

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/wardenhq/warden/audit"
)

// The decision to run a call is appended to the audit trail, durably, before the call runs: a
// decision that cannot be recorded is not executed. Its outcome is recorded after, by a writer
// of its own, so that a call does not wait for a second commit: outcomes that arrive together
// are written in one commit (when the log can batch). A log that queues (audit.Queuer: the
// SQLite store's decision journal) takes the outcome into the transaction that indexes the
// decisions of the moment instead, and the writer is not used: one commit where there were
// two. If the process dies, an outcome still queued is lost, never a decision; Sync waits for
// the queue, Close drains it.

// outcomeQueue is how many outcomes may wait to be written before calls wait for the writer.
const outcomeQueue = 4096

// maxBatch is how many queued outcomes one commit writes at most, and gatherFor how long the
// writer waits for more before it commits what it has.
const (
	maxBatch  = 256
	gatherFor = 2 * time.Millisecond
)

type outcomeWriter struct {
	log     audit.Log
	queue   audit.Queuer // the log, when it queues
	logger  *slog.Logger
	ch      chan *audit.Event
	mu      sync.Mutex
	cond    *sync.Cond
	pending int // queued or being written
	closed  bool
	done    chan struct{}
}

func newOutcomeWriter(log audit.Log, logger *slog.Logger) *outcomeWriter {
	w := &outcomeWriter{log: log, logger: logger, ch: make(chan *audit.Event, outcomeQueue), done: make(chan struct{})}
	w.queue, _ = log.(audit.Queuer)
	w.cond = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// add queues an outcome (in the log, when it queues); after Close it is written at once
// instead.
func (w *outcomeWriter) add(ctx context.Context, e *audit.Event) error {
	if w.queue != nil && w.queue.Queue(e) == nil {
		return nil
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.log.Append(ctx, e)
	}
	w.pending++
	w.mu.Unlock()
	w.ch <- e
	return nil
}

func (w *outcomeWriter) run() {
	defer close(w.done)
	batch := make([]*audit.Event, 0, maxBatch)
	for e := range w.ch {
		batch = append(batch[:0], e)
		// Gather what arrives in the next moment too: one commit for many outcomes leaves the
		// store's writer free for the decisions calls are waiting on.
		linger := time.NewTimer(gatherFor)
	more:
		for len(batch) < maxBatch {
			select {
			case next, ok := <-w.ch:
				if !ok {
					break more
				}
				batch = append(batch, next)
			case <-linger.C:
				break more
			}
		}
		linger.Stop()
		w.write(batch)
		w.mu.Lock()
		w.pending -= len(batch)
		w.cond.Broadcast()
		w.mu.Unlock()
	}
}

// write commits a batch, retrying for a while if the log is away; outcomes it cannot write are
// reported in the log output (their decisions are on record already).
func (w *outcomeWriter) write(batch []*audit.Event) {
	ctx := context.Background()
	delay := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		var err error
		if b, ok := w.log.(audit.Batcher); ok && len(batch) > 1 {
			err = b.AppendAll(ctx, batch)
		} else {
			for _, e := range batch {
				if err = w.log.Append(ctx, e); err != nil {
					break
				}
			}
		}
		if err == nil {
			return
		}
		if attempt == 8 {
			w.logger.Error("outcomes could not be recorded (their decisions are on record)", "count", len(batch), "err", err)
			return
		}
		time.Sleep(delay)
		delay *= 2
	}
}

// sync waits until every outcome queued before it was called has been written, or ctx ends.
func (w *outcomeWriter) sync(ctx context.Context) error {
	if err := w.syncOwn(ctx); err != nil || w.queue == nil {
		return err
	}
	return w.queue.WaitQueued(ctx)
}

// syncOwn waits for the writer's own queue.
func (w *outcomeWriter) syncOwn(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.pending > 0 && ctx.Err() == nil {
		w.cond.Wait()
	}
	return ctx.Err()
}

// close drains the queue and stops the writer.
func (w *outcomeWriter) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	close(w.ch)
	<-w.done
}
