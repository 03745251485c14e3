#!/usr/bin/env python3
"""Writes variants of openb_pod_list_default.csv the way the FGD paper
(Weng et al., ATC'23, section 6) made its workloads, so that tupa-sim can be
compared with the paper's published figures for lists that are not in
../shared (docs/benchmarks.md, "Packing quality"). Seeded: the same files on
every run.

  bench/openb_variants.py ../shared/traces/openb OUT_DIR [--seed 7]

Writes OUT_DIR/openb_pod_list_<variant>.csv. The rules, read off the
authors' own files (gpushare40, multigpu20 and gpuspec20 are in
../shared/traces/openb) and their plot scripts:
  gpushareX  (X = 20, 40, 60, 80, 100) GPU-share pods (one device,
             gpu_milli < 1000) ask for X% of all GPU requested. CPU-only pods
             are kept; the number of GPU pods N stays the same, n_share =
             X*N*w / (s*(1-X) + X*w) of them shares (s, w: mean GPU of a
             share / other GPU pod of the default list). A kind that shrinks
             is a random subset of the default list's pods of that kind, one
             that grows is drawn with replacement (the authors' gpushare40:
             its 3063 whole-GPU pods are distinct, its shares repeat). The
             authors' gpushare40 has 4001 shares of 7064; this rule gives
             3985.
  gpuspecX   (X = 10, 20, 25, 33) pods that name a GPU type ask for X% of all
             GPU requested. Every pod of the default list is kept; GPU pods
             in a seeded random order get a gpu_spec until that share is
             reached; the spec is drawn from the specs of
             openb_pod_list_gpuspec20.csv for pods of the same kind (share,
             1, 2, 4 or 8 GPUs), the only typed list we have.
  multigpuX  (X = 20, 30, 40, 50) multi-GPU pods ask for X% of all GPU
             requested. Every pod of the default list is kept and multi-GPU
             pods drawn from it are appended until that share is reached
             (the authors' multigpu20 has 8324 rows: 172 appended).
  cpuN       (N = 050, 100, 200, 250) CPU-only pods are N/10 % of all pods
             (the paper's "proportion of non-GPU workloads in terms of task
             number": 5, 10, 20, 25%). GPU pods are kept; CPU-only pods are
             a subset of the default list's (5, 10%) or drawn from them with
             replacement (20, 25%).
Names are rewritten to openb-pod-NNNN in file order.
"""
import argparse
import csv
import os
import random


def is_share(r):
    return r["num_gpu"] == "1" and int(r["gpu_milli"]) < 1000


def gpu_milli(r):
    return int(r["num_gpu"]) * int(r["gpu_milli"])


def kind(r):
    return "share" if is_share(r) else r["num_gpu"]


def write(path, fields, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for i, r in enumerate(rows):
            r = dict(r)
            r["name"] = "openb-pod-%04d" % i
            w.writerow(r)


def resize(pool, n, rng):
    """n pods of `pool`: a random subset when it shrinks, drawn with
    replacement when it grows (what the authors' gpushare40 shows: its
    whole-GPU pods are distinct pods of the default list, its shares repeat).
    """
    if n <= len(pool):
        return rng.sample(pool, n)
    return [rng.choice(pool) for _ in range(n)]


def gpushare(rows, x, rng):
    cpu = [r for r in rows if int(r["num_gpu"]) == 0]
    shares = [r for r in rows if int(r["num_gpu"]) > 0 and is_share(r)]
    others = [r for r in rows if int(r["num_gpu"]) > 0 and not is_share(r)]
    n = len(shares) + len(others)
    s = sum(map(gpu_milli, shares)) / len(shares)
    w = sum(map(gpu_milli, others)) / len(others)
    n_share = round(x * n * w / (s * (1 - x) + x * w))
    return cpu + resize(shares, n_share, rng) + resize(others, n - n_share, rng)


def gpuspec(rows, x, specs_by_kind, rng):
    out = [dict(r) for r in rows]
    total = sum(map(gpu_milli, out))
    order = [r for r in out if int(r["num_gpu"]) > 0 and not r["gpu_spec"]]
    rng.shuffle(order)
    typed = sum(gpu_milli(r) for r in out if r["gpu_spec"])
    for r in order:
        if typed >= x * total:
            break
        specs = specs_by_kind.get(kind(r))
        if not specs:
            continue
        r["gpu_spec"] = rng.choice(specs)
        typed += gpu_milli(r)
    return out


def multigpu(rows, x, rng):
    out = list(rows)
    multis = [r for r in rows if int(r["num_gpu"]) > 1]
    total = sum(map(gpu_milli, out))
    multi = sum(map(gpu_milli, multis))
    while multi < x * total:
        r = rng.choice(multis)
        out.append(r)
        total += gpu_milli(r)
        multi += gpu_milli(r)
    return out


def cpu_share(rows, frac, rng):
    cpu = [r for r in rows if int(r["num_gpu"]) == 0]
    gpu = [r for r in rows if int(r["num_gpu"]) > 0]
    n_cpu = round(frac / (1 - frac) * len(gpu))
    return resize(cpu, n_cpu, rng) + gpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.traces, "openb_pod_list_default.csv")) as f:
        rows = list(csv.DictReader(f))
    specs_by_kind = {}
    with open(os.path.join(args.traces, "openb_pod_list_gpuspec20.csv")) as f:
        for r in csv.DictReader(f):
            if r["gpu_spec"]:
                specs_by_kind.setdefault(kind(r), []).append(r["gpu_spec"])
    fields = list(rows[0].keys())
    variants = {}
    for x in (20, 40, 60, 80, 100):
        variants["gpushare%d" % x] = lambda x=x, rng=None: gpushare(rows, x / 100, rng)
    for x in (10, 20, 25, 33):
        variants["gpuspec%d" % x] = lambda x=x, rng=None: gpuspec(
            rows, x / 100, specs_by_kind, rng)
    for x in (20, 30, 40, 50):
        variants["multigpu%d" % x] = lambda x=x, rng=None: multigpu(rows, x / 100, rng)
    for n in (50, 100, 200, 250):
        variants["cpu%03d" % n] = lambda n=n, rng=None: cpu_share(rows, n / 1000, rng)
    for name, make in variants.items():
        # One generator per variant: adding a variant changes no other file.
        rng = random.Random("%d/%s" % (args.seed, name))
        out = make(rng=rng)
        write(os.path.join(args.out, "openb_pod_list_%s.csv" % name), fields, out)
        gpu_total = sum(map(gpu_milli, out))
        share = sum(gpu_milli(r) for r in out if int(r["num_gpu"]) > 0 and is_share(r))
        typed = sum(gpu_milli(r) for r in out if r["gpu_spec"])
        multi = sum(gpu_milli(r) for r in out if int(r["num_gpu"]) > 1)
        n_cpu = sum(1 for r in out if int(r["num_gpu"]) == 0)
        print("%-12s pods %5d  share %5.1f%%  typed %5.1f%%  multi %5.1f%%  "
              "cpu-only %5.1f%% of pods" %
              (name, len(out), 100 * share / gpu_total, 100 * typed / gpu_total,
               100 * multi / gpu_total, 100 * n_cpu / len(out)))


if __name__ == "__main__":
    main()
