#!/usr/bin/env bash
# Where the CPU of a durable submission goes: starts a private PostgreSQL
# and a tupa-scheduler like bench/submit.sh, runs tupa-bench-submit-load
# (no pgbench), and prints per run, from /proc ticks:
#   {"bench": "submit_cpu", "clients": 32, "jobs_per_s": ...,
#    "scheduler_us_per_job": ..., "postgres_us_per_job": ...,
#    "load_us_per_job": ..., "machine_idle": ...}
# A diagnostic for docs/benchmarks.md (durable submissions), not part of
# `make bench`. Environment: CLIENTS (32), SECONDS_PER_RUN (6), RUNS (2),
# SYNC (on: synchronous_commit of the private server).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${TUPA_BIN_DIR:-$ROOT/build/bin}
CLIENTS=${CLIENTS:-32}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-6}
RUNS=${RUNS:-2}
HZ=$(getconf CLK_TCK)
CORES=$(nproc)

# shellcheck source=lib/submit_stack.sh
source "$ROOT/bench/lib/submit_stack.sh"
start_submit_stack ${SYNC:-on}
"$BIN/tupa-bench-submit-load" "127.0.0.1:$port" "$CLIENTS" 2 >/dev/null  # warm-up

# utime + stime ticks of the given pids (those that still exist).
ticks() {
  local total=0 pid
  for pid in "$@"; do
    [[ -r /proc/$pid/stat ]] || continue
    total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
# Every process of the private server: its postmaster and its children.
pg_pids() {
  local pm
  pm=$(head -1 "$work/pg/data/postmaster.pid")
  echo "$pm" $(pgrep -P "$pm" || true)
}
idle_ticks() { awk '/^cpu / {print $5 + $6}' /proc/stat; }

for run in $(seq "$RUNS"); do
  s0=$(ticks "$sched_pid"); p0=$(ticks $(pg_pids)); i0=$(idle_ticks)
  out=$(/usr/bin/time -f "%U %S" -o "$work/load.time" \
        "$BIN/tupa-bench-submit-load" "127.0.0.1:$port" "$CLIENTS" "$SECONDS_PER_RUN")
  s1=$(ticks "$sched_pid"); p1=$(ticks $(pg_pids)); i1=$(idle_ticks)
  python3 - "$out" "$(cat "$work/load.time")" <<PY
import json, sys
load = json.loads(sys.argv[1])
user, system = map(float, sys.argv[2].split()[-2:])
jobs = load["jobs"]
us = lambda ticks: round(ticks / $HZ / jobs * 1e6, 1)
print(json.dumps({"bench": "submit_cpu", "clients": $CLIENTS,
                  "jobs_per_s": load["jobs_per_s"],
                  "scheduler_us_per_job": us($s1 - $s0),
                  "postgres_us_per_job": us($p1 - $p0),
                  "load_us_per_job": round((user + system) / jobs * 1e6, 1),
                  "machine_idle": round(($i1 - $i0) / $HZ / ($CORES * $SECONDS_PER_RUN), 3)}))
PY
done
