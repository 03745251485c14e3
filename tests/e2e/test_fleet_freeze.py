"""A deep queue of jobs that ask for nothing must not freeze the scheduler
(issue 16, must-show 4; DESIGN §5 "Throughput and responsiveness").

20,000 jobs with no GPU and no CPU request (`--mix none`, 100-300 ms each)
go to 4 simulated workers: three with 16 cores, one with 512. Before the
fix all of them were placed onto one worker in one pass, one commit at a
time, with the scheduler's lock held for minutes. Now:
- each job gets 1 CPU per rank by default, so a 16-core worker runs at
  most 16 at once, and no worker runs more than max_nodes_per_worker
  (default 110) at once, however many cores it has (the 512-core one);
- the jobs are spread: every worker runs a fair part of them;
- reads answer throughout: GetJob, ListJobs and ListWorkers, probed
  10 times a second each with a 1 s deadline, never miss it, both from
  the simulator's process and from a reader process of their own
  (`tupa-fleet-sim --reader`, a user outside the fleet);
- and all 20,000 complete within the run's limit.
"""

import collections
import os
import unittest

from cluster import Cluster
from fleet import FleetReader, FleetSim, read_record

JOBS = 20000
CPUS = [16, 16, 16, 512]
MAX_NODES_PER_WORKER = 110  # DESIGN §5 default
LIMIT_S = 150


def max_concurrent(runs):
    """The most runs of `runs` in progress at one instant ([start, end))."""
    events = []
    for r in runs:
        end = r["end_ms"] if r["end_ms"] is not None else float("inf")
        events.append((r["start_ms"], 1))
        events.append((end, -1))
    # At equal times an end comes before a start: the scheduler freed the
    # slot when the EXITED arrived, then placed the next job there.
    events.sort(key=lambda e: (e[0], e[1]))
    now = peak = 0
    for _, d in events:
        now += d
        peak = max(peak, now)
    return peak


class FleetFreezeTest(unittest.TestCase):
    def assert_reads_answered(self, probes, what, context):
        """No probe missed its 1 s deadline, and at least half of those a
        10 Hz prober asks over its wall time were answered."""
        self.assertEqual(probes["probe_errors"], {},
                         f"{what} missed their 1 s deadline: {context}")
        for kind in ("getjob", "listjobs", "listworkers"):
            self.assertLess(probes[f"{kind}_ms_max"], 1000, context)
            self.assertGreaterEqual(probes[f"{kind}_ms_count"],
                                    int(probes["wall_s"] * 10 * 0.5), context)

    def test_jobs_asking_for_nothing_are_spread_and_reads_answer(self):
        with Cluster(workers=0) as c:
            record = os.path.join(c.home, "record.jsonl")
            reader = FleetReader(c, "--wait-workers", len(CPUS), "--probe-hz", 10,
                                 "--probe-deadline-s", 1)
            sim = FleetSim(c, "--workers", len(CPUS), "--gpus-per-worker", 8,
                           "--cpu-per-worker", ",".join(map(str, CPUS)),
                           "--jobs", JOBS, "--mix", "none", "--runtime-ms", "100-300",
                           "--clients", 32, "--probe-hz", 10, "--probe-deadline-s", 1,
                           "--duration-limit-s", LIMIT_S, record=record)
            try:
                report = sim.wait(timeout=LIMIT_S + 40)
            finally:
                sim.kill()
                reads = reader.stop()
            runs = read_record(record)
            by_worker = collections.defaultdict(list)
            for r in runs:
                by_worker[r["worker"]].append(r)
            peaks = {w: max_concurrent(rs) for w, rs in by_worker.items()}
            summary = (f"per-worker peak nodes at once {peaks}, runs per worker "
                       f"{ {w: len(rs) for w, rs in by_worker.items()} }, report {report}")

            # Spread by the default CPU request and the per-worker cap.
            for i, cpus in enumerate(CPUS, start=1):
                cap = min(cpus, MAX_NODES_PER_WORKER)
                self.assertLessEqual(peaks.get(f"sim-{i}", 0), cap,
                                     f"sim-{i} ({cpus} cores) ran more than {cap} jobs at "
                                     f"once; {summary}")
            for i in range(1, len(CPUS) + 1):
                self.assertGreaterEqual(len(by_worker.get(f"sim-{i}", [])), JOBS // 50,
                                        f"sim-{i} got (almost) nothing: {summary}")

            # Reads answered within 1 s throughout, and kept being asked:
            # from the simulator's process, and from a process outside the
            # fleet's (a user's reads; its GetJob asks for jobs its ListJobs
            # returned).
            self.assert_reads_answered(report, "reads", summary)
            self.assert_reads_answered(reads, "outside reads", reads)

            # Everything ran, in time, once.
            self.assertFalse(report["timed_out"], summary)
            self.assertEqual(report["jobs"], JOBS, summary)
            self.assertEqual(report["completed"], JOBS, summary)
            self.assertEqual(report["rpc_errors"], {}, summary)


if __name__ == "__main__":
    unittest.main()
