-- Each tenant's stored hard-block document (boundary.Stored): BURROW's JSON as written, its
-- revision (1 for the first write, one more with each; the API's ETag), who wrote it and when.
-- A write notifies the store's channel, so every instance's watch reads it again.

CREATE TABLE boundaries (
	tenant   text PRIMARY KEY,
	document bytea NOT NULL,
	revision bigint NOT NULL CHECK (revision >= 1),
	author   text NOT NULL DEFAULT '',
	updated  timestamptz NOT NULL
);
