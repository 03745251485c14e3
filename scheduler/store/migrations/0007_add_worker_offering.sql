-- The price catalog offering a worker runs as (on-demand, spot, ...).
ALTER TABLE workers ADD COLUMN offering TEXT NOT NULL DEFAULT '';
