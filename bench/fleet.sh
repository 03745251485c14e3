#!/usr/bin/env bash
# The whole control plane under a fleet (BENCHMARKS.md): a private
# PostgreSQL (synchronous_commit on) and a real tupa-scheduler on free
# ports, driven by tupa-fleet-sim; prints the simulator's JSON line.
#
#   bench/fleet.sh [--real-workers N] [--worker-timeout D] [--restart-check]
#                  [--reader] [--sim-nice N] [SIM FLAGS...]
#
# SIM FLAGS go to tupa-fleet-sim as given (e.g. --workers 1000 --jobs
# 20000 --runtime-ms 2000-5000); --scheduler and --scheduler-pid are set
# here. With --real-workers N, N real tupa-worker processes (8 emulated
# GPUs each) are started instead and the simulator runs with --workers 0:
# it only submits (jobs run `true`) and probes, and sees completion by
# polling GetJob. With --restart-check, once the simulator is done the
# scheduler is killed (-9) and started again on the same database: a second
# JSON line gives how long it took to serve again (bench "fleet_restart":
# the first answered ListJobs) and what the rebuilt view holds. With
# --reader, a second tupa-fleet-sim process (--reader) probes the same reads
# from outside the fleet's process, from the moment the workers are up
# until the simulator is done, and prints a "fleet_reader" line after the
# simulator's: the reads as a user on another machine sees them, not
# queued behind the simulated workers' callbacks. Everything this script
# starts is stopped by pid on exit.
#
# --sim-nice N runs the simulated fleet (not the reader) at nice N: on one
# machine the 1,000 simulated workers take CPU that real workers, on
# their own hosts, never take from the scheduler; at a lower priority
# they get what the scheduler and PostgreSQL leave.
#
# Environment: TUPA_BIN_DIR (default build/bin). TUPA_BENCH_PG_STATS=FILE:
# PostgreSQL runs with pg_stat_statements and FILE gets, after the run,
# its statements by total execution time (calls, rows, ms): what the
# database did per job.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${TUPA_BIN_DIR:-$ROOT/build/bin}

real_workers=0
worker_timeout=15s
restart_check=0
reader=0
sim_nice=0
sim_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --real-workers) real_workers=$2; shift 2 ;;
    --worker-timeout) worker_timeout=$2; shift 2 ;;
    --restart-check) restart_check=1; shift ;;
    --reader) reader=1; shift ;;
    --sim-nice) sim_nice=$2; shift 2 ;;
    *) sim_args+=("$1"); shift ;;
  esac
done
for b in tupa-scheduler tupa-fleet-sim; do
  [[ -x $BIN/$b ]] || { echo "bench/fleet.sh: $BIN/$b not found (build it first)" >&2; exit 1; }
done

# The private PostgreSQL and scheduler of the submit benchmarks.
# shellcheck source=lib/submit_stack.sh
source "$ROOT/bench/lib/submit_stack.sh"
worker_pids=()
cleanup() {
  local pid
  if [[ -n ${reader_pid:-} ]]; then kill "$reader_pid" 2>/dev/null || true; wait "$reader_pid" 2>/dev/null || true; fi
  if [[ -n ${perf_pid:-} ]]; then kill -INT "$perf_pid" 2>/dev/null || true; wait "$perf_pid" 2>/dev/null || true; fi
  for pid in "${worker_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${worker_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  stop_submit_stack
}
trap cleanup EXIT
if [[ -n ${TUPA_BENCH_PG_STATS:-} ]]; then
  export TUPA_PG_EXTRA_CONF="shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track_planning = on"
fi
start_submit_stack on --worker-timeout "$worker_timeout"

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

# TUPA_BENCH_PERF=FILE: record the scheduler's CPU profile (perf record
# -g) for the whole run into FILE, to see where the time goes
# (`perf report -i FILE --no-children`).
perf_pid=
if [[ -n ${TUPA_BENCH_PERF:-} ]]; then
  perf record ${TUPA_BENCH_PERF_ARGS:--g -F 499} -p "$sched_pid" -o "$TUPA_BENCH_PERF" >"$work/perf.log" 2>&1 &
  perf_pid=$!
fi
reader_pid=
if (( reader )); then
  fleet_size=$real_workers
  if (( fleet_size == 0 )); then
    fleet_size=100  # tupa-fleet-sim's default --workers
    for ((i = 0; i < ${#sim_args[@]}; i++)); do
      case ${sim_args[i]} in
        --workers) fleet_size=${sim_args[i + 1]} ;;
        --workers=*) fleet_size=${sim_args[i]#--workers=} ;;
      esac
    done
  fi
  "$BIN/tupa-fleet-sim" --reader --scheduler "127.0.0.1:$port" --wait-workers "$fleet_size" \
    --duration-limit-s 7200 >"$work/reader.json" 2>"$work/reader.log" &
  reader_pid=$!
fi
nice -n "$sim_nice" "$BIN/tupa-fleet-sim" --scheduler "127.0.0.1:$port" --scheduler-pid "$sched_pid" \
  "${sim_args[@]}" 2>"$work/sim.log" || {
  rc=$?
  tail -n 20 "$work/sim.log" >&2
  tail -n 20 "$work/scheduler.log" >&2
  exit "$rc"
}
if [[ -n $reader_pid ]]; then
  kill -TERM "$reader_pid" 2>/dev/null || true
  wait "$reader_pid" || { echo "bench/fleet.sh: the reader failed:" >&2; tail -n 5 "$work/reader.log" >&2; }
  reader_pid=
  cat "$work/reader.json"
fi

if [[ -n ${TUPA_BENCH_PG_STATS:-} ]]; then
  pg_stats_sql="SELECT calls, rows, round(total_exec_time::numeric, 1) AS exec_ms,
      round(total_plan_time::numeric, 1) AS plan_ms, round(mean_exec_time::numeric, 3) AS mean_exec_ms, left(regexp_replace(query, '\s+', ' ', 'g'), 160)
    FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 25"
  { psql "$url" -qX -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null &&
    psql "$url" -X -c "SELECT sum(xact_commit) AS commits FROM pg_stat_database" &&
    psql "$url" -X -c "$pg_stats_sql"; } >"$TUPA_BENCH_PG_STATS" 2>&1 || true
fi

if (( restart_check )); then
  start_ns=$(date +%s%N)
  restart_scheduler
  served=0
  for _ in $(seq 600); do
    if TUPA_SCHEDULER="127.0.0.1:$port" "$BIN/tupa" list --limit 1 -o json >/dev/null 2>&1; then
      served=1; break
    fi
    kill -0 "$sched_pid" 2>/dev/null || break
    sleep 0.05
  done
  end_ns=$(date +%s%N)
  rebuilt=$(grep -o 'rebuilt from PostgreSQL: [0-9]* active jobs' "$work/scheduler.log" | tail -n 1 | grep -o '[0-9]*' || true)
  rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$sched_pid/status" 2>/dev/null || echo 0)
  awk -v served="$served" -v ns="$((end_ns - start_ns))" -v jobs="${rebuilt:-0}" -v kb="$rss_kb" \
    'BEGIN { printf "{\"bench\": \"fleet_restart\", \"served\": %d, \"serving_s\": %.2f, \"active_jobs_rebuilt\": %d, \"scheduler_rss_mb\": %.1f}\n", served, ns / 1e9, jobs, kb / 1024 }'
fi
