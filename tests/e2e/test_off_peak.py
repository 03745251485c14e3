"""start_window: off-peak waits for a discounted price window, unless
waiting would miss the deadline; `tupa why` says WAITING_OFF_PEAK with the
window's start (issue 4 price-aware placement, issue 8 reason codes)."""

import tempfile
import time
import unittest
from datetime import datetime, timedelta, timezone

from cluster import Cluster, wait_for


def config_with_window(start, end):
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(f"""
pricing:
  currency: USD
  prices:
    - region: "*"
      gpu_type: "*"
      per_gpu_hour: 3.00
      off_peak:
        - {{hours: "{start:%H:%M}-{end:%H:%M}", timezone: UTC, discount: 0.5}}
""")
    f.close()
    return f.name


class OffPeakTest(unittest.TestCase):
    def test_waits_for_the_window_unless_the_deadline_forbids(self):
        now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
        window_start = now + timedelta(hours=2)
        config = config_with_window(window_start, window_start + timedelta(hours=1))
        with Cluster(workers=1, gpus_per_worker=2, scheduler_config=config) as c:
            wait_for(lambda: c.workers_json(), timeout=20, message="worker up")
            waiting = c.submit("--gpus", "1", "--max-runtime", "10m",
                               "--start-window", "off-peak", "--", "true")
            urgent = c.submit("--gpus", "1", "--max-runtime", "10m",
                              "--start-window", "off-peak", "--deadline", "1h",
                              "--", "true")
            anytime = c.submit("--gpus", "1", "--", "true")
            c.wait_job(urgent["id"], "SUCCEEDED", timeout=30)
            c.wait_job(anytime["id"], "SUCCEEDED", timeout=30)
            time.sleep(1)
            job = c.get_job(waiting["id"])
            self.assertTrue(job["state"].endswith("PENDING"), job)
            self.assertTrue(job["pending_reason"].startswith("WAITING_OFF_PEAK"), job)
            why = c.cli_json("why", waiting["id"])
            self.assertEqual(why["reason_code"], "WAITING_OFF_PEAK", why)
            start = datetime.fromisoformat(why["estimated_start"].replace("Z", "+00:00"))
            self.assertLess(abs((start - window_start).total_seconds()), 61, why)

    def test_starts_at_once_inside_a_window(self):
        now = datetime.now(timezone.utc)
        config = config_with_window(now - timedelta(hours=1), now + timedelta(hours=1))
        with Cluster(workers=1, gpus_per_worker=2, scheduler_config=config) as c:
            wait_for(lambda: c.workers_json(), timeout=20, message="worker up")
            job = c.submit("--gpus", "1", "--start-window", "off-peak", "--", "true")
            c.wait_job(job["id"], "SUCCEEDED", timeout=30)


if __name__ == "__main__":
    unittest.main()
