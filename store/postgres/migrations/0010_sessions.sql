-- MCP sessions kept in the store, so that any instance sharing it serves a session another
-- opened (instance.Session), and the tokens of subagents their sessions spawned
-- (instance.Child: the secret's hash only).
CREATE TABLE mcp_sessions (
	id          text        PRIMARY KEY,
	warden      text        NOT NULL,
	token       text        NOT NULL,
	tenant      text        NOT NULL,
	principal   text        NOT NULL DEFAULT '',
	profile     text        NOT NULL DEFAULT '',
	model       text        NOT NULL DEFAULT '',
	harness     text        NOT NULL DEFAULT '',
	protocol    text        NOT NULL DEFAULT '',
	init        jsonb       NOT NULL DEFAULT '{}',
	initialized boolean     NOT NULL DEFAULT false,
	run         text        NOT NULL DEFAULT '',
	instance    text        NOT NULL DEFAULT '',
	opened      timestamptz NOT NULL,
	seen        timestamptz NOT NULL,
	ended       timestamptz,
	why         text        NOT NULL DEFAULT ''
);
CREATE INDEX mcp_sessions_live ON mcp_sessions (seen) WHERE ended IS NULL;
CREATE INDEX mcp_sessions_run ON mcp_sessions (run) WHERE run <> '';

CREATE TABLE mcp_children (
	hash    text        PRIMARY KEY,
	token   text        NOT NULL,
	parent  text        NOT NULL REFERENCES mcp_sessions (id),
	tenant  text        NOT NULL,
	role    text        NOT NULL,
	profile text        NOT NULL DEFAULT '',
	name    text        NOT NULL,
	spawned text        NOT NULL DEFAULT '',
	root    text        NOT NULL,
	created timestamptz NOT NULL
);
