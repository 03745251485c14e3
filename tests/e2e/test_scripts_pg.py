"""scripts/pg: a private PostgreSQL that starts, restarts and stops cleanly."""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from cluster import PG_SCRIPT, wait_for, _alive


def pg(*args, check=True, env=None):
    proc = subprocess.run([PG_SCRIPT, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    if check and proc.returncode != 0:
        raise AssertionError(f"scripts/pg {' '.join(args)}: {proc.returncode}\n{proc.stderr}")
    return proc


def psql(url, sql):
    return subprocess.run(["psql", url, "-qAtX", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=30, check=True).stdout.strip()


class ScriptsPgTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tupa-pgtest-")
        os.chmod(self.tmp, 0o755)
        self.dirs = []

    def tearDown(self):
        for d in self.dirs:
            pg("purge", d, check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def new_dir(self, *parts):
        d = os.path.join(self.tmp, *parts)
        self.dirs.append(d)
        return d

    def test_start_gives_tupa_superuser_and_database_on_loopback(self):
        d = self.new_dir("a")
        pg("start", d, env={"TUPA_PG_SYNCHRONOUS_COMMIT": "off"})
        url = pg("url", d).stdout.strip()
        self.assertRegex(url, r"^postgresql://tupa@127\.0\.0\.1:\d+/tupa$")
        self.assertEqual(psql(url, "SELECT current_user || ' ' || current_database()"), "tupa tupa")
        self.assertEqual(psql(url, "SELECT rolsuper FROM pg_roles WHERE rolname = 'tupa'"), "t")
        self.assertEqual(psql(url, "SHOW listen_addresses"), "127.0.0.1")
        self.assertEqual(psql(url, "SHOW fsync"), "on")
        self.assertEqual(psql(url, "SHOW synchronous_commit"), "off")
        with open(os.path.join(d, "url")) as f:
            self.assertEqual(f.read().strip(), url)

    def test_start_is_idempotent_and_restart_keeps_the_port(self):
        d = self.new_dir("b")
        pg("start", d)
        url = pg("url", d).stdout.strip()
        pid = int(pg("pid", d).stdout)
        pg("start", d)
        self.assertEqual(int(pg("pid", d).stdout), pid, "second start must not restart")
        pg("stop", d)
        self.assertEqual(pg("status", d, check=False).returncode, 1)
        pg("stop", d)  # stopping a stopped server is fine
        pg("start", d)
        self.assertEqual(pg("url", d).stdout.strip(), url)
        self.assertEqual(psql(url, "SELECT 1"), "1")

    def test_start_after_sigkill_recovers_committed_rows(self):
        d = self.new_dir("c")
        pg("start", d)
        url = pg("url", d).stdout.strip()
        psql(url, "CREATE TABLE t (x int); INSERT INTO t VALUES (42)")
        pid = int(pg("pid", d).stdout)
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not _alive(pid), 10, message="postmaster to die")
        self.assertEqual(pg("status", d, check=False).returncode, 1)
        pg("start", d)
        self.assertEqual(psql(url, "SELECT x FROM t"), "42")

    def test_unreachable_parent_puts_data_under_tmp_and_purge_removes_it(self):
        hidden = os.path.join(self.tmp, "hidden")
        os.makedirs(hidden)
        os.chmod(hidden, 0o700)  # like /root: postgres cannot enter
        d = self.new_dir("hidden", "pg")
        pg("start", d)
        with open(os.path.join(d, "pgdata")) as f:
            pgdata = f.read().strip()
        if os.getuid() == 0:
            self.assertTrue(pgdata.startswith("/tmp/tupa-pg-"), pgdata)
        self.assertEqual(psql(pg("url", d).stdout.strip(), "SELECT 1"), "1")
        pg("purge", d)
        self.assertFalse(os.path.exists(pgdata))
        self.assertFalse(os.path.exists(d))

    def test_busy_port_is_refused(self):
        a, b = self.new_dir("d1"), self.new_dir("d2")
        pg("start", a)
        port = pg("url", a).stdout.strip().rsplit(":", 1)[1].split("/")[0]
        proc = pg("start", b, "--port", port, check=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("in use", proc.stderr)


if __name__ == "__main__":
    unittest.main()
