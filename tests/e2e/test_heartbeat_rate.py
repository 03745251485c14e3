"""Heartbeats paced to the fleet (issue 16): real tupa-worker processes
adopt the interval the scheduler sends on every HeartbeatAck, so that the
whole fleet stays within the scheduler's max_heartbeats_per_s; no worker
is lost at the slower beat, and jobs still run.

Three workers with max_heartbeats_per_s 1 must beat every 3 s (at the
default 1 s they would send 3 a second)."""

import os
import tempfile
import time
import unittest
import urllib.request

from cluster import Cluster, wait_for


def metric(c, name):
    """The value of an unlabelled series of the scheduler's /metrics."""
    with urllib.request.urlopen(c.env["TUPA_METRICS_URL"], timeout=10) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


class HeartbeatRateTest(unittest.TestCase):
    def test_fleet_beats_at_the_paced_interval(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("max_heartbeats_per_s: 1\n")
            config = f.name
        try:
            with Cluster(workers=3, gpus_per_worker=1, worker_timeout="15s",
                         scheduler_config=config) as c:
                wait_for(lambda: len(c.workers_json()) == 3, timeout=60,
                         message="three workers up")
                wait_for(lambda: metric(c, "tupa_worker_heartbeat_interval_seconds") == 3,
                         timeout=30, message="interval 3 s for 3 workers at 1/s")
                # Each worker adopts it with its next ack (<= 1 s), then
                # beats every 3 s.
                time.sleep(4)
                before, t0 = metric(c, "tupa_worker_heartbeats_total"), time.monotonic()
                time.sleep(12)
                after, t1 = metric(c, "tupa_worker_heartbeats_total"), time.monotonic()
                rate = (after - before) / (t1 - t0)
                # 1/s paced; 3/s if the workers ignored the ack.
                self.assertGreater(rate, 0.5, rate)
                self.assertLess(rate, 1.6, rate)

                # Nobody lost at the slower beat, and a job still runs.
                self.assertEqual(metric(c, "tupa_workers_lost_total"), 0)
                states = [w.get("state", "") for w in c.workers_json()]
                self.assertEqual(len(states), 3, states)
                self.assertTrue(all(s.endswith("UP") for s in states), states)
                job = c.submit("--gpus", "1", "--", "true")
                c.wait_job(job["id"], "SUCCEEDED", timeout=60)
        finally:
            os.unlink(config)


if __name__ == "__main__":
    unittest.main()
