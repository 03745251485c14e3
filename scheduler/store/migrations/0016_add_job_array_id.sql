-- Job arrays (DESIGN §4): the array a task belongs to. An array's id is
-- drawn from jobs_id_seq, so it never equals a job's id; the rest of the
-- array (its index, %N limit, expression) is in each task's spec_proto.
ALTER TABLE jobs ADD COLUMN array_id BIGINT;
CREATE INDEX jobs_array_id ON jobs (array_id) WHERE array_id IS NOT NULL;
