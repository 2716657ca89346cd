-- An agent token may bind the model and the harness its MCP sessions run on (auth.Token.Model,
-- Harness): what a client states at initialize cannot contradict them. Empty binds neither, as
-- for every token written before this step.
ALTER TABLE tokens ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN harness TEXT NOT NULL DEFAULT '';
