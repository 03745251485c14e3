"""Chaos (b): SIGSTOP a worker past its lease, then SIGCONT it (issue 7,
must-show 3b).

- While it is frozen the scheduler declares it LOST and requeues its job as
  attempt 2, which runs on the other worker.
- The frozen worker's ranks keep running (they are not stopped with it);
  once it wakes and reconnects, it is told its attempt is stale and kills
  those ranks: no process of attempt 1 is left.
- No double accounting: attempt 1 has exactly one allocation row, closed
  once, at its fence (the lease after the worker was last heard from,
  before the requeue),
  and the late EXITED the woken worker reports for attempt 1 changes
  neither that row nor the job. Attempt 2 has its own row on the other
  worker. The frozen worker's uptime spans do not overlap.
"""

import os
import signal
import subprocess
import time
import unittest
import uuid

from cluster import Cluster, _alive, wait_for


def psql(url, sql):
    out = subprocess.run(["psql", url, "-AtX", "-F", "|", "-c", sql], capture_output=True,
                         text=True, check=True)
    return [line.split("|") for line in out.stdout.strip().splitlines() if line]


def ranks_of(mark, attempt, program=None):
    """Pids of live processes with TUPA_E2E_MARK=mark and TUPA_ATTEMPT=attempt
    (only those running `program` when it is given)."""
    want = {f"TUPA_E2E_MARK={mark}".encode(), f"TUPA_ATTEMPT={attempt}".encode()}
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = set(f.read().split(b"\0"))
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        if program is not None and os.path.basename(argv0) != program.encode():
            continue
        if want <= env and _alive(int(entry)):
            pids.append(int(entry))
    return pids


class ChaosSigstopTest(unittest.TestCase):
    def test_frozen_worker_is_fenced_and_billed_once(self):
        with Cluster(workers=2, gpus_per_worker=2, worker_timeout="3s") as c:
            url = c.env["TUPA_DATABASE_URL"]
            mark = uuid.uuid4().hex
            # Attempt 1 would run for ten minutes; attempt 2 takes 4 s.
            cmd = ('echo attempt $TUPA_ATTEMPT rank $RANK; '
                   'if [ "$TUPA_ATTEMPT" = 1 ]; then sleep 600; else sleep 4; fi')
            job = c.submit("--gpus", "2", "--retries", "2",
                           "--env", f"TUPA_E2E_MARK={mark}", "--", "sh", "-c", cmd)
            job_id = int(job["id"])
            running = c.wait_job(job_id, "RUNNING", timeout=60)
            victim = running["placements"][0]["worker_id"]
            # Each rank is a shell that forks `sleep 600` after its echo: once
            # both sleeps run, every process of attempt 1 exists (a count of
            # all marked processes could catch one rank's shell before its
            # sleep, and a later snapshot would then hold more).
            wait_for(lambda: len(ranks_of(mark, 1, program="sleep")) >= 2, 20,
                     message="ranks of attempt 1")
            stale = sorted(ranks_of(mark, 1))
            pid = c.pid(victim)
            self.assertIsNotNone(pid)

            stopped_at = time.time()
            os.kill(pid, signal.SIGSTOP)
            try:
                requeued = wait_for(
                    lambda: (lambda j: j if j["attempt"] >= 2 else None)(c.get_job(job_id)),
                    20, message="job requeued as attempt 2")
                # The lease (3 s) runs from the last heartbeat (every 1 s).
                self.assertGreaterEqual(time.time() - stopped_at, 2.0,
                                        "requeued before the 3 s lease ran out")
                self.assertIn("lost", requeued.get("message", ""), requeued)
                # Attempt 2 runs on the other worker while the victim sleeps.
                attempt2 = c.wait_job(job_id, "RUNNING", timeout=30)
                self.assertEqual(attempt2["attempt"], 2, attempt2)
                self.assertNotIn(victim, {p["worker_id"] for p in attempt2["placements"]})
                wait_for(lambda: len(ranks_of(mark, 2)) >= 2, 20, message="ranks of attempt 2")
                # Frozen with the worker: the stale ranks still run.
                self.assertEqual(sorted(ranks_of(mark, 1)), stale)
                lost_view = [w for w in c.cli_json("workers", "--all").get("workers", [])
                             if w["id"] == victim]
                self.assertTrue(lost_view and lost_view[0]["state"].endswith("LOST"), lost_view)
                before = psql(url, "SELECT id, ended_at, cost, worker_id FROM allocations "
                                   f"WHERE job_id = {job_id} AND attempt = 1")
            finally:
                os.kill(pid, signal.SIGCONT)
            continued_at = time.time()

            # The woken worker reconnects and kills its stale ranks.
            wait_for(lambda: not ranks_of(mark, 1), 20,
                     message="attempt 1 ranks killed after SIGCONT")
            self.assertTrue(_alive(pid), "the worker itself must survive")
            self.assertLess(time.time() - continued_at, 15)
            wait_for(lambda: "exited" in self._victim_log_tail(c, victim, job_id), 20,
                     message="the woken worker to report attempt 1 ended")
            done = c.wait_job(job_id, "SUCCEEDED", timeout=60)
            self.assertEqual(done["attempt"], 2, done)
            self.assertEqual(done.get("exit_code", 0), 0, done)
            time.sleep(1.0)  # let any late status of attempt 1 land

            # Attempt 1: one row, closed once, at its fence (before the job
            # was requeued, lease + kill grace after its last sign of life); the
            # woken worker's EXITED did not touch it.
            rows = psql(url, "SELECT id, ended_at, cost, worker_id FROM allocations "
                             f"WHERE job_id = {job_id} AND attempt = 1")
            self.assertEqual(len(rows), 1, rows)
            self.assertEqual(rows, before, "attempt 1's row changed after the worker woke up")
            self.assertEqual(rows[0][3], victim)
            self.assertNotEqual(rows[0][1], "", "attempt 1's allocation is still open")
            (ended, requeue_at, started), = psql(url, f"""
                SELECT extract(epoch FROM a.ended_at),
                       (SELECT extract(epoch FROM min(at)) FROM job_history
                         WHERE job_id = {job_id} AND attempt = 2 AND state = 'PENDING'),
                       extract(epoch FROM a.started_at)
                  FROM allocations a WHERE job_id = {job_id} AND attempt = 1""")
            ended, requeue_at, started = float(ended), float(requeue_at), float(started)
            self.assertLessEqual(ended, requeue_at, "attempt 1 billed past its requeue")
            # Billed to its fence (DESIGN §5): the lease (3 s) after it was
            # last heard from, within a heartbeat (1 s) of the SIGSTOP.
            self.assertLessEqual(abs(ended - (stopped_at + 3.0)), 1.5,
                                 f"attempt 1 closed at {ended}, stopped at {stopped_at}")
            self.assertGreater(ended, started)

            # Attempt 2: its own closed row on the other worker.
            rows2 = psql(url, "SELECT worker_id, ended_at FROM allocations "
                              f"WHERE job_id = {job_id} AND attempt = 2")
            self.assertEqual(len(rows2), 1, rows2)
            self.assertNotEqual(rows2[0][0], victim)
            self.assertNotEqual(rows2[0][1], "", "attempt 2's allocation is still open")
            self.assertEqual(psql(url, f"SELECT count(*) FROM allocations WHERE job_id = {job_id}"),
                             [["2"]])
            # One terminal event, for attempt 2: the stale exit ended nothing.
            events = psql(url, f"SELECT attempt, state FROM job_history WHERE job_id = {job_id} "
                               "AND state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')")
            self.assertEqual(events, [["2", "SUCCEEDED"]])
            # The woken worker's uptime spans do not overlap (not billed twice).
            spans = psql(url, "SELECT extract(epoch FROM started_at), "
                              "coalesce(extract(epoch FROM ended_at), 1e12) FROM worker_uptime "
                              f"WHERE worker_id = '{victim}' ORDER BY started_at")
            for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
                self.assertLessEqual(float(e1), float(s2), spans)
            # The scheduler holds nothing on the woken worker any more.
            view = [w for w in c.workers_json() if w["id"] == victim]
            self.assertTrue(view, "the woken worker did not come back")
            self.assertFalse(view[0].get("running_jobs"), view)
            self.assertFalse(view[0].get("gpus_allocated"), view)

    def _victim_log_tail(self, c, victim, job_id):
        log = c.log(victim)
        return log[log.rfind(f"job {job_id} attempt 1 node 0"):] if log else ""


if __name__ == "__main__":
    unittest.main()
