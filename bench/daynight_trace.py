#!/usr/bin/env python3
"""Writes a synthetic job trace with day/night arrivals, for `tupa-sim
replay --jobs` (the columns of alibaba_v2023_openb_jobs_ext.csv).

Arrivals are Poisson, DAY_RATE jobs/hour from 08:00 to 20:00 Sao Paulo time
on weekdays and NIGHT_RATE otherwise (nights and the weekend, when the
example catalog's T4 off-peak windows apply), over DAYS days from replay
time 0 (Monday 00:00 Sao Paulo, tupa-sim's default --start). Durations are
log-normal (median 20 min), GPUs 1/2/4/8, half the jobs asking for T4 (then at most 2 GPUs).
Deterministic for a seed. Usage: daynight_trace.py [--seed 1] [--days 7]
> jobs.csv
"""
import argparse
import math
import random

p = argparse.ArgumentParser()
p.add_argument("--seed", type=int, default=1)
p.add_argument("--days", type=int, default=7)
p.add_argument("--day-rate", type=float, default=60)
p.add_argument("--night-rate", type=float, default=4)
a = p.parse_args()
rng = random.Random(a.seed)

print("job_id,submit_time_s,duration_s,num_gpus,gpu_type,user,gpu_milli,"
      "gpu_fraction,cpu_milli,memory_mib,qos,status,scheduled_time_s,"
      "deletion_time_s,wait_s,censored_at_trace_end")
t, n, end = 0.0, 0, a.days * 86400
while True:
    day, hour = int(t // 86400), (t % 86400) / 3600
    busy = day % 7 < 5 and 8 <= hour < 20
    t += rng.expovariate((a.day_rate if busy else a.night_rate) / 3600)
    if t >= end:
        break
    dur = max(30, int(rng.lognormvariate(math.log(1200), 1.2)))
    gpus = rng.choices([1, 2, 4, 8], [0.6, 0.2, 0.1, 0.1])[0]
    gtype = "T4" if rng.random() < 0.5 else ""
    if gtype:
        gpus = min(gpus, 2)  # openb's T4 nodes have 2 or 4
    s = int(t)
    print(f"daynight-{n:06d},{s},{dur},{gpus},{gtype},,1000,{gpus}.0,"
          f"{gpus * 4000},{gpus * 16384},BE,Succeeded,{s},{s + dur},0,0")
    n += 1
