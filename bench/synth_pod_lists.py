#!/usr/bin/env python3
"""Writes five synthetic variants of an openb pod list, to check that the
tupa policy is not tuned to the four lists we have (issue 8 warns that it
will be measured on openb lists we do not have). Seeded, so the files are
the same on every run (docs/benchmarks.md, "Packing quality").

  bench/synth_pod_lists.py ../shared/traces/openb OUT_DIR

Variants of openb_pod_list_default.csv:
  cpu_x2, cpu_x0.5  every pod's CPU request doubled (capped at 96 cores) or
                    halved: CPU becomes the scarce resource, or never is;
  share_all         every whole 1-GPU pod becomes a GPU share (share, CPU
                    and memory of a random share pod of the list);
  multi_30          30% of the whole 1-GPU pods become multi-GPU pods
                    (shape of a random multi-GPU pod of the list);
  types_33          a third of the GPU pods name GPU types (values taken
                    from openb_pod_list_gpuspec20.csv).
"""
import csv
import os
import random
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    traces, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(traces, "openb_pod_list_default.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(traces, "openb_pod_list_gpuspec20.csv")) as f:
        specs = [r["gpu_spec"] for r in csv.DictReader(f) if r["gpu_spec"]]
    fields = list(rows[0].keys())
    rng = random.Random(7)
    whole_one = lambda r: r["num_gpu"] == "1" and r["gpu_milli"] == "1000"
    shares = [r for r in rows if r["num_gpu"] == "1" and int(r["gpu_milli"]) < 1000]
    multis = [r for r in rows if int(r["num_gpu"]) > 1]

    def write(name, variant):
        with open(os.path.join(out, name + ".csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(variant)

    def take(r, s, keys):
        for k in keys:
            r[k] = s[k]

    for name, factor in (("cpu_x2", 2.0), ("cpu_x0.5", 0.5)):
        variant = [dict(r) for r in rows]
        for r in variant:
            r["cpu_milli"] = str(min(96000, int(int(r["cpu_milli"]) * factor)))
        write(name, variant)
    variant = [dict(r) for r in rows]
    for r in variant:
        if whole_one(r):
            take(r, rng.choice(shares), ("gpu_milli", "cpu_milli", "memory_mib"))
    write("share_all", variant)
    variant = [dict(r) for r in rows]
    for r in variant:
        if whole_one(r) and rng.random() < 0.3:
            take(r, rng.choice(multis), ("num_gpu", "gpu_milli", "cpu_milli", "memory_mib"))
    write("multi_30", variant)
    variant = [dict(r) for r in rows]
    for r in variant:
        if int(r["num_gpu"]) > 0 and not r["gpu_spec"] and rng.random() < 0.33:
            r["gpu_spec"] = rng.choice(specs)
    write("types_33", variant)


if __name__ == "__main__":
    main()
