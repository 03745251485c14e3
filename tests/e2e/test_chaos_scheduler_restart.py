"""Chaos (d): kill -9 the scheduler while jobs run; after the restart the
running jobs are re-adopted, not restarted (issue 7, must-show 3d).

Same attempt (1), the very same rank processes before and after, the jobs
succeed, and their logs continue: every tick a rank printed, including
those printed while the scheduler was down, reaches `tupa logs` once and in
order.
"""

import subprocess
import time
import unittest
import uuid

from cluster import Cluster, processes_with_env, wait_for

TICKS = 15


def rank_pids(mark):
    """The job's long-lived processes (the shell of each rank), without the
    `sleep 1` each tick forks."""
    pids = []
    for pid in processes_with_env("TUPA_E2E_MARK", mark):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "sleep":
                    continue
        except OSError:
            continue
        pids.append(pid)
    return sorted(pids)


def psql(url, sql):
    out = subprocess.run(["psql", url, "-AtX", "-c", sql], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


class ChaosSchedulerRestartTest(unittest.TestCase):
    def test_running_jobs_are_readopted_after_scheduler_kill(self):
        with Cluster(workers=2, gpus_per_worker=2) as c:
            url = c.env["TUPA_DATABASE_URL"]
            marks, jobs = [], []
            cmd = (f'for i in $(seq 1 {TICKS}); do echo "tick $i attempt $TUPA_ATTEMPT"; '
                   'sleep 1; done')
            # Three jobs: one 2-GPU job (two ranks) and two 1-GPU jobs.
            for gpus in ("2", "1", "1"):
                mark = uuid.uuid4().hex
                job = c.submit("--gpus", gpus, "--retries", "2",
                               "--env", f"TUPA_E2E_MARK={mark}", "--", "sh", "-c", cmd)
                marks.append(mark)
                jobs.append(int(job["id"]))
            for job_id in jobs:
                c.wait_job(job_id, "RUNNING", timeout=60)
            expected_ranks = [2, 1, 1]
            wait_for(lambda: all(len(rank_pids(m)) >= n
                                 for m, n in zip(marks, expected_ranks)),
                     20, message="every rank running")
            pids_before = [rank_pids(m) for m in marks]
            for pids, n in zip(pids_before, expected_ranks):
                self.assertEqual(len(pids), n, pids_before)
            placements_before = {j: c.get_job(j)["placements"] for j in jobs}
            # Kill right after a tick reached the scheduler, so the next one is
            # printed while it is down.
            wait_for(lambda: "tick 3 " in c.cli("logs", "--no-prefix", jobs[0]).stdout, 20,
                     interval=0.1, message="tick 3 in the logs")
            sched_pid = c.pid("scheduler")
            c.kill("scheduler")
            time.sleep(2.5)  # ranks keep printing; workers keep retrying
            for m, before in zip(marks, pids_before):
                self.assertEqual(rank_pids(m), before,
                                 "a rank died with the scheduler")
            c.up()
            self.assertNotEqual(c.pid("scheduler"), sched_pid)
            wait_for(lambda: sum(1 for w in c.workers_json() if w.get("running_jobs")) == 2,
                     30, message="both workers reconnected with their jobs")

            for job_id in jobs:
                j = c.get_job(job_id)
                self.assertEqual(j["attempt"], 1, j)
                self.assertIn(j["state"].replace("JOB_STATE_", ""), ("RUNNING",), j)
                self.assertEqual(j["placements"], placements_before[job_id])
            for m, before in zip(marks, pids_before):
                self.assertEqual(rank_pids(m), before,
                                 "ranks were restarted")

            for job_id in jobs:
                done = c.wait_job(job_id, "SUCCEEDED", timeout=60)
                self.assertEqual(done["attempt"], 1, done)
            for job_id, ranks in zip(jobs, expected_ranks):
                for rank in range(ranks):
                    out = c.cli("logs", "--no-prefix", "--rank", rank, job_id)
                    self.assertEqual(out.code, 0, out)
                    ticks = [l for l in out.stdout.splitlines() if l.startswith("tick ")]
                    self.assertEqual(ticks, [f"tick {i} attempt 1" for i in range(1, TICKS + 1)],
                                     f"job {job_id} rank {rank} logs")
                # Never requeued, never re-assigned: one allocation per node,
                # closed; one ASSIGNED event.
                self.assertEqual(psql(url, "SELECT count(*), count(ended_at), max(attempt) FROM "
                                           f"allocations WHERE job_id = {job_id}"), "1|1|1")
                self.assertEqual(psql(url, "SELECT count(*) FROM job_events WHERE "
                                           f"job_id = {job_id} AND state = 'ASSIGNED'"), "1")
            for m in marks:
                self.assertEqual(processes_with_env("TUPA_E2E_MARK", m), [])
            self.assertIn("rebuilt from PostgreSQL: 3 active jobs, 3 open allocations",
                          c.log("scheduler"))


if __name__ == "__main__":
    unittest.main()
