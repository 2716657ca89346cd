-- A placeholder: number 10 is another change's (the MCP sessions of issue 19), merged apart from
-- the console's sessions (0011). It changes nothing; delete this file when that change's own
-- 0010 is merged beside it.
SELECT 1;
