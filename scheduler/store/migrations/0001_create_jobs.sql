-- Jobs: one row per submitted job; the spec is the protobuf JSON mapping.
CREATE TABLE jobs (
  id               BIGSERIAL PRIMARY KEY,
  name             TEXT NOT NULL DEFAULT '',
  user_name        TEXT NOT NULL DEFAULT '',
  team             TEXT NOT NULL DEFAULT '',
  priority         INT NOT NULL DEFAULT 0,
  spec             JSONB NOT NULL,
  state            TEXT NOT NULL,
  attempt          INT NOT NULL DEFAULT 1,
  idempotency_key  TEXT,
  message          TEXT NOT NULL DEFAULT '',
  exit_code        INT NOT NULL DEFAULT 0,
  progress         JSONB,
  created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
  started_at       TIMESTAMPTZ,
  finished_at      TIMESTAMPTZ,
  updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
  CONSTRAINT jobs_state_valid CHECK (state IN ('PENDING', 'ASSIGNED', 'RUNNING',
                                               'SUCCEEDED', 'FAILED', 'CANCELLED')),
  CONSTRAINT jobs_priority_range CHECK (priority BETWEEN 0 AND 100),
  CONSTRAINT jobs_attempt_positive CHECK (attempt >= 1)
);

CREATE UNIQUE INDEX jobs_idempotency_key_idx ON jobs (idempotency_key)
  WHERE idempotency_key IS NOT NULL;
-- The scheduler's rebuild and loop read only the active jobs.
CREATE INDEX jobs_active_idx ON jobs (state, priority DESC, id)
  WHERE state IN ('PENDING', 'ASSIGNED', 'RUNNING');
CREATE INDEX jobs_team_user_idx ON jobs (team, user_name, id DESC);
