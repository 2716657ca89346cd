-- The processes serving sessions on this schema (package instance), and what each holds: a
-- run's and a pending card's instance, and a reservation's call (the call_id of its audit
-- events, so that recovery finds whether the call's decision to run was written). Rows written
-- before this step keep '': recovery never touches a run or card without an instance, and
-- settles a reservation without a call, as Warden did before. Adding a column with a constant
-- default rewrites no rows.
CREATE TABLE instances (
	id        text        PRIMARY KEY,
	started   timestamptz NOT NULL,
	heartbeat timestamptz NOT NULL
);

ALTER TABLE runs ADD COLUMN instance text NOT NULL DEFAULT '';
CREATE INDEX runs_instance_live ON runs (instance) WHERE ended IS NULL AND instance <> '';
ALTER TABLE cards ADD COLUMN instance text NOT NULL DEFAULT '';
CREATE INDEX cards_instance_pending ON cards (instance) WHERE state = 'pending' AND instance <> '';
ALTER TABLE reservations ADD COLUMN call_id text NOT NULL DEFAULT '';
