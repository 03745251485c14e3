"""Helpers for the fleet tests: run bench's tupa-fleet-sim against a
Cluster and read what it wrote (its JSON line, its --record file).

    sim = FleetSim(c, "--workers", 50, "--jobs", 1500, record=path)
    ...                      # e.g. kill the scheduler meanwhile
    report = sim.wait(timeout=170)   # the parsed JSON line
    runs = read_record(path)

    reader = FleetReader(c, "--wait-workers", 50)   # reads from outside
    ...
    reads = reader.stop()            # its "fleet_reader" line
"""

import json
import os
import subprocess

from cluster import bin_path


class _SimProcess:
    """A tupa-fleet-sim process started with `args`; its stdout (the JSON
    line) and stderr in files NAME.json and NAME.log under c.home."""

    def __init__(self, cluster, name, args):
        self.cluster = cluster
        self.label = "tupa-fleet-sim --reader" if "--reader" in args else "tupa-fleet-sim"
        self.out_path = os.path.join(cluster.home, f"{name}.json")
        self.err_path = os.path.join(cluster.home, f"{name}.log")
        self.argv = [bin_path("tupa-fleet-sim", cluster.bin_dir),
                     "--scheduler", cluster.env["TUPA_SCHEDULER"], *map(str, args)]
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=err)

    def report(self):
        """Its last JSON line as a dict; AssertionError (with its stderr)
        when it printed none."""
        with open(self.out_path) as f:
            lines = [l for l in f.read().splitlines() if l.strip()]
        if not lines:
            raise AssertionError(f"{self.label} exited {self.proc.returncode} "
                                 f"without a report: {self.stderr()}")
        return json.loads(lines[-1])

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()[-3000:]


class FleetSim(_SimProcess):
    """A running tupa-fleet-sim (stdout/stderr in files under c.home)."""

    def __init__(self, cluster, *args, record=None):
        super().__init__(cluster, "fleet-sim",
                         [*args, "--record", record] if record else args)

    def wait(self, timeout):
        """Waits for the simulator; returns its JSON line as a dict.

        Raises AssertionError (with its stderr) when it printed none.
        """
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"tupa-fleet-sim ran past {timeout}s: {self.stderr()}")
        return self.report()


class FleetReader(_SimProcess):
    """A running `tupa-fleet-sim --reader` (bench/fleet_sim/reader.h): the
    same read probes from a process outside the fleet's, until stop()."""

    def __init__(self, cluster, *args):
        super().__init__(cluster, "fleet-reader", ["--reader", *args])

    def stop(self, timeout=30):
        """SIGTERM, then its JSON line as a dict (AssertionError if none)."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        return self.report()


def read_record(path):
    """The --record file: one dict per node run."""
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def psql(url, sql):
    out = subprocess.run(["psql", url, "-AtX", "-F", "|", "-c", sql], capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def psql_rows(url, sql):
    text = psql(url, sql)
    return [line.split("|") for line in text.splitlines()] if text else []
