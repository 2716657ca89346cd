-- A token may expire (auth.Token.Expires): the person token warden serve prints for its banner
-- lives for --client-token-ttl. NULL never expires, as every token written before this step;
-- adding a nullable column rewrites no rows.
ALTER TABLE tokens ADD COLUMN expires timestamptz;
ALTER TABLE tokens ADD COLUMN expires_ns smallint NOT NULL DEFAULT 0;
