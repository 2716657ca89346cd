-- Warden's PostgreSQL schema, version 1.
--
-- Times are stored as timestamptz (microseconds) plus a _ns column holding the nanoseconds
-- below the microsecond, so that a time read back is exactly the Go time written.
-- Money is numeric: decimal arithmetic, so that 0.1 + 0.2 fits an allowance of 0.3.

-- Approvals (G1).
CREATE TABLE cards (
	seq             bigserial   NOT NULL UNIQUE,
	id              text        PRIMARY KEY,
	tenant          text        NOT NULL,
	session         text        NOT NULL,
	principal       text        NOT NULL,
	tool            text        NOT NULL,
	digest          text        NOT NULL,
	policy_revision text        NOT NULL,
	args            bytea,
	reason          text        NOT NULL,
	state           text        NOT NULL CHECK (state IN ('pending', 'allowed', 'denied', 'expired')),
	answer          text        NOT NULL,
	approver        text        NOT NULL,
	created         timestamptz NOT NULL,
	created_ns      smallint    NOT NULL,
	deadline        timestamptz NOT NULL,
	deadline_ns     smallint    NOT NULL,
	answered        timestamptz,
	answered_ns     smallint    NOT NULL DEFAULT 0
);
CREATE INDEX cards_tenant_state ON cards (tenant, state, created DESC);
CREATE INDEX cards_created ON cards (created DESC);

CREATE TABLE standings (
	seq        bigserial   NOT NULL UNIQUE,
	id         text        PRIMARY KEY,
	tenant     text        NOT NULL,
	tool       text        NOT NULL,
	digest     text        NOT NULL,
	card_id    text        NOT NULL,
	approver   text        NOT NULL,
	created    timestamptz NOT NULL,
	created_ns smallint    NOT NULL,
	revoked    timestamptz,
	revoked_ns smallint    NOT NULL DEFAULT 0
);
CREATE INDEX standings_active ON standings (tenant, tool, digest) WHERE revoked IS NULL;
CREATE INDEX standings_tenant ON standings (tenant, created DESC);

-- The ledger (G2, G3).
CREATE TABLE runs (
	seq            bigserial   NOT NULL UNIQUE,
	id             text        PRIMARY KEY,
	tenant         text        NOT NULL,
	profile        text        NOT NULL,
	session        text        NOT NULL,
	attempt        integer     NOT NULL,
	started        timestamptz NOT NULL,
	started_ns     smallint    NOT NULL,
	day            text        NOT NULL,
	ended          timestamptz,
	ended_ns       smallint    NOT NULL DEFAULT 0,
	max_concurrent integer     NOT NULL,
	budget_usd     numeric     NOT NULL,
	max_turns      integer     NOT NULL,
	turns          integer     NOT NULL DEFAULT 0,
	model_usd      numeric     NOT NULL DEFAULT 0
);
CREATE INDEX runs_day ON runs (tenant, day);
CREATE INDEX runs_live ON runs (tenant, profile) WHERE ended IS NULL;

-- One row per run and billing connector: the figures and what is held against them. Reserve
-- updates this row with its figure in the WHERE clause, so PostgreSQL rechecks the figure on the
-- locked row and concurrent reservations can never together pass it. live is cleared by EndRun
-- under the same row lock, so no reservation lands on an ended run.
CREATE TABLE run_allowances (
	run_id    text    NOT NULL REFERENCES runs (id),
	connector text    NOT NULL,
	ord       integer NOT NULL,
	unit      text    NOT NULL,
	per_run   numeric NOT NULL CHECK (per_run >= 0),
	per_day   numeric NOT NULL CHECK (per_day >= per_run),
	live      boolean NOT NULL DEFAULT true,
	reserved  numeric NOT NULL DEFAULT 0 CHECK (reserved >= 0),
	settled   numeric NOT NULL DEFAULT 0 CHECK (settled >= 0),
	-- settled_n counts settled calls: an ended run that settled none counts at its whole
	-- per-run figure towards the day.
	settled_n integer NOT NULL DEFAULT 0,
	PRIMARY KEY (run_id, connector)
);

CREATE TABLE reservations (
	id         text        PRIMARY KEY,
	run_id     text        NOT NULL,
	connector  text        NOT NULL,
	amount     numeric     NOT NULL CHECK (amount >= 0),
	actual     numeric     NOT NULL DEFAULT 0,
	state      text        NOT NULL CHECK (state IN ('reserved', 'settled', 'released')),
	created    timestamptz NOT NULL,
	created_ns smallint    NOT NULL,
	done       timestamptz,
	done_ns    smallint    NOT NULL DEFAULT 0,
	FOREIGN KEY (run_id, connector) REFERENCES run_allowances (run_id, connector)
);
CREATE INDEX reservations_open ON reservations (created, created_ns) WHERE state = 'reserved';
CREATE INDEX reservations_run ON reservations (run_id);

CREATE TABLE model_months (
	tenant text    NOT NULL,
	month  text    NOT NULL,
	usd    numeric NOT NULL,
	PRIMARY KEY (tenant, month)
);

-- The audit trail (D1). Append-only: Warden never updates or deletes a row.
CREATE TABLE audit_events (
	id              bigserial   PRIMARY KEY,
	time            timestamptz NOT NULL,
	time_ns         smallint    NOT NULL,
	kind            text        NOT NULL,
	call_id         text        NOT NULL,
	tenant          text        NOT NULL,
	session         text        NOT NULL,
	principal       text        NOT NULL,
	role            text        NOT NULL,
	profile         text        NOT NULL,
	run             text        NOT NULL,
	tool            text        NOT NULL,
	digest          text        NOT NULL,
	decision        text        NOT NULL,
	blockers        jsonb,
	rules           jsonb,
	approver        text        NOT NULL,
	spend           jsonb,
	outcome         text        NOT NULL,
	error           text        NOT NULL,
	policy_revision text        NOT NULL
);
CREATE INDEX audit_events_tenant ON audit_events (tenant, id);
CREATE INDEX audit_events_session ON audit_events (session, id);
CREATE INDEX audit_events_call ON audit_events (call_id, id);
CREATE INDEX audit_events_time ON audit_events (time);

-- Bearer tokens (H1): only their hashes.
CREATE TABLE tokens (
	seq          bigserial   NOT NULL UNIQUE,
	id           text        PRIMARY KEY,
	hash         text        NOT NULL UNIQUE,
	role         text        NOT NULL,
	tenant       text        NOT NULL,
	session_role text        NOT NULL,
	profile      text        NOT NULL,
	name         text        NOT NULL,
	created      timestamptz NOT NULL,
	created_ns   smallint    NOT NULL,
	revoked      timestamptz,
	revoked_ns   smallint    NOT NULL DEFAULT 0
);
