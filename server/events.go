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

// eventPing is how often a quiet stream sends a comment, so that proxies keep it open.
const eventPing = 15 * time.Second

// approvalEvents streams the caller's tenant's card changes as server-sent events: a "card"
// event with the card's JSON when one is created or leaves pending, a comment every 15 s.
func (s *Server) approvalEvents(w http.ResponseWriter, r *http.Request) {
	if s.o.Cards == nil {
		s.fail(w, r, apiError{http.StatusNotFound, "not_found", "this server streams no approval events"}, nil)
		return
	}
	sub, cancel := s.o.Cards.subscribe(tenantOf(caller(r)))
	defer cancel()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, ": approvals of ", tenantLabel(tenantOf(caller(r))), "\n\n"); err != nil {
		return
	}
	_ = rc.Flush()
	ping := time.NewTicker(eventPing)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
		case c := <-sub.ch:
			data, err := json.Marshal(c)
			if err != nil {
				continue
			}
			if _, err := fmt.Fprintf(w, "event: card\nid: %s\ndata: %s\n\n", c.ID, data); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

func tenantLabel(tenant string) string {
	if tenant == "" {
		return "every tenant"
	}
	return "tenant " + tenant
}
