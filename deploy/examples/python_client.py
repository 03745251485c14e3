#!/usr/bin/env python3
"""A notebook-style tour of the tupa Python client (client/python).

Run it against a stack (scripts/cluster up; eval "$(scripts/cluster env)")
with the client installed (client/python/README.md):

    ~/tupa-venv/bin/python deploy/examples/python_client.py

Each cell is a step a notebook user would run: estimate, a small
learning-rate sweep from one spec, follow one job's log, wait for all,
compare, and see what it cost.
"""

import os

import tupa

HERE = os.path.dirname(os.path.abspath(__file__))

# %% Connect: the same TUPA_* environment as the CLI.
client = tupa.Client()

# %% One spec, several learning rates (overrides as keywords, like CLI flags).
spec = tupa.spec.load(os.path.join(HERE, "fmnist-mlp.yaml"))
spec["train"]["epochs"] = 1
print(client.estimate(spec, gpus=1, nodes=1))

# %% Submit the sweep.
jobs = []
for lr in (3e-4, 1e-3, 3e-3):
    spec["train"]["optimizer"]["lr"] = lr
    jobs.append(client.submit(spec, name=f"fmnist-lr-{lr:g}", gpus=1, nodes=1))
print([j.id for j in jobs])

# %% Follow the first one's rank-0 log as it trains.
for line in client.logs(jobs[0].id, rank=0):
    print(line)

# %% Wait for the rest and compare.
for job in jobs:
    done = client.wait(job.id, timeout=3600)
    print(f"{done.spec.name}: {done.state} accuracy {done.progress.test_accuracy:.4f} "
          f"cost {done.cost} {done.currency}")

# %% What the team spent.
for row in client.cost(by="team", since="1d").rows:
    print(row.key, row.cost)

# %% Mistakes name the field.
try:
    client.submit(spec, gpus=-1)
except tupa.InvalidArgument as e:
    print("refused:", e.field, "-", e)
