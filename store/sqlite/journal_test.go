package sqlite

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/instance"
)

func journalEvent(i int) *audit.Event {
	return &audit.Event{Time: time.Date(2026, 12, 2, 8, 0, 0, i, time.UTC), Kind: audit.KindDecision,
		CallID: fmt.Sprintf("call-%d", i), Tenant: "t1", Tool: "files_read", Decision: "allow",
		Blockers: []audit.Blocker{{Code: "approval_required", Rule: "r1"}}, Rules: []string{"r1"},
		Spend: &audit.Spend{Connector: "c", Unit: "credits", Amount: 1.5}, Harness: "claude-code"}
}

func openJournaled(t *testing.T, path string, journal bool) *DB {
	t.Helper()
	db, err := OpenWith(t.Context(), path, Options{Journal: journal})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func calls(t *testing.T, db *DB) []string {
	t.Helper()
	evs, err := db.Query(t.Context(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.ID == 0 {
			t.Errorf("event %s has no ID", e.CallID)
		}
		out = append(out, e.CallID)
	}
	return out
}

// appendRecords writes events into a journal file as a process that died before indexing
// them would have left them, and then the first half of one more record (a write cut short).
func appendRecords(t *testing.T, path string, torn bool, events ...*audit.Event) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, e := range events {
		b, _ := json.Marshal(e)
		if _, err := f.Write(journalRecord(b)); err != nil {
			t.Fatal(err)
		}
	}
	if torn {
		b, _ := json.Marshal(journalEvent(999))
		rec := journalRecord(b)
		if _, err := f.Write(rec[:len(rec)/2]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJournalIndexesWhatADeadProcessLeft: records beyond journal_state (a process died before
// its indexer reached them) are indexed when the store is next opened, once, in order, every
// field kept; a record cut short is cut off, and the journal goes on after it.
func TestJournalIndexesWhatADeadProcessLeft(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warden.db")
	db := openJournaled(t, path, true)
	for i := range 3 {
		if err := db.Journal(t.Context(), journalEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	appendRecords(t, JournalPath(path), true, journalEvent(3), journalEvent(4))

	db = openJournaled(t, path, false)
	got := calls(t, db)
	if want := []string{"call-0", "call-1", "call-2", "call-3", "call-4"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the crash: %v, want %v", got, want)
	}
	evs, _ := db.Query(t.Context(), audit.Filter{CallID: "call-4"})
	want := journalEvent(4)
	want.ID, want.PrevHash, want.Hash = evs[0].ID, evs[0].PrevHash, evs[0].Hash
	if evs[0].Hash == "" {
		t.Error("the indexed event is not chained")
	}
	ev := *evs[0]
	gotSpend, wantSpend := *ev.Spend, *want.Spend
	ev.Spend, want.Spend = nil, nil
	if a, b := fmt.Sprintf("%+v %+v", ev, gotSpend), fmt.Sprintf("%+v %+v", *want, wantSpend); a != b {
		t.Errorf("the indexed event:\n%s\nwant\n%s", a, b)
	}
	db.Close()

	// A record journaled after the cut (as the next process would write it) is read on the
	// next open: the torn bytes are gone, not left in the way. Nothing is indexed twice, and
	// the journal goes on.
	appendRecords(t, JournalPath(path), false, journalEvent(5))
	db = openJournaled(t, path, true)
	if got := calls(t, db); len(got) != 6 || got[5] != "call-5" {
		t.Errorf("after reopening: %v", got)
	}
	if err := db.Journal(t.Context(), journalEvent(6)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openJournaled(t, path, false)
	defer db.Close()
	if got := calls(t, db); len(got) != 7 || got[6] != "call-6" {
		t.Errorf("after closing: %v", got)
	}
	// Journaled, indexed live and indexed at the next open alike, the events make one
	// unbroken hash chain.
	if sum, err := audit.VerifyLog(t.Context(), db); err != nil || sum.Events != 7 {
		t.Errorf("the trail verifies: %+v, %v; want 7 events, clean", sum, err)
	}
}

// TestJournalOneProcessAtATime: a second DB on the same file does not journal while the first
// holds the journal (it appends, committed at once), and Recover indexes the journal a dead
// process left while this one runs.
func TestJournalOneProcessAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warden.db")
	first := openJournaled(t, path, true)
	second := openJournaled(t, path, true)
	if !first.Journaling() || second.Journaling() {
		t.Fatalf("journaling: first %v, second %v; want only the first", first.Journaling(), second.Journaling())
	}
	e := journalEvent(1)
	if err := second.Journal(t.Context(), e); err != nil || e.ID == 0 {
		t.Fatalf("the second appends: ID %d, %v", e.ID, err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	// The first process "died" leaving two records it had not indexed.
	appendRecords(t, JournalPath(path), false, journalEvent(2), journalEvent(3))
	if got := calls(t, second); len(got) != 1 {
		t.Fatalf("before recovery the second sees %v", got)
	}
	if _, err := second.Recover(t.Context(), instance.Recovery{Self: "second", StaleBefore: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if got := calls(t, second); fmt.Sprint(got) != "[call-1 call-2 call-3]" {
		t.Errorf("after recovery: %v", got)
	}
	second.Close()
}

// TestJournalReadsItsOwnWrites: what a process journaled is in its next Query, from many
// goroutines at once, through rotations of the file.
func TestJournalReadsItsOwnWrites(t *testing.T) {
	old := journalRotateAt
	journalRotateAt = 2048
	t.Cleanup(func() { journalRotateAt = old })
	path := filepath.Join(t.TempDir(), "warden.db")
	db := openJournaled(t, path, true)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				e := journalEvent(g*1000 + i)
				if err := db.Journal(t.Context(), e); err != nil {
					t.Error(err)
					return
				}
				evs, err := db.Query(t.Context(), audit.Filter{CallID: e.CallID})
				if err != nil || len(evs) != 1 {
					t.Errorf("%s: %d events, %v", e.CallID, len(evs), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(JournalPath(path)); err != nil || fi.Size() > 64<<10 {
		t.Errorf("the journal was not emptied as it grew: %v, %v", fi, err)
	}
	db = openJournaled(t, path, false)
	defer db.Close()
	if got := calls(t, db); len(got) != 400 {
		t.Errorf("%d events after reopening, want 400", len(got))
	}
}

// TestJournalQueuesEventsWithItsBatches: an event queued (an outcome) is indexed in order with
// what was journaled around it, without a record in the journal: a Query sees it, WaitQueued
// waits for it, a crash would lose it, and a store without a journal refuses to queue.
func TestJournalQueuesEventsWithItsBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warden.db")
	db := openJournaled(t, path, true)
	for i := range 6 {
		e := journalEvent(i)
		var err error
		if i%2 == 1 {
			e.Kind = audit.KindOutcome
			err = db.Queue(e)
		} else {
			err = db.Journal(t.Context(), e)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.WaitQueued(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []string{"call-0", "call-1", "call-2", "call-3", "call-4", "call-5"}
	if got := calls(t, db); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the trail: %v, want %v", got, want)
	}
	// The journal holds the three decisions, and no queued event.
	data, err := os.ReadFile(JournalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	records := 0
	for off := journalHeader; off+8 <= len(data); records++ {
		off += 8 + int(binary.BigEndian.Uint32(data[off:]))
	}
	if records != 3 {
		t.Errorf("the journal holds %d records, want the 3 decisions", records)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Queue(journalEvent(9)); err == nil {
		t.Error("a closed journal took an event")
	}
	plain := openJournaled(t, filepath.Join(t.TempDir(), "plain.db"), false)
	defer plain.Close()
	if err := plain.Queue(journalEvent(7)); err == nil {
		t.Error("a store without a journal took an event to queue")
	}
}
