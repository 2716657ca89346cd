package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wardenhq/warden/approval"
)

const cardColumns = `id, tenant, session, principal, tool, digest, policy_revision, args, reason,
	state, answer, approver, created, deadline, answered, channel, instance`

type scanner interface{ Scan(dest ...any) error }

func scanCard(row scanner) (*approval.Card, error) {
	var (
		c                           approval.Card
		args                        sql.NullString
		created, deadline, answered sql.NullString
		state, answer, channel      string
	)
	err := row.Scan(&c.ID, &c.Tenant, &c.Session, &c.Principal, &c.Tool, &c.Digest, &c.PolicyRevision,
		&args, &c.Reason, &state, &answer, &c.Approver, &created, &deadline, &answered, &channel, &c.Instance)
	if err != nil {
		return nil, err
	}
	c.State, c.Answer, c.Channel = approval.State(state), approval.Answer(answer), approval.Channel(channel)
	if args.Valid {
		c.Args = json.RawMessage(args.String)
	}
	if c.Created, err = parseTime(created); err != nil {
		return nil, err
	}
	if c.Deadline, err = parseTime(deadline); err != nil {
		return nil, err
	}
	if c.Answered, err = parseTime(answered); err != nil {
		return nil, err
	}
	return &c, nil
}

// CreateCard stores a new pending card; its State is pending whatever c says.
func (db *DB) CreateCard(ctx context.Context, c *approval.Card) error {
	if c.ID == "" {
		return errors.New("create card: no id")
	}
	var args any
	if len(c.Args) > 0 {
		if !json.Valid(c.Args) {
			return fmt.Errorf("create card %s: the arguments are not JSON", c.ID)
		}
		args = string(c.Args)
	}
	err := db.write(ctx, func(*sql.Conn) error {
		_, err := db.ws.createCard.ExecContext(ctx, c.ID, c.Tenant, c.Session, c.Principal, c.Tool, c.Digest,
			c.PolicyRevision, args, c.Reason, string(c.Answer), c.Approver,
			dbTime(c.Created), dbTime(c.Deadline), dbTime(c.Answered), string(c.Channel), c.Instance)
		return err
	})
	if err != nil {
		return db.fail("create card "+c.ID, err)
	}
	c.State = approval.Pending
	return nil
}

// Card returns a card; tenant "" matches any tenant.
func (db *DB) Card(ctx context.Context, tenant, id string) (*approval.Card, error) {
	c, err := scanCard(db.rs.card.QueryRowContext(ctx, id, tenant))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("card %s: %w", id, approval.ErrNotFound)
	}
	if err != nil {
		return nil, db.fail("card "+id, err)
	}
	return c, nil
}

// Cards lists cards, newest first.
func (db *DB) Cards(ctx context.Context, f approval.CardFilter) ([]*approval.Card, error) {
	var (
		where []string
		args  []any
	)
	if f.Tenant != "" {
		where, args = append(where, "tenant = ?"), append(args, f.Tenant)
	}
	if f.State != "" {
		where, args = append(where, "state = ?"), append(args, string(f.State))
	}
	q := "SELECT " + cardColumns + " FROM cards"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created DESC, id DESC"
	if f.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, f.Limit)
	}
	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.fail("list cards", err)
	}
	defer rows.Close()
	var cards []*approval.Card
	for rows.Next() {
		c, err := scanCard(rows)
		if err != nil {
			return nil, db.fail("list cards", err)
		}
		cards = append(cards, c)
	}
	if err := rows.Err(); err != nil {
		return nil, db.fail("list cards", err)
	}
	return cards, nil
}

// Resolve moves a pending card to a final state and wakes its watchers. Of any number of
// concurrent answers, in this process or others, exactly one succeeds; the rest get
// approval.ErrNotPending.
func (db *DB) Resolve(ctx context.Context, id string, state approval.State, answer approval.Answer, approver string, channel approval.Channel, at time.Time) (*approval.Card, error) {
	switch state {
	case approval.Allowed, approval.Denied, approval.Expired:
	default:
		return nil, fmt.Errorf("resolve card %s: %q is not a final state", id, state)
	}
	var c *approval.Card
	err := db.tx(ctx, func(*sql.Conn) error {
		var err error
		c, err = scanCard(db.ws.resolveCard.QueryRowContext(ctx, string(state), string(answer), approver, string(channel), dbTime(at), id))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var current string
		switch err := db.ws.cardState.QueryRowContext(ctx, id).Scan(&current); {
		case errors.Is(err, sql.ErrNoRows):
			return approval.ErrNotFound
		case err != nil:
			return err
		}
		return approval.ErrNotPending
	})
	if err != nil {
		if errors.Is(err, approval.ErrNotFound) || errors.Is(err, approval.ErrNotPending) {
			return nil, fmt.Errorf("resolve card %s: %w", id, err)
		}
		return nil, db.fail("resolve card "+id, err)
	}
	db.hub.fire(id)
	return c, nil
}

// Watch returns a channel closed when the card leaves pending: at once if it has, as soon as a
// Resolve in this process commits, and within the poll interval for one in another process.
// When ctx ends the watch is dropped and the channel stays open. A card that does not exist is
// approval.ErrNotFound.
func (db *DB) Watch(ctx context.Context, id string) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// registered before the state is read, so that a Resolve between the two is not missed
	w := db.hub.add(id)
	var state string
	err := db.rs.cardState.QueryRowContext(ctx, id).Scan(&state)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		db.hub.remove(w)
		return nil, fmt.Errorf("watch card %s: %w", id, approval.ErrNotFound)
	case err != nil:
		db.hub.remove(w)
		return nil, db.fail("watch card "+id, err)
	case approval.State(state) != approval.Pending:
		db.hub.fireOne(w)
		return w.ch, nil
	}
	db.hub.bind(w, context.AfterFunc(ctx, func() { db.hub.remove(w) }))
	return w.ch, nil
}
