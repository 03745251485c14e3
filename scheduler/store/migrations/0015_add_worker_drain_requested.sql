-- An operator's `tupa drain`: the worker takes no new jobs until
-- `tupa drain --undo`. Kept apart from `state`, which a loss (LOST) or an idle stop
-- (OFFLINE) overwrites: a scheduler that restarts while a drained worker
-- is lost must not make it schedulable again when it reconnects.
ALTER TABLE workers ADD COLUMN drain_requested BOOLEAN NOT NULL DEFAULT false;
UPDATE workers SET drain_requested = true WHERE state = 'DRAINING';
