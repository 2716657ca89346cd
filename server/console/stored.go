package console

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/wardenhq/warden/clock"
	"github.com/wardenhq/warden/server/console/consolesession"
)

// recheck is how often an open event stream reads its session from the store: a session ended
// on another instance (signed out, evicted, or its token revoked) ends the streams this
// instance holds for it within this long. One ended on this instance ends them at once.
const recheck = 10 * time.Second

// stored is the keeper of sessions in a store that every instance on it shares. The store has
// the hash of each session's id and the token's id; this instance has nothing of a session but
// the streams it holds open.
type stored struct {
	store       consolesession.Store
	clock       clock.Clock
	idle, max   time.Duration
	maxSessions int

	mu sync.Mutex
	// ending are the sessions this instance holds streams of, by id hash: closed when this
	// instance ends the session.
	ending map[string]*ending
}

// ending is closed when this instance ends a session; holds counts the streams that wait on it.
type ending struct {
	ch    chan struct{}
	holds int
}

func newStored(st consolesession.Store, c clock.Clock, idle, max time.Duration, n int) *stored {
	return &stored{store: st, clock: c, idle: idle, max: max, maxSessions: n, ending: map[string]*ending{}}
}

// bounds are the sessions' bounds now.
func (s *stored) bounds() consolesession.Bounds {
	return consolesession.Bounds{Now: s.clock.Now(), Idle: s.idle, MaxAge: s.max, Max: s.maxSessions}
}

func fromRecord(id string, r *consolesession.Record) *session {
	return &session{id: id, idHash: r.IDHash, tokenID: r.TokenID, csrf: r.CSRF, name: r.Name, tenant: r.Tenant,
		role: r.Role, created: r.Created, seen: r.Seen}
}

func (s *stored) signIn(ctx context.Context, who signedIn) (*session, error) {
	b := s.bounds()
	id := randomToken()
	r := &consolesession.Record{IDHash: consolesession.HashID(id), TokenID: who.tokenID, CSRF: randomToken(),
		Name: who.name, Tenant: who.tenant, Role: who.role, Created: b.Now, Seen: b.Now}
	if err := s.store.CreateConsoleSession(ctx, r, b); err != nil {
		return nil, err
	}
	return fromRecord(id, r), nil
}

func (s *stored) find(ctx context.Context, id string) (*session, error) {
	r, err := s.store.UseConsoleSession(ctx, consolesession.HashID(id), s.bounds())
	if errors.Is(err, consolesession.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return fromRecord(id, r), nil
}

func (s *stored) end(ctx context.Context, ss *session) error {
	err := s.store.EndConsoleSession(ctx, ss.idHash, s.clock.Now())
	s.mu.Lock()
	if e := s.ending[ss.idHash]; e != nil {
		close(e.ch)
		delete(s.ending, ss.idHash)
	}
	s.mu.Unlock()
	return err
}

// hold returns a context that ends with ctx or when the session ends: ended here (at once),
// ended on another instance or its token revoked (within recheck), idle past its bound (an open
// stream is not use: it only watches; another page's use, on any instance, extends it) or at
// its absolute lifetime. A store that cannot be read ends it too.
func (s *stored) hold(ctx context.Context, ss *session) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	e := s.ending[ss.idHash]
	if e == nil {
		e = &ending{ch: make(chan struct{})}
		s.ending[ss.idHash] = e
	}
	e.holds++
	s.mu.Unlock()
	go func() {
		defer cancel()
		defer func() {
			s.mu.Lock()
			if e.holds--; e.holds == 0 && s.ending[ss.idHash] == e {
				delete(s.ending, ss.idHash)
			}
			s.mu.Unlock()
		}()
		for {
			b := s.bounds()
			r, err := s.store.ConsoleSession(ctx, ss.idHash, b)
			if err != nil {
				return
			}
			next := min(r.Seen.Add(s.idle).Sub(b.Now), r.Created.Add(s.max).Sub(b.Now), recheck)
			timer, stop := s.clock.After(max(next, time.Millisecond))
			select {
			case <-e.ch:
				stop()
				return
			case <-ctx.Done():
				stop()
				return
			case <-timer:
			}
		}
	}()
	return ctx, cancel
}
