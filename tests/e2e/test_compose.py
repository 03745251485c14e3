"""deploy/docker-compose.yml validates with Debian's docker-compose (no
engine needed) and references only the repo's Dockerfiles and public
images (issue 6, must-show 4)."""

import os
import re
import subprocess
import unittest

ROOT = os.environ.get("TUPA_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
COMPOSE = os.path.join(ROOT, "deploy", "docker-compose.yml")
PUBLIC = re.compile(r"^(postgres|prom/prometheus|grafana/grafana|nvidia/cuda):")


class ComposeTest(unittest.TestCase):
    def test_config_validates(self):
        proc = subprocess.run(["docker-compose", "-f", COMPOSE, "config", "-q"],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_only_repo_dockerfiles_and_public_images(self):
        proc = subprocess.run(["docker-compose", "-f", COMPOSE, "--profile", "cpu", "config"],
                              capture_output=True, text=True, check=True)
        images = re.findall(r"^\s+image:\s*(\S+)", proc.stdout, re.M)
        dockerfiles = re.findall(r"^\s+dockerfile:\s*(\S+)", proc.stdout, re.M)
        self.assertTrue(dockerfiles)
        for d in dockerfiles:
            self.assertTrue(d.startswith("deploy/docker/"), d)
            self.assertTrue(os.path.exists(os.path.join(ROOT, d)), d)
        built = re.findall(r"^\s+image:\s*(tupa:\S+)", proc.stdout, re.M)
        for image in images:
            self.assertTrue(PUBLIC.match(image) or image in built, image)
        # Workers must not be restarted after an ordered (exit 0) shutdown.
        self.assertNotIn("unless-stopped", re.findall(
            r"worker[\s\S]*?restart:\s*(\S+)", proc.stdout))


if __name__ == "__main__":
    unittest.main()
