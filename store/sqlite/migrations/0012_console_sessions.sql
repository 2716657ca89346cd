-- The web console's sign-in sessions (package server/console/consolesession), kept here so that
-- every instance on this file serves every session. Never the cookie's session id (only its
-- SHA-256, id_hash) and never the API token's secret (only the token's id). Times are text
-- like every other time here (UTC, fixed width, so they sort and compare as times do). A row
-- whose session is no longer live is deleted at the next sign-in.
CREATE TABLE console_sessions (
	id_hash  TEXT PRIMARY KEY,
	token_id TEXT NOT NULL,
	csrf     TEXT NOT NULL,
	name     TEXT NOT NULL,
	tenant   TEXT NOT NULL,
	role     TEXT NOT NULL,
	created  TEXT NOT NULL,
	seen     TEXT NOT NULL,
	ended    TEXT
);
-- The one unused longest is found by seen, among the sessions not ended.
CREATE INDEX console_sessions_seen ON console_sessions (seen) WHERE ended IS NULL;
