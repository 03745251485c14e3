#!/usr/bin/env bash
# tupa-sim replay of the openb trace under every policy, at the speed-ups and
# cluster fractions where a queue forms (docs/benchmarks.md, "Replay").
# Prints one JSON line per run, then a Markdown table.
#   bench/replay_matrix.sh                 # the default matrix (~10 min)
#   CONFIGS="1:20000 0.5:20000" POLICIES="firstfit tupa" bench/replay_matrix.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${TUPA_BIN_DIR:-$ROOT/build/bin}
TRACES=${TUPA_TRACES:-$ROOT/../shared/traces/openb}
CONFIGS=${CONFIGS:-"1:20000 1:100000 0.5:20000 0.5:100000 0.3:20000"}  # fraction:speedup
POLICIES=${POLICIES:-"firstfit bestfit tupa"}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for c in $CONFIGS; do
  for p in $POLICIES; do
    "$BIN/tupa-sim" replay --jobs "$TRACES/alibaba_v2023_openb_jobs_ext.csv" \
      --nodes "$TRACES/openb_node_list_gpu_node.csv" --policy "$p" \
      --node-fraction "${c%%:*}" --arrival-speedup "${c##*:}" | tee -a "$out"
  done
done
python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| nodes | speed-up | policy | avg JCT s | p95 JCT s | avg wait s | p95 wait s | window util |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    print("| %d | %gx | %s | %.1f | %.1f | %.1f | %.1f | %.4f |" % (
        r["nodes"], r["arrival_speedup"], r["policy"], r["avg_jct_s"],
        r["p95_jct_s"], r["avg_wait_s"], r["p95_wait_s"],
        r["arrival_window_utilisation"]))
PY
