#!/usr/bin/env bash
# The whole control plane under a fleet (BENCHMARKS.md): a private
# PostgreSQL (synchronous_commit on) and a real tupa-scheduler on free
# ports, driven by tupa-fleet-sim; prints the simulator's JSON line.
#
#   bench/fleet.sh [--real-workers N] [--worker-timeout D] [SIM FLAGS...]
#
# SIM FLAGS go to tupa-fleet-sim as given (e.g. --workers 1000 --jobs
# 20000 --runtime-ms 2000-5000); --scheduler and --scheduler-pid are set
# here. With --real-workers N, N real tupa-worker processes (8 emulated
# GPUs each) are started instead and the simulator runs with --workers 0:
# it only submits (jobs run `true`) and probes, and sees completion by
# polling GetJob. Everything this script starts is stopped by pid on exit.
#
# Environment: TUPA_BIN_DIR (default build/bin), FLEET_KEEP=1 keeps the
# scratch directory (logs) and prints its path.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${TUPA_BIN_DIR:-$ROOT/build/bin}
# shellcheck source=../scripts/lib/ports.sh
source "$ROOT/scripts/lib/ports.sh"

real_workers=0
worker_timeout=15s
sim_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --real-workers) real_workers=$2; shift 2 ;;
    --worker-timeout) worker_timeout=$2; shift 2 ;;
    *) sim_args+=("$1"); shift ;;
  esac
done
for b in tupa-scheduler tupa-fleet-sim; do
  [[ -x $BIN/$b ]] || { echo "bench/fleet.sh: $BIN/$b not found (build it first)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/tupa-bench-fleet.XXXXXX)
chmod 755 "$work"  # the postgres user reads it when the bench runs as root
sched_pid=
worker_pids=()
cleanup() {
  local pid
  for pid in "${worker_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${worker_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -n $sched_pid ]]; then
    kill "$sched_pid" 2>/dev/null || true
    wait "$sched_pid" 2>/dev/null || true
  fi
  "$ROOT/scripts/pg" stop "$work/pg" >/dev/null 2>&1 || true
  if [[ ${FLEET_KEEP:-0} == 1 ]]; then
    echo "bench/fleet.sh: kept $work" >&2
  else
    "$ROOT/scripts/pg" purge "$work/pg" >/dev/null 2>&1 || true
    rm -rf "$work"
  fi
}
trap cleanup EXIT

TUPA_PG_SYNCHRONOUS_COMMIT=on "$ROOT/scripts/pg" start "$work/pg" >/dev/null
url=$("$ROOT/scripts/pg" url "$work/pg")
port=$(pick_free_port) || { echo "no free TCP port" >&2; exit 1; }
metrics_port=$port
while [[ $metrics_port == "$port" ]]; do
  metrics_port=$(pick_free_port) || { echo "no free TCP port" >&2; exit 1; }
done
TUPA_DATABASE_URL=$url "$BIN/tupa-scheduler" --listen "127.0.0.1:$port" \
  --metrics-listen "127.0.0.1:$metrics_port" --worker-timeout "$worker_timeout" \
  --data-dir "$work/scheduler" --auth=false >"$work/scheduler.log" 2>&1 &
sched_pid=$!
up=0
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
  kill -0 "$sched_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ $up != 1 ]]; then
  tail -n 20 "$work/scheduler.log" >&2
  echo "bench/fleet.sh: tupa-scheduler did not start" >&2
  exit 1
fi

if (( real_workers > 0 )); then
  [[ -x $BIN/tupa-worker ]] || { echo "bench/fleet.sh: $BIN/tupa-worker not found" >&2; exit 1; }
  for k in $(seq "$real_workers"); do
    "$BIN/tupa-worker" --scheduler "127.0.0.1:$port" --id "worker-$k" \
      --emulated-gpus 8 --work-dir "$work/workers/worker-$k" --metrics-listen "" \
      >"$work/worker-$k.log" 2>&1 &
    worker_pids+=($!)
  done
  sim_args=(--workers 0 --wait-workers "$real_workers" "${sim_args[@]}")
fi

"$BIN/tupa-fleet-sim" --scheduler "127.0.0.1:$port" --scheduler-pid "$sched_pid" \
  "${sim_args[@]}" 2>"$work/sim.log" || {
  rc=$?
  tail -n 20 "$work/sim.log" >&2
  tail -n 20 "$work/scheduler.log" >&2
  exit "$rc"
}
