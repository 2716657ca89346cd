-- The management plane's stored objects (manage.Object): tenants, connections, profiles and
-- egress allowlists, each as the JSON the API took, with its revision (1 for the first write,
-- one more with each write, a deletion included; the API's ETag), who wrote it and when.
-- A deletion keeps the row (deleted = 1), so a revision never repeats for a kind and id and the
-- sum of the revisions grows with every write: that is what another process's watch compares.

CREATE TABLE objects (
	kind     TEXT NOT NULL,
	id       TEXT NOT NULL,
	tenant   TEXT NOT NULL,
	data     BLOB NOT NULL,
	revision INTEGER NOT NULL CHECK (revision >= 1),
	deleted  INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
	author   TEXT NOT NULL DEFAULT '',
	updated  TEXT NOT NULL,
	PRIMARY KEY (kind, id)
);

CREATE INDEX objects_tenant ON objects (kind, tenant, id);
