"""Fractional GPUs end to end (issue 8, must-show 3).

Four `--gpus 0.25` jobs share one emulated device at once (all RUNNING
together, same worker, same device index, each rank seeing the share and a
memory cap); a whole-GPU job is never placed on a shared device: on one
worker x 2 devices with the shares on one device, a `--gpus 1` job lands on
the other, and a `--gpus 2` job waits.
"""

import os
import unittest
import uuid

from cluster import Cluster, processes_with_env, state_name, wait_for

EMULATED_DEVICE_MEMORY = 16 << 30  # worker/devices: every emulated device


def placement(job):
    places = job.get("placements", [])
    assert len(places) == 1, job
    return places[0]["worker_id"], tuple(places[0].get("device_indexes", []))


def rank_env(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e]
    return {k.decode(): v.decode(errors="replace") for k, v in pairs}


class FractionalTest(unittest.TestCase):
    def test_shares_pack_one_device_and_whole_gpus_never_share(self):
        with Cluster(workers=1, gpus_per_worker=2) as c:
            mark = uuid.uuid4().hex
            shares = [c.submit("--gpus", "0.25", "--env", f"TUPA_E2E_MARK={mark}",
                               "--", "sleep", "600") for _ in range(4)]
            running = [c.wait_job(j["id"], "RUNNING", timeout=60) for j in shares]
            # All four at once, on one device of one worker.
            for j in running:
                self.assertEqual(state_name(c.get_job(j["id"])), "RUNNING")
            places = {placement(j) for j in running}
            self.assertEqual(len(places), 1, places)
            worker, devices = places.pop()
            self.assertEqual(len(devices), 1, devices)
            shared = devices[0]

            # Every rank sees the one device, its share and a memory cap.
            pids = wait_for(lambda: (p := processes_with_env("TUPA_E2E_MARK", mark))
                            and len(p) >= 4 and p, timeout=20,
                            message="4 share ranks running")
            for pid in pids:
                env = rank_env(pid)
                self.assertEqual(env.get("CUDA_VISIBLE_DEVICES"), str(shared), env)
                self.assertEqual(env.get("TUPA_GPU_SHARE"), "0.25", env)
                self.assertEqual(env.get("TUPA_GPU_MEMORY_LIMIT_BYTES"),
                                 str(EMULATED_DEVICE_MEMORY // 4), env)

            # A whole GPU goes to the other device, never the shared one.
            whole = c.submit("--gpus", "1", "--", "sleep", "600")
            whole = c.wait_job(whole["id"], "RUNNING", timeout=60)
            self.assertEqual(placement(whole), (worker, (1 - shared,)))

            # Two whole GPUs cannot start while the shares hold device 0.
            two = c.submit("--gpus", "2", "--", "true")
            why = wait_for(lambda: (w := c.cli_json("why", two["id"]))
                           .get("reason_code") == "NO_FIT_NOW" and w,
                           timeout=30, message="2-GPU job NO_FIT_NOW")
            self.assertEqual(why["state"], "JOB_STATE_PENDING", why)
            self.assertEqual(state_name(c.get_job(two["id"])), "PENDING")
            for j in running:
                self.assertEqual(state_name(c.get_job(j["id"])), "RUNNING")

            # Once the device is whole again, the 2-GPU job runs.
            for j in shares + [whole]:
                c.cli("cancel", j["id"])
            c.wait_job(two["id"], "SUCCEEDED", timeout=60)


if __name__ == "__main__":
    unittest.main()
