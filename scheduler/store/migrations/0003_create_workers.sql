-- Workers that ever registered; devices as the protobuf JSON of tupa.v1.Device.
CREATE TABLE workers (
  id             TEXT PRIMARY KEY,
  region         TEXT NOT NULL DEFAULT '',
  instance_id    TEXT NOT NULL DEFAULT '',
  labels         JSONB NOT NULL DEFAULT '{}',
  devices        JSONB NOT NULL DEFAULT '[]',
  cpu            DOUBLE PRECISION NOT NULL DEFAULT 0,
  memory_bytes   BIGINT NOT NULL DEFAULT 0,
  address        TEXT NOT NULL DEFAULT '',
  state          TEXT NOT NULL,
  first_seen     TIMESTAMPTZ NOT NULL DEFAULT now(),
  last_seen      TIMESTAMPTZ NOT NULL DEFAULT now(),
  CONSTRAINT workers_state_valid CHECK (state IN ('UP', 'DRAINING', 'LOST', 'OFFLINE'))
);
