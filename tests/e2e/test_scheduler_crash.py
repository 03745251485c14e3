"""kill -9 the scheduler while 16 clients submit 1,000 jobs: after the
restart every acknowledged job exists exactly once, and retried submits
with the same idempotency key do not duplicate (issue 2, must-show 5)."""

import subprocess
import threading
import time
import unittest

from cluster import Cluster

CLIENTS = 16
JOBS = 1000


def psql(url, sql):
    out = subprocess.run(["psql", url, "-Atc", sql], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


class SchedulerCrashTest(unittest.TestCase):
    def test_acknowledged_submits_survive_a_scheduler_kill(self):
        # No workers: jobs stay PENDING, so the test measures only durability.
        with Cluster(workers=0, gpus_per_worker=2) as c:
            acked = {}  # key -> job id
            failures = []
            lock = threading.Lock()
            next_job = iter(range(JOBS))

            def client(n):
                while True:
                    with lock:
                        i = next(next_job, None)
                    if i is None:
                        return
                    key = f"crash-{i}"
                    r = c.cli("submit", "-o", "json", "--idempotency-key", key,
                              "--retry-for", "90s", "--name", f"j{i}", "--", "true",
                              timeout=150)
                    with lock:
                        if r.code == 0 and r.json:
                            acked[key] = int(r.json["id"])
                        else:
                            failures.append((key, r))

            threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
            for t in threads:
                t.start()
            # Kill the scheduler once a good share is acknowledged, mid-stream.
            deadline = time.monotonic() + 120
            while len(acked) < JOBS // 4 and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertGreater(len(acked), 0, "no submission was acknowledged")
            acked_before_kill = len(acked)
            c.kill("scheduler")
            time.sleep(1.0)
            c.up()  # restarts only the scheduler, same port
            for t in threads:
                t.join(timeout=300)
            self.assertEqual(failures, [], f"{len(failures)} submits failed")
            self.assertEqual(len(acked), JOBS)
            self.assertLess(acked_before_kill, JOBS, "the kill came after all submits")

            url = c.env["TUPA_DATABASE_URL"]
            rows = psql(url, "SELECT idempotency_key || ' ' || id FROM jobs "
                             "WHERE idempotency_key LIKE 'crash-%'")
            in_db = {}
            for line in rows.splitlines():
                key, job_id = line.split()
                self.assertNotIn(key, in_db, f"key {key} stored twice")
                in_db[key] = int(job_id)
            self.assertEqual(in_db, acked, "acknowledged jobs differ from the database")
            self.assertEqual(int(psql(url, "SELECT count(*) FROM jobs")), JOBS)

            # Retrying acknowledged submits returns the same jobs, adds none.
            for i in (0, 1, JOBS // 2, JOBS - 1):
                key = f"crash-{i}"
                r = c.cli("submit", "-o", "json", "--idempotency-key", key,
                          "--name", f"j{i}", "--", "true")
                self.assertEqual(r.code, 0, r)
                self.assertEqual(int(r.json["id"]), acked[key])
            self.assertEqual(int(psql(url, "SELECT count(*) FROM jobs")), JOBS)

            # The restarted scheduler rebuilt its view: every job is listed.
            listed = c.cli_json("list", "--state", "pending", "--limit", "2000")
            self.assertEqual(len(listed.get("jobs", [])), JOBS)


if __name__ == "__main__":
    unittest.main()
