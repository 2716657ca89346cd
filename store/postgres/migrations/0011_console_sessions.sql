-- The web console's sign-in sessions (package server/console/consolesession), kept here so that
-- every instance on this schema serves every session. Never the cookie's session id (only its
-- SHA-256, id_hash) and never the API token's secret (only the token's id). Times keep
-- microseconds, as timestamptz does; the bounds they are held to are minutes and hours. A row
-- whose session is no longer live is deleted at the next sign-in.
CREATE TABLE console_sessions (
	id_hash  text        PRIMARY KEY,
	token_id text        NOT NULL,
	csrf     text        NOT NULL,
	name     text        NOT NULL,
	tenant   text        NOT NULL,
	role     text        NOT NULL,
	created  timestamptz NOT NULL,
	seen     timestamptz NOT NULL,
	ended    timestamptz
);
-- The one unused longest is found by seen, among the sessions not ended.
CREATE INDEX console_sessions_seen ON console_sessions (seen) WHERE ended IS NULL;
