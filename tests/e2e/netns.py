"""A multi-host network on one machine, for tupa end-to-end tests (stdlib).

A `Net` makes its own network namespaces: a switch (a bridge, in a
namespace of its own) and one namespace per host, each joined to the
bridge by a veth pair, with its own IP on 10.213.0.0/24. Host names
resolve inside every host (/etc/netns/NS/hosts, which `ip netns exec`
mounts over /etc/hosts). Traffic stays between the test's namespaces; the
names carry this process's pid, so runs never collide. A `Net` is a context
manager and always removes everything it made (namespaces, their links,
every process started in them, the hosts files, delay daemons).

    from netns import Net, require_netns

    require_netns(self)                   # skips (not root, no ip netns)
    with Net(["sched", "w1", "w2"]) as net:
        p = net["w1"].start(["tupa-worker", ...], log="/tmp/w1.log")
        net.partition("w1", "sched")      # iptables DROP both ways
        net.heal("w1", "sched")
        net.delay("w1", 100, 20, loss=0.01)  # on w1's egress
        net["w2"].kill()                  # every process in the host

Delay without sch_netem (not every kernel has it): the host's subnet route
points at a TUN device read by a small daemon (this file, run as a
script) that holds each packet for delay +- jitter milliseconds (order
kept), drops `loss` of them, and sends the rest out through a raw socket
whose mark routes it to eth0. Loss alone uses iptables' statistic match.

`Stack` (below) runs PostgreSQL + tupa-scheduler on one host and
tupa-worker on others, like cluster.Cluster does on loopback.
"""

import fcntl
import heapq
import json
import os
import random
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

SUBNET = "10.213.0"
PREFIX = 24


def _run(*argv, check=True, input=None):
    proc = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, input=input)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def netns_unavailable_reason():
    """None when this process can make network namespaces, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root (run the multi-host tests as root)"
    if shutil.which("ip") is None or shutil.which("iptables") is None:
        return "ip (iproute2) and iptables are needed: scripts/install-deps"
    name = f"tupa-probe-{os.getpid()}"
    proc = _run("ip", "netns", "add", name, check=False)
    if proc.returncode != 0:
        return f"ip netns add failed: {proc.stderr.strip()}"
    _run("ip", "netns", "del", name, check=False)
    return None


def require_netns(test):
    """Skips `test` (a unittest.TestCase) with the reason when namespaces
    cannot be made here."""
    reason = netns_unavailable_reason()
    if reason:
        test.skipTest(reason)


class Host:
    """One host: a network namespace with one IP."""

    def __init__(self, net, name, index):
        self.net = net
        self.name = name
        self.ns = f"tupa{os.getpid()}-{name}"
        self.ip = f"{SUBNET}.{index + 1}"
        self.procs = []
        self.delay_proc = None

    def ip_exec(self, *argv, check=True):
        return _run("ip", "netns", "exec", self.ns, *argv, check=check)

    def start(self, argv, env=None, log=None, stdin=subprocess.DEVNULL):
        """Starts argv inside this host in a session of its own; output goes
        to `log` (a path, appended) or a pipe. Returns the Popen."""
        out = open(log, "ab") if log else subprocess.PIPE
        try:
            p = subprocess.Popen(["ip", "netns", "exec", self.ns, *map(str, argv)],
                                 env=env, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=stdin, start_new_session=True)
        finally:
            if log:
                out.close()
        self.procs.append(p)
        return p

    def run(self, argv, env=None, timeout=60, input=None):
        """Runs argv inside this host to completion; CompletedProcess (text)."""
        return subprocess.run(["ip", "netns", "exec", self.ns, *map(str, argv)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout, input=input)

    def pids(self):
        """Pids of every process in this host's namespace."""
        proc = _run("ip", "netns", "pids", self.ns, check=False)
        return [int(x) for x in proc.stdout.split() if x.isdigit()]

    def kill(self, timeout=10):
        """SIGKILLs every process in the host (what a power cut does)."""
        if self.delay_proc:  # the host's link itself survives
            keep = {self.delay_proc.pid}
        else:
            keep = set()
        deadline = time.monotonic() + timeout
        while True:
            victims = [p for p in self.pids() if p not in keep and p != os.getpid()]
            if not victims:
                break
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes of {self.name} survive SIGKILL: {victims}")
            time.sleep(0.1)
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.procs = [p for p in self.procs if p.poll() is None]


class Net:
    """Namespaces, a bridge and hosts; see the module docstring."""

    def __init__(self, hosts):
        self.switch = f"tupa{os.getpid()}-sw"
        self.hosts = {}
        for i, name in enumerate(hosts):
            self.hosts[name] = Host(self, name, i)
        self._made = []       # namespaces made, for cleanup
        self._partitions = set()

    def __getitem__(self, name):
        return self.hosts[name]

    def __enter__(self):
        try:
            self.build()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False

    def build(self):
        _run("ip", "netns", "add", self.switch)
        self._made.append(self.switch)
        sw = ["ip", "-n", self.switch]
        _run(*sw, "link", "set", "lo", "up")
        _run(*sw, "link", "add", "br0", "type", "bridge")
        _run(*sw, "link", "set", "br0", "up")
        hosts_file = "127.0.0.1 localhost\n::1 localhost\n" + "".join(
            f"{h.ip} {h.name}\n" for h in self.hosts.values())
        for i, h in enumerate(self.hosts.values()):
            _run("ip", "netns", "add", h.ns)
            self._made.append(h.ns)
            etc = f"/etc/netns/{h.ns}"
            os.makedirs(etc, exist_ok=True)
            with open(f"{etc}/hosts", "w") as f:
                f.write(hosts_file)
            with open(f"{etc}/hostname", "w") as f:
                f.write(h.name + "\n")
            n = ["ip", "-n", h.ns]
            _run(*n, "link", "set", "lo", "up")
            _run(*sw, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0",
                 "netns", h.ns)
            _run(*sw, "link", "set", f"v{i}", "master", "br0", "up")
            _run(*n, "addr", "add", f"{h.ip}/{PREFIX}", "dev", "eth0")
            _run(*n, "link", "set", "eth0", "up")
            # Delayed packets leave through eth0 while the subnet route
            # points at the TUN device: no reverse-path filtering.
            for key in ("all", "default", "eth0"):
                h.ip_exec("sysctl", "-qw", f"net.ipv4.conf.{key}.rp_filter=0", check=False)
        self.wait_reachable()

    def wait_reachable(self, timeout=10):
        """Waits until the bridge forwards (ARP + TCP to a closed port)."""
        first = list(self.hosts.values())
        if len(first) < 2:
            return
        a, b = first[0], first[1]
        code = ("import socket,sys\n"
                "s=socket.socket();s.settimeout(1)\n"
                "try:\n s.connect((sys.argv[1],9));sys.exit(0)\n"
                "except ConnectionRefusedError:\n sys.exit(0)\n"
                "except OSError:\n sys.exit(1)\n")
        deadline = time.monotonic() + timeout
        while a.run([sys.executable, "-c", code, b.ip]).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{b.name} unreachable from {a.name} over the bridge")
            time.sleep(0.2)

    # ------------------------------------------------------------ faults
    def _drop_rules(self, a, b, op):
        for src, dst in ((self.hosts[a], self.hosts[b]), (self.hosts[b], self.hosts[a])):
            src.ip_exec("iptables", "-w", op, "INPUT", "-s", dst.ip, "-j", "DROP")
            src.ip_exec("iptables", "-w", op, "OUTPUT", "-d", dst.ip, "-j", "DROP")

    def partition(self, a, b):
        """Drops every packet between hosts a and b (both ways, both hosts)."""
        if (a, b) in self._partitions:
            return
        self._drop_rules(a, b, "-I")
        self._partitions.add((a, b))

    def heal(self, a, b):
        if (a, b) not in self._partitions:
            return
        self._drop_rules(a, b, "-D")
        self._partitions.discard((a, b))

    def delay(self, name, delay_ms, jitter_ms=0, loss=0.0):
        """Adds delay_ms +- jitter_ms to every packet host `name` sends to
        the subnet, and drops `loss` (0..1) of them."""
        h = self.hosts[name]
        self.undelay(name)
        h.ip_exec("ip", "tuntap", "add", "dev", "dly0", "mode", "tun")
        h.ip_exec("ip", "link", "set", "dly0", "up")
        h.ip_exec("ip", "rule", "add", "fwmark", "1", "lookup", "100", "pref", "100")
        h.ip_exec("ip", "route", "add", f"{SUBNET}.0/{PREFIX}", "dev", "eth0", "src", h.ip,
                  "table", "100")
        ready = tempfile.NamedTemporaryFile(prefix="tupa-delay-", delete=False)
        ready.close()
        os.unlink(ready.name)
        h.delay_proc = subprocess.Popen(
            ["ip", "netns", "exec", h.ns, sys.executable, os.path.abspath(__file__),
             "--delay-daemon", "dly0", str(delay_ms), str(jitter_ms), str(loss), ready.name],
            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while not os.path.exists(ready.name):
            if h.delay_proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"delay daemon of {name} did not start")
            time.sleep(0.05)
        os.unlink(ready.name)
        h.ip_exec("ip", "route", "replace", f"{SUBNET}.0/{PREFIX}", "dev", "dly0", "src", h.ip)

    def undelay(self, name):
        h = self.hosts[name]
        if h.delay_proc is None:
            return
        h.ip_exec("ip", "route", "replace", f"{SUBNET}.0/{PREFIX}", "dev", "eth0", "src",
                  h.ip, check=False)
        h.ip_exec("ip", "rule", "del", "pref", "100", check=False)
        h.ip_exec("ip", "route", "flush", "table", "100", check=False)
        h.delay_proc.kill()
        h.delay_proc.wait()
        h.delay_proc = None
        h.ip_exec("ip", "link", "del", "dly0", check=False)

    # ------------------------------------------------------------ cleanup
    def cleanup(self):
        for h in self.hosts.values():
            if h.delay_proc is not None:
                h.delay_proc.kill()
                h.delay_proc.wait()
                h.delay_proc = None
            if h.ns in self._made:
                try:
                    h.kill()
                except RuntimeError as e:
                    sys.stderr.write(f"netns cleanup: {e}\n")
            shutil.rmtree(f"/etc/netns/{h.ns}", ignore_errors=True)
        for ns in reversed(self._made):
            _run("ip", "netns", "del", ns, check=False)
        self._made = []


# ---------------------------------------------------------------- delay daemon
TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
SO_MARK = 36


def delay_daemon(dev, delay_ms, jitter_ms, loss, ready_path):
    """Reads packets from TUN `dev`, holds each delay +- jitter ms (never
    reordering), drops `loss` of them, and sends them on marked (fwmark 1:
    routed to eth0) through a raw socket."""
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", dev.encode(), IFF_TUN | IFF_NO_PI))
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    raw.setsockopt(socket.SOL_SOCKET, SO_MARK, 1)
    open(ready_path, "w").close()
    rng = random.Random()
    queue = []   # (release time, seq, packet)
    seq = 0
    last_release = 0.0
    while True:
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, _, pkt = heapq.heappop(queue)
            if len(pkt) >= 20 and pkt[0] >> 4 == 4:
                try:
                    raw.sendto(pkt, (socket.inet_ntoa(pkt[16:20]), 0))
                except OSError:
                    pass
        timeout = max(0.0, queue[0][0] - now) if queue else 1.0
        readable, _, _ = select.select([fd], [], [], timeout)
        if not readable:
            continue
        for _ in range(256):
            try:
                pkt = os.read(fd, 65536)
            except BlockingIOError:
                break
            now = time.monotonic()
            if rng.random() < loss:
                continue
            release = now + (delay_ms + rng.uniform(-jitter_ms, jitter_ms)) / 1000.0
            release = max(release, last_release)  # order kept, as TCP likes
            last_release = release
            seq += 1
            heapq.heappush(queue, (release, seq, pkt))
            if not select.select([fd], [], [], 0)[0]:
                break


# ---------------------------------------------------------------- tupa stack
SOURCE_DIR = os.environ.get("TUPA_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BIN_DIR = os.environ.get("TUPA_BIN_DIR") or os.path.join(
    os.environ.get("TUPA_BUILD_DIR") or os.path.join(SOURCE_DIR, "build"), "bin")
SCHEDULER_PORT = 50051


class Stack:
    """PostgreSQL + tupa-scheduler on `server`, tupa-worker on each of
    `workers`; every host has the whole port space to itself, so ports are
    fixed. State (logs, work dirs, a checkpoint root all workers share, as
    an NFS mount would be) lives in one temporary directory."""

    def __init__(self, net, server, workers, gpus_per_worker=2, worker_timeout="15s",
                 kill_grace_s=2, scheduler_flags=(), worker_flags=(), scheduler_addr=None,
                 cli_env=None):
        self.net = net
        self.server = net[server]
        self.worker_hosts = [net[w] for w in workers]
        self.gpus = gpus_per_worker
        self.worker_timeout = worker_timeout
        self.kill_grace_s = kill_grace_s
        self.scheduler_flags = list(scheduler_flags)
        self.worker_flags = list(worker_flags)
        self.scheduler_addr = scheduler_addr or f"{self.server.ip}:{SCHEDULER_PORT}"
        self.home = tempfile.mkdtemp(prefix="tupa-netns-")
        os.chmod(self.home, 0o755)
        self.pg_dir = os.path.join(self.home, "pg")
        self.db_url = None
        self.cli_env = {}
        self.cli_env_extra = dict(cli_env or {})  # e.g. TUPA_SCHEDULER, TUPA_TLS_CA

    def bin(self, name):
        path = os.path.join(BIN_DIR, name)
        if not os.access(path, os.X_OK):
            raise AssertionError(f"{path} not found: build it first")
        return path

    def log_path(self, name):
        return os.path.join(self.home, f"{name}.log")

    def log(self, name):
        try:
            with open(self.log_path(name), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def start(self):
        out = self.server.run([os.path.join(SOURCE_DIR, "scripts", "pg"), "start",
                               self.pg_dir, "--port", "5432"], timeout=120,
                              env=dict(os.environ, TUPA_PG_SYNCHRONOUS_COMMIT="off"))
        if out.returncode != 0:
            raise AssertionError(f"scripts/pg start: {out.stdout}{out.stderr}")
        self.db_url = self.server.run([os.path.join(SOURCE_DIR, "scripts", "pg"), "url",
                                       self.pg_dir]).stdout.strip()
        self.start_scheduler()
        self.cli_env = dict(os.environ, TUPA_SCHEDULER=f"127.0.0.1:{SCHEDULER_PORT}")
        for k in ("TUPA_TOKEN", "TUPA_TLS_CA", "TUPA_TLS_CERT", "TUPA_TLS_KEY"):
            self.cli_env.pop(k, None)
        self.cli_env.update(self.cli_env_extra)
        self.wait_scheduler()
        for i, h in enumerate(self.worker_hosts):
            self.start_worker(h)
        return self

    def start_scheduler(self):
        env = dict(os.environ, TUPA_DATABASE_URL=self.db_url)
        os.makedirs(os.path.join(self.home, "scheduler"), exist_ok=True)
        self.server.start([self.bin("tupa-scheduler"), "--listen", f"0.0.0.0:{SCHEDULER_PORT}",
                           "--data-dir", os.path.join(self.home, "scheduler"),
                           "--metrics-listen", "127.0.0.1:9464",
                           "--worker-timeout", self.worker_timeout, "--auth=false",
                           *self.scheduler_flags],
                          env=env, log=self.log_path("scheduler"))

    def worker_argv(self, host, extra=()):
        work = os.path.join(self.home, "workers", host.name)
        os.makedirs(work, exist_ok=True)
        os.makedirs(os.path.join(self.home, "checkpoints"), exist_ok=True)
        return [self.bin("tupa-worker"), "--scheduler", self.scheduler_addr, "--id", host.name,
                "--region", "local", "--work-dir", work,
                "--checkpoint-root", os.path.join(self.home, "checkpoints"),
                "--metrics-listen", "127.0.0.1:9465", "--emulated-gpus", str(self.gpus),
                "--kill-grace-s", str(self.kill_grace_s), *self.worker_flags, *extra]

    def start_worker(self, host, extra=()):
        return host.start(self.worker_argv(host, extra), log=self.log_path(host.name))

    def wait_scheduler(self, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            r = self.cli("workers")
            if r.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"scheduler not serving: {r.stderr}\n{self.log('scheduler')[-3000:]}")
            time.sleep(0.3)

    def cli(self, *args, timeout=60, env=None):
        return self.server.run([self.bin("tupa"), *args], env=env or self.cli_env,
                               timeout=timeout)

    def cli_json(self, *args, timeout=60):
        r = self.cli(args[0], "-o", "json", *args[1:], timeout=timeout)
        if r.returncode != 0:
            raise AssertionError(f"tupa {' '.join(args)} exited {r.returncode}: {r.stderr}")
        return json.loads(r.stdout)

    def workers(self):
        out = self.cli_json("workers", "--all")
        return out.get("workers", []) if isinstance(out, dict) else out

    def wait_workers_up(self, n, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            up = [w for w in self.workers() if w.get("state", "").endswith("UP")]
            if len(up) >= n:
                return up
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(up)} of {n} workers up: {self.workers()}")
            time.sleep(0.3)

    def submit(self, *args):
        out = self.cli_json("submit", *args)
        return out.get("job", out)

    def get_job(self, job_id):
        return self.cli_json("get", str(job_id))

    def wait_job(self, job_id, states, timeout=120):
        if isinstance(states, str):
            states = (states,)
        deadline = time.monotonic() + timeout
        while True:
            job = self.get_job(job_id)
            state = job.get("state", "").replace("JOB_STATE_", "")
            if state in states:
                return job
            if state in ("SUCCEEDED", "FAILED", "CANCELLED"):
                raise AssertionError(f"job {job_id} ended {state}, wanted {states}: {job}")
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} not {states} after {timeout}s: {job}")
            time.sleep(0.3)

    def psql(self, sql):
        out = self.server.run(["psql", self.db_url, "-AtX", "-F", "|", "-c", sql])
        if out.returncode != 0:
            raise AssertionError(f"psql: {out.stderr}")
        return [line.split("|") for line in out.stdout.strip().splitlines() if line]

    def dump_logs(self, lines=60):
        for entry in sorted(os.listdir(self.home)):
            if entry.endswith(".log"):
                tail = "\n".join(self.log(entry[:-4]).splitlines()[-lines:])
                sys.stderr.write(f"\n----- {entry} (last {lines} lines) -----\n{tail}\n")

    def stop(self, failed=False):
        if failed:
            self.dump_logs()
        for h in self.worker_hosts + [self.server]:
            h.kill()
        self.server.run([os.path.join(SOURCE_DIR, "scripts", "pg"), "purge", self.pg_dir],
                        timeout=60)
        shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop(failed=True)
            raise

    def __exit__(self, exc_type, *exc):
        self.stop(failed=exc_type is not None)
        return False


if __name__ == "__main__" and len(sys.argv) == 7 and sys.argv[1] == "--delay-daemon":
    delay_daemon(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]),
                 sys.argv[6])
