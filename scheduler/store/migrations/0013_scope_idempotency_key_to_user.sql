-- Idempotency keys belong to the submitting user. Until this migration a key
-- was unique across all users, and a submission under a key that another
-- user had already used was answered with that user's job (its spec, env
-- and command) instead of creating one. Keys unique before stay unique per
-- user, so the new index builds on any stored data.
DROP INDEX jobs_idempotency_key_idx;
CREATE UNIQUE INDEX jobs_user_idempotency_key_idx
  ON jobs (user_name, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
