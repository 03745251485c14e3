"""`tupa wait` redraws a live progress line on a terminal (issue 19,
must-show 4).

A real training job (Fashion-MNIST, the built-in trainer on an emulated
device) is waited on by `tupa wait` inside a detached tmux session (a real
terminal); tmux capture-pane reads the screen while it runs. The progress
line must change (step and loss move) while staying on the first row: it
is redrawn in place, never scrolled. Piped, the same command prints plain
lines without carriage returns.
"""

import os
import re
import shutil
import subprocess
import sys
import unittest

from cluster import Cluster, bin_path, wait_for

FMNIST = "/usr/share/datasets/fashion-mnist"
SPEC = f"""
name: wait-progress
team: vision
resources: {{gpus: 1}}
max_runtime: 10m
train:
  model: {{type: mlp, layers: [784, 1024, 1024, 10]}}
  data: {{format: idx, path: {FMNIST}}}
  batch_size: 64
  steps: 150
  log_every: 10
"""
STEP = re.compile(r"step (\d+)/150 \(\d+%\)  loss [0-9.]+")


@unittest.skipUnless(shutil.which("tmux"), "tmux not installed (scripts/install-deps)")
class WaitProgressTest(unittest.TestCase):
    def tmux(self, *args, check=True):
        return subprocess.run(["tmux", "-L", self.socket, *args], check=check,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "wait").stdout.split("\n")

    def test_progress_line_updates_in_place(self):
        self.socket = f"tupa-wait-{os.getpid()}"
        with Cluster(workers=1, gpus_per_worker=1) as c:
            job = c.submit("-f", c.write_spec(SPEC))
            tupa = bin_path("tupa")
            env = " ".join(f"{k}={v}" for k, v in c.env.items())
            done_file = os.path.join(c.home, "wait.rc")
            try:
                self.tmux("new-session", "-d", "-s", "wait", "-x", "160", "-y", "12",
                          f"env {env} {tupa} wait {job['id']} --timeout 5m; "
                          f"echo $? > {done_file}; sleep 600")
                seen = []  # distinct first rows showing a step

                def sample():
                    rows = self.screen()
                    first = rows[0].rstrip()
                    if ("RUNNING" in first and STEP.search(first)
                            and (not seen or seen[-1] != first)):
                        seen.append(first)
                        # Redrawn in place: nothing below the first row.
                        below = [r for r in rows[1:] if r.strip()]
                        self.assertEqual(below, [], rows)
                    return os.path.exists(done_file)

                wait_for(sample, 240, interval=0.15, message="tupa wait to end")
                rows = self.screen()
            finally:
                self.tmux("kill-server", check=False)
            sys.stderr.write(f"{len(seen)} distinct progress lines on row 0, first and last:\n"
                             f"  {seen[0] if seen else None}\n  {seen[-1] if seen else None}\n")
            self.assertGreaterEqual(len(seen), 2, f"the line never changed: {seen}")
            steps = [int(STEP.search(s).group(1)) for s in seen]
            self.assertEqual(steps, sorted(steps), seen)
            self.assertLess(steps[0], steps[-1], seen)
            for s in seen:
                self.assertIn(f"job {job['id']} RUNNING  epoch ", s)
                self.assertIn("samples/s", s)
                self.assertIn("ETA ", s)
            with open(done_file) as f:
                self.assertEqual(f.read().strip(), "0", rows)
            # The final line stays, then the verdict below it.
            self.assertTrue(STEP.search(rows[0]), rows)
            self.assertEqual(rows[1].strip(), f"job {job['id']} SUCCEEDED", rows)

            # Piped: plain lines, no carriage return or escape.
            piped = c.cli("wait", job["id"])
            self.assertEqual(piped.code, 0, piped)
            self.assertNotIn("\r", piped.stdout)
            self.assertNotIn("\x1b", piped.stdout)
            self.assertEqual(piped.stdout.strip().splitlines()[-1],
                             f"job {job['id']} SUCCEEDED")


if __name__ == "__main__":
    unittest.main()
