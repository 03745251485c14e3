"""deploy/docker-compose.yml validates with Debian's docker-compose (no
engine needed), references only the repo's Dockerfiles and public images
(issue 6, must-show 4), and gives the scheduler and workers their tokens as
secrets."""

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

    def test_auth_tokens_come_from_secrets(self):
        # Auth is on by default: the scheduler gets an admin and a join token
        # as secrets, every worker presents the join token, and the secret
        # files are never committed.
        proc = subprocess.run(["docker-compose", "-f", COMPOSE, "--profile", "cpu", "config"],
                              capture_output=True, text=True, check=True)
        services = re.split(r"^  (?=\S)", proc.stdout.split("\nservices:\n", 1)[1], flags=re.M)
        by_name = {s.split(":", 1)[0]: s for s in services if s.strip()}
        self.assertRegex(by_name["scheduler"], r"source: admin-token")
        self.assertRegex(by_name["scheduler"], r"source: join-token")
        for worker in ("worker-gpu", "worker-cpu"):
            self.assertIn("--join-token-file=/run/secrets/join-token", by_name[worker])
            self.assertRegex(by_name[worker], r"source: join-token")
        with open(os.path.join(ROOT, "deploy", "scheduler.yaml")) as f:
            config = f.read()
        self.assertRegex(config, r"(?m)^auth:\n  enabled: true$")
        self.assertIn("bootstrap_admin_token_file: /run/secrets/admin-token", config)
        self.assertIn("join_token_file: /run/secrets/join-token", config)
        with open(os.path.join(ROOT, ".gitignore")) as f:
            self.assertIn("deploy/secrets/", f.read().split())


if __name__ == "__main__":
    unittest.main()
