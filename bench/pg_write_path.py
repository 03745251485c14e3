#!/usr/bin/env python3
"""PostgreSQL's CPU per job on the scheduler's write path, without the noise
of the whole fleet run (docs/benchmarks.md, "The database's write path").

  bench/pg_write_path.py [--jobs 20000] [--skip-migration 0017] [--runs 2]

Starts a private PostgreSQL (scripts/pg, in a temporary directory), applies
the schema migrations (all, or all but those named by --skip-migration, to
compare a schema change with the one before), and replays the statements
the scheduler's batches send for N jobs, one phase at a time, in the
batch sizes of a saturated fleet run: submit (8 jobs a statement), assign
(274: job update, allocation insert, event), running (60), finish (24:
allocation close, then job update and event, in one transaction). The
statements are the shapes of scheduler/store/job_store_batch.cc and
job_store_submit.cc with literal arrays (psql), so parse and plan are
included in every phase alike. Prints one JSON line per run: the backend's
CPU seconds per phase (from /proc), and how many job updates were
heap-only.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVENT = ("e AS (INSERT INTO job_events (job_id, attempt, state, message) "
         "SELECT id, attempt, ")


def array(values, sql_type):
    return "ARRAY[%s]::%s[]" % (",".join(values), sql_type)


def repeat(value, k, sql_type):
    """An array of k copies of one SQL literal."""
    return array([value] * k, sql_type)


def batches(n, size):
    for start in range(1, n + 1, size):
        yield [str(i) for i in range(start, min(n + 1, start + size))]


def phases(n):
    """The statements of each phase, in order."""
    spec = "'\\\\x" + "0a" * 180 + "'"  # a serialized JobSpec's size
    out = {"submit": [], "assign": [], "running": [], "finish": []}
    out["setup"] = ["INSERT INTO workers (id, state) SELECT 'sim-' || g, 'UP' "
                    "FROM generate_series(0, 999) g;"]
    for ids in batches(n, 8):
        k = len(ids)
        out["submit"].append(
            "WITH input AS MATERIALIZED (SELECT nextval('jobs_id_seq') AS id, "
            "t.* FROM unnest(%s, %s, %s, %s, %s, %s, %s) WITH ORDINALITY AS "
            "t(name, user_name, team, priority, spec, key, array_id, ord)), "
            "job AS (INSERT INTO jobs (id, name, user_name, team, priority, "
            "spec_proto, state, idempotency_key, array_id) SELECT id, name, "
            "user_name, team, priority, spec, 'PENDING', NULLIF(key, ''), "
            "NULLIF(array_id, 0) FROM input ORDER BY user_name, key, ord "
            "ON CONFLICT (user_name, idempotency_key) WHERE idempotency_key "
            "IS NOT NULL DO NOTHING RETURNING id, created_at) "
            "SELECT input.ord, job.id FROM job JOIN input USING (id);" %
            (array(["'job-%s'" % i for i in ids], "text"),
             repeat("'fleet'", k, "text"), repeat("'fleet'", k, "text"),
             repeat("0", k, "int"), repeat(spec, k, "bytea"),
             array(["'key-%s'" % i for i in ids], "text"),
             repeat("0", k, "bigint")))
    for ids in batches(n, 274):
        k = len(ids)
        one = repeat("1", k, "int")
        out["assign"].append(
            "BEGIN; WITH u AS (UPDATE jobs j SET state = 'ASSIGNED', "
            "updated_at = now() FROM unnest(%s, %s) AS t(id, attempt) WHERE "
            "j.id = t.id AND j.attempt = t.attempt AND j.state = 'PENDING' "
            "RETURNING j.id, j.attempt), n AS (INSERT INTO allocations "
            "(job_id, attempt, worker_id, node_rank, device_indexes, "
            "gpu_share, master_port, region, gpu_type, gpus, started_at) "
            "SELECT n.job_id, n.attempt, n.worker_id, n.node_rank, "
            "n.devices::int[], n.share, n.port, n.region, n.gpu_type, n.gpus, "
            "now() FROM unnest(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) AS "
            "n(job_id, attempt, worker_id, node_rank, devices, share, port, "
            "region, gpu_type, gpus) JOIN u ON u.id = n.job_id AND u.attempt "
            "= n.attempt), %s'ASSIGNED', '' FROM u) SELECT id, attempt FROM "
            "u; COMMIT;" %
            (array(ids, "bigint"), one, array(ids, "bigint"), one,
             array(["'sim-%d'" % (int(i) % 1000) for i in ids], "text"),
             repeat("0", k, "int"),
             array(["'{%d}'" % (int(i) % 8) for i in ids], "text"),
             repeat("1", k, "float8"), repeat("0", k, "int"),
             repeat("'sim'", k, "text"), repeat("'SIM'", k, "text"),
             repeat("1", k, "float8"), EVENT))
    for ids in batches(n, 60):
        one = repeat("1", len(ids), "int")
        out["running"].append(
            "BEGIN; WITH u AS (UPDATE jobs j SET state = 'RUNNING', "
            "updated_at = now(), started_at = COALESCE(j.started_at, now()) "
            "FROM unnest(%s, %s) AS t(id, attempt) WHERE j.id = t.id AND "
            "j.attempt = t.attempt AND j.state = 'ASSIGNED' RETURNING j.id, "
            "j.attempt), %s'RUNNING', '' FROM u) SELECT id, attempt FROM u; "
            "COMMIT;" % (array(ids, "bigint"), one, EVENT))
    for ids in batches(n, 24):
        k = len(ids)
        one = repeat("1", k, "int")
        out["finish"].append(
            "BEGIN; UPDATE allocations a SET ended_at = GREATEST(a.started_at, "
            "now()), cost = NULLIF(t.cost, '')::numeric, currency = "
            "NULLIF(t.currency, ''), exit_code = NULLIF(t.exit_code, '')::int "
            "FROM unnest(%s, %s, %s, %s, %s, %s) AS t(id, attempt, node_rank, "
            "cost, currency, exit_code) WHERE a.job_id = t.id AND a.attempt = "
            "t.attempt AND a.node_rank = t.node_rank AND a.ended_at IS NULL; "
            "WITH u AS (UPDATE jobs j SET state = t.state, exit_code = "
            "t.exit_code, message = t.message, finished_at = now(), updated_at "
            "= now() FROM unnest(%s, %s, %s, %s, %s) AS t(id, attempt, state, "
            "exit_code, message) WHERE j.id = t.id AND j.attempt = t.attempt "
            "AND j.state IN ('PENDING', 'ASSIGNED', 'RUNNING') RETURNING "
            "j.id, j.attempt, t.state, t.message), %sstate, message FROM u) "
            "SELECT id, attempt FROM u; COMMIT;" %
            (array(ids, "bigint"), one, repeat("0", k, "int"),
             repeat("'0.01'", k, "text"), repeat("'USD'", k, "text"),
             repeat("'0'", k, "text"), array(ids, "bigint"), one,
             repeat("'SUCCEEDED'", k, "text"), repeat("0", k, "int"),
             repeat("''", k, "text"), EVENT))
    return out


def backend_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def psql(url, sql):
    return subprocess.run(["psql", url, "-qXAt", "-v", "ON_ERROR_STOP=1",
                           "-c", sql], check=True, capture_output=True,
                          text=True).stdout


def run_once(url, migrations, statements, work):
    psql(url, "DROP SCHEMA public CASCADE; CREATE SCHEMA public;")
    for m in migrations:
        subprocess.run(["psql", url, "-qX", "-v", "ON_ERROR_STOP=1", "-f", m],
                       check=True, capture_output=True)
    session = subprocess.Popen(
        ["psql", url, "-qX", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    marker = os.path.join(work, "marker")

    def send_and_wait(sql):
        # The commits need no disk wait here: CPU is what is measured.
        if os.path.exists(marker):
            os.remove(marker)
        session.stdin.write(sql + "\n\\o %s\nSELECT 1;\n\\o\n" % marker)
        session.stdin.flush()
        while not (os.path.exists(marker) and os.path.getsize(marker) > 0):
            if session.poll() is not None:
                sys.exit("bench/pg_write_path.py: psql failed")
            time.sleep(0.05)

    send_and_wait("SET synchronous_commit = off;")
    pid = int(psql(url, "SELECT pid FROM pg_stat_activity WHERE "
                   "application_name = 'psql' AND pid <> pg_backend_pid() "
                   "ORDER BY backend_start DESC LIMIT 1").strip())
    cpu = {}
    for phase in ("setup", "submit", "assign", "running", "finish"):
        before = backend_cpu_s(pid)
        send_and_wait("\n".join(statements[phase]))
        cpu[phase] = round(backend_cpu_s(pid) - before, 2)
    session.stdin.close()
    session.wait()
    # Stats reach the shared view when the backend ends its session.
    time.sleep(1)
    updates, hot = psql(url, "SELECT n_tup_upd, n_tup_hot_upd FROM "
                        "pg_stat_user_tables WHERE relname = 'jobs'"
                        ).strip().split("|")
    del cpu["setup"]
    return cpu, int(updates), int(hot)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--skip-migration", action="append", default=[],
                    help="a migration number to leave out (e.g. 0017)")
    args = ap.parse_args()
    migrations = sorted(
        m for m in glob.glob(os.path.join(ROOT, "scheduler/store/migrations/"
                                          "[0-9]*.sql"))
        if not any(os.path.basename(m).startswith(s)
                   for s in args.skip_migration))
    statements = phases(args.jobs)
    with tempfile.TemporaryDirectory(prefix="tupa-pgwp-") as work:
        pg = [os.path.join(ROOT, "scripts/pg")]
        subprocess.run(pg + ["start", os.path.join(work, "db")], check=True,
                       capture_output=True)
        try:
            url = subprocess.run(pg + ["url", os.path.join(work, "db")],
                                 check=True, capture_output=True,
                                 text=True).stdout.strip()
            for _ in range(args.runs):
                cpu, updates, hot = run_once(url, migrations, statements, work)
                print(json.dumps({
                    "bench": "pg_write_path", "jobs": args.jobs,
                    "skipped_migrations": args.skip_migration,
                    "backend_cpu_s": cpu,
                    "backend_cpu_ms_per_job": round(
                        1000 * sum(cpu.values()) / args.jobs, 3),
                    "job_updates": updates, "heap_only_updates": hot}),
                      flush=True)
        finally:
            subprocess.run(pg + ["purge", os.path.join(work, "db")],
                           capture_output=True)


if __name__ == "__main__":
    main()
