package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
)

// Why a ChainError's event does not match its chain.
const (
	// ReasonChanged: the event's fields (or its ID) are not the ones its hash was made of.
	ReasonChanged = "content changed"
	// ReasonMissing: the event is intact but chains from an event that is not the one before
	// it in its tenant's chain: an event between them was removed.
	ReasonMissing = "an event before it is missing"
	// ReasonOrder: the event chains from an event that comes after it, or IDs do not
	// increase: events were moved.
	ReasonOrder = "out of order"
	// ReasonUnchained: the event has no hash although chained events precede it.
	ReasonUnchained = "unchained"
	// ReasonCheckpoint: a signed checkpoint does not match the chain, or its signature does
	// not hold.
	ReasonCheckpoint = "checkpoint"
)

// ChainError is the first event of a trail that does not match its tenant's chain, and why.
type ChainError struct {
	ID     int64
	Tenant string
	// Reason is one of the Reason constants; Detail says what exactly did not match.
	Reason string
	Detail string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("event %d of tenant %q: %s: %s", e.ID, e.Tenant, e.Reason, e.Detail)
}

// VerifySummary is what a Verifier checked.
type VerifySummary struct {
	// Events is how many events were read; Chained how many of them carry hashes.
	Events, Chained int
	// Chains is how many tenants' chains they form.
	Chains int
	// Unchained is how many events were appended before the chain existed (no hashes; they
	// may only precede every chained event).
	Unchained int
	// Checkpoints is how many signed checkpoints were checked.
	Checkpoints int
}

// lookahead is how many further events a Verifier reads, after an event whose predecessor
// is not the one before it, to tell a moved event (its predecessor comes later) from a
// changed or orphaned one.
const lookahead = 10000

// chainHead is where a tenant's chain stands in a Verifier.
type chainHead struct {
	hash [HashSize]byte
	id   int64
}

// Verifier recomputes the tenants' chains of a trail fed to it in ID order, and finds the
// first event that does not match. It holds one head per tenant, not the trail.
type Verifier struct {
	heads   map[string]*chainHead
	sum     VerifySummary
	lastID  int64
	bad     *ChainError
	badPrev string // the PrevHash of a bad event whose reason is still open
	ahead   int

	checkpoints map[int64][]Checkpoint
}

// NewVerifier returns a Verifier with no events read.
func NewVerifier() *Verifier {
	return &Verifier{heads: map[string]*chainHead{}, checkpoints: map[int64][]Checkpoint{}}
}

// Add reads the next event of the trail.
func (v *Verifier) Add(e *Event) {
	if v.bad != nil {
		// Only to tell a moved event from a changed one: does its predecessor come later?
		if v.badPrev != "" && v.ahead < lookahead {
			v.ahead++
			if e.Tenant == v.bad.Tenant && e.Hash == v.badPrev {
				v.bad.Reason = ReasonOrder
				v.bad.Detail = fmt.Sprintf("it chains from event %d, which comes after it", e.ID)
				v.badPrev = ""
			}
		}
		return
	}
	v.sum.Events++
	fail := func(reason, format string, args ...any) {
		v.bad = &ChainError{ID: e.ID, Tenant: e.Tenant, Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
	if e.ID <= v.lastID {
		fail(ReasonOrder, "its id follows event %d", v.lastID)
		return
	}
	v.lastID = e.ID
	if e.Hash == "" && e.PrevHash == "" {
		if v.sum.Chained > 0 {
			fail(ReasonUnchained, "it has no hash, yet %d chained events precede it", v.sum.Chained)
			return
		}
		v.sum.Unchained++
		return
	}
	prev, err := ParseHash(e.PrevHash)
	if err != nil {
		fail(ReasonChanged, "its prev_hash: %v", err)
		return
	}
	hash, err := ParseHash(e.Hash)
	if err != nil {
		fail(ReasonChanged, "its hash: %v", err)
		return
	}
	h := v.heads[e.Tenant]
	if h == nil {
		h = &chainHead{}
		v.heads[e.Tenant] = h
		v.sum.Chains++
	}
	intact := Link(prev, e.ID, ContentHash(e)) == hash
	switch {
	case prev == h.hash && !intact:
		fail(ReasonChanged, "its fields and id do not make its hash")
	case prev != h.hash && intact && h.id == 0:
		fail(ReasonMissing, "it is its tenant's first event, yet chains from %s, not from zero", short(prev))
		v.badPrev = e.PrevHash
	case prev != h.hash && intact:
		fail(ReasonMissing, "it chains from %s, not from event %d", short(prev), h.id)
		v.badPrev = e.PrevHash
	case prev != h.hash:
		fail(ReasonChanged, "neither its predecessor (%s) nor its fields and id match", short(prev))
		v.badPrev = e.PrevHash
	default:
		h.hash, h.id = hash, e.ID
		v.sum.Chained++
		v.checkpointsAt(e)
	}
}

// short is the first 12 hexadecimal digits of a hash, enough to name it in a message.
func short(h [HashSize]byte) string { return hex.EncodeToString(h[:6]) + "…" }

// Result returns what was checked, and the first event that did not match, if any (a
// *ChainError).
func (v *Verifier) Result() (VerifySummary, error) {
	if v.bad != nil {
		return v.sum, v.bad
	}
	if err := v.unmatchedCheckpoint(); err != nil {
		return v.sum, err
	}
	return v.sum, nil
}

// VerifyLog recomputes every tenant's chain in log, reading it in pages of ID order, and, when
// log keeps checkpoints (a Checkpointer), checks each checkpoint's signature against the
// recorded keys and its hash against the chain. A trail that does not match is a *ChainError
// naming the first event that does not; any other error is the log's.
func VerifyLog(ctx context.Context, log Log) (VerifySummary, error) {
	v := NewVerifier()
	if cp, ok := log.(Checkpointer); ok {
		keys, err := cp.Keys(ctx)
		if err != nil {
			return VerifySummary{}, err
		}
		known := make(map[string]bool, len(keys))
		for _, k := range keys {
			known[k.Key] = true
		}
		cps, err := cp.Checkpoints(ctx)
		if err != nil {
			return VerifySummary{}, err
		}
		for _, c := range cps {
			v.AddCheckpoint(c, known)
		}
	}
	f := Filter{Limit: 1000}
	for {
		events, err := log.Query(ctx, f)
		if err != nil {
			return VerifySummary{}, err
		}
		for _, e := range events {
			v.Add(e)
		}
		if len(events) < f.Limit {
			return v.Result()
		}
		f.AfterID = events[len(events)-1].ID
	}
}

// VerifyJSONL recomputes the chains of an export (JSON lines, as WriteJSONL writes them, in ID
// order). A line that is not an event is an error naming the line.
func VerifyJSONL(r io.Reader) (VerifySummary, error) {
	v := NewVerifier()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return VerifySummary{}, fmt.Errorf("line %d: not an audit event: %w", n, err)
		}
		v.Add(&e)
	}
	if err := sc.Err(); err != nil {
		return VerifySummary{}, err
	}
	return v.Result()
}
