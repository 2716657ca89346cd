-- A placeholder: number 11 is another change's (the MCP sessions of issue 19), merged apart from
-- the console's sessions (0012). It changes nothing; delete this file when that change's own
-- 0011 is merged beside it.
SELECT 1;
