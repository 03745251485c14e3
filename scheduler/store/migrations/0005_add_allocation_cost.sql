-- Cost of each allocation, computed by the scheduler from the price
-- catalog when the allocation ends (exact decimal, never float), and what
-- it was priced as.
ALTER TABLE allocations
  ADD COLUMN region TEXT NOT NULL DEFAULT '',
  ADD COLUMN gpu_type TEXT NOT NULL DEFAULT '',
  ADD COLUMN gpus DOUBLE PRECISION NOT NULL DEFAULT 0,
  ADD COLUMN cost NUMERIC,
  ADD COLUMN currency TEXT;
CREATE INDEX allocations_started_idx ON allocations (started_at);
