"""Idle shutdown, scale-up and zombie jobs end to end (issue 6, must-show
2 and 3): decisions from real device activity, hooks with the right
environment, events in PostgreSQL, and what `tupa workers` shows."""

import decimal
import os
import signal
import stat
import subprocess
import tempfile
import time
import unittest
import urllib.request

from cluster import Cluster, wait_for

# The file appears whole (written aside, then renamed): the test polls for
# it and must never read it half written.
HOOK = """#!/bin/sh
out="{dir}/{name}-${{TUPA_WORKER_ID:-pool}}.env"
env | grep '^TUPA_' | sort > "$out.tmp.$$" && mv "$out.tmp.$$" "$out"
"""


def make_hook(directory, name):
    path = os.path.join(directory, f"{name}.sh")
    with open(path, "w") as f:
        f.write(HOOK.format(dir=directory, name=name))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def hooks_dir():
    """A folder for hooks and what they write, open to the workers' user."""
    directory = tempfile.mkdtemp(prefix="tupa-hooks-")
    os.chmod(directory, 0o777)
    return directory


def write_config(directory, text):
    path = os.path.join(directory, "scheduler.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def read_env(path):
    with open(path) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)


def files(directory, prefix):
    return sorted(f for f in os.listdir(directory)
                  if f.startswith(prefix) and f.endswith(".env"))


def events(c, kind):
    out = subprocess.run(["psql", c.env["TUPA_DATABASE_URL"], "-Atc",
                          f"SELECT coalesce(worker_id, ''), coalesce(job_id, 0), reason "
                          f"FROM cluster_events WHERE kind = '{kind}' ORDER BY id"],
                         capture_output=True, text=True, check=True).stdout
    return [line.split("|", 2) for line in out.splitlines() if line]


class IdlePolicyTest(unittest.TestCase):
    def test_idle_workers_stop_keep_warm_stays_and_scale_up_runs(self):
        hooks = hooks_dir()
        config = write_config(hooks, f"""
idle_shutdown:
  idle_after: 3s
  activity_threshold: 0.05
  keep_warm: 1
  min_uptime: 0s
  hook: {make_hook(hooks, "scheduler-hook")}
scale_up:
  pending_after: 1s
  hook: {make_hook(hooks, "scale-hook")}
pricing:
  currency: USD
  prices:
    - {{region: sa-east-1, gpu_type: EMU, offering: on-demand, per_gpu_hour: 36.00}}
""")
        worker_hook = make_hook(hooks, "worker-hook")
        with Cluster(workers=3, gpus_per_worker=2, region="sa-east-1", scheduler_config=config,
                     worker_flags=[f"--on-shutdown={worker_hook}"]) as c:
            start = time.monotonic()
            wait_for(lambda: len(files(hooks, "worker-hook-")) == 2, timeout=15,
                     message="two workers ran their --on-shutdown hook")
            stopped = sorted(f[len("worker-hook-"):-len(".env")]
                             for f in files(hooks, "worker-hook-"))
            for worker in stopped:
                env = read_env(os.path.join(hooks, f"worker-hook-{worker}.env"))
                self.assertEqual(env["TUPA_WORKER_ID"], worker)
                self.assertEqual(env["TUPA_INSTANCE_ID"], f"local-{worker}")
                self.assertEqual(env["TUPA_REGION"], "sa-east-1")
                self.assertEqual(env["TUPA_GPU_TYPE"], "EMU")
                self.assertEqual(env["TUPA_REASON"], "IDLE")
                # The worker exited 0 on its own.
                wait_for(lambda: c.pid(worker) is None, timeout=10,
                         message=f"{worker} exited")
                self.assertIn("exiting 0", c.log(worker))
            self.assertLess(time.monotonic() - start, 20)
            # The scheduler-side hook ran for both, with the same identity.
            wait_for(lambda: len(files(hooks, "scheduler-hook-")) == 2, timeout=10,
                     message="the scheduler hook ran twice")
            for worker in stopped:
                env = read_env(os.path.join(hooks, f"scheduler-hook-{worker}.env"))
                self.assertEqual(env["TUPA_REASON"], "IDLE")
                self.assertEqual(env["TUPA_INSTANCE_ID"], f"local-{worker}")

            workers = {w["id"]: w for w in c.cli_json("workers", "--all").get("workers", [])}
            live = [w for w in workers.values() if w["state"].endswith("UP")]
            self.assertEqual(len(live), 1, workers)
            self.assertTrue(live[0].get("verdict") == "KEEP_WARM", live[0])
            for worker in stopped:
                self.assertTrue(workers[worker]["state"].endswith("OFFLINE"), workers[worker])
                self.assertTrue(workers[worker]["stopped_reason"].startswith("IDLE"),
                                workers[worker])
            recorded = events(c, "SHUTDOWN")
            self.assertEqual(sorted(e[0] for e in recorded), stopped)
            table = c.cli("workers", "--all")
            self.assertIn("IDLE:", table.stdout)

            # The money saved: each stopped worker's price (2 GPUs x 36/h)
            # over the time it has stayed down, so more than nothing and
            # less than both down since the test began.
            def saved():
                return decimal.Decimal(
                    c.cli_json("cost", "--since", "1h").get("idle_shutdown_saved", "0"))
            wait_for(lambda: saved() > 0, timeout=10, message="savings recorded")
            ceiling = 2 * 2 * decimal.Decimal(36) / 3600 * decimal.Decimal(
                time.monotonic() - start + 1)
            self.assertLess(saved(), ceiling)
            wait_for(lambda: "saved by idle shutdown:" in c.cli("cost", "--since", "1h").stdout,
                     timeout=10, message="`tupa cost` shows the savings")

            # ... and the metric the cost dashboard plots (DESIGN §8).
            def saved_metric():
                with urllib.request.urlopen(c.env["TUPA_METRICS_URL"], timeout=10) as r:
                    lines = r.read().decode().splitlines()
                return sum(float(l.rsplit(" ", 1)[1]) for l in lines
                           if l.startswith("tupa_idle_shutdown_saved_total{"))
            wait_for(lambda: saved_metric() > 0, timeout=10,
                     message="tupa_idle_shutdown_saved_total accrues")
            self.assertLess(saved_metric(), float(ceiling) * 2)

            # More GPUs than the live workers have: the scale-up hook runs.
            job = c.submit("--nodes", "2", "--gpus", "2", "--", "true")
            wait_for(lambda: files(hooks, "scale-hook-"), timeout=15,
                     message="the scale-up hook ran")
            env = read_env(os.path.join(hooks, files(hooks, "scale-hook-")[0]))
            self.assertEqual(env["TUPA_GPUS_NEEDED"], "4")
            self.assertIn(str(job["id"]), env["TUPA_JOB_IDS"])
            self.assertTrue(events(c, "SCALE_UP"))

    def test_a_worker_whose_stream_returns_during_its_hook_gets_no_work(self):
        # The worker is told to stop and runs a slow --on-shutdown hook. The
        # scheduler restarts meanwhile, so the worker reconnects while still
        # stopping: it must stay unschedulable (its hello says so), or a job
        # is assigned to a worker that refuses it and sits ASSIGNED.
        hooks = tempfile.mkdtemp(prefix="tupa-hooks-")
        os.chmod(hooks, 0o777)
        config = os.path.join(hooks, "scheduler.yaml")
        with open(config, "w") as f:
            f.write("idle_shutdown:\n  idle_after: 2s\n  keep_warm: 0\n"
                    "  min_uptime: 0s\n")
        marker = os.path.join(hooks, "hook-started")
        with Cluster(workers=1, gpus_per_worker=1, scheduler_config=config,
                     worker_flags=[f"--on-shutdown=touch {marker}; sleep 20"]) as c:
            wait_for(lambda: os.path.exists(marker), timeout=40,
                     message="the worker's --on-shutdown hook to start")
            c.kill("scheduler")
            c.up("--workers", "1")  # restarts only the scheduler
            wait_for(lambda: "connected to scheduler" in
                     c.log("worker-1").rsplit("ordered a shutdown", 1)[-1],
                     timeout=30, message="the worker to reconnect during its hook")
            job = c.submit("--gpus", "1", "--", "true")
            time.sleep(3)
            now = c.get_job(job["id"])
            self.assertTrue(now["state"].endswith("PENDING"), now)
            self.assertNotIn("refusing job", c.log("worker-1"))

    def test_a_worker_that_vanishes_after_being_told_to_stop_is_stopped_not_lost(self):
        # A hook that powers the machine off ends the stream without a
        # goodbye: here it freezes the worker, so no heartbeat and no FIN.
        # The lease runs out on a worker that was told to stop: OFFLINE
        # (stopped), not LOST (which pages someone on every idle shutdown).
        config = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        config.write("idle_shutdown:\n  idle_after: 2s\n  keep_warm: 0\n"
                     "  min_uptime: 0s\n")
        config.close()
        with Cluster(workers=1, gpus_per_worker=1, worker_timeout="3s",
                     scheduler_config=config.name,
                     worker_flags=["--on-shutdown=kill -STOP $PPID"]) as c:
            worker = c.pid("worker-1")
            try:
                wait_for(lambda: any(w["id"] == "worker-1" and
                                     w["state"].endswith("OFFLINE")
                                     for w in c.cli_json("workers", "--all")["workers"]),
                         timeout=60, message="worker-1 stopped")
                self.assertNotIn("lost (silent", c.log("scheduler"))
                self.assertEqual(events(c, "SHUTDOWN")[0][0], "worker-1")
            finally:
                if worker:
                    os.kill(worker, signal.SIGCONT)

    def test_cost_rule_boots_nothing_for_room_a_running_job_frees_sooner(self):
        hooks = hooks_dir()
        config = write_config(hooks, f"""
idle_shutdown:
  policy: cost
  boot_time: 3m
scale_up:
  hook: {make_hook(hooks, "scale-hook")}
""")
        with Cluster(workers=1, gpus_per_worker=1, scheduler_config=config) as c:
            # The only GPU is taken by a job expected to end within the boot
            # time: a job behind it waits for that GPU and asks for no boot.
            first = c.submit("--gpus", "1", "--max-runtime", "60s", "--", "sleep", "6")
            c.wait_job(first["id"], "RUNNING", timeout=30)
            second = c.submit("--gpus", "1", "--", "true")
            self.assertEqual(c.wait_job(second["id"], "SUCCEEDED", timeout=60)["state"][-9:],
                             "SUCCEEDED")
            self.assertEqual(events(c, "SCALE_UP"), [])
            self.assertEqual(files(hooks, "scale-hook-"), [])
            # Expected to run past the boot time (or with no max_runtime at
            # all): the job behind it asks for a worker at once.
            long = c.submit("--gpus", "1", "--max-runtime", "10m", "--", "sleep", "600")
            c.wait_job(long["id"], "RUNNING", timeout=30)
            behind = c.submit("--gpus", "1", "--", "true")
            wait_for(lambda: files(hooks, "scale-hook-"), timeout=15,
                     message="the scale-up hook ran")
            self.assertEqual([int(e[1]) for e in events(c, "SCALE_UP")], [int(behind["id"])])
            env = read_env(os.path.join(hooks, files(hooks, "scale-hook-")[0]))
            self.assertEqual(env["TUPA_JOB_IDS"], str(behind["id"]))
            c.cli("cancel", str(long["id"]))

    def test_zombie_job_is_cancelled_with_reason_and_counted(self):
        config = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        config.write("zombie_jobs: {after: 3s, action: cancel}\n")
        config.close()
        with Cluster(workers=1, gpus_per_worker=2, scheduler_config=config.name) as c:
            # One rank keeps its device (a CPU core, on emulated devices) busy.
            busy = c.submit("--gpus", "1", "--", "python3", "-c",
                            "import time\nend = time.time() + 12\n"
                            "while time.time() < end: pass")
            zombie = c.submit("--gpus", "1", "--", "sleep", "600")
            done = c.wait_job(zombie["id"], "CANCELLED", timeout=40)
            self.assertTrue(done["message"].startswith("ZOMBIE"), done)
            # The job that keeps its device busy is left alone.
            self.assertEqual(c.wait_job(busy["id"], "SUCCEEDED", timeout=40)["state"][-9:],
                             "SUCCEEDED")
            self.assertEqual([int(e[1]) for e in events(c, "ZOMBIE")], [int(zombie["id"])])
            metrics = urllib.request.urlopen(c.env["TUPA_METRICS_URL"], timeout=5).read().decode()
            self.assertIn('tupa_zombie_jobs_total{action="cancel"} 1', metrics)


if __name__ == "__main__":
    unittest.main()
