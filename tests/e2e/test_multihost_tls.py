"""TLS and mTLS across hosts (issue 17, must-show 5): scripts/dev-certs
makes the scheduler a certificate for its host's name and IP; workers on
two other hosts dial it by name (TLS, then mTLS with client
certificates), and a 2-node job runs across them. A worker without a
client certificate is refused by the mTLS scheduler."""

import os
import subprocess
import time
import unittest

from netns import SCHEDULER_PORT, SOURCE_DIR, Net, Stack, require_netns

CMD = 'echo node $NODE_RANK of $NNODES on $(hostname) master $MASTER_ADDR'


class MultiHostTlsTest(unittest.TestCase):
    def setUp(self):
        require_netns(self)

    def run_job(self, st):
        st.wait_workers_up(2)
        job = st.submit("--nodes", "2", "--gpus", "1", "--", "sh", "-c", CMD)
        done = st.wait_job(job["id"], "SUCCEEDED", timeout=60)
        self.assertEqual({p["worker_id"] for p in done["placements"]}, {"host1", "host2"})
        return st.cli("logs", str(job["id"])).stdout

    def test_tls_and_mtls_with_certificates_for_the_hosts_name_and_ip(self):
        for mtls in (False, True):
            with self.subTest(mtls=mtls), Net(["sched", "host1", "host2"]) as net:
                st = Stack(net, "sched", ["host1", "host2"], gpus_per_worker=1,
                           scheduler_addr=f"sched:{SCHEDULER_PORT}")
                certs = os.path.join(st.home, "certs")
                subprocess.run([os.path.join(SOURCE_DIR, "scripts", "dev-certs"), certs,
                                "DNS:sched", f"IP:{net['sched'].ip}"], check=True,
                               capture_output=True)
                c = lambda name: os.path.join(certs, name)
                st.scheduler_flags = ["--tls-cert", c("server.pem"), "--tls-key", c("server.key")]
                st.worker_flags = ["--tls-ca", c("ca.pem")]
                if mtls:
                    st.scheduler_flags += ["--tls-client-ca", c("ca.pem")]
                    st.worker_flags += ["--tls-cert", c("client.pem"), "--tls-key", c("client.key")]
                # The CLI dials the scheduler's IP: the certificate's IP SAN.
                st.cli_env_extra.update(TUPA_SCHEDULER=f"{net['sched'].ip}:{SCHEDULER_PORT}",
                                        TUPA_TLS_CA=c("ca.pem"))
                if mtls:
                    st.cli_env_extra.update(TUPA_TLS_CERT=c("client.pem"),
                                            TUPA_TLS_KEY=c("client.key"))
                with st:
                    logs = self.run_job(st)
                    self.assertIn("node 1 of 2", logs)
                    if mtls:
                        argv = [a for a in st.worker_argv(net["host1"], ["--id", "nocert", "--metrics-listen", ""])]
                        i = argv.index("--tls-cert")
                        del argv[i:i + 4]  # no client certificate
                        p = net["host1"].start(argv, log=st.log_path("nocert"))
                        time.sleep(4)
                        p.kill()
                        p.wait()
                        self.assertIn("client certificate required", st.log("nocert"))
                        self.assertNotIn("nocert", {w["id"] for w in st.workers()})


if __name__ == "__main__":
    unittest.main()
