"""TLS (issue 7, must-show 2): the CLI and workers over TLS, and under mTLS
a worker without a client certificate (or without TLS) cannot join, while
the CLI needs no certificate (mTLS is for workers; people use tokens).

Certificates come from scripts/dev-certs (a throw-away CA, a server
certificate for 127.0.0.1 and a client certificate).
"""

import os
import subprocess
import tempfile
import time
import unittest

from cluster import (Cluster, EXIT_OK, EXIT_UNAVAILABLE, SOURCE_DIR, bin_path,
                     kill_quietly)

TLS_ENV = ("TUPA_TLS_CA", "TUPA_TLS_CERT", "TUPA_TLS_KEY")


def make_certs():
    d = tempfile.mkdtemp(prefix="tupa-certs-")
    subprocess.run([os.path.join(SOURCE_DIR, "scripts", "dev-certs"), d], check=True,
                   stdout=subprocess.DEVNULL)
    return {name: os.path.join(d, name) for name in
            ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")}


def write_config(certs, mtls):
    path = os.path.join(os.path.dirname(certs["ca.pem"]), "scheduler.yaml")
    with open(path, "w") as f:
        f.write(f"tls:\n  cert: {certs['server.pem']}\n  key: {certs['server.key']}\n")
        if mtls:
            f.write(f"  client_ca: {certs['ca.pem']}\n")
    return path


class TlsTest(unittest.TestCase):
    def plain_cli(self, c, *args):
        """`tupa ARGS` with no TLS settings from the environment."""
        env = dict(os.environ)
        env.update(c.env)
        for key in TLS_ENV:
            env.pop(key, None)
        return subprocess.run([bin_path("tupa"), *args], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=60)

    def start_worker(self, c, wid, flags):
        log = open(os.path.join(c.home, f"{wid}.log"), "w")
        proc = subprocess.Popen(
            [bin_path("tupa-worker"), "--scheduler", c.env["TUPA_SCHEDULER"],
             "--id", wid, "--emulated-gpus", "1", "--work-dir",
             os.path.join(c.home, wid), "--metrics-listen", "", *flags],
            stdout=log, stderr=subprocess.STDOUT)
        return proc, log

    def test_cli_and_workers_over_tls(self):
        certs = make_certs()
        env = {"TUPA_TLS_CA": certs["ca.pem"]}
        with Cluster(workers=1, gpus_per_worker=1,
                     scheduler_config=write_config(certs, mtls=False),
                     worker_flags=["--tls-ca", certs["ca.pem"]], env=env) as c:
            self.assertEqual([w["id"] for w in c.workers_json()], ["worker-1"])
            r = self.plain_cli(c, "--tls-ca", certs["ca.pem"], "workers")
            self.assertEqual(r.returncode, EXIT_OK, r.stderr)
            self.assertIn("worker-1", r.stdout)
            # Plaintext against a TLS port: unreachable, not a hang.
            r = self.plain_cli(c, "--timeout", "3s", "workers")
            self.assertEqual(r.returncode, EXIT_UNAVAILABLE, r.stderr)
            job = c.submit("--gpus", "1", "--", "true")
            c.wait_job(job["id"], "SUCCEEDED", timeout=60)

    def test_mtls_refuses_workers_without_a_client_certificate_not_people(self):
        certs = make_certs()
        env = {"TUPA_TLS_CA": certs["ca.pem"], "TUPA_TLS_CERT": certs["client.pem"],
               "TUPA_TLS_KEY": certs["client.key"]}
        client_flags = ["--tls-ca", certs["ca.pem"], "--tls-cert", certs["client.pem"],
                        "--tls-key", certs["client.key"]]
        with Cluster(workers=1, gpus_per_worker=1,
                     scheduler_config=write_config(certs, mtls=True),
                     worker_flags=client_flags, env=env) as c:
            self.assertEqual([w["id"] for w in c.workers_json()], ["worker-1"])
            r = self.plain_cli(c, *client_flags, "workers")
            self.assertEqual(r.returncode, EXIT_OK, r.stderr)
            # The CLI without a client certificate is served: mTLS is
            # required of workers only.
            r = self.plain_cli(c, "--tls-ca", certs["ca.pem"], "--timeout", "5s", "workers")
            self.assertEqual(r.returncode, EXIT_OK, r.stderr)
            # Without TLS at all it still cannot talk to the port.
            r = self.plain_cli(c, "--timeout", "3s", "workers")
            self.assertEqual(r.returncode, EXIT_UNAVAILABLE, r.stderr)
            job = c.submit("--gpus", "1", "--", "true")
            c.wait_job(job["id"], "SUCCEEDED", timeout=60)

            started = [self.start_worker(c, "no-client-cert", ["--tls-ca", certs["ca.pem"]]),
                       self.start_worker(c, "no-tls", []),
                       self.start_worker(c, "no-ca", ["--tls-cert", certs["client.pem"],
                                                      "--tls-key", certs["client.key"]])]
            try:
                time.sleep(5)  # several connection attempts each
                for proc, _ in started:
                    self.assertIsNone(proc.poll(), "a refused worker keeps retrying")
                ids = {w["id"] for w in c.workers_json()}
                self.assertEqual(ids, {"worker-1"})
                with open(os.path.join(c.home, "no-client-cert.log")) as f:
                    self.assertIn("client certificate required", f.read())
            finally:
                for proc, log in started:
                    kill_quietly(proc.pid)
                    proc.wait()
                    log.close()


if __name__ == "__main__":
    unittest.main()
