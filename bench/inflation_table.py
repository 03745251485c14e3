#!/usr/bin/env python3
"""Runs `tupa-sim inflation` for pod lists x policies, one at a time, and
prints a Markdown table next to the FGD paper's published figures
(../shared/traces/fgd/fgd_openb_alloc_summary.csv): per cell the mean GPU
allocation of the seeds and, in brackets, the spread (max - min) of the
seeds. A list is named by its file; its paper row by the file's stem.

  bench/inflation_table.py --sim build/bin/tupa-sim \\
      --nodes ../shared/traces/openb/openb_node_list_gpu_node.csv \\
      --paper ../shared/traces/fgd/fgd_openb_alloc_summary.csv \\
      [--seeds 10] [--policies bestfit,fgd,tupa] LIST.csv...
"""
import argparse
import csv
import json
import os
import subprocess


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", required=True)
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--paper", required=True)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--policies", default="bestfit,fgd,tupa")
    ap.add_argument("lists", nargs="+")
    args = ap.parse_args()
    paper = {}
    with open(args.paper) as f:
        for r in csv.DictReader(f):
            paper[(r["workload"], r["policy"].split("-", 1)[1])] = float(
                r["alloc_pct_final"])
    policies = args.policies.split(",")
    head = ["pod list"] + policies + ["BestFit (paper)", "FGD (paper)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for path in args.lists:
        stem = os.path.splitext(os.path.basename(path))[0]
        cells = [stem.replace("openb_pod_list_", "")]
        for p in policies:
            out = subprocess.run(
                [args.sim, "inflation", "--nodes", args.nodes, "--pods", path,
                 "--seeds", str(args.seeds), "--policy", p],
                check=True, capture_output=True, text=True).stdout
            r = json.loads(out)
            seeds = r["per_seed_pct"]
            cells.append("%.2f (%.2f)" % (r["gpu_alloc_pct"],
                                          max(seeds) - min(seeds)))
        for p in ("BestFit", "FGD"):
            v = paper.get((stem, p))
            cells.append("%.2f" % v if v is not None else "-")
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
