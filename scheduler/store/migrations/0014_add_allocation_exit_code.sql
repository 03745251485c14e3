-- How a node's processes ended, written when its worker reports the node
-- EXITED (NULL while open, and for nodes closed because their worker was
-- lost or the attempt was superseded). A scheduler that restarts rebuilds
-- from it which nodes of a running gang already succeeded or failed:
-- without it a job whose node ended just before the restart could wait
-- forever for a success count that started again at zero.
ALTER TABLE allocations ADD COLUMN exit_code INT;
