-- Worker uptime: each span a worker was up (connected, within its lease),
-- priced like allocations, so idle cost = uptime cost - allocated cost.
CREATE TABLE worker_uptime (
  id          BIGSERIAL PRIMARY KEY,
  worker_id   TEXT NOT NULL REFERENCES workers (id),
  region      TEXT NOT NULL DEFAULT '',
  gpu_type    TEXT NOT NULL DEFAULT '',
  offering    TEXT NOT NULL DEFAULT '',
  gpus        DOUBLE PRECISION NOT NULL DEFAULT 0,
  started_at  TIMESTAMPTZ NOT NULL,
  ended_at    TIMESTAMPTZ,
  cost        NUMERIC,
  currency    TEXT,
  CONSTRAINT worker_uptime_end_after_start CHECK (ended_at IS NULL OR ended_at >= started_at)
);
CREATE INDEX worker_uptime_open_idx ON worker_uptime (worker_id) WHERE ended_at IS NULL;
CREATE INDEX worker_uptime_started_idx ON worker_uptime (started_at);
