"""A 2-node x 2-GPU command job runs 4 ranks with the PyTorch-launcher
environment (issue 2, must-show 2), and TensorFlow's TF_CONFIG and
Horovod's variables in both launch modes (issue 19)."""

import json
import os
import re
import tempfile
import unittest

from cluster import Cluster

ENV_LINE = ("echo RANK=$RANK WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=$LOCAL_RANK "
            "LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE NODE_RANK=$NODE_RANK NNODES=$NNODES "
            "MASTER=$MASTER_ADDR:$MASTER_PORT CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES "
            "TUPA_JOB_ID=$TUPA_JOB_ID TUPA_ATTEMPT=$TUPA_ATTEMPT "
            "TUPA_CHECKPOINT_DIR=$TUPA_CHECKPOINT_DIR")


def parse_env_lines(text):
    ranks = {}
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if "RANK" in fields and "WORLD_SIZE" in fields:
            ranks[int(fields["RANK"])] = fields
    return ranks


class JobRanksTest(unittest.TestCase):
    def test_two_nodes_two_gpus_run_four_ranks_with_launcher_env(self):
        with Cluster(workers=2, gpus_per_worker=2) as c:
            job = c.submit("--name", "env-check", "--nodes", "2", "--gpus", "2",
                           "--", "sh", "-c", ENV_LINE)
            done = c.wait_job(job["id"], "SUCCEEDED", timeout=60)
            logs = c.cli("logs", str(job["id"]))
            self.assertEqual(logs.code, 0, logs)
            ranks = parse_env_lines(logs.stdout)
            self.assertEqual(sorted(ranks), [0, 1, 2, 3], logs.stdout)
            self.assertEqual({r["WORLD_SIZE"] for r in ranks.values()}, {"4"})
            self.assertEqual(len({r["MASTER"] for r in ranks.values()}), 1)
            self.assertEqual({r["NNODES"] for r in ranks.values()}, {"2"})
            self.assertEqual({r["LOCAL_WORLD_SIZE"] for r in ranks.values()}, {"2"})
            self.assertEqual({r["TUPA_JOB_ID"] for r in ranks.values()}, {str(job["id"])})
            self.assertEqual({r["TUPA_ATTEMPT"] for r in ranks.values()}, {"1"})
            for node in ("0", "1"):
                on_node = [r for r in ranks.values() if r["NODE_RANK"] == node]
                self.assertEqual(len(on_node), 2)
                devices = {r["CUDA_VISIBLE_DEVICES"] for r in on_node}
                self.assertEqual(len(devices), 2, f"node {node}: {on_node}")
                self.assertEqual({r["LOCAL_RANK"] for r in on_node}, {"0", "1"})
            # The two nodes ran on distinct workers.
            workers = {p["worker_id"] for p in done.get("placements", [])}
            self.assertEqual(len(workers), 2, done)
            # Per-rank filtering works too.
            one = c.cli("logs", "--rank", "3", str(job["id"]))
            self.assertEqual(sorted(parse_env_lines(one.stdout)), [3], one)
            # A rank or attempt the job never had is not found (exit 3),
            # not an empty success.
            for args, says in ((["--rank", "4"], "ranks are 0..3"),
                               (["--attempt", "2"], "no attempt 2")):
                none = c.cli("logs", *args, str(job["id"]))
                self.assertEqual(none.code, 3, none)
                self.assertIn(says, none.stderr)
            self.check_framework_env(c, "per-gpu", 4)
            self.check_framework_env(c, "per-node", 2)

    def check_framework_env(self, c, launch, processes):
        """Every process's TF_CONFIG lists them all in rank order, each on its
        node's host, and names itself; Horovod's variables match the ranks."""
        job = c.submit("--nodes", "2", "--gpus", "2", "--launch", launch, "--", "sh", "-c",
                       'echo "TF $RANK $TF_CONFIG"; echo "HVD $RANK $HOROVOD_RANK '
                       '$HOROVOD_SIZE $HOROVOD_LOCAL_RANK $HOROVOD_LOCAL_SIZE '
                       '$HOROVOD_CROSS_RANK $HOROVOD_CROSS_SIZE $HOROVOD_CONTROLLER '
                       '$HOROVOD_GLOO_RENDEZVOUS_ADDR:$HOROVOD_GLOO_RENDEZVOUS_PORT '
                       '$NODE_RANK $LOCAL_RANK $MASTER_ADDR:$MASTER_PORT"')
        c.wait_job(job["id"], "SUCCEEDED", timeout=60)
        # Prefixed lines are whole lines per rank; drop the prefix.
        out = re.sub(r"(?m)^\[rank \d+\] ", "", c.cli("logs", str(job["id"])).stdout)
        tf = {int(l.split(" ", 2)[1]): json.loads(l.split(" ", 2)[2])
              for l in out.splitlines() if l.startswith("TF ")}
        self.assertEqual(sorted(tf), list(range(processes)), out)
        workers = tf[0]["cluster"]["worker"]
        self.assertEqual(len(workers), processes, tf[0])
        self.assertEqual(len(set(workers)), processes, tf[0])
        for rank, conf in tf.items():
            self.assertEqual(conf["cluster"]["worker"], workers)
            self.assertEqual(conf["task"], {"type": "worker", "index": rank})
        hvd = [l.split() for l in out.splitlines() if l.startswith("HVD ")]
        self.assertEqual(len(hvd), processes, out)
        per_node = processes // 2
        for (_, rank, h_rank, size, local, local_size, cross, cross_size, ctl,
             rendezvous, node, local_rank, master) in hvd:
            self.assertEqual((h_rank, size, local, local_size, cross, cross_size, ctl),
                             (rank, str(processes), local_rank, str(per_node), node, "2",
                              "gloo"), hvd)
            host, port = master.rsplit(":", 1)
            self.assertEqual(rendezvous, f"{host}:{int(port) + 1}")
            self.assertEqual(workers[int(rank)].rsplit(":", 1)[1],
                             str(int(port) + 2 + int(rank)))

    def test_jobs_sharing_workers_get_disjoint_port_blocks(self):
        """A job holds MASTER_PORT, +1 (Horovod) and +2+g (TensorFlow worker
        g) on every worker it runs on: three 2-node jobs sharing two workers
        in a 24-port job_ports range (room for a third 4-port block however
        the first two fall) must get three disjoint blocks (one port each,
        as before, let one job's store land on another's Horovod or
        TensorFlow port)."""
        first, last = 40100, 40123
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(f"job_ports: {first}-{last}\n")
        self.addCleanup(os.remove, f.name)
        with Cluster(workers=2, gpus_per_worker=3, scheduler_config=f.name) as c:
            jobs = [c.submit("--nodes", "2", "--gpus", "1", "--", "sh", "-c",
                             'echo "PORTS $MASTER_PORT $WORLD_SIZE"; sleep 8')["id"]
                    for _ in range(3)]
            for job in jobs:
                c.wait_job(job, "RUNNING", timeout=60)
            # All three hold their workers at once.
            self.assertEqual([c.get_job(j)["state"] for j in jobs],
                             ["JOB_STATE_RUNNING"] * 3)
            blocks = []
            for job in jobs:
                c.wait_job(job, "SUCCEEDED", timeout=60)
                out = c.cli("logs", str(job)).stdout
                seen = {tuple(map(int, l.split()[-2:]))
                        for l in re.sub(r"(?m)^\[rank \d+\] ", "", out).splitlines()
                        if l.startswith("PORTS ")}
                self.assertEqual(len(seen), 1, out)  # one block per job
                port, world = seen.pop()
                self.assertEqual(world, 2)
                blocks.append(range(port, port + 2 + world))
            for b in blocks:
                self.assertGreaterEqual(b.start, first, blocks)
                self.assertLessEqual(b.stop - 1, last, blocks)
            ports = [p for b in blocks for p in b]
            self.assertEqual(len(ports), len(set(ports)), f"overlapping blocks {blocks}")

    def test_failing_rank_fails_the_job_with_its_exit_code(self):
        with Cluster(workers=1, gpus_per_worker=2) as c:
            job = c.submit("--gpus", "2", "--", "sh", "-c",
                           'if [ "$RANK" = 1 ]; then exit 7; fi; sleep 60')
            done = c.wait_job(job["id"], "FAILED", timeout=60)
            self.assertEqual(done.get("exit_code"), 7, done)
            self.assertIn("rank 1 exited with code 7", done.get("message", ""))
            waited = c.cli("wait", str(job["id"]), "--timeout", "10s")
            self.assertEqual(waited.code, 1, waited)


if __name__ == "__main__":
    unittest.main()
