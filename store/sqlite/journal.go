package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/wardenhq/warden/audit"
)

// The decision journal. A call's decision must be on disk before the call runs; committed to
// SQLite, that costs tens of microseconds of modernc.org/sqlite's CPU per decision, most of
// what Warden adds to a proxied call. With Options.Journal, Journal writes the event to a file
// of the store's own instead (one write(2) of one record, on disk as a commit in SQLite's WAL
// with synchronous=NORMAL is: in the page cache, safe from the process's death, not from the
// machine's), and returns; a goroutine of the store then inserts what was journaled into
// audit_events in batches (what the journalGather after a first event brings), recording in
// the same transaction how far into the journal it got (journal_state). So a decision is
// durable before its call runs, and SQLite indexes it a moment later, outside the call's path.
//
// Reads stay whole: Query of the same DB first waits for everything journaled before it to be
// indexed (and does not wait out the gathering). Another process reading the file sees an
// event once it is indexed (usually within a few milliseconds). Whoever opens the store next, after a crash, inserts what the journal holds
// beyond journal_state before anything else reads it (and Recover does, for a journal whose
// process has died while this one runs), so a decision journaled is never lost: the crash test
// (gate/crash_test.go) kills a process in the middle of calls and finds every executed call's
// decision.
//
// One process journals into a store at a time: it holds an exclusive lock (flock) on the
// journal file while it runs. A DB opened with Options.Journal while another process holds it
// appends directly, as without the option.
//
// The file: a header (journalMagic, then an 8-byte generation, random, new each time the file
// is emptied), then records of a 4-byte length, a 4-byte CRC-32C of the payload, and the
// payload, the event as JSON. A record cut short by a crash is no record: its Journal call had
// not returned, so its call never ran; it is cut off on the next open. Once everything is
// indexed and the file has grown past journalRotateAt, it is emptied under a new generation.

const (
	journalMagic    = "WDNJRNL1"
	journalHeader   = len(journalMagic) + 8
	maxJournalEvent = 1 << 20 // a record larger than this is corrupt
)

// journalGather is how long the indexer waits, once woken, for more events before it indexes
// what it has: one transaction for the decisions of a moment, instead of one for each. A
// commit of one event cost about four times a commit's share per event in a batch of dozens
// (BenchmarkAuditJournal), and at one client a proxied call came every few hundred
// microseconds. A Query does not wait for it (sync hurries the indexer).
const journalGather = 2 * time.Millisecond

// journalRotateAt is the size past which a journal with nothing pending is emptied (a
// variable for the tests).
var journalRotateAt int64 = 4 << 20

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// JournalPath is the decision journal of the store at path: one of the store's files, like its
// -wal and -shm.
func JournalPath(path string) string { return path + "-decisions" }

// journal is an open, locked journal file and what it holds that is not yet indexed.
type journal struct {
	db *DB
	f  *os.File

	mu      sync.Mutex
	gen     uint64
	size    int64 // the file's length: where the next record goes
	seq     uint64
	pending []journaled // written, not yet indexed, in order
	indexed uint64      // the last seq indexed
	failed  error       // the indexer's last failure; Journal refuses while it stands
	closed  bool
	cond    *sync.Cond // indexed moved, or failed changed

	wake  chan struct{}
	hurry chan struct{} // a sync waits, the batch is full, or the journal closes: index now
	done  chan struct{}
}

// journaled is an event in the journal (the journal's own copy), with the columns its insert
// needs.
type journaled struct {
	seq uint64
	end int64 // the file offset after its record
	e   *audit.Event
	row eventRow
}

// indexJournal indexes every decision journaled so far: this process's own, or what a process
// that died holding the journal left in it (its lock is free now). A journal another live
// process holds is its to index.
func (db *DB) indexJournal(ctx context.Context) error {
	if db.j != nil {
		return db.j.sync(ctx)
	}
	_, err := db.openJournal(ctx, false)
	return err
}

// Journaling reports whether Journal writes to the journal (Options.Journal, and this process
// holds it); when not, Journal is Append.
func (db *DB) Journaling() bool { return db.j != nil }

// Journal records an event durably and returns before SQLite has indexed it (see the
// journal): the event's ID is not set. A Query of this DB sees it. Without a journal it is
// Append.
func (db *DB) Journal(ctx context.Context, e *audit.Event) error {
	if db.j == nil {
		return db.Append(ctx, e)
	}
	return db.j.append(e)
}

var _ audit.Journaler = (*DB)(nil)

// errNoJournal: Queue was called on a DB that does not journal.
var errNoJournal = errors.New("queue an audit event: the store has no decision journal")

// Queue takes an event to index with the journal's next batch, without writing it to the
// journal: it is not durable until indexed (an outcome, whose call's decision is on record
// already, is queued so, and shares the decisions' transaction instead of a commit of its own).
// A Query of this DB sees it. Without a journal it fails, and the event is to be appended.
func (db *DB) Queue(e *audit.Event) error {
	if db.j == nil {
		return errNoJournal
	}
	return db.j.queue(e)
}

// WaitQueued returns once everything journaled or queued before it is indexed.
func (db *DB) WaitQueued(ctx context.Context) error { return db.indexJournal(ctx) }

var _ audit.Queuer = (*DB)(nil)

func (j *journal) append(e *audit.Event) error {
	if e.Time.IsZero() {
		return errors.New("journal an audit event: it has no time")
	}
	own := *e // the caller's event is its own again once Journal returns
	row, err := newEventRow(&own)
	if err != nil {
		return fmt.Errorf("journal an audit event: %w", err)
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("journal an audit event: %w", err)
	}
	if len(payload) > maxJournalEvent {
		return fmt.Errorf("journal an audit event: %d bytes, more than %d", len(payload), maxJournalEvent)
	}
	rec := journalRecord(payload)

	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.closed:
		return ErrClosed
	case j.failed != nil:
		return fmt.Errorf("journal an audit event: the journal cannot be indexed: %w", j.failed)
	}
	n, err := j.f.WriteAt(rec, j.size)
	if err != nil {
		if n > 0 {
			// A part of a record would be taken for a torn one at the next open, and cut: so
			// cut it now, and if that fails too, write no more.
			if terr := j.f.Truncate(j.size); terr != nil {
				j.failed = terr
			}
		}
		return fmt.Errorf("journal an audit event: %w", err)
	}
	j.size += int64(n)
	j.seq++
	j.pending = append(j.pending, journaled{seq: j.seq, end: j.size, e: &own, row: row})
	select {
	case j.wake <- struct{}{}:
	default:
	}
	if len(j.pending) >= maxAppendBatch {
		j.hurryUp()
	}
	return nil
}

func (j *journal) queue(e *audit.Event) error {
	if e.Time.IsZero() {
		return errors.New("queue an audit event: it has no time")
	}
	own := *e
	row, err := newEventRow(&own)
	if err != nil {
		return fmt.Errorf("queue an audit event: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.closed:
		return ErrClosed
	case j.failed != nil:
		return fmt.Errorf("queue an audit event: the journal cannot be indexed: %w", j.failed)
	}
	// Indexed in order with what was journaled: the journal's position it records is the
	// one before it, as it has no record of its own.
	j.seq++
	j.pending = append(j.pending, journaled{seq: j.seq, end: j.size, e: &own, row: row})
	select {
	case j.wake <- struct{}{}:
	default:
	}
	if len(j.pending) >= maxAppendBatch {
		j.hurryUp()
	}
	return nil
}

// sync returns once everything journaled before it is indexed (or the indexer failed).
func (j *journal) sync(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	want := j.seq
	for j.indexed < want && j.failed == nil && !j.closed {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case j.wake <- struct{}{}:
		default:
		}
		j.hurryUp()
		j.cond.Wait()
	}
	if j.indexed < want {
		if j.failed != nil {
			return fmt.Errorf("the journal cannot be indexed: %w", j.failed)
		}
		return ErrClosed
	}
	return nil
}

// hurryUp ends the indexer's wait for more events (journalGather), if it waits.
func (j *journal) hurryUp() {
	select {
	case j.hurry <- struct{}{}:
	default:
	}
}

// run indexes what is journaled until the journal closes, then indexes the rest.
func (j *journal) run() {
	defer close(j.done)
	gather := time.NewTimer(journalGather)
	gather.Stop()
	for {
		_, open := <-j.wake
		if open {
			// Gather what the next moment journals too, unless someone waits.
			gather.Reset(journalGather)
			select {
			case <-gather.C:
			case <-j.hurry:
				gather.Stop()
			}
		}
		for {
			j.mu.Lock()
			batch := j.pending[:min(len(j.pending), maxAppendBatch)]
			gen := j.gen
			j.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			err := j.index(batch, gen)
			j.mu.Lock()
			if err != nil {
				j.failed = err
			} else {
				j.failed = nil
				j.indexed = batch[len(batch)-1].seq
				j.pending = j.pending[len(batch):]
				if len(j.pending) == 0 {
					j.pending = nil
					if j.size >= journalRotateAt {
						j.rotate()
					}
				}
			}
			j.cond.Broadcast()
			j.mu.Unlock()
			if err != nil {
				if !open {
					return
				}
				break // the next wake (a sync, an append) tries again
			}
		}
		if !open {
			return
		}
	}
}

// index inserts a batch into audit_events and records how far the journal is indexed, in one
// transaction.
func (j *journal) index(batch []journaled, gen uint64) error {
	ctx := context.Background()
	events := make([]*audit.Event, len(batch))
	rows := make([]eventRow, len(batch))
	for i := range batch {
		e := *batch[i].e // linked into its tenant's chain by the insert: a copy each try
		events[i], rows[i] = &e, batch[i].row
	}
	return j.db.appendChained(ctx, events, rows, func() error {
		_, err := j.db.ws.journalState.ExecContext(ctx, int64(gen), batch[len(batch)-1].end)
		return err
	})
}

// rotate empties the file under a new generation; j.mu is held and nothing is pending.
// journal_state still names the old generation, so were the process to die now, the next open
// would read every record of the new one as new: right, since none is indexed.
func (j *journal) rotate() {
	gen, err := newGeneration()
	if err == nil {
		err = j.f.Truncate(0)
	}
	if err == nil {
		_, err = j.f.WriteAt(journalHead(gen), 0)
	}
	if err != nil {
		j.failed = fmt.Errorf("empty the journal: %w", err)
		return
	}
	j.gen, j.size = gen, int64(journalHeader)
}

// close stops journaling: Journal refuses from now on, and what is pending is indexed.
func (j *journal) close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	j.cond.Broadcast()
	j.mu.Unlock()
	j.hurryUp()
	close(j.wake)
	<-j.done
	j.mu.Lock()
	err := j.failed
	left := len(j.pending)
	j.mu.Unlock()
	cerr := j.f.Close() // releases the lock
	if left > 0 {
		// Still in the file: the next open indexes them.
		return fmt.Errorf("close the decision journal: %d events left to index at the next open: %w", left, err)
	}
	return cerr
}

// journalRecord is payload as a record of the journal.
func journalRecord(payload []byte) []byte {
	rec := make([]byte, 8+len(payload))
	binary.BigEndian.PutUint32(rec, uint32(len(payload)))
	binary.BigEndian.PutUint32(rec[4:], crc32.Checksum(payload, crc32c))
	copy(rec[8:], payload)
	return rec
}

func newGeneration() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b[:]), nil
}

func journalHead(gen uint64) []byte {
	h := make([]byte, journalHeader)
	copy(h, journalMagic)
	binary.BigEndian.PutUint64(h[len(journalMagic):], gen)
	return h
}

// openJournal takes the journal file's lock, indexes what it holds beyond journal_state, and
// returns it open (keep) or closed again; nil, nil when another process holds it.
func (db *DB) openJournal(ctx context.Context, keep bool) (*journal, error) {
	path := JournalPath(db.path)
	flags := os.O_RDWR
	if keep {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the decision journal %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil // another process journals here
		}
		return nil, fmt.Errorf("lock the decision journal %s: %w", path, err)
	}
	j := &journal{db: db, f: f, wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1), done: make(chan struct{})}
	j.cond = sync.NewCond(&j.mu)
	if err := j.recover(ctx); err != nil {
		f.Close()
		return nil, err
	}
	if !keep {
		return nil, f.Close()
	}
	go j.run()
	return j, nil
}

// recover reads the file, inserts the records beyond journal_state, and leaves the file ready
// for appends (a torn last record cut off, a header written to a new file).
func (j *journal) recover(ctx context.Context) error {
	data, err := io.ReadAll(j.f)
	if err != nil {
		return fmt.Errorf("read the decision journal: %w", err)
	}
	if len(data) < journalHeader || string(data[:len(journalMagic)]) != journalMagic {
		if len(data) > 0 && (len(data) >= len(journalMagic) || string(data) != journalMagic[:len(data)]) {
			return fmt.Errorf("the decision journal %s is not one (it does not begin with %s): move it away to open the store", j.f.Name(), journalMagic)
		}
		// New, or cut short while its header was written: nothing in it was ever journaled.
		gen, err := newGeneration()
		if err != nil {
			return err
		}
		if err := j.f.Truncate(0); err != nil {
			return err
		}
		if _, err := j.f.WriteAt(journalHead(gen), 0); err != nil {
			return err
		}
		j.gen, j.size = gen, int64(journalHeader)
		return nil
	}
	j.gen = binary.BigEndian.Uint64(data[len(journalMagic):journalHeader])
	var stateGen, stateOff int64
	err = j.db.w.QueryRowContext(ctx, `SELECT generation, position FROM journal_state WHERE id = 1`).Scan(&stateGen, &stateOff)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		stateGen, stateOff = 0, 0
	case err != nil:
		return fmt.Errorf("read journal_state: %w", err)
	}
	off := int64(journalHeader)
	if uint64(stateGen) == j.gen && stateOff >= off && stateOff <= int64(len(data)) {
		off = stateOff
	}
	var rows []journaled
	end := off
	for end+8 <= int64(len(data)) {
		n := int64(binary.BigEndian.Uint32(data[end:]))
		sum := binary.BigEndian.Uint32(data[end+4:])
		if n > maxJournalEvent || end+8+n > int64(len(data)) {
			break
		}
		payload := data[end+8 : end+8+n]
		if crc32.Checksum(payload, crc32c) != sum {
			break
		}
		e := new(audit.Event)
		if err := json.Unmarshal(payload, e); err != nil {
			break
		}
		e.ID, e.PrevHash, e.Hash = 0, "", ""
		row, err := newEventRow(e)
		if err != nil {
			return fmt.Errorf("the decision journal's record at %d: %w", end, err)
		}
		end += 8 + n
		rows = append(rows, journaled{end: end, e: e, row: row})
	}
	if end < int64(len(data)) {
		// A record the process did not finish writing (its Journal never returned): cut.
		if err := j.f.Truncate(end); err != nil {
			return fmt.Errorf("cut the decision journal's torn end: %w", err)
		}
	}
	j.size = end
	for len(rows) > 0 {
		batch := rows[:min(len(rows), maxAppendBatch)]
		if err := j.index(batch, j.gen); err != nil {
			return fmt.Errorf("index the decision journal: %w", err)
		}
		rows = rows[len(batch):]
	}
	return nil
}
