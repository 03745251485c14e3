-- Allocations: which devices of which worker an attempt of a job held, and
-- when. The usage (and later the cost) of a job is the sum of its rows.
CREATE TABLE allocations (
  id              BIGSERIAL PRIMARY KEY,
  job_id          BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  attempt         INT NOT NULL,
  worker_id       TEXT NOT NULL REFERENCES workers (id),
  node_rank       INT NOT NULL,
  device_indexes  INT[] NOT NULL,
  gpu_share       DOUBLE PRECISION NOT NULL DEFAULT 1,
  master_port     INT NOT NULL DEFAULT 0,
  started_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
  ended_at        TIMESTAMPTZ,
  CONSTRAINT allocations_end_after_start CHECK (ended_at IS NULL OR ended_at >= started_at),
  CONSTRAINT allocations_one_per_node UNIQUE (job_id, attempt, node_rank)
);
CREATE INDEX allocations_open_idx ON allocations (worker_id) WHERE ended_at IS NULL;
CREATE INDEX allocations_job_idx ON allocations (job_id, attempt);
