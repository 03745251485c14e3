"""A partition between a running job's worker host and the scheduler host
(issue 17, must-show 2; DESIGN §5 "Fencing across a partition").

Lease (--worker-timeout) 6 s, kill grace 2 s, partition 20 s (longer than
lease + grace, which is what matters; a 60 s one only waits longer):
- the partitioned worker fences itself when its lease runs out (its rank
  is stopped), and the scheduler re-places the job on the other host only
  after lease + kill grace, so the rank lifetimes the test records (every
  50 ms, from /proc) of attempt 1 and attempt 2 never overlap;
- the job ends SUCCEEDED once (attempt 2);
- one allocation per attempt; attempt 1's ends at its fence (not when the
  partition heals) and its cost is for that span only;
- once healed, the worker reconnects and reports the fenced node.
"""

import sys
import time
import unittest
import uuid

from multihost_util import Lifetimes, write_pricing
from netns import Net, Stack, require_netns

LEASE_S, GRACE_S, PARTITION_S = 6, 2, 20


class MultiHostPartitionTest(unittest.TestCase):
    def setUp(self):
        require_netns(self)

    def test_partitioned_attempt_is_fenced_before_the_next_one_starts(self):
        with Net(["sched", "host1", "host2"]) as net:
            st = Stack(net, "sched", ["host1", "host2"], gpus_per_worker=1,
                       worker_timeout=f"{LEASE_S}s", kill_grace_s=GRACE_S)
            st.scheduler_flags = ["--config", write_pricing(st.home)]
            mark = uuid.uuid4().hex
            life = Lifetimes(mark).__enter__()
            self.addCleanup(life.__exit__)
            with st:
                st.wait_workers_up(2)
                cmd = ('echo attempt $TUPA_ATTEMPT on $(hostname); '
                       'if [ "$TUPA_ATTEMPT" = 1 ]; then exec sleep 600; else exec sleep 6; fi')
                job = st.submit("--gpus", "1", "--retries", "2", "--env",
                                f"TUPA_E2E_MARK={mark}", "--", "sh", "-c", cmd)
                job_id = int(job["id"])
                running = st.wait_job(job_id, "RUNNING", timeout=60)
                victim = running["placements"][0]["worker_id"]
                other = "host2" if victim == "host1" else "host1"
                deadline = time.monotonic() + 20
                while not life.running(1):
                    self.assertLess(time.monotonic(), deadline, "attempt 1's rank never ran")
                    time.sleep(0.1)

                cut_at = time.time()
                net.partition(victim, "sched")
                try:
                    deadline = time.monotonic() + PARTITION_S + 10
                    while not life.running(2):
                        self.assertLess(time.monotonic(), deadline, "attempt 2 never ran")
                        time.sleep(0.1)
                    # Still partitioned: attempt 1 must already be gone.
                    self.assertFalse(life.running(1, within=0.2), life.seen)
                    time.sleep(max(0.0, cut_at + PARTITION_S - time.time()))
                finally:
                    net.heal(victim, "sched")
                healed_at = time.time()

                done = st.wait_job(job_id, "SUCCEEDED", timeout=60)
                self.assertEqual(done["attempt"], 2, done)
                self.assertEqual({p["worker_id"] for p in done["placements"]}, {other})
                time.sleep(0.5)

                end1, start2 = life.seen[1][1], life.seen[2][0]
                sys.stderr.write(
                    f"partition at 0 s: attempt 1 gone at {end1 - cut_at:.2f} s, attempt 2 "
                    f"started at {start2 - cut_at:.2f} s, healed at {healed_at - cut_at:.2f} s\n")
                self.assertLess(end1, start2, f"attempts overlapped: {life.seen}")
                # The worker fenced itself one lease after it was last acked (the
                # last heartbeat ack came within a second of the cut).
                self.assertGreater(end1 - cut_at, LEASE_S - 1.5, life.seen)
                self.assertLess(end1 - cut_at, LEASE_S + GRACE_S + 1.0, life.seen)
                self.assertLess(end1, healed_at - 5)
                # The scheduler waited lease + grace since it last heard from it.
                self.assertGreater(start2 - cut_at, LEASE_S + GRACE_S - 1.5, life.seen)
                self.assertIn("fenced at", st.log(victim))

                events = st.psql(f"SELECT attempt, state FROM job_history WHERE job_id = {job_id} "
                                 "AND state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')")
                self.assertEqual(events, [["2", "SUCCEEDED"]])
                rows = st.psql("SELECT attempt, worker_id, extract(epoch FROM started_at), "
                               "extract(epoch FROM ended_at), cost FROM allocations "
                               f"WHERE job_id = {job_id} ORDER BY attempt")
                self.assertEqual([(r[0], r[1]) for r in rows], [("1", victim), ("2", other)], rows)
                started1, ended1, cost1 = float(rows[0][2]), float(rows[0][3]), float(rows[0][4])
                sys.stderr.write(f"attempt 1 allocation ended at {ended1 - cut_at:.2f} s, "
                                 f"cost {cost1} for {ended1 - started1:.2f} s\n")
                # Attempt 1 is billed to its fence, not to the heal.
                self.assertLess(abs(ended1 - end1), 2.0, f"ended {ended1}, rank gone {end1}")
                self.assertLess(ended1, float(rows[1][2]) + 0.5, rows)
                self.assertAlmostEqual(cost1, 0.001 * (ended1 - started1), delta=0.0015)

                # Healed: the worker is back and told the scheduler about its
                # fenced node (it is not running anything).
                back = st.wait_workers_up(2, timeout=60)
                self.assertFalse([w for w in back if w["id"] == victim and w.get("running_jobs")])


if __name__ == "__main__":
    unittest.main()
