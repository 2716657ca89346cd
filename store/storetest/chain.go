package storetest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/audit"
)

// trail appends 30 events to s, a third of them of tenant t2, some in batches, and returns
// t1's events in ID order.
func trail(t *testing.T, s Store) (t1 []*audit.Event) {
	t.Helper()
	b, _ := s.(audit.Batcher)
	for i := 0; i < 30; {
		e := fullEvent()
		e.Time, e.CallID = at(time.Duration(i)*time.Second+time.Duration(i)*time.Microsecond), fmt.Sprintf("call-%d", i)
		if i%3 == 2 {
			e.Tenant = "t2"
		}
		if b != nil && i%7 == 3 {
			f := fullEvent()
			f.Time, f.CallID, f.Tenant = at(time.Duration(i)*time.Second), fmt.Sprintf("call-%d", i+1), "t2"
			if err := b.AppendAll(t.Context(), []*audit.Event{e, f}); err != nil {
				t.Fatalf("AppendAll: %v", err)
			}
			if e.Tenant == "t1" {
				t1 = append(t1, e)
			}
			i += 2
			continue
		}
		mustAppend(t, s, e)
		if e.Tenant == "t1" {
			t1 = append(t1, e)
		}
		i++
	}
	return t1
}

// verify runs audit.VerifyLog on s.
func verify(t *testing.T, s Store) (audit.VerifySummary, *audit.ChainError) {
	t.Helper()
	sum, err := audit.VerifyLog(t.Context(), s)
	var ce *audit.ChainError
	if err != nil && !errors.As(err, &ce) {
		t.Fatalf("VerifyLog: %v", err)
	}
	return sum, ce
}

// wantBad checks that verification names event id of tenant t1, for reason.
func wantBad(t *testing.T, ce *audit.ChainError, id int64, reason string) {
	t.Helper()
	if ce == nil {
		t.Fatalf("VerifyLog found nothing wrong, want event %d: %s", id, reason)
	}
	if ce.ID != id || ce.Tenant != "t1" || ce.Reason != reason {
		t.Fatalf("VerifyLog: %v; want event %d of tenant \"t1\": %s", ce, id, reason)
	}
	t.Logf("caught: %v", ce)
}

// exec tampers with s's storage, or skips the test when the opener cannot.
func exec(t *testing.T, o Opener, s Store, stmts ...string) {
	t.Helper()
	if o.Exec == nil {
		t.Skip("the opener cannot change the storage by hand")
	}
	o.Exec(t, s, stmts...)
}

func testAuditChainClean(t *testing.T, o Opener) {
	s := open(t, o)
	t1 := trail(t, s)
	sum, ce := verify(t, s)
	if ce != nil {
		t.Fatalf("a clean trail: %v", ce)
	}
	if sum.Events != 30 || sum.Chained != 30 || sum.Chains != 2 || sum.Unchained != 0 {
		t.Errorf("summary %+v, want 30 events, all chained, in 2 chains", sum)
	}
	got := mustQuery(t, s, audit.Filter{Tenant: "t1"})
	if got[0].PrevHash != strings.Repeat("0", 64) {
		t.Errorf("the first event chains from %s, want zeros", got[0].PrevHash)
	}
	for i, e := range got {
		if e.Hash != t1[i].Hash {
			t.Errorf("event %d: hash read back %s, Append set %s", e.ID, e.Hash, t1[i].Hash)
		}
		if i > 0 && e.PrevHash != got[i-1].Hash {
			t.Errorf("event %d chains from %s, want %s (event %d)", e.ID, e.PrevHash, got[i-1].Hash, got[i-1].ID)
		}
	}
}

func testAuditChainChanged(t *testing.T, o Opener) {
	s := open(t, o)
	t1 := trail(t, s)
	exec(t, o, s, fmt.Sprintf(`UPDATE audit_events SET tool = 'evil' WHERE id = %d`, t1[5].ID))
	_, ce := verify(t, s)
	wantBad(t, ce, t1[5].ID, audit.ReasonChanged)
}

func testAuditChainDeleted(t *testing.T, o Opener) {
	s := open(t, o)
	t1 := trail(t, s)
	exec(t, o, s, fmt.Sprintf(`DELETE FROM audit_events WHERE id = %d`, t1[5].ID))
	_, ce := verify(t, s)
	wantBad(t, ce, t1[6].ID, audit.ReasonMissing)
}

func testAuditChainDeletedFirst(t *testing.T, o Opener) {
	s := open(t, o)
	t1 := trail(t, s)
	exec(t, o, s, fmt.Sprintf(`DELETE FROM audit_events WHERE id = %d`, t1[0].ID))
	_, ce := verify(t, s)
	wantBad(t, ce, t1[1].ID, audit.ReasonMissing)
}

func testAuditChainReordered(t *testing.T, o Opener) {
	s := open(t, o)
	t1 := trail(t, s)
	a, b := t1[5].ID, t1[6].ID
	exec(t, o, s, fmt.Sprintf(`UPDATE audit_events SET id = -1 WHERE id = %d`, a),
		fmt.Sprintf(`UPDATE audit_events SET id = %d WHERE id = %d`, a, b),
		fmt.Sprintf(`UPDATE audit_events SET id = %d WHERE id = -1`, b))
	_, ce := verify(t, s)
	wantBad(t, ce, a, audit.ReasonOrder)
}

// testAuditChainExport verifies an export, then the export with a line changed.
func testAuditChainExport(t *testing.T, o Opener) {
	s := open(t, o)
	t1 := trail(t, s)
	var buf bytes.Buffer
	if err := audit.WriteJSONL(&buf, mustQuery(t, s, audit.Filter{})); err != nil {
		t.Fatal(err)
	}
	sum, err := audit.VerifyJSONL(bytes.NewReader(buf.Bytes()))
	if err != nil || sum.Events != 30 || sum.Chains != 2 {
		t.Fatalf("VerifyJSONL of a clean export: %+v, %v; want 30 events in 2 chains", sum, err)
	}
	lines := strings.SplitAfter(buf.String(), "\n")
	for i, l := range lines {
		if strings.Contains(l, fmt.Sprintf(`"id":%d,`, t1[3].ID)) {
			lines[i] = strings.Replace(l, `"decision":"ask"`, `"decision":"allow"`, 1)
		}
	}
	_, err = audit.VerifyJSONL(strings.NewReader(strings.Join(lines, "")))
	var ce *audit.ChainError
	if !errors.As(err, &ce) {
		t.Fatalf("VerifyJSONL of a changed export: %v, want a *audit.ChainError", err)
	}
	wantBad(t, ce, t1[3].ID, audit.ReasonChanged)
}

// testAuditChainConcurrent appends from many goroutines, on two instances when the store has
// them, across three tenants, and in batches, and checks that the chains hold.
func testAuditChainConcurrent(t *testing.T, o Opener) {
	s := open(t, o)
	all := instances(t, o, s)
	const n = 120
	errs := race(all, n, func(st Store, i int) error {
		e := &audit.Event{Time: at(time.Duration(i) * time.Millisecond), Kind: audit.KindDecision,
			Tenant: fmt.Sprintf("t%d", i%3), CallID: fmt.Sprintf("call-%d", i), Decision: "allow"}
		if b, ok := st.(audit.Batcher); ok && i%4 == 0 {
			f := *e
			f.Tenant, f.CallID = fmt.Sprintf("t%d", (i+1)%3), fmt.Sprintf("call-%d-b", i)
			return b.AppendAll(context.Background(), []*audit.Event{e, &f})
		}
		return st.Append(context.Background(), e)
	})
	tally(t, errs, nil)
	want := n
	if _, ok := s.(audit.Batcher); ok {
		want += n / 4
	}
	sum, ce := verify(t, s)
	if ce != nil {
		t.Fatalf("chains appended concurrently: %v", ce)
	}
	if sum.Events != want || sum.Chains != 3 {
		t.Errorf("summary %+v, want %d events in 3 chains", sum, want)
	}
}

// testAuditCheckpoints signs checkpoints every 4 events of a tenant and at Flush, checks them,
// then catches a forged one and the removal of the last events.
func testAuditCheckpoints(t *testing.T, o Opener) {
	s := open(t, o)
	signer, err := audit.NewSigner(t.Context(), s, "instance-1", 4)
	if err != nil {
		t.Fatal(err)
	}
	s.SetSigner(signer)
	t1 := trail(t, s)
	if err := signer.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	keys, err := s.Keys(t.Context())
	if err != nil || len(keys) != 1 || keys[0] != signer.Key() {
		t.Fatalf("Keys: %+v, %v; want the signer's %+v", keys, err, signer.Key())
	}
	cps, err := s.Checkpoints(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, n := range []int{len(t1), 30 - len(t1)} { // every 4th event, and the rest at Flush
		want += (n + 3) / 4
	}
	if len(cps) != want {
		t.Errorf("%d checkpoints, want %d: %+v", len(cps), want, cps)
	}
	sum, ce := verify(t, s)
	if ce != nil || sum.Checkpoints != len(cps) {
		t.Fatalf("a clean trail with checkpoints: %+v, %v", sum, ce)
	}

	t.Run("Forged", func(t *testing.T) {
		_, other, _ := ed25519.GenerateKey(rand.Reader)
		c := audit.Checkpoint{Tenant: "t1", Event: t1[2].ID, Hash: t1[2].Hash, Time: t0}
		if err := c.Sign(other); err != nil {
			t.Fatal(err)
		}
		c.Key = signer.Key().Key // claimed by the instance's key, signed by another
		if err := s.AddCheckpoint(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		_, ce := verify(t, s)
		wantBad(t, ce, t1[2].ID, audit.ReasonCheckpoint)
	})
}

// testAuditCheckpointTail removes a tenant's last events, which only a checkpoint can show.
func testAuditCheckpointTail(t *testing.T, o Opener) {
	s := open(t, o)
	signer, err := audit.NewSigner(t.Context(), s, "instance-1", 1000)
	if err != nil {
		t.Fatal(err)
	}
	s.SetSigner(signer)
	t1 := trail(t, s)
	if err := signer.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	last := t1[len(t1)-1].ID
	exec(t, o, s, fmt.Sprintf(`DELETE FROM audit_events WHERE id = %d`, last))
	_, ce := verify(t, s)
	wantBad(t, ce, last, audit.ReasonCheckpoint)
}

// the chain's suite, run by Run.
var chainTests = []struct {
	name string
	test func(*testing.T, Opener)
}{
	{"Audit/Chain/Clean", testAuditChainClean},
	{"Audit/Chain/Changed", testAuditChainChanged},
	{"Audit/Chain/Deleted", testAuditChainDeleted},
	{"Audit/Chain/DeletedFirst", testAuditChainDeletedFirst},
	{"Audit/Chain/Reordered", testAuditChainReordered},
	{"Audit/Chain/Export", testAuditChainExport},
	{"Audit/Chain/Concurrent", testAuditChainConcurrent},
	{"Audit/Chain/Checkpoints", testAuditCheckpoints},
	{"Audit/Chain/CheckpointTail", testAuditCheckpointTail},
}
