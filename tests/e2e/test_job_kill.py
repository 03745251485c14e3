"""Cancel and max_runtime kill every rank process of a job, children
included (issue 2, must-show 3)."""

import unittest
import uuid

from cluster import Cluster, processes_with_env, wait_for

# Each rank leaves a grandchild in its process group, and ignores SIGTERM
# on one rank, so only a group-wide SIGKILL after the grace period ends it.
STUBBORN = ('sleep 600 & if [ "$RANK" = 0 ]; then trap "" TERM; fi; '
            'sleep 600; wait')


class JobKillTest(unittest.TestCase):
    def run_and_count(self, c, mark, *extra):
        job = c.submit("--nodes", "2", "--gpus", "2", "--env", f"TUPA_E2E_MARK={mark}",
                       *extra, "--", "sh", "-c", STUBBORN)
        c.wait_job(job["id"], "RUNNING", timeout=60)
        procs = wait_for(lambda: len(processes_with_env("TUPA_E2E_MARK", mark)) >= 8,
                         timeout=20, message="4 ranks and their children running")
        self.assertTrue(procs)
        return job

    def test_cancel_kills_every_rank_process(self):
        with Cluster(workers=2, gpus_per_worker=2) as c:
            mark = uuid.uuid4().hex
            job = self.run_and_count(c, mark)
            res = c.cli("cancel", str(job["id"]))
            self.assertEqual(res.code, 0, res)
            c.wait_job(job["id"], "CANCELLED", timeout=30)
            wait_for(lambda: not processes_with_env("TUPA_E2E_MARK", mark, with_shims=True), timeout=30,
                     message="no rank process left")
            # Cancelling again is refused, naming the state.
            again = c.cli("cancel", str(job["id"]))
            self.assertEqual(again.code, 1, again)
            # The devices are free again: a new 2x2 job runs.
            nxt = c.submit("--nodes", "2", "--gpus", "2", "--", "true")
            c.wait_job(nxt["id"], "SUCCEEDED", timeout=60)

    def test_max_runtime_kills_every_rank_process(self):
        with Cluster(workers=2, gpus_per_worker=2) as c:
            mark = uuid.uuid4().hex
            job = self.run_and_count(c, mark, "--max-runtime", "10s")
            done = c.wait_job(job["id"], "FAILED", timeout=60)
            self.assertIn("max_runtime exceeded", done.get("message", ""), done)
            wait_for(lambda: not processes_with_env("TUPA_E2E_MARK", mark, with_shims=True), timeout=30,
                     message="no rank process left")


if __name__ == "__main__":
    unittest.main()
