package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/wardenhq/warden/approval"
)

// CardFeed carries card changes to the event streams of GET /api/v1/approvals/events: wire
// Publish as (part of) approval.Options.OnCard. A stream that cannot keep up loses the changes
// it has no room for (its page can be reloaded), never slowing the broker. It is safe for
// concurrent use; the zero value is ready.
type CardFeed struct {
	mu   sync.Mutex
	subs map[*cardSub]struct{}
}

type cardSub struct {
	tenant string // "": every tenant's
	ch     chan cardJSON
}

// cardBuffer is how many changes a stream holds that it has not written yet.
const cardBuffer = 64

// Publish tells every stream that may see the card's tenant of a card created or leaving pending.
func (f *CardFeed) Publish(c *approval.Card) {
	j := toCardJSON(c)
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		if s.tenant != "" && s.tenant != c.Tenant {
			continue
		}
		select {
		case s.ch <- j:
		default:
		}
	}
}

func (f *CardFeed) subscribe(tenant string) (*cardSub, func()) {
	s := &cardSub{tenant: tenant, ch: make(chan cardJSON, cardBuffer)}
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[*cardSub]struct{}{}
	}
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	return s, func() {
		f.mu.Lock()
		delete(f.subs, s)
		f.mu.Unlock()
	}
}

// eventPing is how often a quiet stream sends a comment, so that proxies keep it open, and
// reads the pending cards from the store, for the cards another instance created or answered.
var eventPing = 15 * time.Second

// approvalEvents streams the caller's tenant's card changes as server-sent events: a "card"
// event with the card's JSON when one is created or leaves pending, a comment every 15 s. The
// changes of this instance come at once, through the CardFeed; those of another instance on
// the same store within 15 s, when the stream reads the pending cards again.
func (s *Server) approvalEvents(w http.ResponseWriter, r *http.Request) {
	if s.o.Cards == nil {
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "this server streams no approval events"}, nil)
		return
	}
	tenant := tenantOf(caller(r))
	sub, cancel := s.o.Cards.subscribe(tenant)
	defer cancel()
	pending := map[string]bool{}
	if cards, err := s.o.Store.Cards(r.Context(), approval.CardFilter{Tenant: tenant, State: approval.Pending}); err == nil {
		for _, c := range cards {
			pending[c.ID] = true
		}
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, ": approvals of ", tenantLabel(tenant), "\n\n"); err != nil {
		return
	}
	_ = rc.Flush()
	send := func(c cardJSON) error {
		if c.State == approval.Pending {
			pending[c.ID] = true
		} else {
			delete(pending, c.ID)
		}
		data, err := json.Marshal(c)
		if err != nil {
			return nil
		}
		_, err = fmt.Fprintf(w, "event: card\nid: %s\ndata: %s\n\n", c.ID, data)
		return err
	}
	ping := time.NewTicker(s.ping)
	defer ping.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			if _, err = fmt.Fprint(w, ": ping\n\n"); err == nil {
				err = s.catchUp(r, tenant, pending, send)
			}
		case c := <-sub.ch:
			if c.State == approval.Pending && pending[c.ID] {
				continue // already told
			}
			err = send(c)
		}
		if err != nil || rc.Flush() != nil {
			return
		}
	}
}

// catchUp sends what the store says changed since the stream last looked: cards pending now
// that it has not sent, and cards it sent as pending that are no longer. A store that cannot
// be read now is tried again at the next ping.
func (s *Server) catchUp(r *http.Request, tenant string, pending map[string]bool, send func(cardJSON) error) error {
	cards, err := s.o.Store.Cards(r.Context(), approval.CardFilter{Tenant: tenant, State: approval.Pending})
	if err != nil {
		return nil
	}
	now := map[string]bool{}
	for _, c := range cards {
		now[c.ID] = true
		if !pending[c.ID] {
			if err := send(toCardJSON(c)); err != nil {
				return err
			}
		}
	}
	for id := range pending {
		if now[id] {
			continue
		}
		c, err := s.o.Store.Card(r.Context(), tenant, id)
		if err != nil {
			delete(pending, id)
			continue
		}
		if err := send(toCardJSON(c)); err != nil {
			return err
		}
	}
	return nil
}

func tenantLabel(tenant string) string {
	if tenant == "" {
		return "every tenant"
	}
	return "tenant " + tenant
}
