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

# %% Replicas with other seeds as one job array: one call, at most 2 at once.
# From YAML text, {{index}} may stand anywhere (here the seed): the
# scheduler substitutes each task's index before parsing.
SEEDS = """
name: fmnist-seed-{{index}}
team: demo
resources: {gpus: 1}
max_runtime: 30m
train:
  model: {type: mlp, layers: [784, 256, 128, 10]}
  data: {format: idx, path: /usr/share/datasets/fashion-mnist}
  batch_size: 128
  epochs: 1
  seed: {{index}}
"""
seeds = client.submit_array(SEEDS, "1-3%2")
for task in client.wait_array(seeds.id, timeout=3600):
    print(f"seed {task.spec.array.index}: {task.state} "
          f"accuracy {task.progress.test_accuracy:.4f}")

# %% What the team spent (and the array, as one row).
for by in ("team", "array"):
    for row in client.cost(by=by, since="1d").rows:
        print(by, row.key, row.cost)

# %% Mistakes name the field.
try:
    client.submit(spec, gpus=-1)
except tupa.InvalidArgument as e:
    print("refused:", e.field, "-", e)
