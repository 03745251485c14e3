# The stack the submit benchmarks measure (sourced by bench/submit.sh and
# bench/submit_cpu.sh): a private PostgreSQL and one tupa-scheduler on free
# ports, torn down on exit. Needs ROOT and BIN set.
#
#   start_submit_stack SYNC [FLAG...]
#     SYNC: the server's synchronous_commit (on/off); FLAGs go to
#     tupa-scheduler as given (e.g. --worker-timeout 15s).
#
#   restart_scheduler
#     kill -9 the scheduler and start it again with the same flags on the
#     same database and ports (returns at once; it rebuilds, then serves).
#
# Sets: work (scratch directory), url (database URL), port (the
# scheduler's gRPC port), sched_pid. /metrics stays on, as in production,
# on a free port of its own.

# shellcheck source=../../scripts/lib/ports.sh
source "$ROOT/scripts/lib/ports.sh"

work=$(mktemp -d /tmp/tupa-bench-submit.XXXXXX)
chmod 755 "$work"  # the postgres user reads it when the bench runs as root
sched_pid=

stop_submit_stack() {
  [[ -n $sched_pid ]] && kill "$sched_pid" 2>/dev/null && wait "$sched_pid" 2>/dev/null || true
  "$ROOT/scripts/pg" stop "$work/pg" >/dev/null 2>&1 || true
  "$ROOT/scripts/pg" purge "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap stop_submit_stack EXIT

start_submit_stack() {
  local sync=$1 metrics_port
  shift
  TUPA_PG_SYNCHRONOUS_COMMIT=$sync "$ROOT/scripts/pg" start "$work/pg" >/dev/null
  url=$("$ROOT/scripts/pg" url "$work/pg")
  port=$(pick_free_port) || { echo "no free TCP port" >&2; exit 1; }
  metrics_port=$port
  while [[ $metrics_port == "$port" ]]; do
    metrics_port=$(pick_free_port) || { echo "no free TCP port" >&2; exit 1; }
  done
  sched_flags=(--listen "127.0.0.1:$port" --metrics-listen "127.0.0.1:$metrics_port"
    --data-dir "$work/scheduler" --auth=false "$@")
  TUPA_DATABASE_URL=$url "$BIN/tupa-scheduler" "${sched_flags[@]}" >"$work/scheduler.log" 2>&1 &
  sched_pid=$!
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return
    kill -0 "$sched_pid" 2>/dev/null || break
    sleep 0.1
  done
  tail -n 20 "$work/scheduler.log" >&2
  echo "tupa-scheduler did not start" >&2
  exit 1
}

restart_scheduler() {
  kill -9 "$sched_pid" 2>/dev/null || true
  wait "$sched_pid" 2>/dev/null || true
  TUPA_DATABASE_URL=$url "$BIN/tupa-scheduler" "${sched_flags[@]}" >>"$work/scheduler.log" 2>&1 &
  sched_pid=$!
}
