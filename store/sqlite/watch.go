package sqlite

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// hub holds this process's watchers, by card.
type hub struct {
	mu    sync.Mutex
	cards map[string]map[*watcher]struct{}
}

type watcher struct {
	id   string
	ch   chan struct{}
	stop func() bool // ends the context.AfterFunc that removes it; nil until bound
}

func newHub() *hub { return &hub{cards: map[string]map[*watcher]struct{}{}} }

func (h *hub) add(id string) *watcher {
	w := &watcher{id: id, ch: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.cards[id]
	if set == nil {
		set = map[*watcher]struct{}{}
		h.cards[id] = set
	}
	set[w] = struct{}{}
	return w
}

// bind gives w the function that stops its context's clean-up, or calls it at once if w has
// already fired or been removed.
func (h *hub) bind(w *watcher, stop func() bool) {
	h.mu.Lock()
	if _, ok := h.cards[w.id][w]; ok {
		w.stop = stop
		stop = nil
	}
	h.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// unlink drops w and reports whether it was still there; h.mu is held.
func (h *hub) unlink(w *watcher) bool {
	set := h.cards[w.id]
	if _, ok := set[w]; !ok {
		return false
	}
	delete(set, w)
	if len(set) == 0 {
		delete(h.cards, w.id)
	}
	return true
}

// remove drops a watcher without waking it (its context ended).
func (h *hub) remove(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unlink(w)
}

// fireOne wakes one watcher.
func (h *hub) fireOne(w *watcher) {
	h.mu.Lock()
	ok := h.unlink(w)
	h.mu.Unlock()
	if ok {
		close(w.ch)
		if w.stop != nil {
			w.stop()
		}
	}
}

// fire wakes every watcher of a card.
func (h *hub) fire(id string) {
	h.mu.Lock()
	set := h.cards[id]
	delete(h.cards, id)
	h.mu.Unlock()
	for w := range set {
		close(w.ch)
		if w.stop != nil {
			w.stop()
		}
	}
}

// watched returns the ids of the cards being watched, as a JSON array, or "" for none.
func (h *hub) watched() string {
	h.mu.Lock()
	ids := make([]string, 0, len(h.cards))
	for id := range h.cards {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return ""
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// poll looks, every poll interval while anything is watched, for watched cards that another
// process resolved, until Close.
func (db *DB) poll() {
	defer db.bg.Done()
	tick := time.NewTicker(db.opts.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-db.stop:
			return
		case <-tick.C:
		}
		db.pollBoundaries()
		db.pollObjects()
		db.pollRevocations()
		ids := db.hub.watched()
		if ids == "" {
			continue
		}
		db.pollOnce(ids)
	}
}

func (db *DB) pollOnce(ids string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*db.opts.PollInterval)
	defer cancel()
	rows, err := db.rs.watched.QueryContext(ctx, ids)
	if err != nil {
		return // the next tick tries again
	}
	var done []string
	for rows.Next() {
		var id string
		if rows.Scan(&id) == nil {
			done = append(done, id)
		}
	}
	rows.Close()
	for _, id := range done {
		db.hub.fire(id)
	}
}
