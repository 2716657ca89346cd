-- MCP sessions kept in the store, so that any instance sharing it (or this one after a
-- restart) serves a session another opened (instance.Session), and the tokens of subagents
-- their sessions spawned (instance.Child: the secret's hash only).
CREATE TABLE mcp_sessions (
	id          TEXT PRIMARY KEY,
	warden      TEXT NOT NULL,
	token       TEXT NOT NULL,
	tenant      TEXT NOT NULL,
	principal   TEXT NOT NULL DEFAULT '',
	profile     TEXT NOT NULL DEFAULT '',
	model       TEXT NOT NULL DEFAULT '',
	harness     TEXT NOT NULL DEFAULT '',
	protocol    TEXT NOT NULL DEFAULT '',
	init        TEXT NOT NULL DEFAULT '{}',
	initialized INTEGER NOT NULL DEFAULT 0,
	run         TEXT NOT NULL DEFAULT '',
	instance    TEXT NOT NULL DEFAULT '',
	opened      TEXT NOT NULL,
	seen        TEXT NOT NULL,
	ended       TEXT,
	why         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX mcp_sessions_live ON mcp_sessions (seen) WHERE ended IS NULL;
CREATE INDEX mcp_sessions_run ON mcp_sessions (run) WHERE run <> '';

CREATE TABLE mcp_children (
	hash    TEXT PRIMARY KEY,
	token   TEXT NOT NULL,
	parent  TEXT NOT NULL REFERENCES mcp_sessions (id),
	tenant  TEXT NOT NULL,
	role    TEXT NOT NULL,
	profile TEXT NOT NULL DEFAULT '',
	name    TEXT NOT NULL,
	spawned TEXT NOT NULL DEFAULT '',
	root    TEXT NOT NULL,
	created TEXT NOT NULL
);
