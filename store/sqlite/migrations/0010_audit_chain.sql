-- The audit trail's hash chain (audit.Link): each event's predecessor's hash in its tenant's
-- chain and its own, 32 bytes each. Events written before this step keep NULL: the chains start
-- after them, and `warden audit verify` counts them as unchained.
ALTER TABLE audit_events ADD COLUMN prev_hash BLOB;
ALTER TABLE audit_events ADD COLUMN hash BLOB;

-- The Ed25519 public keys instances sign checkpoints with (the private keys live in their
-- memory only), and the signed checkpoints: both append-only, like the trail.
CREATE TABLE audit_keys (
	key      TEXT PRIMARY KEY,
	instance TEXT NOT NULL,
	created  TEXT NOT NULL
);
CREATE TABLE audit_checkpoints (
	id        INTEGER PRIMARY KEY,
	tenant    TEXT NOT NULL,
	event     INTEGER NOT NULL,
	hash      TEXT NOT NULL,
	time      TEXT NOT NULL,
	key       TEXT NOT NULL,
	signature TEXT NOT NULL
);
CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER audit_checkpoints_no_delete BEFORE DELETE ON audit_checkpoints
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER audit_keys_no_update BEFORE UPDATE ON audit_keys
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER audit_keys_no_delete BEFORE DELETE ON audit_keys
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
