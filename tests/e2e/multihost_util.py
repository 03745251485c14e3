"""Helpers shared by the multi-host tests (tests/e2e/test_multihost_*.py)."""

import os
import threading
import time

# A flat price (per GPU-hour) so that cost = GPUs x 0.001 x seconds.
PRICING_CONFIG = """
pricing:
  currency: USD
  prices:
    - {region: "*", gpu_type: "*", offering: "*", per_gpu_hour: 3.60}
"""


def write_pricing(home):
    path = os.path.join(home, "scheduler-config.yaml")
    with open(path, "w") as f:
        f.write(PRICING_CONFIG)
    return path


class Lifetimes:
    """Records, every 50 ms, when processes with TUPA_E2E_MARK=mark run, per
    TUPA_ATTEMPT: {attempt: [first seen, last seen]} (wall clock). All
    namespaces share one pid namespace, so /proc shows every host's ranks."""

    def __init__(self, mark):
        self.mark = f"TUPA_E2E_MARK={mark}".encode()
        self.seen = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False

    def _scan(self):
        now = time.time()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    env = f.read().split(b"\0")
                with open(f"/proc/{entry}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        continue
            except (OSError, IndexError):
                continue
            if self.mark not in env:
                continue
            attempt = next((int(e.split(b"=", 1)[1]) for e in env
                            if e.startswith(b"TUPA_ATTEMPT=")), 0)
            span = self.seen.setdefault(attempt, [now, now])
            span[1] = now

    def _run(self):
        while not self._stop.is_set():
            self._scan()
            time.sleep(0.05)

    def running(self, attempt, within=0.3):
        span = self.seen.get(attempt)
        return bool(span) and time.time() - span[1] < within
