"""Chaos (d): kill -9 the scheduler while jobs run; after the restart the
running jobs are re-adopted, not restarted (issue 7, must-show 3d).

Same attempt (1), the very same rank processes before and after, the jobs
succeed, and their logs continue: every tick a rank printed, including
those printed while the scheduler was down, reaches `tupa logs` once and in
order. A job that ends while the scheduler is down is reported by its
worker after the restart and succeeds too (not requeued).

A scheduler that hangs and is then killed never reads what its workers
wrote last: an EXITED status sent into its socket must be sent again to
the restarted scheduler, or a job that succeeded runs a second time.

Nodes of a gang that ended before the restart still count after it: their
exit codes are in PostgreSQL (allocations.exit_code).
"""

import os
import signal
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
            # Done before the kill: it is no longer active, but it is still
            # part of the tupa request mix the restarted scheduler reads back.
            quick = c.submit("--gpus", "0.5", "--", "true")
            c.wait_job(quick["id"], "SUCCEEDED", timeout=60)
            cmd = (f'for i in $(seq 1 {TICKS}); do echo "tick $i attempt $TUPA_ATTEMPT"; '
                   'sleep 1; done')
            # Three jobs: one 2-GPU job (two ranks), a 1-GPU and a half-GPU job.
            for gpus in ("2", "1", "0.5"):
                mark = uuid.uuid4().hex
                job = c.submit("--gpus", gpus, "--retries", "2",
                               "--env", f"TUPA_E2E_MARK={mark}", "--", "sh", "-c", cmd)
                marks.append(mark)
                jobs.append(int(job["id"]))
            for job_id in jobs:
                c.wait_job(job_id, "RUNNING", timeout=60)
            # Ends while the scheduler is down: it waits for a flag file.
            flag = os.path.join(c.home, "scheduler-down")
            ender = c.submit("--gpus", "0.5", "--retries", "2", "--", "sh", "-c",
                             f'while [ ! -e {flag} ]; do sleep 0.1; done; echo "ended"')
            c.wait_job(ender["id"], "RUNNING", timeout=60)
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
            with open(flag, "w"):
                pass
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
                self.assertEqual(psql(url, "SELECT count(*) FROM job_history WHERE "
                                           f"job_id = {job_id} AND state = 'ASSIGNED'"), "1")
            ended = c.wait_job(ender["id"], "SUCCEEDED", timeout=30)
            self.assertEqual(ended["attempt"], 1, ended)
            self.assertIn("ended", c.cli("logs", "--no-prefix", ender["id"]).stdout)
            for m in marks:
                self.assertEqual(processes_with_env("TUPA_E2E_MARK", m, with_shims=True), [])
            self.assertIn("rebuilt from PostgreSQL: 4 active jobs, 4 open allocations",
                          c.log("scheduler"))
            self.assertIn("request mix of the last 5 submitted jobs", c.log("scheduler"))

    def test_exit_written_to_a_hung_scheduler_is_not_lost(self):
        with Cluster(workers=1, gpus_per_worker=2) as c:
            flag = os.path.join(c.home, "go")
            job = c.submit("--gpus", "1", "--retries", "2", "--", "sh", "-c",
                           f'while [ ! -e {flag} ]; do sleep 0.1; done; '
                           'echo "attempt $TUPA_ATTEMPT done"')
            job_id = int(job["id"])
            c.wait_job(job_id, "RUNNING", timeout=30)
            sched = c.pid("scheduler")
            os.kill(sched, signal.SIGSTOP)  # hung: accepts bytes, reads none
            try:
                with open(flag, "w"):
                    pass
                # The worker writes the EXITED status into the hung
                # scheduler's socket (and its heartbeats after it).
                wait_for(lambda: f"job {job_id} attempt 1 node 0 exited 0" in c.log("worker-1"),
                         15, message="the node to exit")
                time.sleep(1.5)
            finally:
                c.kill("scheduler")  # SIGKILL ends a stopped process too
            c.up()
            done = c.wait_job(job_id, "SUCCEEDED", timeout=30)
            self.assertEqual(done["attempt"], 1,
                             f"the job ran again after it had succeeded: {done}")
            self.assertNotIn("starting job %d attempt 2" % job_id, c.log("worker-1"))
            url = c.env["TUPA_DATABASE_URL"]
            self.assertEqual(psql(url, "SELECT count(*), count(ended_at) FROM allocations "
                                       f"WHERE job_id = {job_id}"), "1|1")

    def test_output_printed_while_the_scheduler_is_down_arrives_whole(self):
        # 20,000 lines (~200 KiB, far more than the 64 KiB a new stream
        # resends first) printed while the scheduler is down: after the
        # restart `tupa logs` has each once, in order, with no hole.
        with Cluster(workers=1, gpus_per_worker=1) as c:
            go, end = os.path.join(c.home, "go"), os.path.join(c.home, "end")
            cmd = (f'echo started; while [ ! -e {go} ]; do sleep 0.1; done; '
                   f'seq -f "line %g" 1 20000; '
                   f'while [ ! -e {end} ]; do sleep 0.1; done')
            job = c.submit("--gpus", "1", "--", "sh", "-c", cmd)
            job_id = int(job["id"])
            c.wait_job(job_id, "RUNNING", timeout=30)
            wait_for(lambda: "started" in c.cli("logs", str(job_id)).stdout, 15,
                     message="the first line")
            c.kill("scheduler")
            with open(go, "w"):
                pass
            time.sleep(2)  # printed and queued by the worker meanwhile
            c.up()
            with open(end, "w"):
                pass
            c.wait_job(job_id, "SUCCEEDED", timeout=60)
            out = c.cli("logs", "--no-prefix", str(job_id)).stdout
            expected = "started\n" + "".join(f"line {i}\n" for i in range(1, 20001))
            self.assertEqual(len(out), len(expected))
            self.assertEqual(out, expected)

    def test_gang_nodes_that_ended_before_a_restart_still_count(self):
        # Node 0 succeeds and node 1 fails before the scheduler is killed;
        # node 2 succeeds after the restart. The restarted scheduler must
        # know how nodes 0 and 1 ended (allocations.exit_code): the job
        # fails with node 1's code. Counting from zero it would wait forever.
        with Cluster(workers=3, gpus_per_worker=1) as c:
            flag = os.path.join(c.home, "go")
            cmd = (f'case $NODE_RANK in 0) exit 0;; 1) exit 4;; esac; '
                   f'while [ ! -e {flag} ]; do sleep 0.1; done')
            job = c.submit("--nodes", "3", "--gpus", "1", "--", "sh", "-c", cmd)
            job_id = int(job["id"])
            url = c.env["TUPA_DATABASE_URL"]
            wait_for(lambda: psql(url, "SELECT count(exit_code) FROM allocations "
                                       f"WHERE job_id = {job_id}") == "2",
                     30, message="nodes 0 and 1 to end")
            c.kill("scheduler")  # within the gang-failure grace of node 1
            with open(flag, "w"):
                pass
            c.up()
            done = c.wait_job(job_id, "FAILED", timeout=60)
            self.assertEqual(done.get("exit_code"), 4, done)
            self.assertEqual(done["attempt"], 1, done)

    def test_a_gang_whose_nodes_all_succeeded_around_a_restart_succeeds(self):
        with Cluster(workers=2, gpus_per_worker=1) as c:
            flag = os.path.join(c.home, "go")
            cmd = (f'[ "$NODE_RANK" = 0 ] && exit 0; '
                   f'while [ ! -e {flag} ]; do sleep 0.1; done')
            job = c.submit("--nodes", "2", "--gpus", "1", "--", "sh", "-c", cmd)
            job_id = int(job["id"])
            url = c.env["TUPA_DATABASE_URL"]
            wait_for(lambda: psql(url, "SELECT count(exit_code) FROM allocations "
                                       f"WHERE job_id = {job_id}") == "1",
                     30, message="node 0 to end")
            c.kill("scheduler")
            c.up()
            with open(flag, "w"):
                pass
            done = c.wait_job(job_id, "SUCCEEDED", timeout=60)
            self.assertEqual(done["attempt"], 1, done)


    def test_an_exit_recorded_only_in_memory_is_not_acked(self):
        # The node ends while PostgreSQL is down, so its end waits in the
        # scheduler's memory; then the scheduler dies. The worker must not
        # have been told the exit was recorded: it reports it again to the
        # restarted scheduler, and the job succeeds once, at attempt 1.
        with Cluster(workers=1, gpus_per_worker=1) as c:
            flag, runs = os.path.join(c.home, "go"), os.path.join(c.home, "runs")
            job = c.submit("--gpus", "1", "--retries", "1", "--", "sh", "-c",
                           f'echo run >> {runs}; '
                           f'while [ ! -e {flag} ]; do sleep 0.1; done')
            job_id = int(job["id"])
            c.wait_job(job_id, "RUNNING", timeout=30)
            c.kill("postgres")
            with open(flag, "w"):
                pass
            wait_for(lambda: f"the allocation of job {job_id} attempt 1 node 0 will be "
                             "recorded" in c.log("scheduler"),
                     15, message="the node's end to be deferred")
            c.kill("scheduler")
            c.up()
            done = c.wait_job(job_id, "SUCCEEDED", timeout=60)
            self.assertEqual(done["attempt"], 1, done)
            with open(runs) as f:
                self.assertEqual(f.read(), "run\n", "the job ran again")
            url = c.env["TUPA_DATABASE_URL"]
            self.assertEqual(psql(url, "SELECT count(*), count(ended_at), min(exit_code) "
                                       f"FROM allocations WHERE job_id = {job_id}"),
                             "1|1|0")

    def test_jobs_on_a_worker_stored_lost_are_requeued_after_a_restart(self):
        # The scheduler wrote a worker LOST, then died before it requeued
        # the worker's job (the state is written by hand here). After the
        # restart the worker does not come back: its allocation must not
        # stay open, nor the job RUNNING, forever.
        with Cluster(workers=2, gpus_per_worker=1) as c:
            jobs = [int(c.submit("--gpus", "1", "--retries", "1", "--",
                                 "sleep", "300")["id"]) for _ in range(2)]
            for job_id in jobs:
                c.wait_job(job_id, "RUNNING", timeout=30)
            url = c.env["TUPA_DATABASE_URL"]
            job_id = int(psql(url, "SELECT job_id FROM allocations "
                                   "WHERE worker_id = 'worker-2' AND ended_at IS NULL"))
            c.kill("scheduler")
            c.kill("worker-2")
            psql(url, "UPDATE workers SET state = 'LOST' WHERE id = 'worker-2'")
            c.up("--workers", "1")  # the scheduler again, not worker-2
            wait_for(lambda: c.get_job(job_id)["attempt"] == 2, 90,
                     message="the job on the lost worker to be requeued")
            self.assertEqual(psql(url, "SELECT count(*) FROM allocations "
                                       f"WHERE job_id = {job_id} AND attempt = 1 "
                                       "AND ended_at IS NULL"), "0")


    def test_a_stale_node_holds_its_device_after_a_restart(self):
        # The job moved on to attempt 2 in PostgreSQL, but attempt 1's rank
        # still runs (it ignores SIGTERM, so it holds the GPU for the whole
        # kill grace). After the restart the scheduler cancels it, and must
        # not start attempt 2 on the same device before it is gone.
        with Cluster(workers=1, gpus_per_worker=1) as c:
            job = c.submit("--gpus", "1", "--retries", "2", "--", "sh", "-c",
                           "trap '' TERM; while true; do sleep 0.2; done")
            job_id = int(job["id"])
            c.wait_job(job_id, "RUNNING", timeout=30)
            url = c.env["TUPA_DATABASE_URL"]
            c.kill("scheduler")
            psql(url, f"UPDATE jobs SET attempt = 2, state = 'PENDING' WHERE id = {job_id}")
            c.up()
            log = lambda: c.log("worker-1")
            started = f"starting job {job_id} attempt 2"
            wait_for(lambda: started in log(), 60, message="attempt 2 to start")
            exited = f"job {job_id} attempt 1 node 0 exited"
            self.assertIn(exited, log())
            self.assertLess(log().index(exited), log().index(started),
                            "attempt 2 started while attempt 1 still held the device")


    def test_an_assignment_committed_in_doubt_does_not_strand_the_job(self):
        # PostgreSQL holds the attempt ASSIGNED with an open allocation that
        # the scheduler never learned of (its commit reported a failure):
        # written by hand here while the job waits for a worker. Every
        # later assignment of the attempt is refused; the job must move on
        # to its next attempt and run, not stay PENDING forever.
        with Cluster(workers=1, gpus_per_worker=1) as c:
            c.kill("worker-1")
            job = c.submit("--gpus", "1", "--retries", "1", "--", "true")
            job_id = int(job["id"])
            url = c.env["TUPA_DATABASE_URL"]
            psql(url, f"UPDATE jobs SET state = 'ASSIGNED' WHERE id = {job_id}; "
                      "INSERT INTO allocations (job_id, attempt, worker_id, node_rank, "
                      f"device_indexes) VALUES ({job_id}, 1, 'worker-1', 0, '{{0}}')")
            c.up()  # worker-1 again: the job is placed, and refused
            done = c.wait_job(job_id, "SUCCEEDED", timeout=60)
            self.assertEqual(done["attempt"], 2, done)
            self.assertEqual(psql(url, "SELECT count(*) FROM allocations WHERE "
                                       f"job_id = {job_id} AND ended_at IS NULL"), "0")


if __name__ == "__main__":
    unittest.main()
