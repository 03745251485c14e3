"""The Compose deployment built and run for real (issue 21): what an operator
does with deploy/docker-compose.yml, step by step, as docs/operations.md
("With Docker Compose") describes it.

Where `make test` runs there is no Docker engine and public images cannot
be pulled, so (stack.py has the details):
- Engine: Debian's podman. `podman system service` serves the Docker API
  inside a network namespace this test makes; Debian's docker-compose (v1)
  drives it with the unchanged compose file. Images are built first, on the
  host network (apt needs the mirror; the namespace has no way out), and
  `up` runs with `--no-build`.
- Images: deploy/docker/Dockerfile.cpu is built as it is, `podman build -f
  deploy/docker/Dockerfile.cpu -t tupa:latest-cpu .` (the tag the compose
  file names), FROM a debian:bookworm made with debootstrap. The public
  images are SUBSTITUTED by images built from Debian packages on that base
  and tagged with the compose file's names: tests/compose/postgres
  (PostgreSQL 15, for postgres:15-bookworm) and tests/compose/prometheus
  (Debian's Prometheus 2.42, for prom/prometheus:v2.53.2).
- Services: postgres, scheduler, worker-cpu (profile cpu) and prometheus.
  LEFT OUT: grafana (no Debian package of Grafana) and worker-gpu (the CUDA
  image needs nvidia/cuda base images and a GPU; deploy/docker/Dockerfile
  is not built here).
- Health checks: podman runs them from systemd timers, and there is no
  systemd here, so the test runs `podman healthcheck run` for the postgres
  container every 2 s (what the timer would do); compose's `depends_on:
  condition: service_healthy` then works as written.

Steps: make-secrets; up without the worker; the example Fashion-MNIST job
(deploy/examples/fmnist-mlp.yaml on one node, 300 steps) submitted once the
scheduler answers through the published port; up worker-cpu (so the idle
timer cannot stop the worker before it has the job); `tupa workers` with
the admin token lists worker-cpu; the job SUCCEEDED on it; Prometheus
(deploy/prometheus/prometheus-compose.yml) has `up == 1` for the scheduler
and worker-cpu; an idle shutdown of worker-cpu that compose does not undo
(exit 0, `restart: on-failure`); `down` keeping the volumes; `up` again with
the job still SUCCEEDED in `tupa list`.

Images and the debootstrap tarball are cached in BUILD/compose-cache (the
podman storage is there too; `rm -rf` it for a cold run). The time of each
phase is printed at the end and written to BUILD/compose-cache/timings.txt.
"""

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import stack

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import cluster  # noqa: E402  (tests/e2e: the harness of the other e2e tests)

# Polls podman and the CLI: once a second is enough.
wait_for = functools.partial(cluster.wait_for, interval=1.0)

ROOT = os.environ.get("TUPA_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("TUPA_BUILD_DIR") or os.path.join(ROOT, "build")
BIN = os.environ.get("TUPA_BIN_DIR") or os.path.join(BUILD, "bin")
CACHE = os.path.join(BUILD, "compose-cache")
HERE = os.path.dirname(os.path.abspath(__file__))
COMPOSE_FILE = os.path.join(ROOT, "deploy", "docker-compose.yml")

SERVICES = ["postgres", "scheduler", "worker-cpu", "prometheus"]
IMAGES = {  # compose image name -> what the test builds for it
    "tupa:latest-cpu": ("deploy/docker/Dockerfile.cpu", ROOT),
    "docker.io/library/postgres:15-bookworm": ("Dockerfile", os.path.join(HERE, "postgres")),
    "docker.io/prom/prometheus:v2.53.2": ("Dockerfile", os.path.join(HERE, "prometheus")),
}
STEPS = 300
# Longer than the published port can take to answer under load: the job
# finishes in seconds, and a `tupa workers` through the port took 23 s and
# failed twice on this 2-core machine with benchmarks running beside the
# tests, until the worker had been idle 45 s and was stopped.
IDLE_AFTER_S = 90



class HealthTicker(threading.Thread):
    """Runs `podman healthcheck run` on every running container of the
    project that has a health check, every `interval` seconds: the job of
    the systemd timer podman would use."""

    def __init__(self, podman, ns, project, interval=2.0):
        super().__init__(daemon=True)
        self.podman, self.ns, self.project, self.interval = podman, ns, project, interval
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(self.interval):
            ps = self.podman("ps", "--filter", f"label=com.docker.compose.project={self.project}",
                             "--filter", "health=starting", "--filter", "health=unhealthy",
                             "--filter", "health=healthy", "--format", "{{.Names}}",
                             check=False, netns=self.ns.name)
            for name in ps.stdout.split():
                self.podman("healthcheck", "run", name, check=False, netns=self.ns.name)

    def stop(self):
        self.stopped.set()
        self.join(timeout=30)


class ComposeStackTest(unittest.TestCase):
    def setUp(self):
        need_debootstrap = not os.path.exists(os.path.join(CACHE, "debian-bookworm.tar"))
        reason = stack.unavailable_reason(need_debootstrap)
        if reason:
            self.skipTest(reason)
        self.timings = []
        self.work = tempfile.mkdtemp(prefix="tupa-compose-")
        os.chmod(self.work, 0o755)  # the containers (uid 10001) read the config
        self.log_path = os.path.join(self.work, "test.log")
        self.log = open(self.log_path, "a")
        self.project = f"tupa-e2e-{os.getpid()}"
        self.podman = stack.Podman(CACHE)
        self.ns = None
        self.service = None
        self.health = None
        self.addCleanup(self.cleanup)

    # --- helpers ---

    def phase(self, name, start):
        seconds = time.monotonic() - start
        self.timings.append((name, seconds))
        print(f"compose: {name}: {seconds:.0f} s", flush=True)

    def compose(self, *args, check=True, timeout=600):
        env = dict(os.environ, DOCKER_HOST=self.service.url, COMPOSE_INTERACTIVE_NO_CLI="1")
        return stack.run(["docker-compose", "-p", self.project, "-f", COMPOSE_FILE,
                          "--env-file", self.env_file, *args],
                         check=check, timeout=timeout, env=env, log=self.log)

    def tupa(self, *args, check=True, timeout=60):
        env = dict(os.environ, TUPA_SCHEDULER=f"{stack.STACK_IP}:50051",
                   TUPA_TOKEN=self.admin_token)
        proc = self.ns.exec([os.path.join(BIN, "tupa"), *args], check=False,
                            timeout=timeout, env=env)
        self.log.write(f"[{time.strftime('%H:%M:%S', time.gmtime())}] $ tupa {' '.join(args)}\n"
                       f"{proc.stdout}{proc.stderr}\n")
        self.log.flush()
        if check and proc.returncode != 0:
            raise AssertionError(f"tupa {' '.join(args)} exited {proc.returncode}: "
                                 f"{proc.stdout}{proc.stderr}")
        return proc

    def tupa_json(self, *args, timeout=60):
        return json.loads(self.tupa(args[0], "-o", "json", *args[1:], timeout=timeout).stdout)

    def container(self, service):
        """(status, exit code, restart count) of the service's container."""
        proc = self.podman("inspect", "--format",
                           "{{.State.Status}} {{.State.ExitCode}} {{.RestartCount}}",
                           f"{self.project}_{service}_1", check=False, netns=self.ns.name)
        if proc.returncode != 0:
            return None
        status, code, restarts = proc.stdout.split()
        return status, int(code), int(restarts)

    def workers(self):
        proc = self.tupa("workers", "-o", "json", check=False)
        if proc.returncode != 0:
            return []
        out = json.loads(proc.stdout)
        return out.get("workers", []) if isinstance(out, dict) else out

    def prometheus_up(self):
        """{job/instance: value} of the `up` series, from Prometheus's HTTP API."""
        proc = self.ns.exec(["curl", "-fsS", f"http://{stack.STACK_IP}:9090/api/v1/query?query=up"],
                            check=False)
        if proc.returncode != 0:
            return {}
        result = json.loads(proc.stdout)["data"]["result"]
        return {f"{r['metric']['job']}/{r['metric']['instance']}": r["value"][1] for r in result}

    def cleanup(self):
        if self.health:
            self.health.stop()
        if self.service:
            self.compose("down", "--volumes", "--timeout", "5", check=False, timeout=180)
            self.service.close()
        if self.ns:
            # Whatever compose left (a failed test): containers, volumes.
            self.podman("rm", "--all", "--force", "--time", "2", check=False, netns=self.ns.name,
                        log=self.log)
            self.podman("volume", "prune", "--force", check=False, log=self.log)
            self.ns.close()
        self.podman.close()
        self.log.close()
        if self._outcome_ok():
            shutil.rmtree(self.work, ignore_errors=True)
        else:
            print(f"compose: logs kept in {self.work}; last lines of test.log:", flush=True)
            with open(self.log_path, errors="replace") as f:
                print("".join(f.readlines()[-150:]), flush=True)

    def _outcome_ok(self):
        outcome = getattr(self, "_outcome", None)
        result = getattr(outcome, "result", None)
        if result is None:
            return True
        return not (result.errors or result.failures)

    def dump_logs(self):
        for service in SERVICES:
            self.log.write(f"--- logs of {service}\n")
            self.log.flush()
            self.podman("logs", f"{self.project}_{service}_1", check=False, log=self.log,
                        netns=self.ns.name)

    # --- the test ---

    def test_operator_walkthrough(self):
        try:
            self.walkthrough()
        except BaseException:
            if self.ns:
                self.dump_logs()
            raise
        finally:
            total = sum(s for _, s in self.timings)
            lines = [f"{name}: {s:.0f} s" for name, s in self.timings] + [f"total: {total:.0f} s"]
            os.makedirs(CACHE, exist_ok=True)
            with open(os.path.join(CACHE, "timings.txt"), "w") as f:
                f.write("\n".join(lines) + "\n")
            print("compose timings: " + "; ".join(lines), flush=True)

    def walkthrough(self):
        # Images: the base, then Dockerfile.cpu as users build it, then the
        # two stand-ins for public images.
        t = time.monotonic()
        what = stack.make_base_image(self.podman, self.log)
        self.phase(f"base image ({what})", t)
        t = time.monotonic()
        self.podman.build(ROOT, os.path.join(ROOT, "deploy/docker/Dockerfile.cpu"),
                          "tupa:latest-cpu", self.log, timeout=3600)
        self.phase("build deploy/docker/Dockerfile.cpu", t)
        t = time.monotonic()
        for tag, (dockerfile, context) in IMAGES.items():
            if context != ROOT:
                self.podman.build(context, os.path.join(context, dockerfile), tag, self.log,
                                  timeout=1200)
        self.phase("build stand-in images (postgres, prometheus)", t)

        # The operator's files: deploy/.env.example as deploy/.env (passwords
        # set), the tokens from deploy/make-secrets, and scheduler.yaml with
        # an idle policy (TUPA_SCHEDULER_CONFIG), all in the test's folder.
        t = time.monotonic()
        secrets = os.path.join(self.work, "secrets")
        stack.run([os.path.join(ROOT, "deploy", "make-secrets"), secrets], log=self.log)
        with open(os.path.join(secrets, "admin-token")) as f:
            self.admin_token = f.read().strip()
        config = os.path.join(self.work, "scheduler.yaml")
        with open(os.path.join(ROOT, "deploy", "scheduler.yaml")) as f:
            text = f.read()
        with open(config, "w") as f:
            f.write(text + f"""
# Added by tests/compose: stop idle workers quickly.
idle_shutdown:
  policy: timer
  idle_after: {IDLE_AFTER_S}s
  keep_warm: 0
  min_uptime: 0s
""")
        os.chmod(config, 0o644)
        overrides = {"POSTGRES_PASSWORD": "e2e-" + os.urandom(8).hex(),
                     "GRAFANA_ADMIN_PASSWORD": "e2e-" + os.urandom(8).hex(),
                     "TUPA_SCHEDULER_CONFIG": config,
                     "TUPA_ADMIN_TOKEN_FILE": os.path.join(secrets, "admin-token"),
                     "TUPA_JOIN_TOKEN_FILE": os.path.join(secrets, "join-token")}
        self.env_file = os.path.join(self.work, "env")
        with open(os.path.join(ROOT, "deploy", ".env.example")) as src, \
                open(self.env_file, "w") as dst:
            for line in src:
                key = line.split("=", 1)[0]
                dst.write(f"{key}={overrides[key]}\n" if key in overrides else line)

        # The namespace, the engine in it, and `up`.
        self.ns = stack.Namespace()
        self.service = stack.Service(self.podman, self.ns, os.path.join(self.work, "service.log"))
        self.health = HealthTicker(self.podman, self.ns, self.project)
        self.health.start()
        # The stack up without the worker first; the example job submitted
        # once the scheduler answers through the published port; then the
        # worker. A worker that is up with nothing to run is stopped by the
        # idle policy IDLE_AFTER_S later, and under load the published port
        # answered only ~45 s after `up` (CI, and here: `ps` alone took
        # 22 s), so the job has to be waiting when the worker comes; it ends
        # in seconds, so IDLE_AFTER_S must outlast the first answers too.
        self.compose("--profile", "cpu", "up", "-d", "--no-build",
                     *[s for s in SERVICES if s != "worker-cpu"])
        with open(os.path.join(ROOT, "deploy", "examples", "fmnist-mlp.yaml")) as f:
            spec = f.read()
        spec, n = re.subn(r"(?m)^(\s+)epochs: \d+$", rf"\1steps: {STEPS}", spec)
        self.assertEqual(n, 1, "fmnist-mlp.yaml has no `epochs:` line to replace")
        spec_path = os.path.join(self.work, "fmnist-mlp.yaml")
        with open(spec_path, "w") as f:
            f.write(spec)
        wait_for(lambda: self.tupa("list", check=False).returncode == 0, 180,
                 message="the scheduler answering through the published port")
        # One node: the stack has one worker with 2 emulated devices.
        job = self.tupa_json("submit", "-f", spec_path, "--nodes", "1")
        job = job.get("job", job)
        job_id = str(job["id"])
        self.compose("--profile", "cpu", "up", "-d", "--no-build", "worker-cpu")
        self.compose("ps")

        # `tupa workers` through the published port, with the admin token.
        wait_for(lambda: any(w.get("id") == "cpu-1" for w in self.workers()), 180,
                 message="worker cpu-1 in `tupa workers`")
        self.assertIn("cpu-1", self.tupa("workers").stdout)
        self.phase("up: stack running, job submitted, worker cpu-1 registered", t)

        t = time.monotonic()
        wait = self.tupa("wait", job_id, "--timeout", "15m", check=False, timeout=960)
        self.assertEqual(wait.returncode, 0, f"job {job_id}: {wait.stdout}{wait.stderr}\n"
                         f"{self.tupa('logs', job_id, check=False).stdout[-3000:]}")
        got = self.tupa_json("get", job_id)
        self.assertEqual(got.get("state", "").replace("JOB_STATE_", ""), "SUCCEEDED", got)
        self.phase(f"job {job_id} (fmnist-mlp, {STEPS} steps) SUCCEEDED", t)

        # Prometheus scrapes the scheduler and worker-cpu by service name.
        t = time.monotonic()
        up = wait_for(lambda: (lambda u: u if u.get("tupa-scheduler/scheduler:9464") == "1"
                               and u.get("tupa-worker/worker-cpu:9465") == "1" else None)(
                                   self.prometheus_up()),
                      90, message="up == 1 for scheduler:9464 and worker-cpu:9465")
        self.log.write(f"prometheus up: {up}\n")
        self.phase("prometheus: up == 1 for scheduler and worker-cpu", t)

        # Idle shutdown: the worker exits 0 and `restart: on-failure` leaves
        # it stopped.
        t = time.monotonic()
        state = wait_for(lambda: (lambda c: c if c and c[0] == "exited" else None)(
            self.container("worker-cpu")), IDLE_AFTER_S + 120,
            message="worker-cpu exited after its idle shutdown")
        self.assertEqual(state[1], 0, f"worker-cpu exit code: {state}")
        time.sleep(15)
        self.assertEqual(self.container("worker-cpu"), ("exited", 0, 0),
                         "worker-cpu was restarted after a clean exit")
        self.phase("idle shutdown: worker-cpu exited 0, not restarted", t)

        # down keeps the named volumes; up again finds the job history.
        t = time.monotonic()
        self.compose("down", "--timeout", "10")
        volumes = self.podman("volume", "ls", "--format", "{{.Name}}").stdout.split()
        self.assertIn(f"{self.project}_pgdata", volumes)
        self.assertIsNone(self.container("scheduler"))
        self.compose("--profile", "cpu", "up", "-d", "--no-build", *SERVICES)
        jobs = wait_for(lambda: (lambda p: p.stdout if p.returncode == 0 else None)(
            self.tupa("list", "--state", "succeeded", check=False)), 180,
            message="`tupa list` after the second up")
        self.assertRegex(jobs, rf"(?m)^\s*{job_id}\s.*fmnist-mlp")
        self.assertEqual(self.tupa_json("get", job_id).get("state", "").replace(
            "JOB_STATE_", ""), "SUCCEEDED")
        self.phase("down (volumes kept), up again: job history there", t)


if __name__ == "__main__":
    unittest.main()
