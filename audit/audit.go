// Package audit is Warden's record of every decision (D1): what was asked, what was decided
// and why, who approved it, what it cost, and what happened when it ran. The decision is
// written durably before the call runs, and its outcome after; the log is append-only.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Kinds of event.
const (
	// KindDecision is written before a call runs (or instead of running it).
	KindDecision = "decision"
	// KindOutcome is written after a call ran.
	KindOutcome = "outcome"
	// KindApproval records a person's answer to a card, or its expiry.
	KindApproval = "approval"
	// KindRun records a run starting or ending, or refused at its start.
	KindRun = "run"
	// KindEgress records a connection a session's egress proxy refused (a sandboxed
	// command's, or net_fetch's): once per session, host, port and reason. Tool is empty;
	// the blocker's code is the egress reason (not_allowed, private_address, ...).
	KindEgress = "egress"
	// KindBoundaries records a write of a tenant's stored hard-block document: Principal is
	// who wrote it, Digest the digest of its rules (boundary.Set.Revision, which review
	// tokens name too), Rules its rule ids.
	KindBoundaries = "boundaries"
	// KindChange records a change of the management data (package manage): Tool names the
	// object (kind/id, such as profile/writer), Principal who changed it, Outcome "put" or
	// "delete", Digest the sha256 of what was written.
	KindChange = "change"
	// KindEnforcement records a system call of a sandboxed command that a hard block refused
	// at the call itself (the sandbox's supervisor): Tool is the call's tool, and each blocker
	// has the code hard_policy_block:user_configured_hard_block, the rule, and what was
	// refused ("read /ws/.env (openat, pid 7)").
	KindEnforcement = "enforcement"
)

// Kinds are every kind of event, the values a Filter's Kind may take.
var Kinds = []string{KindDecision, KindOutcome, KindApproval, KindRun, KindEgress, KindBoundaries, KindChange, KindEnforcement}

// Decisions are the values an event's Decision, and so a Filter's, may take.
var Decisions = []string{"allow", "ask", "deny"}

// Blocker is one reason in a decision.
type Blocker struct {
	Code   string `json:"code"`
	Rule   string `json:"rule,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Count is how many refused requests this reason stands for when one event samples many
	// (the gateway's refusals of requests without a valid token, per source and minute);
	// 0 means one.
	Count int `json:"count,omitempty"`
}

// Spend is money or credits a call reserved or spent.
type Spend struct {
	Connector string  `json:"connector"`
	Unit      string  `json:"unit"`
	Amount    float64 `json:"amount"`
}

// Event is one entry of the audit trail. It never holds the values of protected secrets: a
// call is identified by its digest, not its arguments.
type Event struct {
	// ID is assigned by the log, increasing in the order events were appended.
	ID   int64     `json:"id"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// CallID links a decision to its approval and outcome.
	CallID    string `json:"call,omitempty"`
	Tenant    string `json:"tenant,omitempty"`
	Session   string `json:"session,omitempty"`
	Principal string `json:"principal,omitempty"`
	Role      string `json:"role,omitempty"`
	Profile   string `json:"profile,omitempty"`
	Run       string `json:"run,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Digest    string `json:"digest,omitempty"`
	// Decision is allow, ask or deny (decisions and approvals).
	Decision string    `json:"decision,omitempty"`
	Blockers []Blocker `json:"blockers,omitempty"`
	Rules    []string  `json:"rules,omitempty"`
	Approver string    `json:"approver,omitempty"`
	// Channel is how the card of an approval event left pending: through which way in a
	// person answered it (api, cli, elicitation) or what ended it unanswered (deadline,
	// canceled).
	// Empty for a standing approval, and on events recorded before Warden recorded it.
	Channel string `json:"channel,omitempty"`
	// Harness names the agent's own runtime (claude-code, ...) for a call it runs itself,
	// which Warden only judged (POST /api/v1/review with an agent token); Session is then the
	// harness's own session id. Empty for the calls Warden runs.
	Harness string `json:"harness,omitempty"`
	Spend   *Spend `json:"spend,omitempty"`
	// Outcome is ok or error (outcomes).
	Outcome        string `json:"outcome,omitempty"`
	Error          string `json:"error,omitempty"`
	PolicyRevision string `json:"policy,omitempty"`
	// PrevHash is the Hash of the event before this one in its tenant's chain (Genesis,
	// all zeros, for the first), and Hash this event's own (see Link), both 64 hexadecimal
	// digits, set by the log. Both are empty on events appended before the chain existed.
	PrevHash string `json:"prev_hash,omitempty"`
	Hash     string `json:"hash,omitempty"`
}

// Filter selects events. Empty fields select everything; Since is inclusive and Until
// exclusive; AfterID pages forward; Limit keeps the first events in ID order.
type Filter struct {
	Tenant, Session, Tool, Decision, Kind, CallID string
	// Harness selects the decisions judged for one agent runtime (Event.Harness).
	Harness      string
	Since, Until time.Time
	AfterID      int64
	Limit        int
}

// FilterError is a filter value that no event can have: it would select nothing, and read as
// "there are no such events".
type FilterError struct {
	// Field is the filter's field as the API names it: kind or decision.
	Field string
	Value string
	// Allowed are the values the field may take.
	Allowed []string
}

func (e *FilterError) Error() string {
	return fmt.Sprintf("%s %q: want one of %s", e.Field, e.Value, strings.Join(e.Allowed, ", "))
}

// Check returns a *FilterError for a Kind or Decision that no event has; empty values select
// everything and pass.
func (f Filter) Check() error {
	for _, c := range []struct {
		field, value string
		allowed      []string
	}{{"kind", f.Kind, Kinds}, {"decision", f.Decision, Decisions}} {
		if c.value != "" && !slices.Contains(c.allowed, c.value) {
			return &FilterError{Field: c.field, Value: c.value, Allowed: c.allowed}
		}
	}
	return nil
}

// Log is an append-only audit trail. Implementations are safe for concurrent use; Append
// returns only once the event is durable (committed), and sets its ID.
type Log interface {
	Append(ctx context.Context, e *Event) error
	// Query returns matching events in ID order.
	Query(ctx context.Context, f Filter) ([]*Event, error)
}

// Journaler is implemented by logs that can make an event durable before they index it (the
// SQLite store's decision journal): Journal returns once the event would survive the process's
// death, and sets no ID (the log assigns it when it indexes the event); a Query of the same log
// sees the event.
type Journaler interface {
	Journal(ctx context.Context, e *Event) error
}

// Queuer is implemented by logs that can index an event together with the next events they
// index (the SQLite store's decision journal, in one transaction with the decisions of the
// moment): Queue returns at once, before the event is durable; if the process dies first the
// event is lost. A Query of the same log sees it. Queue fails when the log cannot take the event
// so (it has no journal, or the journal cannot be indexed); then the event is to be appended.
// WaitQueued returns once everything queued before it is indexed.
type Queuer interface {
	Queue(e *Event) error
	WaitQueued(ctx context.Context) error
}

// Batcher is implemented by logs that can append several events in one commit, which is
// cheaper than one commit each. AppendAll is all or nothing, and sets each event's ID.
type Batcher interface {
	AppendAll(ctx context.Context, events []*Event) error
}

// WriteJSONL writes events as JSON lines, one event per line.
func WriteJSONL(w io.Writer, events []*Event) error {
	enc := json.NewEncoder(w)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}
