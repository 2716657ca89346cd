-- The audit trail's hash chain (audit.Link): each event's predecessor's hash in its tenant's
-- chain and its own, 32 bytes each. Events written before this step keep NULL: the chains start
-- after them, and `warden audit verify` counts them as unchained. Columns without a default
-- rewrite no rows.
ALTER TABLE audit_events ADD COLUMN prev_hash bytea;
ALTER TABLE audit_events ADD COLUMN hash bytea;

-- Each tenant's chain head: its last chained event, that event's hash and the one before it
-- (event 0 and zero hashes before the first). Appends on every instance link through this
-- row: the UPDATE that links an event locks it and takes the event's ID under the lock, so a
-- tenant's appends are ordered and its chain runs in ID order.
CREATE TABLE audit_chain (
	tenant text   PRIMARY KEY,
	event  bigint NOT NULL,
	prev   bytea  NOT NULL,
	hash   bytea  NOT NULL
);

-- The Ed25519 public keys instances sign checkpoints with (the private keys live in their
-- memory only), and the signed checkpoints.
CREATE TABLE audit_keys (
	key      text        PRIMARY KEY,
	instance text        NOT NULL,
	created  timestamptz NOT NULL
);
CREATE TABLE audit_checkpoints (
	id        bigserial   PRIMARY KEY,
	tenant    text        NOT NULL,
	event     bigint      NOT NULL,
	hash      text        NOT NULL,
	time      timestamptz NOT NULL,
	time_ns   smallint    NOT NULL,
	key       text        NOT NULL,
	signature text        NOT NULL
);
