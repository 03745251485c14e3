"""`tupa why JOB` names the right reason code (issue 8, must-show 4).

Each case is built so that placement has exactly one answer, whatever node
the first job lands on:
- NO_FIT_NOW: a 4-GPU job on a 4-GPU worker where a long job holds 2.
- BEHIND_PRIORITY: a lower-priority 1-GPU job that would fit the 2 free
  GPUs, but they are reserved for the 4-GPU job ahead of it (and it has no
  max_runtime, so it cannot be backfilled before the reservation).
- GANG_INCOMPLETE: a 2-node x 2-GPU gang on 2 workers x 2 GPUs where a
  long 1-GPU job holds one GPU of one of them.
"""

import datetime
import unittest

from cluster import EXIT_NOT_FOUND, Cluster, wait_for

LONG = ("--max-runtime", "1h", "--", "sleep", "600")


class WhyTest(unittest.TestCase):
    def why(self, c, job_id):
        return c.cli_json("why", job_id)

    def wait_reason(self, c, job_id, code, timeout=30):
        last = {}

        def check():
            last["why"] = self.why(c, job_id)
            return last["why"] if last["why"].get("reason_code") == code else None

        try:
            return wait_for(check, timeout, interval=0.3, message=f"job {job_id} {code}")
        except TimeoutError as e:
            raise AssertionError(f"{e}; last: {last.get('why')!r}") from None

    def test_no_fit_now_and_behind_priority(self):
        with Cluster(workers=1, gpus_per_worker=4) as c:
            busy = c.submit("--gpus", "2", *LONG)
            c.wait_job(busy["id"], "RUNNING", timeout=60)
            running = self.why(c, busy["id"])
            self.assertEqual(running["reason_code"], "NOT_PENDING", running)
            self.assertEqual(running["state"], "JOB_STATE_RUNNING", running)

            big = c.submit("--priority", "90", "--gpus", "4", "--", "true")
            why_big = self.wait_reason(c, big["id"], "NO_FIT_NOW")
            self.assertEqual(why_big["state"], "JOB_STATE_PENDING", why_big)
            self.assertEqual(why_big["jobs_ahead"], 0, why_big)
            self.assertIn("needs 4 GPUs on 1 node", why_big["message"])
            # Reserved for when the busy job's max_runtime is up (~1h).
            start = datetime.datetime.strptime(
                why_big["estimated_start"][:19], "%Y-%m-%dT%H:%M:%S").replace(
                    tzinfo=datetime.timezone.utc)
            ahead = start - datetime.datetime.now(datetime.timezone.utc)
            self.assertGreater(ahead.total_seconds(), 50 * 60, why_big)
            self.assertLess(ahead.total_seconds(), 61 * 60, why_big)

            small = c.submit("--priority", "10", "--gpus", "1", "--", "sleep", "600")
            why_small = self.wait_reason(c, small["id"], "BEHIND_PRIORITY")
            self.assertEqual(why_small["jobs_ahead"], 1, why_small)
            # Still waiting a while later: the reservation holds.
            self.assertEqual(self.why(c, small["id"])["reason_code"], "BEHIND_PRIORITY")
            self.assertEqual(c.get_job(small["id"])["state"], "JOB_STATE_PENDING")

            table = c.cli("why", small["id"])
            self.assertEqual(table.code, 0, table)
            self.assertTrue(table.stdout.startswith(
                f"job {small['id']} is PENDING: BEHIND_PRIORITY \u2014 needs 1 GPU on 1 node"),
                table)
            self.assertIn("1 job ahead", table.stdout)
            table = c.cli("why", big["id"])
            self.assertIn("0 jobs ahead; estimated start in ", table.stdout)

            missing = c.cli("why", "999999")
            self.assertEqual(missing.code, EXIT_NOT_FOUND, missing)

    def test_gang_incomplete(self):
        with Cluster(workers=2, gpus_per_worker=2) as c:
            busy = c.submit("--gpus", "1", *LONG)
            c.wait_job(busy["id"], "RUNNING", timeout=60)
            gang = c.submit("--nodes", "2", "--gpus", "2", "--", "true")
            why = self.wait_reason(c, gang["id"], "GANG_INCOMPLETE")
            self.assertIn("on each of 2 nodes", why["message"])
            self.assertEqual(why["jobs_ahead"], 0, why)
            table = c.cli("why", gang["id"])
            self.assertIn("GANG_INCOMPLETE", table.stdout, table)
            # Once the busy job goes, the gang starts and why says so.
            c.cli("cancel", busy["id"])
            c.wait_job(gang["id"], ("RUNNING", "SUCCEEDED"), timeout=60)
            self.assertEqual(self.why(c, gang["id"])["reason_code"], "NOT_PENDING")

    def test_a_job_too_big_for_the_live_workers_only_waits_not_never_fits(self):
        with Cluster(workers=2, gpus_per_worker=1, worker_timeout="3s") as c:
            c.kill("worker-2")
            wait_for(lambda: any(w["id"] == "worker-2" and w["state"].endswith("LOST")
                                 for w in c.cli_json("workers", "--all")["workers"]),
                     timeout=30, message="worker-2 lost")
            gang = c.submit("--nodes", "2", "--gpus", "1", "--", "true")
            why = self.wait_reason(c, gang["id"], "NO_FIT_NOW")
            self.assertNotIn("NEVER", why["reason_code"], why)
            c.up()  # worker-2 returns, and the gang runs
            c.wait_job(gang["id"], "SUCCEEDED", timeout=60)


if __name__ == "__main__":
    unittest.main()
