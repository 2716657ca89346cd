package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wardenhq/warden/instance"
)

var _ instance.Relay = (*DB)(nil)

// relayPrefix starts a relayed message on the store's channel (card ids never start with "*").
const relayPrefix = "*relay\n"

// Relay sends a session's message to every instance listening on the store's channel.
func (db *DB) Relay(ctx context.Context, m instance.Relayed) error {
	if len(m.Data) > instance.MaxRelayed {
		return fmt.Errorf("postgres: relay: the message is %d bytes, more than %d", len(m.Data), instance.MaxRelayed)
	}
	if strings.ContainsRune(m.Session, '\n') || strings.ContainsRune(m.Kind, '\n') {
		return errors.New("postgres: relay: a session id or kind with a newline")
	}
	_, err := db.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, db.channel, relayPrefix+m.Session+"\n"+m.Kind+"\n"+string(m.Data))
	return db.wrap("relay", err)
}

// Relayed returns the messages relayed on the store's channel from now until ctx ends.
func (db *DB) Relayed(ctx context.Context) (<-chan instance.Relayed, error) {
	if err := db.hub.ensure(ctx); err != nil {
		return nil, err
	}
	ch := make(chan instance.Relayed, 64)
	db.hub.mu.Lock()
	if db.hub.relays == nil {
		db.hub.relays = map[chan instance.Relayed]struct{}{}
	}
	db.hub.relays[ch] = struct{}{}
	db.hub.mu.Unlock()
	context.AfterFunc(ctx, func() {
		db.hub.mu.Lock()
		delete(db.hub.relays, ch)
		db.hub.mu.Unlock()
		close(ch)
	})
	return ch, nil
}

// relay hands a relayed payload to every listener, dropping it for one whose queue is full.
// h.mu is held.
func (h *hub) relayLocked(payload string) {
	rest := strings.TrimPrefix(payload, relayPrefix)
	session, rest, ok1 := strings.Cut(rest, "\n")
	kind, data, ok2 := strings.Cut(rest, "\n")
	if !ok1 || !ok2 {
		return
	}
	m := instance.Relayed{Session: session, Kind: kind, Data: []byte(data)}
	for ch := range h.relays {
		select {
		case ch <- m:
		default:
		}
	}
}
