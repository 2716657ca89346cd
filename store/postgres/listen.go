package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wardenhq/warden/instance"
)

// hub is a *DB's one LISTEN connection and the in-process watchers it wakes, by card id.
//
// It starts with the first Watch. If the connection drops it reconnects (with backoff, for as
// long as the DB is open), LISTENs again and then re-reads every watched card: notifications
// sent while it was away are lost, and the re-read is what finds the answers they carried.
type hub struct {
	db *DB
	// health is how long the listener waits for a notification before it checks that its
	// connection still answers (a connection can die without the socket saying so).
	health time.Duration
	// pingWait is how long that check may take before the connection is taken for dead:
	// apart from health, so that checking often does not mean giving up on a slow answer.
	pingWait   time.Duration
	backoffMax time.Duration

	mu       sync.Mutex
	watchers map[string]map[*watcher]struct{}
	// relays are the listeners of relayed session messages (relay.go).
	relays   map[chan instance.Relayed]struct{}
	running  bool
	starting *attempt
	closed   bool

	pid       atomic.Uint32 // the listening backend, for tests
	reconnect atomic.Int64  // how many times it reconnected, for tests
	pings     atomic.Int64  // health checks answered, for tests
	wg        sync.WaitGroup
}

// watcher is one Watch call. Its fields are guarded by hub.mu.
type watcher struct {
	id    string
	ch    chan struct{}
	fired bool
	stop  func() bool // stops the context.AfterFunc that removes it
}

// attempt is the first connection of the listener, which the first Watch waits for.
type attempt struct {
	done chan struct{}
	err  error
}

func newHub(db *DB) *hub {
	return &hub{db: db, health: 30 * time.Second, pingWait: 30 * time.Second, backoffMax: 5 * time.Second, watchers: map[string]map[*watcher]struct{}{}}
}

// ensure starts the listener if it is not running and waits until it listens; an error if its
// first connection fails (the next Watch tries again).
func (h *hub) ensure(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return fmt.Errorf("postgres: watch: %w", ErrClosed)
	}
	if h.running {
		h.mu.Unlock()
		return nil
	}
	a := h.starting
	if a == nil {
		a = &attempt{done: make(chan struct{})}
		h.starting = a
		h.wg.Add(1)
		go h.run(a)
	}
	h.mu.Unlock()
	select {
	case <-a.done:
		return a.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop ends the listener; the DB's context has been cancelled already.
func (h *hub) stop() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.wg.Wait()
}

func (h *hub) run(a *attempt) {
	defer h.wg.Done()
	ctx := h.db.ctx
	conn, err := h.connect(ctx)
	h.mu.Lock()
	h.starting = nil
	if err != nil {
		a.err = fmt.Errorf("postgres: listen for answers on %s: %w", h.db.where, err)
		h.mu.Unlock()
		close(a.done)
		return
	}
	h.running = true
	h.mu.Unlock()
	close(a.done)

	for {
		h.listen(ctx, conn)
		closeConn(conn)
		if ctx.Err() != nil {
			return
		}
		backoff := 50 * time.Millisecond
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, h.backoffMax)
			if conn, err = h.connect(ctx); err != nil {
				continue
			}
			// Listening again: now find what was answered while we were not.
			if err = h.recheck(ctx); err != nil {
				closeConn(conn)
				continue
			}
			h.reconnect.Add(1)
			break
		}
	}
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn.Close(ctx)
}

func (h *hub) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg := h.db.pool.Config().ConnConfig.Copy()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{h.db.channel}.Sanitize()); err != nil {
		closeConn(conn)
		return nil, err
	}
	h.pid.Store(conn.PgConn().PID())
	return conn, nil
}

// listen wakes watchers until the connection fails or the DB closes.
func (h *hub) listen(ctx context.Context, conn *pgx.Conn) {
	for {
		wctx, cancel := context.WithTimeout(ctx, h.health)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if pgconn.Timeout(err) && !conn.IsClosed() {
				pctx, cancel := context.WithTimeout(ctx, h.pingWait)
				err = conn.Ping(pctx)
				cancel()
				if err == nil {
					h.pings.Add(1)
					continue
				}
			}
			return
		}
		h.notify(n.Payload)
	}
}

// recheck wakes the watchers of every watched card that is no longer pending, and every
// watcher of the hard blocks, of token revocations and of the stored objects.
func (h *hub) recheck(ctx context.Context) error {
	h.mu.Lock()
	ids := make([]string, 0, len(h.watchers))
	for id := range h.watchers {
		if id == boundariesKey || id == revocationsKey || id == objectsKey {
			continue
		}
		ids = append(ids, id)
	}
	h.mu.Unlock()
	// A hard-block write may have gone unheard: its watchers read every document again.
	h.notify(boundariesKey)
	h.notify(revocationsKey)
	h.notify(objectsKey)
	if len(ids) == 0 {
		return nil
	}
	rows, err := h.db.pool.Query(ctx, `SELECT id FROM cards WHERE id = ANY($1) AND state <> 'pending'`, ids)
	if err != nil {
		return err
	}
	answered, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, id := range answered {
		h.notify(id)
	}
	return nil
}

func (h *hub) add(id string) *watcher {
	w := &watcher{id: id, ch: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.watchers[id]
	if set == nil {
		set = map[*watcher]struct{}{}
		h.watchers[id] = set
	}
	set[w] = struct{}{}
	return w
}

// until removes w when ctx ends, unless it fired first.
func (h *hub) until(ctx context.Context, w *watcher) {
	stop := context.AfterFunc(ctx, func() { h.remove(w) })
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.fired {
		stop()
		return
	}
	w.stop = stop
}

// closeWhen closes w's channel when ctx ends, unless it fired first: for a watch whose
// channel ends with its context (WatchObjects).
func (h *hub) closeWhen(ctx context.Context, w *watcher) {
	stop := context.AfterFunc(ctx, func() { h.fire(w) })
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.fired {
		stop()
		return
	}
	w.stop = stop
}

func (h *hub) remove(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.detach(w)
}

func (h *hub) detach(w *watcher) {
	if set := h.watchers[w.id]; set != nil {
		delete(set, w)
		if len(set) == 0 {
			delete(h.watchers, w.id)
		}
	}
}

func (h *hub) fire(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fireLocked(w)
}

func (h *hub) fireLocked(w *watcher) {
	if w.fired {
		return
	}
	w.fired = true
	close(w.ch)
	h.detach(w)
	if w.stop != nil {
		w.stop()
	}
}

// notify wakes every watcher of a card.
func (h *hub) notify(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if strings.HasPrefix(id, relayPrefix) {
		h.relayLocked(id)
		return
	}
	for w := range h.watchers[id] {
		h.fireLocked(w)
	}
}
