-- Job specs as a serialized tupa.v1.JobSpec (protobuf) in spec_proto: the
-- protobuf JSON mapping cost ~10% of the scheduler's CPU per submitted job
-- (docs/benchmarks.md, durable submissions). Rows written before this keep
-- their JSON spec; readers take spec_proto when it is set, spec otherwise.
ALTER TABLE jobs ADD COLUMN spec_proto BYTEA;
ALTER TABLE jobs ALTER COLUMN spec DROP NOT NULL;
ALTER TABLE jobs ADD CONSTRAINT jobs_spec_present
  CHECK (spec IS NOT NULL OR spec_proto IS NOT NULL);
