"""The Python client (client/python, package `tupa`) against the real stack
(issue 19, must-show 1).

`pip install client/python` into a fresh venv (--system-site-packages for
Debian's python3-grpcio, python3-protobuf and python3-yaml) with no index
and a dead proxy, so nothing can be downloaded; the stubs are generated
from proto/ during the install. Then py_client_checks.py runs with that
venv's interpreter against a private stack: submit from a dict, a YAML
text and a YAML file, wait, logs (followed), cancel, an invalid spec raises
naming the field, a missing job raises NotFound, and a job array (its %N
limit, cost by array, cancel of the rest).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from cluster import SOURCE_DIR, Cluster

SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's: where python3-grpcio lives
PRICING = """
pricing:
  currency: USD
  prices:
    - {region: "*", gpu_type: "*", offering: "*", per_gpu_hour: 3.60}
"""


class PythonClientE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tupa-py-")
        cls.venv = os.path.join(cls.tmp, "venv")
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", cls.venv],
                       check=True)
        # Built from a copy: pip builds in the tree, which stays clean.
        src = os.path.join(cls.tmp, "src")
        shutil.copytree(os.path.join(SOURCE_DIR, "client", "python"), src,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "*_pb2*.py"))
        env = dict(os.environ, TUPA_PROTO_DIR=os.path.join(SOURCE_DIR, "proto"),
                   PIP_NO_INDEX="1", PIP_INDEX_URL="http://127.0.0.1:9/simple",
                   HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9",
                   PIP_DISABLE_PIP_VERSION_CHECK="1")
        cls.pip = subprocess.run(
            [os.path.join(cls.venv, "bin", "pip"), "install", "--no-index",
             "--no-build-isolation", src],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        cls.python = os.path.join(cls.venv, "bin", "python")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_pip_install_offline_into_a_fresh_venv(self):
        self.assertEqual(self.pip.returncode, 0, self.pip.stdout)
        # The installed package, with stubs generated from proto/, from
        # outside the source tree.
        out = subprocess.run(
            [self.python, "-c",
             "import tupa, tupa.v1.job_service_pb2_grpc as g, os;"
             "print(os.path.dirname(tupa.__file__)); print(g.JobServiceStub.__name__)"],
            cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(out.returncode, 0, out.stdout)
        where, stub = out.stdout.split()
        self.assertTrue(where.startswith(self.venv), where)
        self.assertEqual(stub, "JobServiceStub")

    def test_client_against_the_real_stack(self):
        self.assertEqual(self.pip.returncode, 0, self.pip.stdout)
        config = os.path.join(self.tmp, "scheduler.yaml")
        with open(config, "w") as f:
            f.write(PRICING)
        with Cluster(workers=1, gpus_per_worker=2, scheduler_config=config) as c:
            env = dict(os.environ, **c.env, TUPA_PY_TMP=self.tmp)
            proc = subprocess.run(
                [self.python, "-m", "unittest", "-v", "py_client_checks"],
                cwd=os.path.dirname(os.path.abspath(__file__)), env=env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
            sys.stderr.write(proc.stdout)
            self.assertEqual(proc.returncode, 0, "py_client_checks failed (output above)")
            self.assertIn("OK", proc.stdout.splitlines()[-1])


if __name__ == "__main__":
    unittest.main()
