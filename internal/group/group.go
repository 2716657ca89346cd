// Package group commits concurrent writes together: the callers that arrive while one batch is
// being written are written by the next one, in one transaction, so that under load each
// commit serves many writes, and a lone write waits for nobody. The SQLite store's audit
// appends use it: a decision is still durable before Append returns, and the call it decides
// runs only after that. The PostgreSQL store's appends use it too: a tenant's appends commit
// one after another there (each links the tenant's hash chain under its head row's lock), so
// only batching lets concurrent appends share a commit.
package group

import "sync"

// Commit writes items of type T in batches. The zero value is not usable; see New.
type Commit[T any] struct {
	// write writes one batch, all or nothing (one transaction).
	write func(batch []T) error
	// max bounds a batch.
	max int

	mu      sync.Mutex
	queue   []*waiter[T]
	leading bool
}

type waiter[T any] struct {
	item T
	done chan error
}

// New returns a Commit that writes batches of at most max items with write.
func New[T any](max int, write func(batch []T) error) *Commit[T] {
	if max < 1 {
		max = 1
	}
	return &Commit[T]{write: write, max: max}
}

// Do writes item, with whatever other items are waiting, and returns when it is written (or
// failed). When a batch fails, each of its items is written again alone, so that one item's
// problem is its own caller's error only.
func (c *Commit[T]) Do(item T) error {
	w := &waiter[T]{item: item, done: make(chan error, 1)}
	c.mu.Lock()
	c.queue = append(c.queue, w)
	lead := !c.leading
	c.leading = true
	c.mu.Unlock()
	if lead {
		c.lead()
	}
	return <-w.done
}

// lead writes batches until nobody waits. Only one caller leads at a time; those that arrive
// meanwhile queue up for its next batch.
func (c *Commit[T]) lead() {
	for {
		c.mu.Lock()
		n := min(len(c.queue), c.max)
		if n == 0 {
			c.leading = false
			c.mu.Unlock()
			return
		}
		batch := c.queue[:n:n]
		c.queue = c.queue[n:]
		if len(c.queue) == 0 {
			c.queue = nil
		}
		c.mu.Unlock()
		c.flush(batch)
	}
}

func (c *Commit[T]) flush(batch []*waiter[T]) {
	items := make([]T, len(batch))
	for i, w := range batch {
		items[i] = w.item
	}
	err := c.write(items)
	if err == nil || len(batch) == 1 {
		for _, w := range batch {
			w.done <- err
		}
		return
	}
	for _, w := range batch {
		w.done <- c.write([]T{w.item})
	}
}
