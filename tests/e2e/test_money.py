"""Money end to end (issue 4, must-show 2-4): priced usage, cost reports
with idle cost, budgets at admission (reject and hold), estimates."""

import decimal
import os
import subprocess
import tempfile
import time
import unittest
import urllib.request
from datetime import datetime, timezone

from cluster import Cluster, bin_path, wait_for

D = decimal.Decimal
PRICE_SA = D("36.00")   # per GPU-hour: 0.01 per GPU-second
PRICE_US = D("72.00")

CONFIG = """
pricing:
  currency: USD
  prices:
    - {region: sa-east-1, gpu_type: EMU, offering: on-demand, per_gpu_hour: 36.00}
    - {region: us-east-1, gpu_type: EMU, offering: on-demand, per_gpu_hour: 72.00}
  budgets: [{team: small, monthly: 0.50}]
  budget_action: %s
"""


def write_config(action):
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(CONFIG % action)
    f.close()
    return f.name


def run_past_the_small_budget(c):
    """On a 2-worker cluster: a job of team small on 2 GPUs at 0.01/s each,
    running until it alone is past the 0.50 budget (after 25 s)."""
    wait_for(lambda: len(c.workers_json()) == 2, timeout=20, message="workers up")
    long = c.submit("--team", "small", "--gpus", "2", "--", "sleep", "600")
    c.wait_job(long["id"], "RUNNING", timeout=30)
    time.sleep(27)
    return long


def ts(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class MoneyTest(unittest.TestCase):
    def test_cost_report_budget_reject_and_estimate(self):
        config = write_config("reject")
        with Cluster(workers=2, gpus_per_worker=2, region="sa-east-1",
                     scheduler_config=config) as c:
            # A 2-GPU job sleeping a known time: cost = 2 x duration x price.
            job = c.submit("--team", "vision", "--gpus", "2", "--", "sleep", "10")
            done = c.wait_job(job["id"], "SUCCEEDED", timeout=60)
            seconds = ts(done["finished_at"]) - ts(done["started_at"])
            expected = D(2) * D(seconds) * PRICE_SA / D(3600)
            cost = D(done["cost"])
            self.assertEqual(done["currency"], "USD")
            self.assertLess(abs(cost - expected) / expected, D("0.01"),
                            f"cost {cost} vs 2 x {seconds:.2f}s x {PRICE_SA}/h = {expected}")
            self.assertAlmostEqual(done["gpu_seconds"], 2 * seconds, delta=2 * seconds * 0.01)

            second = c.submit("--team", "nlp", "--gpus", "1", "--", "sleep", "1")
            c.wait_job(second["id"], "SUCCEEDED", timeout=60)
            costs = [D(c.get_job(j["id"])["cost"]) for j in (job, second)]
            report = c.cli_json("cost", "--by", "team", "--since", "1h")
            self.assertEqual(D(report["total"]), sum(costs), report)
            by_team = {r["key"]: D(r["cost"]) for r in report["rows"]}
            self.assertEqual(by_team["vision"], costs[0])
            # The other worker ran nothing the whole time: idle cost shows.
            self.assertGreater(D(report["idle_cost"]), 0, report)
            self.assertGreater(report["idle_gpu_seconds"], 0)

            # Over max_cost, and over the team budget: refused, nothing runs.
            wait_for(lambda: len(c.workers_json()) == 2, timeout=20, message="workers")
            before = len(c.cli_json("list").get("jobs", []))
            over_cap = c.cli("submit", "--gpus", "2", "--max-runtime", "1h",
                             "--max-cost", "1.00", "--", "true")
            self.assertEqual(over_cap.code, 1, over_cap)
            self.assertIn("BUDGET", over_cap.stderr)
            self.assertIn("max_cost", over_cap.stderr)
            over_budget = c.cli("submit", "--team", "small", "--gpus", "2",
                                "--max-runtime", "1h", "--", "true")
            self.assertEqual(over_budget.code, 1, over_budget)
            self.assertIn("BUDGET", over_budget.stderr)
            self.assertEqual(len(c.cli_json("list").get("jobs", [])), before)

            # A second pool, pricier: estimate lists both, cheapest first.
            extra = subprocess.Popen(
                [bin_path("tupa-worker"), "--scheduler", c.env["TUPA_SCHEDULER"],
                 "--id", "worker-us", "--region", "us-east-1", "--emulated-gpus", "2",
                 "--emulated-gpu-type", "EMU", "--work-dir", os.path.join(c.home, "us"),
                 "--metrics-listen", "127.0.0.1:0"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_for(lambda: any(w["id"] == "worker-us" for w in c.workers_json()),
                         timeout=20, message="worker-us registered")
                est = c.cli_json("estimate", "--gpus", "2", "--max-runtime", "2h",
                                 "--", "true")
                regions = [e["region"] for e in est["estimates"]]
                self.assertEqual(regions, ["sa-east-1", "us-east-1"], est)
                sa, us = est["estimates"]
                self.assertEqual(D(sa["cost"]), D(2) * 2 * PRICE_SA)
                self.assertEqual(D(us["cost"]), D(2) * 2 * PRICE_US)
                self.assertTrue(sa["finish_at"])
                self.assertTrue(sa["fits_now"])
                # A 2-node gang fits only the pool with two workers; a
                # 3-node one no pool (a per-worker device count used to list
                # every pool as fitting now).
                gang = c.cli_json("estimate", "--gpus", "2", "--nodes", "2",
                                  "--max-runtime", "2h", "--", "true")
                self.assertEqual([e["region"] for e in gang.get("estimates", [])],
                                 ["sa-east-1"], gang)
                self.assertTrue(gang["estimates"][0]["fits_now"], gang)
                too_big = c.cli("estimate", "--gpus", "2", "--nodes", "3",
                                "--max-runtime", "2h", "--", "true")
                self.assertEqual(too_big.code, 1, too_big)
                self.assertIn("resources.nodes", too_big.stderr)

                # With every worker busy on a job that ends within the hour,
                # each pool's estimate starts when those jobs end.
                busy = [c.submit("--team", "vision", "--gpus", "2", "--max-runtime", "1h",
                                 "--", "sleep", "600") for _ in range(3)]
                for b in busy:
                    c.wait_job(b["id"], "RUNNING", timeout=60)
                asked = time.time()
                later = c.cli_json("estimate", "--gpus", "2", "--max-runtime", "2h",
                                   "--", "true")
                self.assertEqual(len(later["estimates"]), 2, later)
                for e in later["estimates"]:
                    self.assertFalse(e.get("fits_now", False), later)
                    start = ts(e["start_at"])
                    self.assertAlmostEqual(start, asked + 3600, delta=120)
                    self.assertAlmostEqual(ts(e["finish_at"]), start + 7200, delta=1)
                for b in busy:
                    c.cli("cancel", str(b["id"]))
                table = c.cli("estimate", "--gpus", "2", "--max-runtime", "2h", "--", "true")
                self.assertEqual(table.code, 0, table)
                self.assertIn("us-east-1", table.stdout)
            finally:
                extra.kill()
                extra.wait()

    def test_cost_report_counts_only_the_part_of_a_job_inside_its_window(self):
        with Cluster(workers=1, gpus_per_worker=2, region="sa-east-1",
                     scheduler_config=write_config("reject")) as c:
            job = c.submit("--team", "vision", "--gpus", "2", "--", "sleep", "8")
            done = c.wait_job(job["id"], "SUCCEEDED", timeout=60)
            start, end = ts(done["started_at"]), ts(done["finished_at"])
            mid = start + (end - start) / 2
            time.sleep(3)  # idle: both GPUs free after the job

            def rfc3339(t):
                return datetime.fromtimestamp(t, timezone.utc).isoformat(
                    timespec="milliseconds").replace("+00:00", "Z")

            # The window opens halfway through the job: half its GPU-time
            # and half its cost (a flat price), not all of it or none.
            half = c.cli_json("cost", "--by", "team", "--since", rfc3339(mid),
                              "--until", rfc3339(end + 60))
            rows = {r["key"]: r for r in half["rows"]}
            self.assertAlmostEqual(rows["vision"]["gpu_seconds"], 2 * (end - mid),
                                   delta=0.2 * (end - mid))
            self.assertAlmostEqual(float(D(rows["vision"]["cost"])),
                                   float(D(done["cost"])) / 2,
                                   delta=0.1 * float(D(done["cost"])))
            # The worker has been up since before that window: its uptime
            # inside the window counts, so the idle time after the job shows
            # (it used to count only uptime that began inside the window).
            self.assertGreater(half["idle_gpu_seconds"], 2 * 2, half)
            self.assertGreater(D(half["idle_cost"]), 0, half)
            # The idle-cost counter the Grafana cost dashboard plots.
            with urllib.request.urlopen(c.env["TUPA_METRICS_URL"], timeout=10) as r:
                metrics = r.read().decode()
            idle = [float(l.rsplit(" ", 1)[1]) for l in metrics.splitlines()
                    if l.startswith("tupa_idle_cost_total{") and 'currency="USD"' in l]
            self.assertTrue(idle and sum(idle) > 0, metrics[-2000:])
            # The two halves add up to the whole.
            first = c.cli_json("cost", "--by", "team", "--since", rfc3339(start - 60),
                               "--until", rfc3339(mid))
            first_cost = {r["key"]: D(r["cost"]) for r in first["rows"]}["vision"]
            self.assertLessEqual(abs(first_cost + D(rows["vision"]["cost"]) -
                                     D(done["cost"])), D("0.000001"))

    def test_budget_hold_keeps_the_job_pending_with_reason(self):
        config = write_config("hold")
        with Cluster(workers=1, gpus_per_worker=2, region="sa-east-1",
                     scheduler_config=config) as c:
            # The estimate needs a priced worker to price the job on.
            wait_for(lambda: c.workers_json(), timeout=20, message="worker up")
            job = c.submit("--team", "small", "--gpus", "2", "--max-runtime", "1h",
                           "--", "true")
            time.sleep(3)
            now = c.get_job(job["id"])
            self.assertTrue(now["state"].endswith("PENDING"), now)
            self.assertIn("BUDGET", now.get("pending_reason", ""), now)

    def test_budget_counts_what_running_jobs_cost_so_far(self):
        config = write_config("reject")
        with Cluster(workers=2, gpus_per_worker=2, region="sa-east-1",
                     scheduler_config=config) as c:
            run_past_the_small_budget(c)
            small = c.cli("submit", "--team", "small", "--gpus", "1",
                          "--max-runtime", "1s", "--", "true")
            self.assertEqual(small.code, 1, small)
            self.assertIn("BUDGET", small.stderr)
            # Another team is not affected.
            other = c.submit("--team", "vision", "--gpus", "1", "--max-runtime", "1s",
                             "--", "true")
            c.wait_job(other["id"], "SUCCEEDED", timeout=30)

    def test_a_job_held_for_budget_stays_held_across_a_scheduler_restart(self):
        config = write_config("hold")
        with Cluster(workers=2, gpus_per_worker=2, region="sa-east-1",
                     scheduler_config=config) as c:
            run_past_the_small_budget(c)  # none of it in a closed row yet
            held = c.submit("--team", "small", "--gpus", "1", "--max-runtime", "1s",
                            "--", "true")
            time.sleep(2)
            self.assertIn("BUDGET", c.get_job(held["id"]).get("pending_reason", ""))
            c.kill("scheduler")
            c.up()
            # After the restart the running job's cost so far still counts.
            wait_for(lambda: c.cli("get", str(held["id"])).code == 0, timeout=30,
                     message="scheduler back")
            time.sleep(3)
            now = c.get_job(held["id"])
            self.assertTrue(now["state"].endswith("PENDING"), now)
            self.assertIn("BUDGET", now.get("pending_reason", ""), now)

    def test_worker_without_a_price_is_refused(self):
        config = write_config("reject")
        with Cluster(workers=1, gpus_per_worker=2, region="eu-west-9",
                     scheduler_config=config, up_timeout=60) as c:
            time.sleep(3)
            self.assertEqual(c.workers_json(), [])
            self.assertIn("no price for region", c.log("worker-1"))


if __name__ == "__main__":
    unittest.main()
