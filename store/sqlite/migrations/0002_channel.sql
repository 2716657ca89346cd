-- How a card left pending (approval.Channel: api, elicitation, deadline, canceled), on the card
-- and on the audit event of its answer. Rows written before this step keep '' (not recorded):
-- guessing their channel would be a record of something nobody saw.

ALTER TABLE cards ADD COLUMN channel TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_events ADD COLUMN channel TEXT NOT NULL DEFAULT '';
