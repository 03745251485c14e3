"""A worker host killed mid-training (issue 17, must-show 4): every process
on the host dies at once (what a power cut does), the job requeues after
lease + kill grace and resumes from its checkpoint (TUPA_CHECKPOINT_DIR,
shared by the hosts as an NFS mount would be) on the other host; then a
stale attempt's checkpoint write, made after the new attempt started, is
refused (DESIGN §4: checkpoints fenced by attempt)."""

import glob
import json
import os
import re
import sys
import time
import unittest

from netns import Net, Stack, require_netns

SPEC = """
name: resume-across-hosts
resources: {gpus: 1, nodes: 1}
retries: 2
max_runtime: 10m
train:
  model: {type: mlp, layers: [784, 256, 256, 10]}
  data: {format: idx, path: /usr/share/datasets/fashion-mnist}
  batch_size: 32
  steps: 6000
  log_every: 200
  checkpoint_every: 200
  optimizer: {name: adamw, lr: 0.001}
  precision: fp32
"""


class MultiHostHostLossTest(unittest.TestCase):
    def setUp(self):
        require_netns(self)
        if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
            self.skipTest("dataset-fashion-mnist is not installed (scripts/install-deps)")

    def test_killed_host_job_resumes_elsewhere_and_stale_writes_are_refused(self):
        with Net(["sched", "host1", "host2"]) as net, \
                Stack(net, "sched", ["host1", "host2"], gpus_per_worker=1,
                      worker_timeout="4s", kill_grace_s=2) as st:
            st.wait_workers_up(2)
            spec = os.path.join(st.home, "job.yaml")
            with open(spec, "w") as f:
                f.write(SPEC)
            job_id = int(st.submit("-f", spec)["id"])
            running = st.wait_job(job_id, "RUNNING", timeout=60)
            victim = running["placements"][0]["worker_id"]
            other = "host2" if victim == "host1" else "host1"
            ckpt_dir = os.path.join(st.home, "checkpoints", f"job-{job_id}")
            deadline = time.monotonic() + 60
            while not glob.glob(os.path.join(ckpt_dir, "ckpt-*.bin")):
                self.assertLess(time.monotonic(), deadline, "no checkpoint written")
                time.sleep(0.05)

            net[victim].kill()
            done = st.wait_job(job_id, "SUCCEEDED", timeout=150)
            self.assertEqual(done["attempt"], 2, done)
            self.assertEqual({p["worker_id"] for p in done["placements"]}, {other})
            logs = st.cli("logs", str(job_id)).stdout
            resumed = [int(n) for n in re.findall(r'"resumed_from_step": (\d+)', logs)]
            self.assertTrue(resumed and max(resumed) >= 200, logs[-3000:])
            self.assertIn('"step": 6000,', logs)
            sys.stderr.write(f"attempt 2 resumed from step {max(resumed)} on {other}\n")
            with open(os.path.join(ckpt_dir, "FENCE")) as f:
                self.assertEqual(f.read().strip(), "2")

            # Attempt 1 again on the killed host (its machine came back with
            # a stale copy of the job): its checkpoint writes are refused and
            # the directory attempt 2 resumed from is untouched.
            before = sorted(os.listdir(ckpt_dir))
            job_json = os.path.join(st.home, "workers", victim, "jobs", f"{job_id}-1",
                                    "job.json")
            env = dict(os.environ, TUPA_ATTEMPT="1", TUPA_CHECKPOINT_DIR=ckpt_dir,
                       WORLD_SIZE="1", RANK="0", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
                       MASTER_ADDR="127.0.0.1", MASTER_PORT="29400")
            stale = net[victim].run([st.bin("tupa-train"), "-f", job_json, "--steps", "400"],
                                    env=env, timeout=120)
            self.assertNotEqual(stale.returncode, 0, stale)
            self.assertIn("attempt 1 is stale: attempt 2 has started", stale.stdout + stale.stderr)
            self.assertEqual(sorted(os.listdir(ckpt_dir)), before)


if __name__ == "__main__":
    unittest.main()
