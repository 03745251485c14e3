"""tupa-sim as a user runs it: inflation and replay print one JSON object,
replay prices the fleet and runs the idle policy from the example files,
and bad flags or files exit non-zero naming what is wrong (issue 8)."""

import json
import os
import subprocess
import tempfile
import unittest

BIN = os.environ.get("TUPA_BIN_DIR", "")
SRC = os.environ.get("TUPA_SOURCE_DIR", "")
EXAMPLES = os.path.join(SRC, "deploy", "examples", "sim")

NODES = ("sn,cpu_milli,memory_mib,gpu,model\n"
         "n0,64000,262144,4,T4\n"
         "n1,64000,262144,4,P100\n"
         "n2,64000,262144,8,V100M16\n"
         "n3,64000,262144,4,T4\n")  # one T4 beyond keep_warm: 1
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        "p0,4000,8192,1,1000,\n"
        "p1,2000,4096,1,500,\n"
        "p2,8000,16384,2,1000,P100|T4\n")
JOBS = ("job_id,submit_time_s,duration_s,num_gpus,gpu_type,user\n"
        "a,0,3600,4,,u\n"
        "b,60,600,1,T4,u\n"
        "c,7200,600,8,,u\n"
        "d,90000,60,1,,u\n")


class SimCliTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tupa-sim-cli-")
        self.files = {}
        for name, text in (("nodes", NODES), ("pods", PODS), ("jobs", JOBS)):
            path = os.path.join(self.dir, name + ".csv")
            with open(path, "w") as f:
                f.write(text)
            self.files[name] = path

    def sim(self, *args):
        return subprocess.run([os.path.join(BIN, "tupa-sim"), *args],
                              capture_output=True, text=True, timeout=60)

    def test_inflation_prints_the_allocation_ratio(self):
        for policy in ("firstfit", "bestfit", "tupa", "fgd", "bestfit-k8s"):
            r = self.sim("inflation", "--nodes", self.files["nodes"],
                         "--pods", self.files["pods"], "--seeds", "3", "--policy", policy)
            self.assertEqual(r.returncode, 0, r.stderr)
            out = json.loads(r.stdout)
            self.assertEqual(out["policy"], policy)
            self.assertGreater(out["gpu_alloc_pct"], 50, out)
            self.assertLessEqual(out["gpu_alloc_pct"], 100, out)

    def test_replay_with_prices_and_the_idle_policy(self):
        base = ["replay", "--jobs", self.files["jobs"], "--nodes", self.files["nodes"],
                "--pricing", os.path.join(EXAMPLES, "openb-pricing.yaml")]
        plain = self.sim(*base)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        plain = json.loads(plain.stdout)
        idle = self.sim(*base, "--idle-policy", os.path.join(EXAMPLES, "idle-policy.yaml"))
        self.assertEqual(idle.returncode, 0, idle.stderr)
        idle = json.loads(idle.stdout)
        for out in (plain, idle):
            self.assertEqual(out["started"], 4, out)
            self.assertEqual(out["currency"], "USD", out)
            for key in ("avg_jct_s", "p95_jct_s", "avg_wait_s", "p95_wait_s",
                        "makespan_s", "gpu_utilisation", "cost", "idle_cost"):
                self.assertIn(key, out)
        # The same jobs cost about the same (one that waits for a node to
        # boot may run on another node, or in another price window); the
        # policy stops idle nodes, so the fleet and its idle part cost less.
        self.assertAlmostEqual(plain["cost"], idle["cost"], delta=0.02 * plain["cost"])
        self.assertEqual(plain["shutdowns"], 0)
        self.assertGreater(idle["shutdowns"], 0, idle)
        self.assertLess(idle["fleet_cost"], plain["fleet_cost"])
        self.assertLess(idle["idle_cost"], plain["idle_cost"])
        self.assertAlmostEqual(plain["fleet_cost"], plain["cost"] + plain["idle_cost"],
                               places=2)

    def test_bad_flags_and_files_name_the_problem(self):
        jobs = ["replay", "--jobs", self.files["jobs"], "--nodes", self.files["nodes"]]
        bad_yaml = os.path.join(self.dir, "bad.yaml")
        with open(bad_yaml, "w") as f:
            f.write("idle_shutdown: {idle_after: soon}\n")
        cases = [
            (jobs + ["--node-fraction", "0"], 2, "--node-fraction"),
            (jobs + ["--arrival-speedup", "-1"], 2, "--arrival-speedup"),
            (jobs + ["--start", "yesterday"], 2, "--start"),
            (jobs + ["--boot-time", "later"], 2, "--boot-time"),
            (jobs + ["--pricing", os.path.join(self.dir, "missing.yaml")], 2, "--pricing"),
            (jobs + ["--idle-policy", bad_yaml], 1, "idle_shutdown.idle_after"),
            (jobs + ["--policy", "random"], 2, "--policy"),
        ]
        for args, code, named in cases:
            r = self.sim(*args)
            self.assertEqual(r.returncode, code, (args, r.stderr))
            self.assertIn(named, r.stderr, args)
            self.assertEqual(r.stdout, "", args)

    def test_a_node_without_a_price_is_refused(self):
        prices = os.path.join(self.dir, "prices.yaml")
        with open(prices, "w") as f:
            f.write("currency: USD\nprices: [{gpu_type: T4, per_gpu_hour: 1}]\n")
        r = self.sim("replay", "--jobs", self.files["jobs"], "--nodes", self.files["nodes"],
                     "--pricing", prices)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("P100", r.stderr)


if __name__ == "__main__":
    unittest.main()
