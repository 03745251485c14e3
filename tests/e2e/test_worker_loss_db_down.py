"""A worker is lost while PostgreSQL is down: the requeue is recorded when
the database returns and the job runs again, with no scheduler restart.
(Before, the job stayed RUNNING in the scheduler's view until a restart.)"""

import unittest
import uuid

from cluster import Cluster, processes_with_env, wait_for


class WorkerLossDbDownTest(unittest.TestCase):
    def test_requeue_waits_for_the_database_then_runs(self):
        with Cluster(workers=2, gpus_per_worker=2, worker_timeout="3s") as c:
            mark = uuid.uuid4().hex
            cmd = ('echo attempt $TUPA_ATTEMPT; '
                   'if [ "$TUPA_ATTEMPT" = 1 ]; then sleep 600; fi')
            job = c.submit("--gpus", "2", "--retries", "2",
                           "--env", f"TUPA_E2E_MARK={mark}", "--", "sh", "-c", cmd)
            running = c.wait_job(job["id"], "RUNNING", timeout=60)
            victim = running["placements"][0]["worker_id"]
            wait_for(lambda: len(processes_with_env("TUPA_E2E_MARK", mark)) >= 2,
                     timeout=20, message="ranks of attempt 1")
            c.kill("postgres")
            c.kill(victim)
            # The lease (3 s) runs out with the database still down.
            wait_for(lambda: f"the requeue of job {job['id']} attempt 1"
                     in c.log("scheduler"), timeout=30,
                     message="the requeue deferred while the database is down")
            c.up()  # PostgreSQL and the victim come back
            done = c.wait_job(job["id"], "SUCCEEDED", timeout=90)
            self.assertEqual(done["attempt"], 2, done)
            self.assertIn(f"recorded the requeue of job {job['id']} attempt 1",
                          c.log("scheduler"))


if __name__ == "__main__":
    unittest.main()
