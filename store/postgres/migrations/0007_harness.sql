-- A decision judged for an agent's own runtime (POST /api/v1/review with an agent token) names
-- it (audit.Event.Harness: claude-code, ...). Every event written before this step was a call
-- Warden ran itself: ''. A column with a constant default rewrites no rows.
ALTER TABLE audit_events ADD COLUMN harness text NOT NULL DEFAULT '';
