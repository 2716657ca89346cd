-- The audit trail's hash chain (audit.Link): each event's predecessor's hash in its tenant's
-- chain and its own, 32 bytes each. Events written before this step keep NULL: the chains start
-- after them, and `warden audit verify` counts them as unchained. Columns without a default
-- rewrite no rows.
ALTER TABLE audit_events ADD COLUMN prev_hash bytea;
ALTER TABLE audit_events ADD COLUMN hash bytea;

-- Each tenant's chain head: its last chained event and that event's hash. Appends on every
-- instance link through this row, so its lock orders a tenant's appends, and an event's ID is
-- taken under it: a tenant's chain runs in ID order.
CREATE TABLE audit_chain (
	tenant text   PRIMARY KEY,
	event  bigint NOT NULL,
	hash   bytea  NOT NULL
);

-- audit_link links the next event of a tenant whose content hash (audit.ContentHash, computed
-- by Warden) is given: it locks the tenant's head (creating it at the zero hash), takes the
-- event's ID, and returns it with the previous hash and the new one,
-- sha256(prev || id as 8 bytes big-endian || content). The head row stays locked until the
-- caller's transaction ends.
CREATE FUNCTION audit_link(p_tenant text, p_content bytea, OUT out_id bigint, OUT out_prev bytea, OUT out_hash bytea)
LANGUAGE plpgsql AS $$
BEGIN
	SELECT c.hash INTO out_prev FROM audit_chain c WHERE c.tenant = p_tenant FOR UPDATE;
	IF NOT FOUND THEN
		INSERT INTO audit_chain AS c (tenant, event, hash) VALUES (p_tenant, 0, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea)
			ON CONFLICT (tenant) DO NOTHING;
		SELECT c.hash INTO out_prev FROM audit_chain c WHERE c.tenant = p_tenant FOR UPDATE;
	END IF;
	out_id := nextval('audit_events_id_seq');
	out_hash := sha256(out_prev || int8send(out_id) || p_content);
	UPDATE audit_chain c SET event = out_id, hash = out_hash WHERE c.tenant = p_tenant;
END $$;

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
