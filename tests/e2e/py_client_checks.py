"""The Python client's checks, run by test_python_client.py with the
interpreter of a fresh venv holding `pip install client/python`, against a
real stack (TUPA_SCHEDULER in the environment). Not a ctest of its own.
"""

import os
import time
import unittest

import grpc

import tupa

FMNIST = "/usr/share/datasets/fashion-mnist"

TRAIN_YAML = f"""
name: py-yaml-train
team: pyteam
resources: {{gpus: 1}}
max_runtime: 10m
train:
  model: {{type: mlp, layers: [784, 32, 10]}}
  data: {{format: idx, path: {FMNIST}}}
  batch_size: 32
  steps: 40
  log_every: 10
"""


class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = tupa.Client(timeout=20)

    def test_submit_dict_wait_and_read_its_logs(self):
        job = self.c.submit({"name": "py-dict", "team": "pyteam",
                             "command": ["sh", "-c", "echo hello-$GREETING; echo line-two"]},
                            env={"GREETING": "dict"}, cpu=1)
        self.assertGreater(job.id, 0)
        self.assertEqual(job.spec.name, "py-dict")
        self.assertEqual(job.spec.env["GREETING"], "dict")
        done = self.c.wait(job.id, timeout=90)
        self.assertEqual(done.state, "SUCCEEDED", done.proto)
        # The last chunk may reach the scheduler just after the exit.
        deadline = time.monotonic() + 15
        while True:
            lines = list(self.c.logs(job.id, follow=False))
            if lines == ["hello-dict", "line-two"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(lines, ["hello-dict", "line-two"])
        self.assertEqual(self.c.get(job.id).state, "SUCCEEDED")
        ids = [j.id for j in self.c.list(state="SUCCEEDED", team="pyteam")]
        self.assertIn(job.id, ids)
        self.assertEqual(self.c.why(job.id).reason_code, "NOT_PENDING")

    def test_submit_yaml_text_and_follow_logs_of_a_training_job(self):
        job = self.c.submit(TRAIN_YAML, name="py-yaml-train-2")
        self.assertEqual(job.spec.name, "py-yaml-train-2")  # override won
        self.assertEqual(job.spec.train.steps, 40)
        steps = []
        for line in self.c.logs(job.id, follow=True, rank=0):
            if '"step"' in line:
                steps.append(line)
        # The iterator ended by itself: the job is over.
        done = self.c.wait(job.id, timeout=30)
        self.assertEqual(done.state, "SUCCEEDED", done.proto)
        self.assertGreaterEqual(len(steps), 3, steps)
        self.assertEqual(done.progress.step, 40)

    def test_submit_from_a_yaml_file(self):
        path = os.path.join(os.environ["TUPA_PY_TMP"], "job.yaml")
        with open(path, "w") as f:
            f.write("name: py-file\ncommand: [sh, -c, 'exit 3']\n")
        job = self.c.submit(path)
        done = self.c.wait(job.id, timeout=90)
        self.assertEqual(done.state, "FAILED")
        self.assertEqual(done.exit_code, 3)

    def test_cancel_a_running_job_and_wait_times_out_before(self):
        job = self.c.submit({"name": "py-sleep", "command": ["sleep", "600"]})
        deadline = time.monotonic() + 60
        while self.c.get(job.id).state != "RUNNING":
            self.assertLess(time.monotonic(), deadline, "never RUNNING")
            time.sleep(0.2)
        with self.assertRaises(tupa.WaitTimeout) as ctx:
            self.c.wait(job.id, timeout=1)
        self.assertIsInstance(ctx.exception, TimeoutError)
        self.assertEqual(ctx.exception.job.state, "RUNNING")
        self.assertEqual(self.c.cancel(job.id, reason="py test").id, job.id)
        done = self.c.wait(job.id, timeout=60)
        self.assertEqual(done.state, "CANCELLED")

    def test_invalid_specs_raise_naming_the_field(self):
        # Refused by the scheduler (ranges are its to check).
        with self.assertRaises(tupa.InvalidArgument) as ctx:
            self.c.submit({"name": "bad", "command": ["true"]}, gpus=-1)
        self.assertEqual(ctx.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(ctx.exception.field, "resources.gpus")
        with self.assertRaises(tupa.InvalidArgument) as ctx:
            self.c.submit({"name": "bad", "command": ["true"], "priority": 500})
        self.assertEqual(ctx.exception.field, "priority")
        # Refused before sending: shapes and types.
        for spec, field in [({"command": ["true"], "resourcez": {}}, "resourcez"),
                            ({"command": ["true"], "resources": {"gpus": "many"}},
                             "resources.gpus"),
                            ({"command": "true"}, "command"),
                            ("name: [unclosed", "spec")]:
            with self.assertRaises(tupa.InvalidArgument, msg=spec) as ctx:
                self.c.submit(spec)
            self.assertEqual(ctx.exception.field, field, ctx.exception)
            self.assertTrue(str(ctx.exception).startswith(field + ":"), ctx.exception)

    def test_missing_job_raises_not_found(self):
        for call in (self.c.get, self.c.cancel, self.c.why):
            with self.assertRaises(tupa.NotFound) as ctx:
                call(987654321)
            self.assertEqual(ctx.exception.code, grpc.StatusCode.NOT_FOUND)
        with self.assertRaises(tupa.NotFound):
            self.c.wait(987654321, timeout=10)

    def test_estimate_and_cost(self):
        est = self.c.estimate({"command": ["true"], "max_runtime": "1h"}, gpus=1)
        self.assertTrue(est.currency)
        self.assertGreater(len(est.estimates), 0)
        report = self.c.cost(by="team", since="1d")
        self.assertEqual(report.group_by, "team")
        self.assertTrue(report.currency)

    def test_job_array_runs_within_its_limit_and_is_costed_and_cancelled(self):
        sweep = self.c.submit_array(
            {"name": "py-arr-{{index}}", "team": "pysweep",
             "command": ["sh", "-c", "echo task-$TUPA_ARRAY_INDEX-$LR; sleep 1"],
             "env": {"LR": "lr{{index}}"}}, "0-5%2", cpu=0.1)
        self.assertGreater(sweep.id, 0)
        self.assertEqual(sweep.size, 6)
        self.assertEqual(sweep.first.spec.array.array_id, sweep.id)
        tasks = self.c.wait_array(sweep.id, timeout=120)
        self.assertEqual([t.spec.array.index for t in tasks], list(range(6)))
        self.assertEqual([t.spec.name for t in tasks], [f"py-arr-{i}" for i in range(6)])
        self.assertEqual({t.state for t in tasks}, {"SUCCEEDED"}, tasks)
        for t in tasks:
            self.assertEqual(list(self.c.logs(t.id, follow=False))[:1],
                             [f"task-{t.spec.array.index}-lr{t.spec.array.index}"])
        # %2: never more than two tasks ran at once.
        spans = [(t.started_at.ToMilliseconds(), t.finished_at.ToMilliseconds()) for t in tasks]
        most = max(sum(1 for s, e in spans if s <= at < e) for at, _ in spans)
        self.assertLessEqual(most, 2, spans)
        rows = {r.key: r for r in self.c.cost(by="array", since="1h").rows}
        self.assertIn(str(sweep.id), rows)
        # Cancel ends what has not run; a task list shows it.
        long = self.c.submit_array({"command": ["sleep", "600"]}, "0-9%1", cpu=0.1)
        self.assertEqual(self.c.cancel_array(long.id, reason="py test"), 10)
        tasks = self.c.wait_array(long.id, timeout=60)
        self.assertEqual({t.state for t in tasks}, {"CANCELLED"})
        # From YAML text {{index}} may stand in a number: substituted first.
        text = TRAIN_YAML.replace("steps: 40", "steps: {{index}}0").replace(
            "name: py-yaml-train", "name: py-arr-train-{{index}}")
        trains = self.c.submit_array(text, "1,2")
        tasks = self.c.wait_array(trains.id, timeout=120)
        self.assertEqual([(t.spec.name, t.spec.train.steps, t.progress.step, t.state)
                          for t in tasks],
                         [("py-arr-train-1", 10, 10, "SUCCEEDED"),
                          ("py-arr-train-2", 20, 20, "SUCCEEDED")])
        with self.assertRaises(tupa.InvalidArgument) as ctx:
            self.c.submit_array({"command": ["true"]}, "5-2")
        self.assertEqual(ctx.exception.field, "array", ctx.exception)
        with self.assertRaises(tupa.NotFound):
            self.c.tasks(987654321)

    def test_unreachable_scheduler_raises_unavailable(self):
        c = tupa.Client(scheduler="127.0.0.1:9", timeout=2, retry_for=0.5)
        with self.assertRaises(tupa.Unavailable) as ctx:
            c.get(1)
        self.assertIn("unreachable", str(ctx.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
