-- API bearer tokens. Only the SHA-256 of a token (lowercase hex) is kept:
-- the token itself is shown once, at creation, and cannot be recovered.
CREATE TABLE api_tokens (
  id            BIGSERIAL PRIMARY KEY,
  token_sha256  TEXT NOT NULL UNIQUE,
  user_name     TEXT NOT NULL,
  team          TEXT NOT NULL DEFAULT '',
  role          TEXT NOT NULL,
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
  revoked_at    TIMESTAMPTZ,
  CONSTRAINT api_tokens_role_valid CHECK (role IN ('user', 'admin')),
  CONSTRAINT api_tokens_hash_valid CHECK (token_sha256 ~ '^[0-9a-f]{64}$')
);
