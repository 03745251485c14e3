"""kill -9 of a worker while its job runs: the job requeues as attempt 2 and
succeeds on the other worker; the killed worker, restarted, does not run
the old attempt (issue 2, must-show 4). The same with PostgreSQL down when
the worker's lease runs out. A gang whose surviving rank fails because its
peer's worker died is requeued too; a gang node failing on its own still
fails the job."""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import uuid

from cluster import Cluster, processes_with_env, wait_for


def start_blocking_job(c, mark):
    """A 2-GPU job whose attempt 1 blocks (later attempts finish at once),
    running: returns (job, the worker of its rank 0)."""
    cmd = ('echo attempt $TUPA_ATTEMPT rank $RANK; '
           'if [ "$TUPA_ATTEMPT" = 1 ]; then sleep 600; fi')
    job = c.submit("--gpus", "2", "--retries", "2",
                   "--env", f"TUPA_E2E_MARK={mark}", "--", "sh", "-c", cmd)
    running = c.wait_job(job["id"], "RUNNING", timeout=60)
    wait_for(lambda: len(processes_with_env("TUPA_E2E_MARK", mark)) >= 2,
             timeout=20, message="ranks of attempt 1")
    return job, running["placements"][0]["worker_id"]


class WorkerLossTest(unittest.TestCase):
    def test_lost_worker_requeues_job_and_restarted_worker_is_fenced(self):
        with Cluster(workers=2, gpus_per_worker=2, worker_timeout="3s") as c:
            mark = uuid.uuid4().hex
            job, victim = start_blocking_job(c, mark)
            c.kill(victim)
            # The ranks die with their worker (no orphans keep the devices).
            wait_for(lambda: not processes_with_env("TUPA_E2E_MARK", mark, with_shims=True), timeout=10,
                     message="attempt 1 ranks gone with the worker")
            done = c.wait_job(job["id"], "SUCCEEDED", timeout=60)
            self.assertEqual(done["attempt"], 2, done)
            survivors = {p["worker_id"] for p in done["placements"]}
            self.assertNotIn(victim, survivors)
            self.assertIn("lost", done.get("message", "") + self._events(c, job["id"]))

            # Restart the killed worker: it must not run attempt 1 again.
            before = len(c.log(victim))
            c.up()
            wait_for(lambda: any(w["id"] == victim and w["state"].endswith("UP")
                                 for w in c.workers_json()),
                     timeout=30, message=f"{victim} back")
            time.sleep(2)
            self.assertEqual(processes_with_env("TUPA_E2E_MARK", mark, with_shims=True), [])
            log = c.log(victim)
            since_restart = log[before:] if len(log) >= before else log
            self.assertIn("connected to scheduler", since_restart)
            self.assertNotIn(f"starting job {job['id']} attempt", since_restart,
                             "the old attempt started again:\n" + since_restart[-3000:])
            victim_view = [w for w in c.workers_json() if w["id"] == victim][0]
            self.assertFalse(victim_view.get("running_jobs"), victim_view)

    def test_requeue_waits_for_the_database_then_runs(self):
        # The worker is lost while PostgreSQL is down: the requeue is
        # recorded when the database returns, with no scheduler restart.
        with Cluster(workers=2, gpus_per_worker=2, worker_timeout="3s") as c:
            job, victim = start_blocking_job(c, uuid.uuid4().hex)
            c.kill("postgres")
            c.kill(victim)
            # The lease (3 s) runs out with the database still down.
            deferred = f"the requeue of job {job['id']} attempt 1"
            wait_for(lambda: deferred in c.log("scheduler"), timeout=30,
                     message="the requeue deferred while the database is down")
            c.up()  # PostgreSQL and the victim come back
            done = c.wait_job(job["id"], "SUCCEEDED", timeout=90)
            self.assertEqual(done["attempt"], 2, done)
            self.assertIn(f"recorded {deferred}", c.log("scheduler"))

    def test_gang_rank_that_fails_because_its_peer_died_requeues_the_job(self):
        # Node 0's rank stands in for a collective: it exits 1 as soon as
        # node 1's rank is gone, which happens when node 1's worker is
        # killed, well before that worker's lease runs out. The job must be
        # requeued (a lost worker), not failed with node 0's exit code.
        with Cluster(workers=3, gpus_per_worker=1, worker_timeout="3s") as c:
            pids = tempfile.mkdtemp(prefix="tupa-e2e-gang-")
            self.addCleanup(shutil.rmtree, pids, True)
            cmd = ('echo attempt $TUPA_ATTEMPT node $NODE_RANK; '
                   '[ "$TUPA_ATTEMPT" = 1 ] || exit 0; '
                   'if [ "$NODE_RANK" = 1 ]; then echo $$ > $PIDS/peer; exec sleep 600; fi; '
                   'while [ ! -s $PIDS/peer ]; do sleep 0.1; done; '
                   'while kill -0 $(cat $PIDS/peer) 2>/dev/null; do sleep 0.1; done; '
                   'echo "peer rank gone: collective failed" >&2; exit 1')
            job = c.submit("--nodes", "2", "--gpus", "1", "--retries", "2",
                           "--env", f"PIDS={pids}", "--", "sh", "-c", cmd)
            running = c.wait_job(job["id"], "RUNNING", timeout=60)
            wait_for(lambda: os.path.exists(os.path.join(pids, "peer")), timeout=20,
                     message="node 1's rank")
            victim = [p["worker_id"] for p in running["placements"]
                      if p.get("node_rank", 0) == 1][0]
            c.kill(victim)
            done = c.wait_job(job["id"], "SUCCEEDED", timeout=60)
            self.assertEqual(done["attempt"], 2, done)
            self.assertNotIn(victim, {p["worker_id"] for p in done["placements"]})
            self.assertIn(f"worker {victim} lost", self._events(c, job["id"]))

    def test_gang_node_failure_with_healthy_peers_fails_the_job(self):
        # The grace above must not turn a real failure into a retry.
        with Cluster(workers=2, gpus_per_worker=1) as c:
            job = c.submit("--nodes", "2", "--gpus", "1", "--retries", "2", "--",
                           "sh", "-c", 'if [ "$NODE_RANK" = 0 ]; then exit 5; fi; sleep 60')
            done = c.wait_job(job["id"], "FAILED", timeout=60)
            self.assertEqual(done.get("exit_code"), 5, done)
            self.assertEqual(done["attempt"], 1, done)

    def test_gang_requeue_while_the_database_is_down_runs_again(self):
        # A gang loses a worker while PostgreSQL is down: the requeue waits
        # for the database, and the cancelled peer's exit (143) must not
        # fail the old attempt meanwhile (that left the job PENDING in the
        # database, forgotten by the scheduler, and impossible to cancel).
        with Cluster(workers=3, gpus_per_worker=1, worker_timeout="3s") as c:
            cmd = ('[ "$TUPA_ATTEMPT" = 1 ] || exit 0; exec sleep 600')
            job = c.submit("--nodes", "2", "--gpus", "1", "--retries", "2",
                           "--", "sh", "-c", cmd)
            running = c.wait_job(job["id"], "RUNNING", timeout=60)
            victim = [p["worker_id"] for p in running["placements"]
                      if p.get("node_rank", 0) == 1][0]
            c.kill("postgres")
            c.kill(victim)
            deferred = f"the requeue of job {job['id']} attempt 1"
            wait_for(lambda: deferred in c.log("scheduler"), timeout=30,
                     message="the requeue deferred while the database is down")
            time.sleep(5)  # the peer's cancelled rank exits meanwhile
            c.up()  # PostgreSQL and the victim come back
            done = c.wait_job(job["id"], "SUCCEEDED", timeout=90)
            self.assertEqual(done["attempt"], 2, done)

    def test_a_job_that_starts_while_the_database_is_down_becomes_running(self):
        # Its RUNNING status arrives while PostgreSQL is down: the write is
        # retried, not dropped (the job used to stay ASSIGNED for its run).
        with Cluster(workers=1, gpus_per_worker=1, worker_timeout="15s") as c:
            worker = c.pid("worker-1")
            os.kill(worker, signal.SIGSTOP)
            try:
                job = c.submit("--gpus", "1", "--", "sleep", "600")
                time.sleep(1)  # placed and sent; the worker reads it later
                c.kill("postgres")
            finally:
                os.kill(worker, signal.SIGCONT)
            wait_for(lambda: f"starting job {job['id']} attempt 1" in c.log("worker-1"),
                     timeout=20, message="the job to start")
            time.sleep(2)
            c.up()  # PostgreSQL comes back
            running = c.wait_job(job["id"], "RUNNING", timeout=30)
            self.assertTrue(running.get("started_at"), running)
            url = c.env["TUPA_DATABASE_URL"]
            wait_for(lambda: subprocess.run(
                ["psql", url, "-Atc", f"SELECT state FROM jobs WHERE id = {job['id']}"],
                capture_output=True, text=True).stdout.strip() == "RUNNING",
                timeout=20, message="RUNNING in PostgreSQL")

    def test_a_drained_worker_stays_drained_after_being_lost(self):
        with Cluster(workers=2, gpus_per_worker=1, worker_timeout="3s") as c:
            drained = c.cli("drain", "worker-2")
            self.assertEqual(drained.code, 0, drained)
            c.kill("worker-2")
            wait_for(lambda: any(w["id"] == "worker-2" and w["state"].endswith("LOST")
                                 for w in c.cli_json("workers", "--all")["workers"]),
                     timeout=30, message="worker-2 lost")
            c.up()
            wait_for(lambda: any(w["id"] == "worker-2" and w["state"].endswith("DRAINING")
                                 for w in c.workers_json()),
                     timeout=30, message="worker-2 back, still draining")
            # Work goes to worker-1 only.
            jobs = [c.submit("--gpus", "1", "--", "true") for _ in range(3)]
            for j in jobs:
                done = c.wait_job(j["id"], "SUCCEEDED", timeout=60)
                self.assertEqual(done["placements"][0]["worker_id"], "worker-1", done)

    def test_a_drain_survives_a_scheduler_restart_and_then_a_loss(self):
        # The restarted scheduler reads the drain from PostgreSQL, where the
        # loss that follows overwrites the state (DRAINING -> LOST).
        with Cluster(workers=2, gpus_per_worker=1, worker_timeout="3s") as c:
            drained = c.cli("drain", "worker-2")
            self.assertEqual(drained.code, 0, drained)
            c.kill("scheduler")
            c.up()
            c.kill("worker-2")
            wait_for(lambda: any(w["id"] == "worker-2" and w["state"].endswith("LOST")
                                 for w in c.cli_json("workers", "--all")["workers"]),
                     timeout=30, message="worker-2 lost")
            c.kill("scheduler")
            c.up()
            wait_for(lambda: any(w["id"] == "worker-2" and w["state"].endswith("DRAINING")
                                 for w in c.workers_json()),
                     timeout=30, message="worker-2 back, still draining")
            # Until the operator undoes it: then it takes work again.
            undone = c.cli("drain", "--undo", "worker-2")
            self.assertEqual(undone.code, 0, undone)
            self.assertIn("worker-2 UP", undone.stdout)
            c.kill("worker-1")
            job = c.submit("--gpus", "1", "--", "true")
            done = c.wait_job(job["id"], "SUCCEEDED", timeout=60)
            self.assertEqual(done["placements"][0]["worker_id"], "worker-2", done)

    def _events(self, c, job_id):
        import subprocess
        url = c.env["TUPA_DATABASE_URL"]
        out = subprocess.run(["psql", url, "-Atc",
                              f"SELECT string_agg(message, ';' ORDER BY at, event_id) FROM job_history WHERE job_id = {job_id}"],
                             capture_output=True, text=True)
        return out.stdout


if __name__ == "__main__":
    unittest.main()
