-- How far the decision journal (the file beside the database, named after it with
-- -decisions) is indexed into audit_events: its generation and the offset after the last
-- record inserted. Written in the same transaction as the inserts.
CREATE TABLE journal_state (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL,
    position   INTEGER NOT NULL
);
