-- Job state changes as heap-only (HOT) updates. A job's row was rewritten
-- with a new entry in every index of `jobs` at each of its state changes,
-- because `state` was a key of jobs_active_idx: PostgreSQL can keep an
-- update on the heap page (no index entry) only when it changes no indexed
-- column. The scheduler's rebuild reads the active jobs through an index on
-- the jobs not yet finished instead, keyed by `finished_at`, which only
-- the final change sets; PENDING -> ASSIGNED -> RUNNING now touch no index.
-- A fill factor leaves room on each page for those new row versions.
--
-- The job_events foreign key goes too: its check cost an index probe and a
-- row lock on `jobs` for every event row (three a job). Events are written
-- only in the transaction that changes the job, by the scheduler, and job
-- rows are never deleted by it; an operator who deletes jobs by hand
-- deletes their job_events and allocations first.
ALTER TABLE job_events DROP CONSTRAINT IF EXISTS job_events_job_id_fkey;
ALTER TABLE jobs SET (fillfactor = 70);
-- Every path to a final state sets finished_at; rows that somehow lack it
-- must not count as active.
UPDATE jobs SET finished_at = updated_at
 WHERE finished_at IS NULL AND state NOT IN ('PENDING', 'ASSIGNED', 'RUNNING');
CREATE INDEX jobs_unfinished_idx ON jobs (id) WHERE finished_at IS NULL;
DROP INDEX jobs_active_idx;
