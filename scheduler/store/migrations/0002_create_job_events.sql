-- Job events: every state change, with the attempt it belongs to.
CREATE TABLE job_events (
  id        BIGSERIAL PRIMARY KEY,
  job_id    BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  attempt   INT NOT NULL,
  state     TEXT NOT NULL,
  message   TEXT NOT NULL DEFAULT '',
  at        TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX job_events_job_idx ON job_events (job_id, id);
