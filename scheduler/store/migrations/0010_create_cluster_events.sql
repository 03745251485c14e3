-- Cluster events: idle shutdowns, scale-up requests, zombie jobs and hook
-- results, each with its reason and what it saved.
CREATE TABLE cluster_events (
  id              BIGSERIAL PRIMARY KEY,
  kind            TEXT NOT NULL,
  worker_id       TEXT,
  job_id          BIGINT,
  reason          TEXT NOT NULL DEFAULT '',
  idle_seconds    DOUBLE PRECISION,
  saved_per_hour  NUMERIC,
  at              TIMESTAMPTZ NOT NULL DEFAULT now(),
  CONSTRAINT cluster_events_kind_valid CHECK (kind IN ('SHUTDOWN', 'SCALE_UP',
    'ZOMBIE', 'HOOK_OK', 'HOOK_FAILED', 'SHUTDOWN_CANCELLED'))
);
CREATE INDEX cluster_events_at_idx ON cluster_events (at);
