package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// writeStmts are the writer connection's statements, prepared once at Open.
type writeStmts struct {
	begin, commit, rollback *sql.Stmt

	createCard, resolveCard, cardState *sql.Stmt
	addStanding, revokeStanding        *sql.Stmt

	monthSpend, liveRuns, daySpent           *sql.Stmt
	insertRun, insertAllowance               *sql.Stmt
	endRun, endRunAllowances                 *sql.Stmt
	reserve, insertReservation, runAllowance *sql.Stmt
	closeReservation, reservationState       *sql.Stmt
	settleAllowance, releaseAllowance        *sql.Stmt
	recoverAllowances, recoverReservations   *sql.Stmt
	turn, turnState                          *sql.Stmt
	runModelSpend, addMonthSpend             *sql.Stmt

	updateBeat, insertInstance                        *sql.Stmt
	deadReservations, deadRuns, deadCards, forgetDead *sql.Stmt

	// appendEvent inserts an event with its ID (see chainCache).
	appendEvent, dataVersion, lastEventID, chainHead *sql.Stmt
	journalState                                     *sql.Stmt // upsert: how far the decision journal is indexed

	createToken, revokeToken *sql.Stmt

	pruneConsole, countConsole, evictConsole, createConsole *sql.Stmt
	useConsole, endConsole                                  *sql.Stmt
}

func (s *writeStmts) list() []stmtSQL {
	return []stmtSQL{
		{&s.begin, "BEGIN IMMEDIATE"},
		{&s.commit, "COMMIT"},
		{&s.rollback, "ROLLBACK"},

		{&s.createCard, `INSERT INTO cards (id, tenant, session, principal, tool, digest, policy_revision,
			args, reason, state, answer, approver, created, deadline, answered, channel, instance)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?)`},
		{&s.resolveCard, `UPDATE cards SET state = ?, answer = ?, approver = ?, channel = ?, answered = ?
			WHERE id = ? AND state = 'pending' RETURNING ` + cardColumns},
		{&s.cardState, `SELECT state FROM cards WHERE id = ?`},
		{&s.addStanding, `INSERT INTO standings (id, tenant, tool, digest, card_id, approver, created, revoked)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`},
		{&s.revokeStanding, `UPDATE standings SET revoked = ?2
			WHERE id = ?1 AND (?3 = '' OR tenant = ?3) AND revoked IS NULL`},

		{&s.monthSpend, `SELECT COALESCE((SELECT usd FROM month_spend WHERE tenant = ? AND month = ?), 0)`},
		{&s.liveRuns, `SELECT COUNT(*) FROM runs WHERE tenant = ? AND profile = ? AND ended IS NULL`},
		// The per-day rule: live runs at their whole per-run figure (they may yet spend it);
		// ended runs at what they recorded: settled, and, conservatively, what they still hold
		// reserved (recovery settles it if the call may have run).
		{&s.daySpent, `SELECT COALESCE(SUM(CASE WHEN ended = 0 THEN per_run ELSE settled + reserved END), 0)
			FROM run_allowances WHERE tenant = ? AND day = ? AND connector = ?`},
		{&s.insertRun, `INSERT INTO runs (id, tenant, profile, session, attempt, started, day,
			max_concurrent, budget_usd, max_turns, instance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&s.insertAllowance, `INSERT INTO run_allowances (run, connector, position, unit, per_run, per_day, tenant, day)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`},
		{&s.endRun, `UPDATE runs SET ended = ? WHERE id = ? AND ended IS NULL`},
		{&s.endRunAllowances, `UPDATE run_allowances SET ended = 1 WHERE run = ?`},
		// The reservation itself: one conditional update that fits the per-run figure or
		// changes nothing.
		{&s.reserve, `UPDATE run_allowances SET reserved = reserved + ?1, open_count = open_count + 1
			WHERE run = ?2 AND connector = ?3 AND ended = 0 AND reserved + settled + ?1 <= per_run + ?4`},
		{&s.insertReservation, `INSERT INTO reservations (id, run, connector, amount, state, created, call_id)
			VALUES (?, ?, ?, ?, 'reserved', ?, ?)`},
		{&s.runAllowance, `SELECT r.ended IS NOT NULL, a.run IS NOT NULL
			FROM runs r LEFT JOIN run_allowances a ON a.run = r.id AND a.connector = ?2 WHERE r.id = ?1`},
		{&s.closeReservation, `UPDATE reservations SET state = ?, actual = ?, done = ?
			WHERE id = ? AND state = 'reserved' RETURNING run, connector, amount`},
		{&s.reservationState, `SELECT state FROM reservations WHERE id = ?`},
		// open_count reaching 0 resets reserved to exactly 0, so float remainders never pile up.
		{&s.settleAllowance, `UPDATE run_allowances SET
			reserved = CASE WHEN open_count <= 1 THEN 0 ELSE reserved - ?3 END,
			open_count = open_count - 1, settled = settled + ?4, settled_count = settled_count + 1
			WHERE run = ?1 AND connector = ?2`},
		{&s.releaseAllowance, `UPDATE run_allowances SET
			reserved = CASE WHEN open_count <= 1 THEN 0 ELSE reserved - ?3 END,
			open_count = open_count - 1
			WHERE run = ?1 AND connector = ?2`},
		{&s.recoverAllowances, `UPDATE run_allowances SET
			reserved = CASE WHEN open_count <= x.n THEN 0 ELSE reserved - x.amount END,
			open_count = open_count - x.n, settled = settled + x.amount, settled_count = settled_count + x.n
			FROM (SELECT run, connector, SUM(amount) AS amount, COUNT(*) AS n FROM reservations
				WHERE state = 'reserved' AND created < ?1 GROUP BY run, connector) AS x
			WHERE run_allowances.run = x.run AND run_allowances.connector = x.connector`},
		{&s.recoverReservations, `UPDATE reservations SET state = 'settled', actual = amount, done = ?2
			WHERE state = 'reserved' AND created < ?1`},
		{&s.turn, `UPDATE runs SET turns = turns + 1
			WHERE id = ? AND ended IS NULL AND (max_turns <= 0 OR turns < max_turns) RETURNING turns`},
		{&s.turnState, `SELECT ended IS NOT NULL FROM runs WHERE id = ?`},
		{&s.runModelSpend, `UPDATE runs SET model_usd = model_usd + ? WHERE id = ? RETURNING model_usd`},
		{&s.addMonthSpend, `INSERT INTO month_spend (tenant, month, usd) VALUES (?, ?, ?)
			ON CONFLICT (tenant, month) DO UPDATE SET usd = usd + excluded.usd RETURNING usd`},

		{&s.updateBeat, `UPDATE instances SET heartbeat = ? WHERE id = ?`},
		{&s.insertInstance, `INSERT INTO instances (id, started, heartbeat) VALUES (?, ?, ?)`},
		// Recovery. ?1 the staleness bound, ?2 the recovering instance, ?3 whether it is
		// leaving: an instance is live when it beat since the bound, or is the recovering one
		// and staying; every other name on a row (stale, shut down, never seen) is dead.
		// A reservation is settled when its call's decision to run is on record, or when it
		// names no call (made before calls were recorded on reservations); else released.
		{&s.deadReservations, `SELECT v.id, v.amount, v.call_id = '' OR EXISTS (SELECT 1 FROM audit_events e
				WHERE e.call_id = v.call_id AND e.kind = 'decision' AND e.decision = 'allow')
			FROM reservations v JOIN runs r ON r.id = v.run
			WHERE v.state = 'reserved' AND r.instance <> '' AND r.instance NOT IN (` + liveInstances + `)
			ORDER BY v.id`},
		{&s.deadRuns, `UPDATE runs SET ended = ?4
			WHERE ended IS NULL AND instance <> '' AND instance NOT IN (` + liveInstances + `)
			RETURNING id, tenant, profile, session, instance`},
		{&s.deadCards, `UPDATE cards SET state = 'expired', channel = 'canceled', answered = ?4
			WHERE state = 'pending' AND instance <> '' AND instance NOT IN (` + liveInstances + `)
			RETURNING ` + cardColumns},
		{&s.forgetDead, `DELETE FROM instances WHERE id NOT IN (` + liveInstances + `) RETURNING id`},

		{&s.appendEvent, `INSERT INTO audit_events (id, time, kind, call_id, tenant, session, principal, role,
			profile, run, tool, digest, decision, blockers, rules, approver, spend, outcome, error, policy_revision, channel, harness,
			prev_hash, hash)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&s.dataVersion, `PRAGMA data_version`},
		{&s.lastEventID, `SELECT COALESCE(MAX(id), 0) FROM audit_events`},
		{&s.chainHead, `SELECT hash FROM audit_events WHERE tenant = ? AND hash IS NOT NULL ORDER BY id DESC LIMIT 1`},

		{&s.journalState, `INSERT INTO journal_state (id, generation, position) VALUES (1, ?, ?)
			ON CONFLICT (id) DO UPDATE SET generation = excluded.generation, position = excluded.position`},

		{&s.createToken, `INSERT INTO tokens (` + tokenColumns + `)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&s.revokeToken, `UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL`},

		// The console's sessions (consolesession.Store); ?1-?3 are consoleLive's.
		{&s.pruneConsole, `DELETE FROM console_sessions WHERE NOT (` + consoleLive + `)`},
		{&s.countConsole, `SELECT COUNT(*) FROM console_sessions WHERE ended IS NULL`},
		{&s.evictConsole, `UPDATE console_sessions SET ended = ?1 WHERE id_hash IN (SELECT id_hash
			FROM console_sessions WHERE ended IS NULL ORDER BY seen, created, id_hash LIMIT ?2)`},
		{&s.createConsole, `INSERT INTO console_sessions (` + consoleColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		// Seen never goes back: the instances' clocks may differ a little.
		{&s.useConsole, `UPDATE console_sessions SET seen = max(seen, ?1) WHERE id_hash = ?4 AND ` + consoleLive + `
			RETURNING ` + consoleColumns},
		{&s.endConsole, `UPDATE console_sessions SET ended = ?1 WHERE id_hash = ?2 AND ended IS NULL`},
	}
}

func (s *writeStmts) prepare(ctx context.Context, c *sql.Conn) error {
	return prepareAll(ctx, s.list(), c.PrepareContext)
}

func (s *writeStmts) close() { closeAll(s.list()) }

// readStmts are the reader pool's statements, prepared once at Open.
type readStmts struct {
	card, cardState, watched *sql.Stmt
	findStanding             *sql.Stmt
	runStatus, monthSpend    *sql.Stmt
	tokenByHash, tokens      *sql.Stmt
	tokenByID                *sql.Stmt
	consoleSession           *sql.Stmt
}

func (s *readStmts) list() []stmtSQL {
	return []stmtSQL{
		{&s.card, `SELECT ` + cardColumns + ` FROM cards WHERE id = ?1 AND (?2 = '' OR tenant = ?2)`},
		{&s.cardState, `SELECT state FROM cards WHERE id = ?`},
		{&s.watched, `SELECT id FROM cards WHERE state <> 'pending' AND id IN (SELECT value FROM json_each(?))`},
		{&s.findStanding, `SELECT ` + standingColumns + ` FROM standings
			WHERE tenant = ? AND tool = ? AND digest = ? AND revoked IS NULL ORDER BY created DESC, id DESC LIMIT 1`},
		{&s.runStatus, `SELECT r.id, r.tenant, r.profile, r.session, r.attempt, r.started, r.day, r.ended,
				r.max_concurrent, r.budget_usd, r.max_turns, r.turns, r.model_usd, r.instance,
				a.connector, a.unit, a.per_run, a.per_day, a.reserved, a.settled
			FROM runs r LEFT JOIN run_allowances a ON a.run = r.id WHERE r.id = ? ORDER BY a.position`},
		{&s.monthSpend, `SELECT COALESCE((SELECT usd FROM month_spend WHERE tenant = ? AND month = ?), 0)`},
		{&s.tokenByHash, `SELECT ` + tokenColumns + ` FROM tokens WHERE hash = ? AND revoked IS NULL`},
		{&s.tokens, `SELECT ` + tokenColumns + ` FROM tokens ORDER BY created, id`},
		{&s.tokenByID, `SELECT ` + tokenColumns + ` FROM tokens WHERE id = ? AND revoked IS NULL`},
		{&s.consoleSession, `SELECT ` + consoleColumns + ` FROM console_sessions WHERE id_hash = ?4 AND ` + consoleLive},
	}
}

func (s *readStmts) prepare(ctx context.Context, db *sql.DB) error {
	return prepareAll(ctx, s.list(), db.PrepareContext)
}

func (s *readStmts) close() { closeAll(s.list()) }

// liveInstances selects the instances recovery leaves alone (see deadReservations).
const liveInstances = `SELECT id FROM instances WHERE (heartbeat >= ?1 OR id = ?2) AND NOT (id = ?2 AND ?3)`

type stmtSQL struct {
	dst   **sql.Stmt
	query string
}

func prepareAll(ctx context.Context, list []stmtSQL, prepare func(context.Context, string) (*sql.Stmt, error)) error {
	for _, p := range list {
		st, err := prepare(ctx, p.query)
		if err != nil {
			return fmt.Errorf("%w in %s", err, p.query)
		}
		*p.dst = st
	}
	return nil
}

// closeAll closes the statements; the fields keep them (closed), since readers may still be
// looking at them: their calls fail, and the DB reports ErrClosed.
func closeAll(list []stmtSQL) {
	for _, p := range list {
		if *p.dst != nil {
			(*p.dst).Close()
		}
	}
}
