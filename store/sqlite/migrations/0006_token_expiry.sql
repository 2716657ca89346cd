-- A token may expire (auth.Token.Expires): the person token warden serve prints for its banner
-- lives for --client-token-ttl. NULL never expires, as every token written before this step.
ALTER TABLE tokens ADD COLUMN expires TEXT;
