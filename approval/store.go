// Package approval parks calls that need a person (G1): a card for each, three answers
// (allow once, allow for this tenant, deny), standing approvals, and a deadline after which the
// card denies.
//
// The Broker is what the gate calls with an ask verdict. Cards and standing approvals live in a
// Store (SQLite for one instance, PostgreSQL for several: an answer given through one instance
// wakes the call waiting on another).
package approval

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Answer is a person's answer to a card.
type Answer string

// The three answers a card offers.
const (
	AllowOnce   Answer = "allow_once"
	AllowTenant Answer = "allow_tenant"
	Deny        Answer = "deny"
)

// Valid reports whether a is one of the three answers.
func (a Answer) Valid() bool { return a == AllowOnce || a == AllowTenant || a == Deny }

// State is where a card is in its life.
type State string

// The states of a card. Only a pending card can be answered; every other state is final.
const (
	Pending State = "pending"
	Allowed State = "allowed"
	Denied  State = "denied"
	Expired State = "expired"
)

// Channel says how a card left pending: through which way in a person answered it, or what
// ended it unanswered.
type Channel string

// The channels Warden records. An embedder answering through a way of its own (Broker.Answer)
// names it with a short word of its own.
const (
	// ChannelAPI: a person answered through the REST API (POST /api/v1/approvals/{id}).
	ChannelAPI Channel = "api"
	// ChannelCLI: a person answered with warden approvals answer, on the store directly.
	ChannelCLI Channel = "cli"
	// ChannelElicitation: the session's own MCP client answered an elicitation request. Warden
	// cannot tell whether a person or a program answered there: the role's
	// approvalByElicitation says whether its sessions may be asked so.
	ChannelElicitation Channel = "elicitation"
	// ChannelDeadline: nobody answered before the card's deadline (APPROVAL_TIMEOUT_MS; with 0,
	// at once), so it expired and the call was denied.
	ChannelDeadline Channel = "deadline"
	// ChannelCanceled: the call waiting on the card ended first (its client went away), so it
	// expired unanswered.
	ChannelCanceled Channel = "canceled"
)

// Card is one call waiting for a person.
type Card struct {
	ID        string
	Tenant    string
	Session   string
	Principal string
	Tool      string
	// Digest is the exact call (action.Digest); an answer applies to this call only.
	Digest string
	// PolicyRevision is the policy the call was reviewed under.
	PolicyRevision string
	// Args are the call's arguments as shown to the person, protected values redacted.
	Args json.RawMessage
	// Reason says why the call asks.
	Reason   string
	State    State
	Answer   Answer
	Approver string
	// Channel is how the card left pending; empty while it is pending, and on cards stored
	// before Warden recorded it.
	Channel Channel
	// Instance is the process (instance.Instance) whose call waits on the card: when it dies,
	// recovery expires the card. "" for cards of an embedder without one.
	Instance string
	Created  time.Time
	Deadline time.Time
	Answered time.Time
}

// Standing is a saved "allow for this tenant": the same call (tool and argument digest) in the
// same tenant is allowed without a card until it is revoked.
type Standing struct {
	ID       string
	Tenant   string
	Tool     string
	Digest   string
	CardID   string
	Approver string
	Created  time.Time
	// Revoked is zero while the approval stands.
	Revoked time.Time
}

// CardFilter selects cards. Empty fields select everything.
type CardFilter struct {
	Tenant string
	State  State
	Limit  int
}

// Errors a Store returns; callers match them with errors.Is.
var (
	ErrNotFound   = errors.New("not found")
	ErrNotPending = errors.New("the card was already answered or expired")
)

// Store keeps cards and standing approvals. Implementations are safe for concurrent use, and
// Resolve is atomic: of any number of concurrent answers, exactly one moves a card out of
// pending; the rest get ErrNotPending.
type Store interface {
	// CreateCard stores a new pending card (its ID is set by the caller).
	CreateCard(ctx context.Context, c *Card) error
	// Card returns a card; tenant "" matches any tenant. Another tenant's card is ErrNotFound.
	Card(ctx context.Context, tenant, id string) (*Card, error)
	// Cards lists cards, newest first.
	Cards(ctx context.Context, f CardFilter) ([]*Card, error)
	// Resolve moves a pending card to a final state with its answer, approver, channel and
	// time, and wakes its watchers, in this instance and in every other one sharing the store.
	Resolve(ctx context.Context, id string, state State, answer Answer, approver string, channel Channel, at time.Time) (*Card, error)
	// Watch returns a channel that is closed when the card leaves pending (at once if it already
	// has). The watch ends when ctx ends.
	Watch(ctx context.Context, id string) (<-chan struct{}, error)

	// AddStanding saves a standing approval.
	AddStanding(ctx context.Context, s *Standing) error
	// FindStanding returns the active standing approval for a tenant, tool and digest, or
	// ErrNotFound.
	FindStanding(ctx context.Context, tenant, tool, digest string) (*Standing, error)
	// Standings lists a tenant's standing approvals, revoked ones included, newest first;
	// tenant "" lists every tenant's.
	Standings(ctx context.Context, tenant string) ([]*Standing, error)
	// RevokeStanding revokes one; ErrNotFound if it does not exist for that tenant ("" any) or
	// is already revoked.
	RevokeStanding(ctx context.Context, tenant, id string, at time.Time) error
}
