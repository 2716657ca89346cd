-- How a card left pending (approval.Channel: api, elicitation, deadline, canceled), on the card
-- and on the audit event of its answer. Rows written before this step keep '' (not recorded):
-- guessing their channel would be a record of something nobody saw. Adding a column with a
-- constant default rewrites no rows.

ALTER TABLE cards ADD COLUMN channel text NOT NULL DEFAULT '';
ALTER TABLE audit_events ADD COLUMN channel text NOT NULL DEFAULT '';
