-- Job history: every state change of every job, the submission included.
-- From this migration on a submission writes no job_events row: the job row
-- itself (state PENDING, created_at) records it. The event row cost a sixth
-- of PostgreSQL's time per submitted job, most of it the foreign-key check
-- (docs/benchmarks.md, durable submissions). Read history from this view,
-- not from job_events. Jobs submitted before this migration keep their
-- stored 'submitted' event, and the view does not add a second one.
CREATE VIEW job_history AS
  SELECT job_id, attempt, state, message, at, id AS event_id
    FROM job_events
  UNION ALL
  SELECT j.id, 1, 'PENDING', 'submitted', j.created_at, NULL
    FROM jobs j
   WHERE NOT EXISTS (SELECT 1 FROM job_events e
                      WHERE e.job_id = j.id AND e.attempt = 1
                        AND e.state = 'PENDING' AND e.message = 'submitted');
