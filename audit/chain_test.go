package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func chainEvent() *Event {
	return &Event{ID: 7, Time: time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.UTC), Kind: KindDecision,
		Tenant: "t1", Tool: "fs_write", Decision: "ask", Blockers: []Blocker{{Code: "approval_required", Count: 2}},
		Rules: []string{"r1"}, Spend: &Spend{Connector: "c", Unit: "USD", Amount: 0.1 + 0.2}, Error: "bad\xffbyte"}
}

// TestLinkDefinition pins the chain's definition: SHA-256(prev || id || SHA-256(content)).
func TestLinkDefinition(t *testing.T) {
	e := chainEvent()
	var prev [HashSize]byte
	prev[0] = 1
	h := e.Seal(prev)
	content := sha256.Sum256(Content(e))
	msg := append(append(append([]byte(nil), prev[:]...), binary.BigEndian.AppendUint64(nil, 7)...), content[:]...)
	if want := sha256.Sum256(msg); h != want {
		t.Fatalf("Seal gave %x, want %x", h, want)
	}
	if e.PrevHash != HashHex(prev) || e.Hash != HashHex(h) {
		t.Errorf("Seal set %s, %s", e.PrevHash, e.Hash)
	}
	if !bytes.HasPrefix(Content(e), []byte("warden.audit.v1\x00")) {
		t.Errorf("content does not open with its version")
	}
}

// TestContentUnambiguous: moving bytes from one field to the next changes the content.
func TestContentUnambiguous(t *testing.T) {
	a, b := chainEvent(), chainEvent()
	a.Kind, a.CallID = "decisionx", ""
	b.Kind, b.CallID = "decision", "x"
	if bytes.Equal(Content(a), Content(b)) {
		t.Error("kind+call split differently encode alike")
	}
	c, d := chainEvent(), chainEvent()
	c.Rules, d.Rules = []string{"r1", "r2"}, []string{"r1r2"}
	if bytes.Equal(Content(c), Content(d)) {
		t.Error("two rules and their concatenation encode alike")
	}
	f, g := chainEvent(), chainEvent()
	g.Spend = nil
	f.Spend = &Spend{}
	if bytes.Equal(Content(f), Content(g)) {
		t.Error("no spend and an empty spend encode alike")
	}
	h := chainEvent()
	h.Time = h.Time.Add(time.Nanosecond)
	if bytes.Equal(Content(h), Content(chainEvent())) {
		t.Error("a nanosecond later encodes alike")
	}
}

// TestContentSurvivesJSON: an event hashes alike before and after an export's round trip,
// empty lists, another time zone and bytes that are not UTF-8 included.
func TestContentSurvivesJSON(t *testing.T) {
	e := chainEvent()
	e.Time = e.Time.In(time.FixedZone("CEST", 2*3600))
	e.Rules = []string{}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if ContentHash(e) != ContentHash(&back) {
		t.Errorf("content hash changed through JSON:\n%q\n%q", Content(e), Content(&back))
	}
}

// sealed is a chain of n events over two tenants, as a store would link them.
func sealed(n int) []*Event {
	heads := map[string][HashSize]byte{}
	var out []*Event
	for i := range n {
		e := chainEvent()
		e.ID, e.CallID = int64(i+1), strings.Repeat("c", i)
		if i%3 == 2 {
			e.Tenant = "t2"
		}
		heads[e.Tenant] = e.Seal(heads[e.Tenant])
		out = append(out, e)
	}
	return out
}

func verifyAll(events []*Event) (VerifySummary, *ChainError) {
	v := NewVerifier()
	for _, e := range events {
		v.Add(e)
	}
	sum, err := v.Result()
	var ce *ChainError
	errors.As(err, &ce)
	return sum, ce
}

func TestVerifier(t *testing.T) {
	sum, ce := verifyAll(sealed(10))
	if ce != nil || sum.Events != 10 || sum.Chains != 2 || sum.Chained != 10 {
		t.Fatalf("clean: %+v %v", sum, ce)
	}
	for _, c := range []struct {
		name   string
		change func([]*Event) []*Event
		id     int64
		reason string
	}{
		{"changed", func(es []*Event) []*Event { es[3].Tool = "evil"; return es }, 4, ReasonChanged},
		{"renumbered", func(es []*Event) []*Event { es[3].ID = 5; es = append(es[:4], es[5:]...); return es }, 5, ReasonChanged},
		{"deleted", func(es []*Event) []*Event { return append(es[:3], es[4:]...) }, 5, ReasonMissing},
		{"swapped", func(es []*Event) []*Event {
			es[3], es[4] = es[4], es[3]
			es[3].ID, es[4].ID = 4, 5
			return es
		}, 4, ReasonOrder},
		{"ids backwards", func(es []*Event) []*Event { es[3], es[4] = es[4], es[3]; return es }, 5, ReasonOrder},
		{"hash stripped", func(es []*Event) []*Event { es[6].Hash, es[6].PrevHash = "", ""; return es }, 7, ReasonUnchained},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ce := verifyAll(c.change(sealed(10)))
			if ce == nil || ce.ID != c.id || ce.Reason != c.reason {
				t.Fatalf("got %v, want event %d: %s", ce, c.id, c.reason)
			}
		})
	}
	// events from before the chain may only come first
	es := sealed(5)
	legacy := []*Event{{ID: 1, Kind: KindRun}, {ID: 2, Kind: KindRun}}
	for _, e := range es {
		e.ID += 2
	}
	heads := map[string][HashSize]byte{}
	for _, e := range es {
		heads[e.Tenant] = e.Seal(heads[e.Tenant])
	}
	sum, ce = verifyAll(append(legacy, es...))
	if ce != nil || sum.Unchained != 2 || sum.Chained != 5 {
		t.Fatalf("legacy first: %+v %v", sum, ce)
	}
}
