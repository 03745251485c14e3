"""Across real hosts (issue 17, must-show 1): three hosts on one bridge
(network namespaces, tests/e2e/netns.py): PostgreSQL + the scheduler on
one, a worker on each of the other two, started with default flags.

- Each worker advertises the local IP of its connection to the scheduler
  (not loopback), and `tupa workers` shows it.
- The demo's 2-node x 2-GPU Fashion-MNIST job (deploy/examples/fmnist-mlp.yaml,
  shortened to 200 steps) trains across the two hosts (Gloo over the
  bridge, rank 0's rendezvous at MASTER_ADDR = a worker host's IP) and
  succeeds.
- A worker given --advertise-addr 127.0.0.1 with a scheduler on another
  host refuses to start, naming the flag.
"""

import os
import unittest

from netns import Net, Stack, require_netns

SPEC = """
name: fmnist-mlp
team: demo
resources: {gpus: 2, nodes: 2}
max_runtime: 10m
train:
  model: {type: mlp, layers: [784, 256, 128, 10]}
  data: {format: idx, path: /usr/share/datasets/fashion-mnist}
  batch_size: 32
  steps: 200
  log_every: 50
  optimizer: {name: adamw, lr: 0.001, weight_decay: 0.01}
  precision: fp32
"""


class MultiHostAdvertiseTest(unittest.TestCase):
    def setUp(self):
        require_netns(self)
        if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
            self.skipTest("dataset-fashion-mnist is not installed (scripts/install-deps)")

    def test_default_flags_train_across_two_hosts_and_loopback_is_refused(self):
        with Net(["sched", "host1", "host2"]) as net, \
                Stack(net, "sched", ["host1", "host2"], gpus_per_worker=2) as st:
            up = st.wait_workers_up(2)
            addresses = {w["id"]: w.get("address") for w in up}
            self.assertEqual(addresses, {"host1": net["host1"].ip, "host2": net["host2"].ip})
            table = st.cli("workers").stdout
            for h in ("host1", "host2"):
                self.assertIn(net[h].ip, table, table)

            spec = os.path.join(st.home, "fmnist.yaml")
            with open(spec, "w") as f:
                f.write(SPEC)
            job = st.submit("-f", spec)
            done = st.wait_job(job["id"], "SUCCEEDED", timeout=240)
            self.assertEqual(done["attempt"], 1, done)
            hosts = {p["worker_id"] for p in done["placements"]}
            self.assertEqual(hosts, {"host1", "host2"}, done)
            logs = st.cli("logs", str(job["id"])).stdout
            self.assertNotIn("unreachable", logs)
            self.assertIn('"steps": 200', logs)  # tupa-train's summary (--json)
            self.assertIn('"world_size": 4', logs)

            # An explicit loopback address with a remote scheduler: refused
            # at start, naming the flag and why.
            w = net["host1"].run(st.worker_argv(net["host1"], ["--id", "loopback",
                                                              "--advertise-addr", "127.0.0.1",
                                                              "--metrics-listen", ""]),
                                 timeout=30)
            self.assertEqual(w.returncode, 2, w)
            self.assertIn("--advertise-addr 127.0.0.1 is a loopback address", w.stderr)
            self.assertIn(st.scheduler_addr, w.stderr)


if __name__ == "__main__":
    unittest.main()
