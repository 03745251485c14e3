#!/usr/bin/env bash
# The idle policy against the peers' fixed timers (issue 22; docs/
# benchmarks.md, "Idle policy against fixed timers"): `tupa-sim
# idle-compare` on the openb trace at two cluster fractions and two
# arrival speed-ups, and on the constructed day/night and bursty traces
# (bench/daynight_trace.py, bench/bursty_trace.py; 2 days, seed 1) at both
# fractions. Prints every JSON line, then a Markdown table per setting:
# fleet and idle cost, waits, JCT against the best of timer:5m, timer:20m
# and cost, boots, and the cost rule's fleet cost against the 5-minute
# timer's.
#   bench/idle_compare.sh                                  # ~11 min (one core)
#   SETTINGS="openb:0.5:20000 bursty:1.0:1" bench/idle_compare.sh
#   POLICIES=timer:5m,timer:20m,cost,timer:5m:up=0s JITTER=3600 SEED=2 ...
#   EXTRA="--long-job 24h" bench/idle_compare.sh      # more tupa-sim flags
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${TUPA_BIN_DIR:-$ROOT/build/bin}
TRACES=${TUPA_TRACES:-$ROOT/../shared/traces/openb}
# trace:fraction:speed-up; trace is openb, daynight or bursty
SETTINGS=${SETTINGS:-"openb:0.5:20000 openb:1.0:20000 openb:0.5:5000 \
openb:1.0:5000 daynight:0.5:1 daynight:1.0:1 bursty:0.5:1 bursty:1.0:1"}
POLICIES=${POLICIES:-timer:5m,timer:20m,cost}
JITTER=${JITTER:-0}  # seconds of trace time (tupa-sim --arrival-jitter)
SEED=${SEED:-1}
EXTRA=${EXTRA:-}  # more tupa-sim flags, word-split
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$ROOT/bench/daynight_trace.py" --days 2 >"$work/daynight.csv"
python3 "$ROOT/bench/bursty_trace.py" --days 2 >"$work/bursty.csv"
for s in $SETTINGS; do
  IFS=: read -r trace fraction speedup <<<"$s"
  case "$trace" in
    openb) jobs="$TRACES/alibaba_v2023_openb_jobs_ext.csv" ;;
    daynight | bursty) jobs="$work/$trace.csv" ;;
    *) echo "idle_compare.sh: unknown trace '$trace' in '$s'" >&2; exit 2 ;;
  esac
  "$BIN/tupa-sim" idle-compare --jobs "$jobs" \
    --nodes "$TRACES/openb_node_list_gpu_node.csv" --policy tupa \
    --pricing "$ROOT/deploy/examples/sim/openb-pricing.yaml" \
    --node-fraction "$fraction" --arrival-speedup "$speedup" \
    --arrival-jitter "$JITTER" --seed "$SEED" --idle-policies "$POLICIES" \
    $EXTRA |
    sed "s/^{/{\"setting\": \"$s\", /" | tee -a "$work/out.jsonl"
done
python3 - "$work/out.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
settings = {}
for r in rows:
    settings.setdefault(r["setting"], {})[r["idle_policy"]] = r
issue = ("timer:5m", "timer:20m", "cost")
print("| setting | policy | fleet cost | idle cost | avg wait s | avg JCT s "
      "| vs best JCT | boots |")
print("|---|---|---|---|---|---|---|---|")
for setting, by in settings.items():
    ref = [by[p]["avg_jct_s"] for p in issue if p in by] or \
          [r["avg_jct_s"] for r in by.values()]
    best = min(ref)
    for i, (name, r) in enumerate(by.items()):
        vs = (r["avg_jct_s"] / best - 1) * 100
        print("| %s | %s | %.2f | %.2f | %.1f | %.1f | %+.2f %% | %d |" % (
            setting if i == 0 else "", name, r["fleet_cost"], r["idle_cost"],
            r["avg_wait_s"], r["avg_jct_s"], vs, r["boots"]))
for setting, by in settings.items():
    if "cost" in by and "timer:5m" in by:
        print("%s: cost vs timer:5m fleet cost %+.1f %%" % (
            setting, (by["cost"]["fleet_cost"] / by["timer:5m"]["fleet_cost"]
                      - 1) * 100))
PY
