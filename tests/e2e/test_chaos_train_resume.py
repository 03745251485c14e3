"""Chaos (a): kill -9 a worker in the middle of a `train:` job. The job
requeues as attempt 2 on the other worker, resumes from its last checkpoint
(the trainer's summary says resumed_from_step > 0, its steps continue from
there) and ends with the accuracy of an uninterrupted reference run of the
same spec (issue 7, must-show 3a)."""

import json
import os
import sys
import unittest
import uuid

from cluster import Cluster, processes_with_env, wait_for

STEPS = 1500
CHECKPOINT_EVERY = 20
LOG_EVERY = 20
KILL_AT = 500          # kill once attempt 1 reported at least this step
ACCURACY_BAND = 0.015  # 1.5 points

SPEC = """
name: chaos-train
retries: 2
resources: {{gpus: 2, nodes: 1}}
env: {{TUPA_E2E_MARK: "{mark}"}}
train:
  model: {{type: mlp, layers: [784, 512, 256, 10]}}
  data: {{format: idx, path: /usr/share/datasets/fashion-mnist}}
  batch_size: 32
  steps: {steps}
  checkpoint_every: {ckpt}
  log_every: {log}
  seed: 7
"""


def json_lines(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


class ChaosTrainResumeTest(unittest.TestCase):
    def logs(self, c, job_id, attempt):
        r = c.cli("logs", "--attempt", attempt, "--rank", "0", "--no-prefix", job_id)
        self.assertEqual(r.code, 0, r)
        return json_lines(r.stdout)

    def summary(self, lines):
        found = [l for l in lines if l.get("summary")]
        self.assertEqual(len(found), 1, f"want one summary line, got {lines[-5:]!r}")
        return found[0]

    def test_killed_worker_train_job_resumes_from_checkpoint(self):
        if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
            self.skipTest("Fashion-MNIST not installed (dataset-fashion-mnist)")
        with Cluster(workers=2, gpus_per_worker=2, worker_timeout="3s") as c:
            mark = uuid.uuid4().hex
            spec = c.write_spec(SPEC.format(mark=mark, steps=STEPS, ckpt=CHECKPOINT_EVERY,
                                            log=LOG_EVERY), "chaos.yaml")
            job = c.submit("-f", spec)
            job_id = job["id"]
            running = c.wait_job(job_id, "RUNNING", timeout=60)
            victim = running["placements"][0]["worker_id"]

            def step_of_attempt_1():
                j = c.get_job(job_id)
                self.assertEqual(j["attempt"], 1, j)
                step = int(j.get("progress", {}).get("step", 0))
                return step if step >= KILL_AT else None

            killed_after = wait_for(step_of_attempt_1, 60, interval=0.2,
                                    message=f"attempt 1 at step {KILL_AT}")
            self.assertLess(killed_after, STEPS - 200, "attempt 1 almost done: kill came too late")
            ckpt_dir = os.path.join(c.home, "checkpoints", f"job-{job_id}")
            self.assertTrue(any(f.startswith("ckpt-") for f in os.listdir(ckpt_dir)),
                            f"no checkpoint in {ckpt_dir}: {os.listdir(ckpt_dir)}")
            c.kill(victim)
            wait_for(lambda: not processes_with_env("TUPA_E2E_MARK", mark, with_shims=True), 10,
                     message="attempt 1 ranks gone with their worker")
            # Attempt 2 starts only once the worker is declared lost (3 s).
            attempt1_ckpts = [int(f[len("ckpt-"):-len(".bin")])
                              for f in os.listdir(ckpt_dir)
                              if f.startswith("ckpt-") and f.endswith(".bin")]

            done = c.wait_job(job_id, "SUCCEEDED", timeout=120)
            self.assertEqual(done["attempt"], 2, done)
            self.assertNotIn(victim, {p["worker_id"] for p in done["placements"]}, done)

            first = self.logs(c, job_id, 1)
            first_steps = [l["step"] for l in first if "step" in l]
            self.assertTrue(first_steps and not any(l.get("summary") for l in first),
                            f"attempt 1 should have been cut short: {first[-3:]!r}")
            second = self.logs(c, job_id, 2)
            summary = self.summary(second)
            resumed = summary.get("resumed_from_step", 0)
            # The newest checkpoint attempt 1 left. Not bounded by attempt 1's
            # last logged step: the log lines of its last moments may die with
            # the killed worker before they reach the scheduler.
            self.assertGreater(resumed, 0, summary)
            self.assertEqual(resumed, max(attempt1_ckpts), (resumed, sorted(attempt1_ckpts)[-3:]))
            self.assertLessEqual(resumed, max(first_steps) + 5 * LOG_EVERY,
                                 (resumed, first_steps[-3:]))
            self.assertGreaterEqual(resumed, KILL_AT - CHECKPOINT_EVERY, resumed)
            self.assertEqual(resumed % CHECKPOINT_EVERY, 0, resumed)
            self.assertIn({"resumed_from_step": resumed, "rank": 0},
                          [{k: l[k] for k in ("resumed_from_step", "rank") if k in l}
                           for l in second if "resumed_from_step" in l and "summary" not in l])
            # Steps continue after the checkpoint instead of starting over.
            second_steps = [l["step"] for l in second if "step" in l]
            self.assertTrue(second_steps, second[:3])
            self.assertGreater(second_steps[0], resumed, second_steps[:3])
            self.assertLessEqual(second_steps[0], resumed + LOG_EVERY, second_steps[:3])
            self.assertEqual(second_steps[-1], STEPS)
            self.assertEqual(summary["steps"], STEPS, summary)
            accuracy = summary["test_accuracy"]
            self.assertAlmostEqual(done["progress"]["test_accuracy"], accuracy, places=3)

            # Reference: the same spec, uninterrupted (a new job: a fresh
            # checkpoint directory).
            ref = c.submit("-f", spec)
            ref_done = c.wait_job(ref["id"], "SUCCEEDED", timeout=120)
            self.assertEqual(ref_done["attempt"], 1, ref_done)
            ref_summary = self.summary(self.logs(c, ref["id"], 1))
            self.assertEqual(ref_summary.get("resumed_from_step", 0), 0, ref_summary)
            reference = ref_summary["test_accuracy"]
            self.assertGreater(reference, 0.75, ref_summary)
            sys.stderr.write(f"\nkilled {victim} at step >= {killed_after}; attempt 2 resumed "
                             f"from step {resumed}; accuracy {accuracy} (uninterrupted: "
                             f"{reference})\n")
            self.assertLessEqual(abs(accuracy - reference), ACCURACY_BAND,
                                 f"resumed run {accuracy} vs uninterrupted {reference}")


if __name__ == "__main__":
    unittest.main()
