"""Podman, a Debian base image and a network namespace for tests/compose
(Python stdlib; run as root).

No Docker engine runs where `make test` does and public images cannot be
pulled, so:
- `debian:bookworm` (and `debian:bookworm-slim`, the names the Dockerfiles
  use) is made with `debootstrap --variant=minbase bookworm` from the Debian
  mirror this machine's apt uses, and imported with `podman import`; the
  tarball is cached under the build folder.
- podman runs with a storage of its own under the build folder (`--root`,
  vfs driver: no overlay or fuse needed), a fresh `--runroot` per run and a
  containers.conf (CONTAINERS_CONF) with `default_ulimits = []`: podman's
  default ulimits make runc fail here with "error setting rlimit ...
  operation not permitted". Images build with `--isolation chroot
  --network host`.
- the stack runs under `podman system service` started inside a network
  namespace this module makes (loopback plus a veth pair, one end at
  STACK_IP), entered with nsenter --net (`ip netns exec` remounts /sys
  and hides the cgroup mounts runc needs): compose's network, its DNS and the published ports all live in
  that namespace, and nothing leaves it.
"""

import glob
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

STACK_IP = "10.214.0.1"

CONTAINERS_CONF = """\
# Written by tests/compose/stack.py.
[containers]
# podman's default ulimits (nproc, nofile) make runc fail in this kind of
# machine: "error setting rlimit ... operation not permitted".
default_ulimits = []
[network]
network_backend = "netavark"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
"""


def run(argv, check=True, timeout=None, env=None, log=None, input=None):
    """Runs argv; CompletedProcess (text). With `log` (an open file) the
    output goes there instead of being captured."""
    if log is not None:
        log.write(f"[{time.strftime('%H:%M:%S', time.gmtime())}] $ {' '.join(map(str, argv))}\n")
        log.flush()
        proc = subprocess.run(list(map(str, argv)), stdout=log, stderr=subprocess.STDOUT,
                              text=True, timeout=timeout, env=env, input=input)
    else:
        proc = subprocess.run(list(map(str, argv)), capture_output=True, text=True,
                              timeout=timeout, env=env, input=input)
    if check and proc.returncode != 0:
        detail = "" if log is not None else f": {proc.stderr.strip()[-2000:]}"
        raise RuntimeError(f"{' '.join(map(str, argv))} exited {proc.returncode}{detail}")
    return proc


def unavailable_reason(need_debootstrap):
    """None when this machine can run the compose test, else why not."""
    if os.geteuid() != 0:
        return "needs root (podman with its own storage, network namespaces)"
    tools = ["podman", "docker-compose", "ip", "openssl"]
    if need_debootstrap:
        tools.append("debootstrap")
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        return f"missing {', '.join(missing)}: scripts/install-deps installs them"
    name = f"tupa-probe-{os.getpid()}"
    proc = run(["ip", "netns", "add", name], check=False)
    if proc.returncode != 0:
        return f"ip netns add failed: {proc.stderr.strip()}"
    run(["ip", "netns", "del", name], check=False)
    # The base image and the images' apt-get steps need the Debian mirror
    # apt uses (make deps needs it too); a machine cut off from it cannot
    # build anything, which is a reason to skip, not a product failure.
    mirror = next((uri for uri, suite in debian_sources() if suite == "bookworm"),
                  "http://deb.debian.org/debian")
    release = mirror.rstrip("/") + "/dists/bookworm/Release"
    try:
        with urllib.request.urlopen(urllib.request.Request(release, method="HEAD"),
                                    timeout=15) as r:
            if r.status != 200:
                return f"Debian mirror answered {r.status} for {release}"
    except (OSError, ValueError) as e:
        return f"Debian mirror unreachable ({release}: {e}): cannot build the images"
    return None


def debian_sources():
    """(uri, suite) pairs of this machine's apt sources for Debian 12's main
    component (suites bookworm, bookworm-updates, bookworm-security), in
    the order apt lists them: the base image uses the same mirrors."""
    pairs = []
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            words = re.sub(r"\[[^\]]*\]", " ", line.split("#", 1)[0]).split()
            if len(words) >= 4 and words[0] == "deb" and words[2].startswith("bookworm") \
                    and "main" in words[3:]:
                pairs.append((words[1], words[2]))
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        for stanza in text.split("\n\n"):
            fields = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line:
                    continue
                key, value = line.split(":", 1)
                fields[key.strip().lower()] = value.split()
            if ("deb" not in fields.get("types", []) or "main" not in fields.get("components", [])
                    or fields.get("enabled", ["yes"])[0] == "no"):
                continue
            for uri in fields.get("uris", []):
                for suite in fields.get("suites", []):
                    if suite.startswith("bookworm"):
                        pairs.append((uri, suite))
    return pairs


class Podman:
    """podman with the test's own storage (CACHE/storage, vfs) and a fresh
    runroot; a containers.conf of the test's own via CONTAINERS_CONF."""

    def __init__(self, cache):
        self.cache = cache
        os.makedirs(cache, exist_ok=True)
        self.conf = os.path.join(cache, "containers.conf")
        with open(self.conf, "w") as f:
            f.write(CONTAINERS_CONF)
        # Short (conmon's sockets live there: 108-byte limit) and fixed for
        # this cache: podman's database records it and refuses another one.
        tag = hashlib.sha1(os.path.abspath(cache).encode()).hexdigest()[:10]
        self.runroot = os.path.join(tempfile.gettempdir(), f"tupa-podman-{tag}")
        shutil.rmtree(self.runroot, ignore_errors=True)  # a run that did not clean up
        os.makedirs(self.runroot, mode=0o700)
        self.env = dict(os.environ, CONTAINERS_CONF=self.conf)
        self.argv = ["podman", "--root", os.path.join(cache, "storage"),
                     "--runroot", self.runroot, "--storage-driver", "vfs"]

    def __call__(self, *args, check=True, timeout=None, log=None, netns=None):
        # nsenter, not `ip netns exec`: the latter remounts /sys, hiding
        # /sys/fs/cgroup ("runc create failed: no cgroup mount found").
        prefix = ["nsenter", f"--net=/run/netns/{netns}"] if netns else []
        return run(prefix + self.argv + list(args), check=check, timeout=timeout,
                   env=self.env, log=log)

    def image_exists(self, name):
        return self("image", "exists", name, check=False).returncode == 0

    def build(self, context, dockerfile, tag, log, timeout):
        """`podman build` as `docker build -f DOCKERFILE -t TAG CONTEXT`, with
        chroot isolation and the host's network (apt needs the mirror); the
        apt archives of every image build go to one folder under the cache
        (a build-time volume, so no package is fetched twice and none lands
        in a layer)."""
        archives = os.path.join(self.cache, "apt-archives")
        os.makedirs(archives, exist_ok=True)
        self("build", "--isolation", "chroot", "--network", "host",
             "-v", f"{archives}:/var/cache/apt/archives", "-f", dockerfile, "-t", tag,
             context, log=log, timeout=timeout)

    def close(self):
        shutil.rmtree(self.runroot, ignore_errors=True)


def make_base_image(podman, log, timeout=900):
    """Tags debian:bookworm and debian:bookworm-slim in podman's storage:
    a minbase debootstrap of Debian 12 (cached as CACHE/debian-bookworm.tar)
    whose apt sources are this machine's Debian mirrors. Returns what it did
    ("cached", "imported" or "debootstrapped")."""
    if podman.image_exists("debian:bookworm") and podman.image_exists("debian:bookworm-slim"):
        return "cached"
    tarball = os.path.join(podman.cache, "debian-bookworm.tar")
    what = "imported"
    if not os.path.exists(tarball):
        sources = debian_sources()
        mirror = next((uri for uri, suite in sources if suite == "bookworm"),
                      "http://deb.debian.org/debian")
        root = tempfile.mkdtemp(prefix="rootfs-", dir=podman.cache)
        # mkdtemp makes a 0700 directory and tar records it as the image's
        # "/": every non-root user in the containers (postgres, prometheus,
        # tupa) would then get "permission denied" for every path.
        os.chmod(root, 0o755)
        try:
            run(["debootstrap", "--variant=minbase", "bookworm", root, mirror],
                log=log, timeout=timeout)
            for d in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for path in glob.glob(os.path.join(root, d, "*")):
                    if os.path.isfile(path):
                        os.remove(path)
            with open(os.path.join(root, "etc/apt/sources.list"), "w") as f:
                for uri, suite in sources or [(mirror, "bookworm")]:
                    f.write(f"deb {uri} {suite} main\n")
            run(["tar", "-C", root, "-cf", tarball + ".tmp", "."], log=log)
            os.rename(tarball + ".tmp", tarball)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        what = "debootstrapped"
    podman("import", tarball, "debian:bookworm", log=log)
    podman("tag", "debian:bookworm", "debian:bookworm-slim", log=log)
    return what


class Namespace:
    """A network namespace with loopback and a veth pair, one end at STACK_IP;
    `close` ends every process still in it and deletes it."""

    def __init__(self):
        self.name = f"tupa-compose-{os.getpid()}"
        run(["ip", "netns", "add", self.name])
        try:
            self._setup()
        except BaseException:
            run(["ip", "netns", "del", self.name], check=False)
            raise

    def _setup(self):
        self.exec(["ip", "link", "set", "lo", "up"])
        # A veth pair with both ends inside (not every kernel has dummy).
        self.exec(["ip", "link", "add", "stack0", "type", "veth", "peer", "name", "stack1"])
        self.exec(["ip", "addr", "add", f"{STACK_IP}/24", "dev", "stack0"])
        self.exec(["ip", "link", "set", "stack0", "up"])
        self.exec(["ip", "link", "set", "stack1", "up"])

    def exec(self, argv, check=True, timeout=120, env=None):
        return run(["ip", "netns", "exec", self.name, *argv], check=check, timeout=timeout,
                   env=env)

    def pids(self):
        proc = run(["ip", "netns", "pids", self.name], check=False)
        return [int(x) for x in proc.stdout.split() if x.isdigit()]

    def close(self):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = self.pids()
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 10
            while self.pids() and time.monotonic() < deadline:
                time.sleep(0.2)
        run(["ip", "netns", "del", self.name], check=False)


class Service:
    """`podman system service` inside a namespace, on a unix socket: the
    Docker API that docker-compose drives."""

    def __init__(self, podman, ns, log_path):
        self.socket = os.path.join(podman.runroot, "docker.sock")
        self.url = f"unix://{self.socket}"
        self.log = open(log_path, "ab")
        argv = ["nsenter", f"--net=/run/netns/{ns.name}", *podman.argv, "system", "service",
                "--time", "0", self.url]
        self.proc = subprocess.Popen(argv, env=podman.env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            ping = run(["curl", "-fsS", "--unix-socket", self.socket, "http://d/_ping"],
                       check=False)
            if ping.returncode == 0:
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"podman system service did not answer on {self.socket}")
            time.sleep(0.3)

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
