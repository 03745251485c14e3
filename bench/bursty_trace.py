#!/usr/bin/env python3
"""Writes a synthetic job trace of bursts, for `tupa-sim replay --jobs` (the
columns of alibaba_v2023_openb_jobs_ext.csv): a background of BASE_RATE
Poisson jobs/hour, and every 1-6 hours (uniform) a sweep of 10-80 jobs
(uniform) submitted within 5 minutes, at any hour of any day. Durations
are log-normal (median 30 min), GPUs 1/2/4/8; a sweep's jobs share one
shape (GPUs, and T4 or any type), as a hyperparameter sweep does.
Deterministic for a seed. Unlike daynight_trace.py the load follows no
calendar, so an idle rule cannot lean on the time of day.
Usage: bursty_trace.py [--seed 1] [--days 2] > jobs.csv
"""
import argparse
import math
import random

p = argparse.ArgumentParser()
p.add_argument("--seed", type=int, default=1)
p.add_argument("--days", type=int, default=2)
p.add_argument("--base-rate", type=float, default=6)
a = p.parse_args()
rng = random.Random(a.seed)
end = a.days * 86400


def shape():
    gpus = rng.choices([1, 2, 4, 8], [0.6, 0.2, 0.1, 0.1])[0]
    gtype = "T4" if rng.random() < 0.3 else ""
    return (min(gpus, 2) if gtype else gpus), gtype


jobs = []
t = 0.0
while True:
    t += rng.expovariate(a.base_rate / 3600)
    if t >= end:
        break
    jobs.append((t, *shape()))
t = rng.uniform(0, 3600)
while t < end:
    gpus, gtype = shape()
    for _ in range(rng.randint(10, 80)):
        s = t + rng.uniform(0, 300)
        if s < end:
            jobs.append((s, gpus, gtype))
    t += rng.uniform(3600, 6 * 3600)
jobs.sort()

print("job_id,submit_time_s,duration_s,num_gpus,gpu_type,user,gpu_milli,"
      "gpu_fraction,cpu_milli,memory_mib,qos,status,scheduled_time_s,"
      "deletion_time_s,wait_s,censored_at_trace_end")
for n, (t, gpus, gtype) in enumerate(jobs):
    dur = max(30, int(rng.lognormvariate(math.log(1800), 1.0)))
    s = int(t)
    print(f"bursty-{n:06d},{s},{dur},{gpus},{gtype},,1000,{gpus}.0,"
          f"{gpus * 4000},{gpus * 16384},BE,Succeeded,{s},{s + dur},0,0")
