-- A decision judged for an agent's own runtime (POST /api/v1/review with an agent token) names
-- it (audit.Event.Harness: claude-code, ...). Every event written before this step was a call
-- Warden ran itself: ''.
ALTER TABLE audit_events ADD COLUMN harness TEXT NOT NULL DEFAULT '';
