package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/approval"
)

const cardColumns = `id, tenant, session, principal, tool, digest, policy_revision, args, reason,
	state, answer, approver, created, created_ns, deadline, deadline_ns, answered, answered_ns, channel, instance`

func scanCard(row pgx.Row) (*approval.Card, error) {
	var (
		c                 approval.Card
		args              []byte
		state, answer     string
		channel           string
		created, deadline time.Time
		answered          *time.Time
		cns, dns, ans     int16
	)
	err := row.Scan(&c.ID, &c.Tenant, &c.Session, &c.Principal, &c.Tool, &c.Digest, &c.PolicyRevision,
		&args, &c.Reason, &state, &answer, &c.Approver, &created, &cns, &deadline, &dns, &answered, &ans, &channel, &c.Instance)
	if err != nil {
		return nil, err
	}
	if args != nil {
		c.Args = args
	}
	c.State, c.Answer, c.Channel = approval.State(state), approval.Answer(answer), approval.Channel(channel)
	c.Created, c.Deadline, c.Answered = fromTS(&created, cns), fromTS(&deadline, dns), fromTS(answered, ans)
	return &c, nil
}

// CreateCard stores a new card, pending whatever c.State says, and sets c.State. A card's ID is
// the caller's; an ID that exists already is ErrDuplicate. Args, when present, must be JSON.
func (db *DB) CreateCard(ctx context.Context, c *approval.Card) error {
	if c.ID == "" {
		return errors.New("postgres: create card: the card has no id")
	}
	var args []byte
	if len(c.Args) > 0 {
		if !json.Valid(c.Args) {
			return fmt.Errorf("postgres: create card %q: the arguments are not JSON", c.ID)
		}
		args = c.Args
	}
	created, cns := ts(c.Created)
	deadline, dns := ts(c.Deadline)
	answered, ans := tsNull(c.Answered)
	_, err := db.pool.Exec(ctx, `INSERT INTO cards (`+cardColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
		c.ID, c.Tenant, c.Session, c.Principal, c.Tool, c.Digest, c.PolicyRevision, args, c.Reason,
		string(c.Answer), c.Approver, created, cns, deadline, dns, answered, ans, string(c.Channel), c.Instance)
	if err != nil {
		return db.wrap("create card", err)
	}
	c.State = approval.Pending
	return nil
}

// Card returns a card; tenant "" matches any tenant.
func (db *DB) Card(ctx context.Context, tenant, id string) (*approval.Card, error) {
	c, err := scanCard(db.pool.QueryRow(ctx, `SELECT `+cardColumns+` FROM cards
		WHERE id = $1 AND ($2 = '' OR tenant = $2)`, id, tenant))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("card %q: %w", id, approval.ErrNotFound)
	}
	if err != nil {
		return nil, db.wrap("card", err)
	}
	return c, nil
}

// Cards lists cards, newest first (by Created, then by the order they were stored).
func (db *DB) Cards(ctx context.Context, f approval.CardFilter) ([]*approval.Card, error) {
	q := `SELECT ` + cardColumns + ` FROM cards WHERE ($1 = '' OR tenant = $1) AND ($2 = '' OR state = $2)
		ORDER BY created DESC, created_ns DESC, seq DESC`
	args := []any{f.Tenant, string(f.State)}
	if f.Limit > 0 {
		q += ` LIMIT $3`
		args = append(args, f.Limit)
	}
	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, db.wrap("cards", err)
	}
	defer rows.Close()
	var cards []*approval.Card
	for rows.Next() {
		c, err := scanCard(rows)
		if err != nil {
			return nil, db.wrap("cards", err)
		}
		cards = append(cards, c)
	}
	if err := rows.Err(); err != nil {
		return nil, db.wrap("cards", err)
	}
	return cards, nil
}

// Resolve moves a pending card to a final state. Of any number of concurrent answers, on any
// number of instances, exactly one matches the row while it is pending; the rest get
// ErrNotPending. The same transaction notifies the card's channel, and PostgreSQL delivers a
// notification only when the transaction commits, so no watcher wakes to an answer that was
// rolled back.
func (db *DB) Resolve(ctx context.Context, id string, state approval.State, answer approval.Answer, approver string, channel approval.Channel, at time.Time) (*approval.Card, error) {
	if state != approval.Allowed && state != approval.Denied && state != approval.Expired {
		return nil, fmt.Errorf("postgres: resolve card %q: %q is not a final state", id, state)
	}
	if answer != "" && !answer.Valid() {
		return nil, fmt.Errorf("postgres: resolve card %q: %q is not an answer", id, answer)
	}
	when, ns := ts(orNow(at))
	var card *approval.Card
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		card, err = scanCard(tx.QueryRow(ctx, `UPDATE cards
			SET state = $2, answer = $3, approver = $4, answered = $5, answered_ns = $6, channel = $7
			WHERE id = $1 AND state = 'pending'
			RETURNING `+cardColumns, id, string(state), string(answer), approver, when, ns, string(channel)))
		if errors.Is(err, pgx.ErrNoRows) {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cards WHERE id = $1)`, id).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return fmt.Errorf("card %q: %w", id, approval.ErrNotFound)
			}
			return fmt.Errorf("card %q: %w", id, approval.ErrNotPending)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, db.channel, id)
		return err
	})
	if errors.Is(err, approval.ErrNotFound) || errors.Is(err, approval.ErrNotPending) {
		return nil, err
	}
	if err != nil {
		return nil, db.wrap("resolve card", err)
	}
	return card, nil
}

// Watch returns a channel closed when the card leaves pending, whichever instance answered it.
// The first Watch of a *DB starts its LISTEN connection and returns an error if that cannot
// connect; later, while the connection is being re-established, watches keep working and are
// rechecked as soon as it is back.
func (db *DB) Watch(ctx context.Context, id string) (<-chan struct{}, error) {
	if err := db.hub.ensure(ctx); err != nil {
		return nil, err
	}
	w := db.hub.add(id)
	// Registered first, read second: an answer that committed before the watcher was
	// registered is seen here, one after is notified.
	var state string
	err := db.pool.QueryRow(ctx, `SELECT state FROM cards WHERE id = $1`, id).Scan(&state)
	if err != nil {
		db.hub.remove(w)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("card %q: %w", id, approval.ErrNotFound)
		}
		return nil, db.wrap("watch card", err)
	}
	if state != string(approval.Pending) {
		db.hub.fire(w)
	}
	db.hub.until(ctx, w)
	return w.ch, nil
}

const standingColumns = `id, tenant, tool, digest, card_id, approver, created, created_ns, revoked, revoked_ns`

func scanStanding(row pgx.Row) (*approval.Standing, error) {
	var (
		s        approval.Standing
		created  time.Time
		revoked  *time.Time
		cns, rns int16
	)
	if err := row.Scan(&s.ID, &s.Tenant, &s.Tool, &s.Digest, &s.CardID, &s.Approver, &created, &cns, &revoked, &rns); err != nil {
		return nil, err
	}
	s.Created, s.Revoked = fromTS(&created, cns), fromTS(revoked, rns)
	return &s, nil
}

// AddStanding saves a standing approval; an empty ID is filled in.
func (db *DB) AddStanding(ctx context.Context, s *approval.Standing) error {
	if s.ID == "" {
		s.ID = newID()
	}
	created, cns := ts(s.Created)
	revoked, rns := tsNull(s.Revoked)
	_, err := db.pool.Exec(ctx, `INSERT INTO standings (`+standingColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		s.ID, s.Tenant, s.Tool, s.Digest, s.CardID, s.Approver, created, cns, revoked, rns)
	return db.wrap("add standing approval", err)
}

// FindStanding returns the tenant's active standing approval for the tool and digest (the
// newest, if there are several), or ErrNotFound.
func (db *DB) FindStanding(ctx context.Context, tenant, tool, digest string) (*approval.Standing, error) {
	s, err := scanStanding(db.pool.QueryRow(ctx, `SELECT `+standingColumns+` FROM standings
		WHERE tenant = $1 AND tool = $2 AND digest = $3 AND revoked IS NULL
		ORDER BY created DESC, created_ns DESC, seq DESC LIMIT 1`, tenant, tool, digest))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("standing approval for %s: %w", tool, approval.ErrNotFound)
	}
	if err != nil {
		return nil, db.wrap("find standing approval", err)
	}
	return s, nil
}

// Standings lists a tenant's standing approvals ("" every tenant's), revoked ones included,
// newest first.
func (db *DB) Standings(ctx context.Context, tenant string) ([]*approval.Standing, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+standingColumns+` FROM standings
		WHERE $1 = '' OR tenant = $1 ORDER BY created DESC, created_ns DESC, seq DESC`, tenant)
	if err != nil {
		return nil, db.wrap("standing approvals", err)
	}
	defer rows.Close()
	var list []*approval.Standing
	for rows.Next() {
		s, err := scanStanding(rows)
		if err != nil {
			return nil, db.wrap("standing approvals", err)
		}
		list = append(list, s)
	}
	if err := rows.Err(); err != nil {
		return nil, db.wrap("standing approvals", err)
	}
	return list, nil
}

// RevokeStanding revokes a standing approval; ErrNotFound if there is no active one with that
// ID in the tenant ("" any).
func (db *DB) RevokeStanding(ctx context.Context, tenant, id string, at time.Time) error {
	when, ns := ts(orNow(at))
	tag, err := db.pool.Exec(ctx, `UPDATE standings SET revoked = $3, revoked_ns = $4
		WHERE id = $1 AND ($2 = '' OR tenant = $2) AND revoked IS NULL`, id, tenant, when, ns)
	if err != nil {
		return db.wrap("revoke standing approval", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("standing approval %q: %w", id, approval.ErrNotFound)
	}
	return nil
}
