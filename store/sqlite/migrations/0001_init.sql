-- Warden's first schema: cards and standing approvals, the ledger, the audit trail, tokens.
-- Times are UTC text with nanoseconds, fixed width ("2006-01-02T15:04:05.000000000Z"), so that
-- they sort and compare as text; NULL is the zero time.

CREATE TABLE cards (
	id              TEXT PRIMARY KEY,
	tenant          TEXT NOT NULL,
	session         TEXT NOT NULL,
	principal       TEXT NOT NULL,
	tool            TEXT NOT NULL,
	digest          TEXT NOT NULL,
	policy_revision TEXT NOT NULL,
	args            TEXT,            -- JSON, as shown to the person (protected values redacted)
	reason          TEXT NOT NULL,
	state           TEXT NOT NULL,
	answer          TEXT NOT NULL,
	approver        TEXT NOT NULL,
	created         TEXT,
	deadline        TEXT,
	answered        TEXT
);
CREATE INDEX cards_created ON cards (created, id);
CREATE INDEX cards_tenant_created ON cards (tenant, created, id);
CREATE INDEX cards_state_created ON cards (state, created, id);

CREATE TABLE standings (
	id       TEXT PRIMARY KEY,
	tenant   TEXT NOT NULL,
	tool     TEXT NOT NULL,
	digest   TEXT NOT NULL,
	card_id  TEXT NOT NULL,
	approver TEXT NOT NULL,
	created  TEXT,
	revoked  TEXT
);
CREATE INDEX standings_active ON standings (tenant, tool, digest) WHERE revoked IS NULL;
CREATE INDEX standings_tenant_created ON standings (tenant, created, id);

CREATE TABLE runs (
	id             TEXT PRIMARY KEY,
	tenant         TEXT NOT NULL,
	profile        TEXT NOT NULL,
	session        TEXT NOT NULL,
	attempt        INTEGER NOT NULL,
	started        TEXT,
	day            TEXT NOT NULL,
	ended          TEXT,
	max_concurrent INTEGER NOT NULL,
	budget_usd     REAL NOT NULL,
	max_turns      INTEGER NOT NULL,
	turns          INTEGER NOT NULL DEFAULT 0,
	model_usd      REAL NOT NULL DEFAULT 0
);
CREATE INDEX runs_live ON runs (tenant, profile) WHERE ended IS NULL;

-- One row per allowance of a run, with the run's running totals on that connector, so that a
-- reservation is one conditional UPDATE and the per-day check one indexed SUM.
CREATE TABLE run_allowances (
	run           TEXT NOT NULL REFERENCES runs (id),
	connector     TEXT NOT NULL,
	position      INTEGER NOT NULL,
	unit          TEXT NOT NULL,
	per_run       REAL NOT NULL,
	per_day       REAL NOT NULL,
	tenant        TEXT NOT NULL,              -- the run's, for the per-day index
	day           TEXT NOT NULL,              -- the run's
	ended         INTEGER NOT NULL DEFAULT 0, -- the run's, 1 once it ended
	reserved      REAL NOT NULL DEFAULT 0,    -- open reservations
	open_count    INTEGER NOT NULL DEFAULT 0,
	settled       REAL NOT NULL DEFAULT 0,
	settled_count INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (run, connector)
) WITHOUT ROWID;
CREATE INDEX run_allowances_day ON run_allowances (tenant, day, connector);

CREATE TABLE reservations (
	id        TEXT PRIMARY KEY,
	run       TEXT NOT NULL REFERENCES runs (id),
	connector TEXT NOT NULL,
	amount    REAL NOT NULL,
	actual    REAL NOT NULL DEFAULT 0,
	state     TEXT NOT NULL,
	created   TEXT,
	done      TEXT
) WITHOUT ROWID;
CREATE INDEX reservations_open ON reservations (created) WHERE state = 'reserved';

CREATE TABLE month_spend (
	tenant TEXT NOT NULL,
	month  TEXT NOT NULL,
	usd    REAL NOT NULL,
	PRIMARY KEY (tenant, month)
) WITHOUT ROWID;

-- Append-only: rows are inserted and never updated or deleted. The rowid is the event ID.
CREATE TABLE audit_events (
	id              INTEGER PRIMARY KEY,
	time            TEXT,
	kind            TEXT NOT NULL,
	call_id         TEXT NOT NULL,
	tenant          TEXT NOT NULL,
	session         TEXT NOT NULL,
	principal       TEXT NOT NULL,
	role            TEXT NOT NULL,
	profile         TEXT NOT NULL,
	run             TEXT NOT NULL,
	tool            TEXT NOT NULL,
	digest          TEXT NOT NULL,
	decision        TEXT NOT NULL,
	blockers        TEXT,  -- JSON array of {code, rule, detail}
	rules           TEXT,  -- JSON array of rule ids
	approver        TEXT NOT NULL,
	spend           TEXT,  -- JSON {connector, unit, amount}
	outcome         TEXT NOT NULL,
	error           TEXT NOT NULL,
	policy_revision TEXT NOT NULL
);
-- Two indexes only: every index is another B-tree page written on each append, and the
-- decision is appended on every call's path before the call may run. Queries by tenant (the
-- API's usual scope) and by call use these; by session, tool or time they scan a tenant's
-- events, or the table, in id order.
CREATE INDEX audit_events_tenant ON audit_events (tenant, id);
CREATE INDEX audit_events_call ON audit_events (call_id, id);

CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;

CREATE TABLE tokens (
	id           TEXT PRIMARY KEY,
	hash         TEXT NOT NULL UNIQUE,
	role         TEXT NOT NULL,
	tenant       TEXT NOT NULL,
	session_role TEXT NOT NULL,
	profile      TEXT NOT NULL,
	name         TEXT NOT NULL,
	created      TEXT,
	revoked      TEXT
);
