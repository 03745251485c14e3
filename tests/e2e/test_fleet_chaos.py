"""The fleet simulator with the scheduler kill -9'd mid-run (issue 16,
must-show 3): 50 simulated workers x 8 GPUs run 1,500 jobs of 0.5-2 s of
the default mix (1/2/4/8 GPUs, 2x8 gangs, half-GPU shares); the scheduler
is killed and restarted on the same port and database while they run.

Then, from PostgreSQL and the simulator's --record file:
- every acknowledged job exists once and ended exactly once, SUCCEEDED;
- no two attempts of one job ever ran at the same time (record intervals
  of different attempts of a job never overlap), and no node ran twice
  under one attempt;
- every allocation row is closed (ended_at, cost) and every node run the
  workers saw has its allocation row;
- the money adds up: per job, the allocation costs = `tupa cost --by job`
  = the job's own cost, and the report's total is their sum.
"""

import collections
import decimal
import os
import tempfile
import time
import unittest

from cluster import Cluster, wait_for
from fleet import FleetSim, psql, psql_rows, read_record

D = decimal.Decimal
WORKERS = 50
JOBS = 1500
KILL_AFTER_SUCCEEDED = 400

CONFIG = """
pricing:
  currency: USD
  prices:
    - {region: "*", gpu_type: "*", offering: "*", per_gpu_hour: 36.00}
"""


class FleetChaosTest(unittest.TestCase):
    def test_scheduler_kill_mid_fleet_run_loses_and_doubles_nothing(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(CONFIG)
            config = f.name
        with Cluster(workers=0, scheduler_config=config) as c:
            url = c.env["TUPA_DATABASE_URL"]
            record = os.path.join(c.home, "record.jsonl")
            sim = FleetSim(c, "--workers", WORKERS, "--gpus-per-worker", 8,
                           "--jobs", JOBS, "--runtime-ms", "500-2000", "--clients", 16,
                           "--probe-hz", 5, "--duration-limit-s", 150,
                           "--key-prefix", "chaos-", record=record)
            try:
                wait_for(lambda: int(psql(url, "SELECT count(*) FROM jobs WHERE "
                                               "state = 'SUCCEEDED'")) >= KILL_AFTER_SUCCEEDED
                         or sim.proc.poll() is not None,
                         90, interval=0.2, message=f"{KILL_AFTER_SUCCEEDED} jobs succeeded")
                self.assertIsNone(sim.proc.poll(), "the run ended before the kill: "
                                  + sim.stderr())
                before = c.pid("scheduler")
                c.kill("scheduler")
                time.sleep(1)
                c.up()
                self.assertNotEqual(c.pid("scheduler"), before)
                report = sim.wait(timeout=170)
            finally:
                sim.kill()
            self.assertFalse(report["timed_out"], report)
            self.assertEqual(report["jobs"], JOBS, report)
            self.assertEqual(report["submit_failed"], 0, report)
            self.assertEqual(report["completed"], JOBS, report)
            # The kill was seen: streams broke and came back.
            self.assertGreater(report["workers_lost_reconnects"], 0, report)

            # Every acknowledged job exists once (one row per key) and ended
            # exactly once, SUCCEEDED.
            self.assertEqual(psql(url, "SELECT count(*), count(DISTINCT idempotency_key) "
                                       "FROM jobs"), f"{JOBS}|{JOBS}")
            self.assertEqual(psql(url, "SELECT state, count(*) FROM jobs GROUP BY state"),
                             f"SUCCEEDED|{JOBS}")
            ends = psql_rows(url, "SELECT job_id, count(*) FROM job_history WHERE state IN "
                                  "('SUCCEEDED', 'FAILED', 'CANCELLED') GROUP BY job_id "
                                  "HAVING count(*) <> 1")
            self.assertEqual(ends, [], "jobs that ended more than once")
            self.assertEqual(psql(url, "SELECT count(DISTINCT job_id) FROM job_history "
                                       "WHERE state = 'SUCCEEDED'"), str(JOBS))

            # Two attempts of a job never ran at once; a node never ran twice
            # under one attempt.
            runs = read_record(record)
            self.assertTrue(runs)
            self.assertEqual([r for r in runs if r["end_ms"] is None], [],
                             "nodes still running at the end")
            keys = collections.Counter((r["job"], r["attempt"], r["node_rank"]) for r in runs)
            self.assertEqual([k for k, n in keys.items() if n > 1], [],
                             "a node ran twice under one attempt")
            by_job = collections.defaultdict(list)
            for r in runs:
                by_job[r["job"]].append(r)
            overlaps = []
            for job, rs in by_job.items():
                for a in rs:
                    for b in rs:
                        if (a["attempt"] < b["attempt"] and a["start_ms"] < b["end_ms"]
                                and b["start_ms"] < a["end_ms"]):
                            overlaps.append((a, b))
            self.assertEqual(overlaps, [], "two attempts of a job ran at once")
            # Each job's final attempt ran every node (one allocation row per
            # node) to exit 0, at the worker and in PostgreSQL.
            psql_attempts = {int(j): a for j, a in psql_rows(url, "SELECT id, attempt FROM jobs")}
            final_nodes = collections.defaultdict(dict)
            for job_id, node, code in psql_rows(
                    url, "SELECT a.job_id, a.node_rank, a.exit_code FROM allocations a "
                         "JOIN jobs j ON j.id = a.job_id AND j.attempt = a.attempt"):
                final_nodes[int(job_id)][int(node)] = code
            self.assertEqual(len(final_nodes), JOBS)
            missing = []
            for job_id, codes in final_nodes.items():
                attempt = int(psql_attempts[job_id])
                ok = {r["node_rank"] for r in by_job.get(job_id, [])
                      if r["attempt"] == attempt and r["exit_code"] == 0}
                if ok != set(codes) or set(codes.values()) != {"0"}:
                    missing.append((job_id, attempt, codes, by_job.get(job_id, [])))
            self.assertFalse(missing, "jobs whose final attempt did not run every node "
                             f"(job, attempt, exit codes, runs): {missing[:3]}")

            # Every allocation closed and priced; every node run has its row.
            self.assertEqual(psql(url, "SELECT count(*) FROM allocations WHERE ended_at IS NULL "
                                       "OR cost IS NULL"), "0")
            allocs = {(int(j), int(a), int(n)): w for j, a, n, w in psql_rows(
                url, "SELECT job_id, attempt, node_rank, worker_id FROM allocations")}
            for r in runs:
                key = (r["job"], r["attempt"], r["node_rank"])
                self.assertEqual(allocs.get(key), r["worker"], f"allocation of {r}")

            # Costs add up: allocations = `tupa cost --by job` = each job's cost.
            stored = {int(j): D(cost) for j, cost in psql_rows(
                url, "SELECT job_id, sum(cost) FROM allocations GROUP BY job_id")}
            report_rows = c.cli_json("cost", "--by", "job", "--since", "2h")
            by_key = {int(r["key"]): D(r["cost"]) for r in report_rows["rows"]}
            self.assertEqual(by_key, stored)
            self.assertEqual(D(report_rows["total"]), sum(stored.values()))
            self.assertGreater(sum(stored.values()), 0)
            for job_id in sorted(stored)[:: max(1, len(stored) // 25)]:
                self.assertEqual(D(c.get_job(job_id)["cost"]), stored[job_id], job_id)


if __name__ == "__main__":
    unittest.main()
