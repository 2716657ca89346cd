-- Each tenant's stored hard-block document (boundary.Stored): BURROW's JSON as written, its
-- revision (1 for the first write, one more with each; the API's ETag), who wrote it and when.
-- Rows are never deleted, so the sum of the revisions grows with every write: that is what
-- another process's watch compares.

CREATE TABLE boundaries (
	tenant   TEXT PRIMARY KEY,
	document BLOB NOT NULL,
	revision INTEGER NOT NULL CHECK (revision >= 1),
	author   TEXT NOT NULL DEFAULT '',
	updated  TEXT NOT NULL
);
