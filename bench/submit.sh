#!/usr/bin/env bash
# Durable job submissions/s over gRPC with 32 concurrent clients, against
# pgbench's single-row INSERT tps at 32 clients on the SAME PostgreSQL, in
# the same run (BENCHMARKS.md). synchronous_commit stays on for both.
# Prints one JSON line per round and a final median line:
#   {"bench": "submit", "clients": 32, "jobs_per_s": ..., "pgbench_tps": ..., "ratio": ...}
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${TUPA_BIN_DIR:-$ROOT/build/bin}
CLIENTS=${CLIENTS:-32}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-8}
ROUNDS=${ROUNDS:-3}
PGBIN=/usr/lib/postgresql/15/bin

# shellcheck source=lib/submit_stack.sh
source "$ROOT/bench/lib/submit_stack.sh"
start_submit_stack on
psql "$url" -qAt -c "CREATE TABLE IF NOT EXISTS bench_rows (id BIGSERIAL PRIMARY KEY, payload TEXT NOT NULL)"
echo "INSERT INTO bench_rows (payload) VALUES ('x');" > "$work/insert.sql"

results=()
for round in $(seq "$ROUNDS"); do
  tps=$("$PGBIN/pgbench" -n -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" -f "$work/insert.sql" "$url" 2>/dev/null \
        | awk '/^tps/ {print $3; exit}')
  jobs=$("$BIN/tupa-bench-submit-load" "127.0.0.1:$port" "$CLIENTS" "$SECONDS_PER_RUN" \
         | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs_per_s"])')
  ratio=$(python3 -c "print(round($jobs / $tps, 3))")
  echo "{\"bench\": \"submit_round\", \"round\": $round, \"clients\": $CLIENTS, \"jobs_per_s\": $jobs, \"pgbench_tps\": $tps, \"ratio\": $ratio}"
  results+=("$jobs $tps")
done
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
jobs = statistics.median(r[0] for r in rows)
tps = statistics.median(r[1] for r in rows)
print("{\"bench\": \"submit\", \"clients\": %d, \"jobs_per_s\": %.1f, \"pgbench_tps\": %.1f, \"ratio\": %.3f}"
      % ('"$CLIENTS"', jobs, tps, jobs / tps))'
