-- The management plane's stored objects (manage.Object): tenants, connections, profiles and
-- egress allowlists, each as the JSON the API took (bytea: kept byte for byte), with its
-- revision (1 for the first write, one more with each write, a deletion included; the API's
-- ETag), who wrote it and when. A deletion keeps the row (deleted), so a revision never repeats
-- for a kind and id. A write notifies the store's channel, so every instance's watch reads the
-- objects again. Ids sort bytewise (COLLATE "C"), as Go's strings and SQLite's do, so that a
-- page's "after" cursor means the same in every store.

CREATE TABLE objects (
	kind     text COLLATE "C" NOT NULL,
	id       text COLLATE "C" NOT NULL,
	tenant   text COLLATE "C" NOT NULL,
	data     bytea NOT NULL,
	revision bigint NOT NULL CHECK (revision >= 1),
	deleted  boolean NOT NULL DEFAULT false,
	author   text NOT NULL DEFAULT '',
	updated  timestamptz NOT NULL,
	PRIMARY KEY (kind, id)
);

CREATE INDEX objects_tenant ON objects (kind, tenant, id);
