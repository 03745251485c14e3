#!/usr/bin/env bash
# tupa-sim replay of the openb trace under every policy, at the speed-ups and
# cluster fractions where a queue forms (docs/benchmarks.md, "Replay").
# Prints one JSON line per run, then a Markdown table (the mean over seeds
# per setting and policy), then, when firstfit ran too, each policy's
# average-JCT and utilisation difference to firstfit with its spread over
# the seeds.
#   bench/replay_matrix.sh                 # the default matrix (~10 min)
#   CONFIGS="1:20000 0.5:20000" POLICIES="firstfit tupa" bench/replay_matrix.sh
#   JITTER=100 SEEDS="1 2 3 4" ...         # arrivals moved by up to 100 s
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${TUPA_BIN_DIR:-$ROOT/build/bin}
TRACES=${TUPA_TRACES:-$ROOT/../shared/traces/openb}
CONFIGS=${CONFIGS:-"1:20000 1:100000 0.5:20000 0.5:100000 0.3:20000"}  # fraction:speedup
POLICIES=${POLICIES:-"firstfit bestfit tupa"}
JITTER=${JITTER:-0}  # seconds of trace time (tupa-sim --arrival-jitter)
SEEDS=${SEEDS:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for c in $CONFIGS; do
  for seed in $SEEDS; do
    for p in $POLICIES; do
      "$BIN/tupa-sim" replay --jobs "$TRACES/alibaba_v2023_openb_jobs_ext.csv" \
        --nodes "$TRACES/openb_node_list_gpu_node.csv" --policy "$p" \
        --node-fraction "${c%%:*}" --arrival-speedup "${c##*:}" \
        --arrival-jitter "$JITTER" --seed "$seed" | tee -a "$out"
    done
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
runs = {}
for r in rows:
    runs.setdefault((r["nodes"], r["arrival_speedup"], r["policy"]), {})[r["seed"]] = r
mean = lambda rs, k: statistics.mean(r[k] for r in rs)
print("| nodes | speed-up | policy | seeds | avg JCT s | p95 JCT s | avg wait s | p95 wait s | window util |")
print("|---|---|---|---|---|---|---|---|---|")
for (nodes, speedup, policy), by_seed in runs.items():
    rs = list(by_seed.values())
    print("| %d | %gx | %s | %d | %.1f | %.1f | %.1f | %.1f | %.4f |" % (
        nodes, speedup, policy, len(rs), mean(rs, "avg_jct_s"), mean(rs, "p95_jct_s"),
        mean(rs, "avg_wait_s"), mean(rs, "p95_wait_s"), mean(rs, "arrival_window_utilisation")))
diffs = []
for (nodes, speedup, policy), by_seed in runs.items():
    base = runs.get((nodes, speedup, "firstfit"))
    if policy == "firstfit" or not base:
        continue
    seeds = sorted(set(by_seed) & set(base))
    d_jct = [by_seed[s]["avg_jct_s"] - base[s]["avg_jct_s"] for s in seeds]
    d_util = [by_seed[s]["arrival_window_utilisation"] - base[s]["arrival_window_utilisation"]
              for s in seeds]
    diffs.append((nodes, speedup, policy, d_jct, d_util))
if diffs:
    print()
    print("| nodes | speed-up | policy | avg JCT - firstfit, s (per seed) | mean | util - firstfit (mean) | util higher |")
    print("|---|---|---|---|---|---|---|")
    for nodes, speedup, policy, d_jct, d_util in diffs:
        print("| %d | %gx | %s | %s | %+.1f | %+.4f | %d of %d |" % (
            nodes, speedup, policy, " ".join("%+.1f" % d for d in d_jct),
            statistics.mean(d_jct), statistics.mean(d_util),
            sum(1 for d in d_util if d > 0), len(d_util)))
PY
