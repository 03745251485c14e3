"""Generates tupa/v1/*_pb2*.py from proto/ while the package is built.

The stubs are written into the build directory only (never into the
source tree): protoc and grpc_python_plugin must be on PATH (Debian:
protobuf-compiler, protobuf-compiler-grpc). TUPA_PROTO_DIR overrides where
the .proto files are (default: ../../proto, this package's repository).
"""

import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def proto_dir():
    d = os.environ.get("TUPA_PROTO_DIR") or os.path.join(HERE, "..", "..", "proto")
    d = os.path.abspath(d)
    if not os.path.isdir(os.path.join(d, "tupa", "v1")):
        raise RuntimeError(
            f"tupa: no protos in {d}/tupa/v1 (set TUPA_PROTO_DIR to the repository's proto/)")
    return d


def tool(name):
    path = shutil.which(name)
    if not path:
        raise RuntimeError(
            f"tupa: {name} not found (Debian: apt-get install protobuf-compiler "
            "protobuf-compiler-grpc)")
    return path


def generate(out_dir):
    src = proto_dir()
    protos = sorted(glob.glob(os.path.join(src, "tupa", "v1", "*.proto")))
    os.makedirs(os.path.join(out_dir, "tupa", "v1"), exist_ok=True)
    subprocess.run(
        [tool("protoc"), f"-I{src}", f"--python_out={out_dir}",
         f"--grpc_python_out={out_dir}",
         f"--plugin=protoc-gen-grpc_python={tool('grpc_python_plugin')}",
         *protos],
        check=True)


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        generate(self.build_lib)


setup(cmdclass={"build_py": BuildWithStubs})
