"""scripts/cluster process management, with stand-in daemons.

The stand-ins (written to a temp dir, never to build/) take the real
binaries' flags: the scheduler listens on --listen and checks that
TUPA_DATABASE_URL reaches PostgreSQL; a worker records its argv, starts
a child in its own process group, like a rank, and serves its metrics port. This tests the script
without a build; tests on the real binaries live beside this file.
"""

import os
import shutil
import socket
import stat
import tempfile
import textwrap
import unittest

from cluster import Cluster, _alive, wait_for

# The stand-ins' tail: accept and drop connections on (host, port).
SERVE_HOST_PORT = textwrap.dedent("""\
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen()
    while True:
        s.accept()[0].close()
    """)

STUB_SCHEDULER = textwrap.dedent("""\
    #!/usr/bin/env python3
    import os, signal, socket, subprocess, sys
    argv = sys.argv[1:]
    host, port = argv[argv.index("--listen") + 1].rsplit(":", 1)
    assert "--database-url" not in argv, "database URL must not be in argv"
    url = os.environ["TUPA_DATABASE_URL"]
    subprocess.run(["psql", url, "-qAtX", "-c", "SELECT 1"], check=True,
                   stdout=subprocess.DEVNULL)
    print("ARGV", " ".join(argv), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    """) + SERVE_HOST_PORT

STUB_WORKER = textwrap.dedent("""\
    #!/usr/bin/env python3
    import os, signal, socket, subprocess, sys
    argv = sys.argv[1:]
    print("ARGV", " ".join(argv), flush=True)
    # A 'rank' in its own process group.
    subprocess.Popen(["sleep", "997"], preexec_fn=os.setpgrp)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # Serves --metrics-listen, as the real worker does before anything else.
    listen = argv[argv.index("--metrics-listen") + 1]
    once = os.environ.get("TUPA_STUB_LOSE_PORT_ONCE")
    if once and not os.path.exists(os.path.join(once, "lost")):
        open(os.path.join(once, "lost"), "w").close()
        print("tupa-worker: metrics: cannot listen on", listen, flush=True)
        sys.exit(1)
    host, port = listen.rsplit(":", 1)
    """) + SERVE_HOST_PORT


def free_port_reachable(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def last_argv(c, name):
    lines = [l for l in c.log(name).splitlines() if l.startswith("ARGV ")]
    return lines[-1].split()[1:] if lines else []


def flag(argv, name):
    return argv[argv.index(name) + 1]


class ScriptsClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bin = tempfile.mkdtemp(prefix="tupa-stubs-")
        for name, text in (("tupa-scheduler", STUB_SCHEDULER), ("tupa-worker", STUB_WORKER)):
            path = os.path.join(cls.bin, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.bin, ignore_errors=True)

    def cluster(self, **kw):
        kw.setdefault("workers", 2)
        kw.setdefault("gpus_per_worker", 2)
        return Cluster(bin_dir=self.bin, **kw)

    def test_up_passes_the_documented_flags_and_env_is_evalable(self):
        with self.cluster(gpu_type="T4", region="eu-west",
                          worker_flags=["--labels", "zone=a"]) as c:
            sched = last_argv(c, "scheduler")
            self.assertEqual(flag(sched, "--listen"), c.env["TUPA_SCHEDULER"])
            self.assertEqual(flag(sched, "--worker-timeout"), "15s")
            self.assertEqual(flag(sched, "--data-dir"), os.path.join(c.home, "scheduler"))
            self.assertIn(flag(sched, "--metrics-listen"), c.env["TUPA_METRICS_URL"])
            self.assertRegex(c.env["TUPA_DATABASE_URL"], r"^postgresql://tupa@127\.0\.0\.1:\d+/tupa$")
            urls = c.env["TUPA_WORKER_METRICS_URLS"].split(",")
            self.assertEqual(len(urls), 2)
            for k in (1, 2):
                w = last_argv(c, f"worker-{k}")
                self.assertEqual(flag(w, "--id"), f"worker-{k}")
                self.assertEqual(flag(w, "--scheduler"), c.env["TUPA_SCHEDULER"])
                self.assertEqual(flag(w, "--emulated-gpus"), "2")
                self.assertEqual(flag(w, "--emulated-gpu-type"), "T4")
                self.assertEqual(flag(w, "--region"), "eu-west")
                self.assertEqual(flag(w, "--instance-id"), f"local-worker-{k}")
                self.assertEqual(flag(w, "--work-dir"), os.path.join(c.home, "workers", f"worker-{k}"))
                self.assertEqual(flag(w, "--checkpoint-root"), os.path.join(c.home, "checkpoints"))
                self.assertEqual(w[-2:], ["--labels", "zone=a"])
                self.assertIn(f"http://{flag(w, '--metrics-listen')}/metrics", urls)

    def test_a_worker_whose_fresh_metrics_port_was_taken_gets_another(self):
        # The stand-in fails its first bind as a real worker does when
        # another process took the port between the pick and the bind.
        marks = tempfile.mkdtemp(prefix="tupa-stub-marks-")
        self.addCleanup(shutil.rmtree, marks, True)
        with self.cluster(workers=1, env={"TUPA_STUB_LOSE_PORT_ONCE": marks}) as c:
            starts = [l.split()[1:] for l in c.log("worker-1").splitlines()
                      if l.startswith("ARGV ")]
            self.assertEqual(len(starts), 2, c.log("worker-1"))
            self.assertNotEqual(flag(starts[0], "--metrics-listen"),
                                flag(starts[1], "--metrics-listen"))
            self.assertIn(flag(starts[1], "--metrics-listen"),
                          c.env["TUPA_WORKER_METRICS_URLS"])

    def test_up_after_kill_restarts_only_that_component_on_the_same_port(self):
        with self.cluster() as c:
            before = {n: c.pid(n) for n in ("postgres", "scheduler", "worker-1", "worker-2")}
            self.assertTrue(all(before.values()), before)
            port_before = flag(last_argv(c, "worker-2"), "--metrics-listen")
            url_before = c.env["TUPA_DATABASE_URL"]

            c.kill("worker-2")
            self.assertIsNone(c.pid("worker-2"))
            c.up()
            after = {n: c.pid(n) for n in before}
            self.assertNotEqual(after["worker-2"], before["worker-2"])
            for n in ("postgres", "scheduler", "worker-1"):
                self.assertEqual(after[n], before[n], f"{n} must not restart")
            self.assertEqual(flag(last_argv(c, "worker-2"), "--metrics-listen"), port_before)

            c.restart("scheduler")
            self.assertTrue(free_port_reachable(int(c.env["TUPA_SCHEDULER"].rsplit(":", 1)[1])))
            self.assertEqual(c.pid("worker-1"), before["worker-1"])

            sched_pid = c.pid("scheduler")
            c.restart("postgres")
            self.assertEqual(c._read_env()["TUPA_DATABASE_URL"], url_before)
            self.assertEqual(c.pid("scheduler"), sched_pid, "scheduler must not restart")

    def test_scheduler_config_is_passed_and_remembered_for_restarts(self):
        tmp = tempfile.mkdtemp(prefix="tupa-conf-")
        self.addCleanup(shutil.rmtree, tmp, True)
        conf = os.path.join(tmp, "sched.yaml")
        with open(conf, "w") as f:
            f.write("placement: {}\n")
        with self.cluster(workers=1, scheduler_config=conf) as c:
            self.assertEqual(flag(last_argv(c, "scheduler"), "--config"), conf)
            c.restart("scheduler")
            self.assertEqual(flag(last_argv(c, "scheduler"), "--config"), conf)

    def test_down_stops_everything_including_orphaned_ranks(self):
        c = self.cluster()
        with c:
            pids = [c.pid(n) for n in ("postgres", "scheduler", "worker-1", "worker-2")]
            c.kill("worker-1")  # its 'rank' child is now an orphan
            home = c.home
        for pid in pids:
            wait_for(lambda: not _alive(pid), 15, message=f"pid {pid} to exit")
        leftovers = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as f:
                        if f.read().split(b"\0")[:2] == [b"sleep", b"997"] and _alive(int(entry)):
                            leftovers.append(int(entry))
                except OSError:
                    pass
        self.assertEqual(leftovers, [], "rank stand-ins left running after down")
        self.assertFalse(os.path.exists(home), "down --purge must delete TUPA_HOME")

    def test_unknown_component_and_missing_binary_fail_clearly(self):
        with self.cluster(workers=1) as c:
            proc = c.script("kill", "worker-x", check=False)
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn("unknown component", proc.stderr)
        empty = tempfile.mkdtemp(prefix="tupa-nobin-")
        self.addCleanup(shutil.rmtree, empty, True)
        with self.assertRaises(AssertionError) as ctx:
            with Cluster(workers=1, gpus_per_worker=1, bin_dir=empty):
                pass
        self.assertIn("make build", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
