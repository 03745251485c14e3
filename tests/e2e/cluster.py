"""Shared helpers for tupa end-to-end tests (Python stdlib only).

A `Cluster` is a private local stack (scripts/cluster) in a temporary
TUPA_HOME: its own PostgreSQL, scheduler and workers on free loopback
ports, so several tests (or a developer's own stack) never collide. It is a
context manager and always tears the stack down, dumping the tail of every
component log when the block raised, so a failing test explains itself:

    from cluster import Cluster

    with Cluster(workers=2, gpus_per_worker=2) as c:
        job = c.submit("--nodes", "2", "--gpus", "2", "--", "sh", "-c", "env")
        c.wait_job(job["id"], "SUCCEEDED", timeout=60)
        c.kill("worker-2"); c.up()       # restart just that one

Environment: TUPA_SOURCE_DIR (default: this file's repo), TUPA_BIN_DIR or
TUPA_BUILD_DIR (default: build/bin), TUPA_E2E_KEEP=1 keeps the state
directory (and the stack stays up) for debugging.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SOURCE_DIR = os.environ.get("TUPA_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BIN_DIR = os.environ.get("TUPA_BIN_DIR") or os.path.join(
    os.environ.get("TUPA_BUILD_DIR") or os.path.join(SOURCE_DIR, "build"), "bin")
CLUSTER_SCRIPT = os.path.join(SOURCE_DIR, "scripts", "cluster")
PG_SCRIPT = os.path.join(SOURCE_DIR, "scripts", "pg")

# Exit codes of the CLI (DESIGN §3).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_DENIED, EXIT_UNAVAILABLE = range(6)

TERMINAL_STATES = ("SUCCEEDED", "FAILED", "CANCELLED")


def bin_path(name, bin_dir=None):
    """Path of a built binary; raises AssertionError naming the fix."""
    path = os.path.join(bin_dir or BIN_DIR, name)
    if not os.access(path, os.X_OK):
        raise AssertionError(f"{path} not found: run 'make build' first")
    return path


def wait_for(predicate, timeout, interval=0.2, message="condition"):
    """Calls predicate() until it returns a truthy value, which is returned.

    Raises TimeoutError naming `message` (and the last value seen).
    """
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {message} (last: {last!r})")
        time.sleep(interval)


def state_name(job):
    """'SUCCEEDED' for a job dict whose state is 'JOB_STATE_SUCCEEDED' (or 4)."""
    state = job.get("state", "")
    if isinstance(state, int):
        names = ["UNSPECIFIED", "PENDING", "ASSIGNED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]
        return names[state] if 0 <= state < len(names) else str(state)
    return state.replace("JOB_STATE_", "")


class CliResult:
    """Outcome of one CLI run: code, stdout, stderr, and .json (parsed or None)."""

    def __init__(self, args, code, stdout, stderr):
        self.args, self.code, self.stdout, self.stderr = args, code, stdout, stderr
        try:
            self.json = json.loads(stdout) if stdout.strip() else None
        except ValueError:
            self.json = None

    def __repr__(self):
        return (f"CliResult(args={self.args!r}, code={self.code}, "
                f"stdout={self.stdout[-2000:]!r}, stderr={self.stderr[-2000:]!r})")


class Cluster:
    """A private local stack; see the module docstring."""

    def __init__(self, workers=2, gpus_per_worker=2, gpu_type=None, region=None,
                 scheduler_config=None, worker_flags=(), worker_timeout=None,
                 env=None, up_timeout=120, bin_dir=None):
        self.bin_dir = bin_dir or BIN_DIR
        self.workers = workers
        self.gpus_per_worker = gpus_per_worker
        self.gpu_type = gpu_type
        self.region = region
        self.scheduler_config = scheduler_config
        self.worker_flags = list(worker_flags)
        self.worker_timeout = worker_timeout
        self.extra_env = dict(env or {})
        self.up_timeout = up_timeout
        self.home = None
        self.env = {}          # TUPA_SCHEDULER, TUPA_DATABASE_URL, ... from `cluster env`
        self._started = False

    # ------------------------------------------------------------ lifecycle
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop(failed=True)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop(failed=exc_type is not None)
        return False

    def start(self):
        """Creates the temporary TUPA_HOME and brings the stack up."""
        self.home = tempfile.mkdtemp(prefix="tupa-e2e-")
        # PostgreSQL runs as `postgres` when we are root: let it reach the
        # data directory (mkdtemp makes 0700).
        os.chmod(self.home, 0o755)
        self._started = True
        args = []
        if self.workers is not None:
            args += ["--workers", str(self.workers)]
        if self.gpus_per_worker is not None:
            args += ["--gpus-per-worker", str(self.gpus_per_worker)]
        if self.gpu_type:
            args += ["--gpu-type", self.gpu_type]
        if self.region:
            args += ["--region", self.region]
        if self.scheduler_config:
            args += ["--scheduler-config", self.scheduler_config]
        if self.worker_flags:
            args += ["--"] + self.worker_flags
        self.up(*args)
        self.env = self._read_env()

    def up(self, *args):
        """Runs `scripts/cluster up ARGS` (idempotent: restarts what is down)."""
        return self.script("up", *args, timeout=self.up_timeout)

    def stop(self, failed=False):
        """Tears the stack down (down --purge) unless TUPA_E2E_KEEP=1."""
        if not self._started:
            return
        self._started = False
        if failed:
            self.dump_logs()
        if os.environ.get("TUPA_E2E_KEEP") == "1":
            sys.stderr.write(f"TUPA_E2E_KEEP=1: stack left running in {self.home}\n")
            return
        try:
            self.script("down", "--purge", timeout=120)
        finally:
            if self.home and os.path.isdir(self.home):
                shutil.rmtree(self.home, ignore_errors=True)

    # ------------------------------------------------------------ scripts
    def script_env(self):
        env = dict(os.environ)
        env.update(self.extra_env)
        env["TUPA_HOME"] = self.home
        env["TUPA_BIN_DIR"] = self.bin_dir
        if self.worker_timeout:
            env["TUPA_CLUSTER_WORKER_TIMEOUT"] = str(self.worker_timeout)
        return env

    def script(self, *args, timeout=60, check=True):
        """Runs scripts/cluster ARGS; returns CompletedProcess (text)."""
        proc = subprocess.run([CLUSTER_SCRIPT, *args], env=self.script_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"scripts/cluster {' '.join(args)} exited {proc.returncode}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return proc

    def _read_env(self):
        out = self.script("env").stdout
        env = {}
        for line in out.splitlines():
            line = line.strip()
            if line.startswith("export "):
                line = line[len("export "):]
            for assignment in line.split():
                key, sep, value = assignment.partition("=")
                if sep:
                    env[key] = value
        for key in ("TUPA_SCHEDULER", "TUPA_DATABASE_URL", "TUPA_METRICS_URL"):
            if key not in env:
                raise AssertionError(f"scripts/cluster env did not print {key}: {out!r}")
        return env

    # ------------------------------------------------------------ components
    def pid(self, name):
        """The pid of a component (postgres, scheduler, worker-K) or None."""
        if name == "postgres":
            proc = subprocess.run([PG_SCRIPT, "pid", os.path.join(self.home, "pg")],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            return int(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None
        try:
            with open(os.path.join(self.home, "run", f"{name}.pid")) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            return None
        return pid if _alive(pid) else None

    def kill(self, name):
        """SIGKILLs one component and waits until it is gone."""
        pid = self.pid(name)
        self.script("kill", name)
        if pid:
            wait_for(lambda: not _alive(pid), 10, message=f"{name} (pid {pid}) to die")

    def restart(self, name):
        """Kills one component and starts it again (same ports)."""
        self.kill(name)
        self.up()

    def log_path(self, name):
        return os.path.join(self.home, "logs", f"{name}.log")

    def log(self, name):
        try:
            with open(self.log_path(name), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def dump_logs(self, lines=60):
        """Writes the tail of every component log to stderr."""
        logs = os.path.join(self.home or "", "logs")
        if not os.path.isdir(logs):
            return
        for entry in sorted(os.listdir(logs)):
            text = self.log(entry[:-len(".log")]) if entry.endswith(".log") else ""
            tail = "\n".join(text.splitlines()[-lines:])
            sys.stderr.write(f"\n----- {entry} (last {lines} lines) -----\n{tail}\n")

    # ------------------------------------------------------------ CLI
    def cli(self, *args, timeout=60, input=None):
        """Runs `tupa ARGS` against this stack; returns a CliResult."""
        env = dict(os.environ)
        env.update(self.extra_env)
        env.update(self.env)
        argv = [bin_path("tupa", self.bin_dir), *map(str, args)]
        proc = subprocess.run(argv, env=env, input=input, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=timeout)
        return CliResult(list(args), proc.returncode, proc.stdout, proc.stderr)

    def cli_json(self, *args, timeout=60):
        """Runs `tupa CMD -o json ARGS`, asserts exit 0, returns the parsed JSON.

        `-o json` goes right after the command name, so that a command job's
        `-- CMD ARGS` stays last.
        """
        result = self.cli(args[0], "-o", "json", *args[1:], timeout=timeout)
        if result.code != 0 or result.json is None:
            raise AssertionError(f"tupa {' '.join(map(str, args))} -o json failed: {result!r}")
        return result.json

    def write_spec(self, yaml_text, name="job.yaml"):
        """Writes a job spec into the stack's directory; returns its path."""
        path = os.path.join(self.home, name)
        with open(path, "w") as f:
            f.write(yaml_text)
        return path

    def submit(self, *args, timeout=60):
        """`tupa submit ARGS -o json`; returns the created job (dict with 'id')."""
        out = self.cli_json("submit", *args, timeout=timeout)
        job = out.get("job", out) if isinstance(out, dict) else out
        if not isinstance(job, dict) or "id" not in job:
            raise AssertionError(f"tupa submit -o json printed no job id: {out!r}")
        return job

    def get_job(self, job_id):
        return self.cli_json("get", job_id)

    def wait_job(self, job_id, states, timeout=120):
        """Waits until the job is in one of `states` ('RUNNING', ...); returns it.

        Fails early if the job reaches a terminal state not in `states`.
        """
        if isinstance(states, str):
            states = (states,)
        seen = {}

        def check():
            job = self.get_job(job_id)
            seen["job"] = job
            state = state_name(job)
            if state in states:
                return job
            if state in TERMINAL_STATES:
                raise AssertionError(f"job {job_id} ended {state}, expected {states}: {job!r}")
            return None

        try:
            return wait_for(check, timeout, interval=0.3, message=f"job {job_id} in {states}")
        except TimeoutError as e:
            raise TimeoutError(f"{e}; last job: {seen.get('job')!r}") from None

    def workers_json(self):
        out = self.cli_json("workers")
        return out.get("workers", []) if isinstance(out, dict) else out


def _alive(pid):
    """True when pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def processes_with_env(key, value, with_shims=False):
    """Pids of live processes whose environment holds KEY=VALUE.

    Useful to check that no rank of a job survives (e.g. key TUPA_JOB_ID).
    Each rank's `tupa-rank-shim` (the worker's process that leads the
    rank's group) is exec'd with the rank's environment too; it is left out
    unless `with_shims`, so the pids are the job's own processes.
    """
    needle = f"{key}={value}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            if not with_shims:
                with open(f"/proc/{entry}/comm") as f:
                    if f.read().strip() == "tupa-rank-shim":
                        continue
            if _alive(int(entry)):
                pids.append(int(entry))
        except OSError:
            continue
    return pids


def kill_quietly(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
    except OSError:
        pass
