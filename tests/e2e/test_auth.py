"""Authorization table (issue 7, must-show 1) and join tokens (must-show 2).

Every RPC, through the CLI, x {no token, bad token, owner, team-mate, other
team's user, admin}: the CLI exit code (0 ok, 3 NOT_FOUND, 4 denied) and,
for 4, whether it was UNAUTHENTICATED or PERMISSION_DENIED. Then a worker
with a wrong (or no) join token is refused and says why in its log.
"""

import json
import os
import subprocess
import tempfile
import unittest

from cluster import (Cluster, EXIT_DENIED, EXIT_NOT_FOUND, EXIT_OK, bin_path,
                     state_name, wait_for, kill_quietly)

ADMIN_TOKEN = "tupa_" + "ab" * 32

UNAUTH = "unauthenticated"
DENIED = "permission denied"


def read_text(path):
    with open(path, errors="replace") as f:
        return f.read()


def submitted(proc):
    """The job printed by `tupa submit -o json`."""
    out = json.loads(proc.stdout)
    return out.get("job", out)


def write_auth_config():
    d = tempfile.mkdtemp(prefix="tupa-auth-")
    token_file = os.path.join(d, "admin-token")
    with open(token_file, "w") as f:
        f.write("  " + ADMIN_TOKEN + "\n")  # whitespace is trimmed
    config = os.path.join(d, "scheduler.yaml")
    with open(config, "w") as f:
        f.write("auth:\n  enabled: true\n"
                f"  bootstrap_admin_token_file: {token_file}\n")
    return config


class AuthTest(unittest.TestCase):
    def run_as(self, c, token, *args, timeout=60):
        """`tupa ARGS` with TUPA_TOKEN=token (None: unset)."""
        env = dict(os.environ)
        env.update(c.env)
        env.pop("TUPA_TOKEN", None)
        if token is not None:
            env["TUPA_TOKEN"] = token
        proc = subprocess.run([bin_path("tupa"), *map(str, args)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=timeout)
        return proc

    def expect(self, c, who, token, args, code, kind=None):
        r = self.run_as(c, token, *args)
        with self.subTest(who=who, args=args):
            self.assertEqual(r.returncode, code,
                             f"{who}: tupa {' '.join(map(str, args))}: {r.stderr}")
            if kind:
                self.assertIn(kind, r.stderr.lower(), f"{who}: {r.stderr}")
        return r

    def create_token(self, c, user, team, admin=False):
        args = ["admin", "token", "create", "--user", user, "--team", team]
        if admin:
            args.append("--admin")
        r = self.run_as(c, ADMIN_TOKEN, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        token = r.stdout.strip()
        self.assertRegex(token, r"^tupa_[0-9a-f]{64}$")
        return token

    def test_authorization_table_and_join_token(self):
        config = write_auth_config()
        with Cluster(workers=2, gpus_per_worker=2, scheduler_config=config,
                     env={"TUPA_TOKEN": ADMIN_TOKEN}) as c:
            alice = self.create_token(c, "alice", "team-a")
            bob = self.create_token(c, "bob", "team-a")      # alice's team-mate
            carol = self.create_token(c, "carol", "team-b")  # another team
            who = {"none": None, "bad": "tupa_" + "00" * 32, "alice": alice,
                   "bob": bob, "carol": carol, "admin": ADMIN_TOKEN}

            # Only the SHA-256 is stored, never the token.
            rows = subprocess.run(
                ["psql", c.env["TUPA_DATABASE_URL"], "-Atc",
                 "SELECT token_sha256 FROM api_tokens"],
                capture_output=True, text=True, check=True).stdout
            self.assertNotIn(alice[5:], rows)
            self.assertEqual(len(rows.split()), 4)

            # ---- SubmitJob: user and team come from the token.
            for name in ("none", "bad"):
                self.expect(c, name, who[name], ["submit", "--", "true"],
                            EXIT_DENIED, UNAUTH)
            r = self.expect(c, "alice", alice,
                            ["submit", "-o", "json", "--team", "team-b", "--", "true"],
                            EXIT_OK)
            done = submitted(r)
            self.assertEqual(done["spec"]["user"], "alice")
            self.assertEqual(done["spec"]["team"], "team-a")
            running = submitted(self.expect(
                c, "alice", alice, ["submit", "-o", "json", "--", "sleep", "300"],
                EXIT_OK))
            carols = submitted(self.expect(
                c, "carol", carol, ["submit", "-o", "json", "--", "sleep", "300"],
                EXIT_OK))
            c.wait_job(done["id"], "SUCCEEDED", timeout=60)

            # ---- GetJob, WatchJob (wait), StreamLogs (logs) on alice's job.
            read_expect = {"none": (EXIT_DENIED, UNAUTH), "bad": (EXIT_DENIED, UNAUTH),
                           "alice": (EXIT_OK, None), "bob": (EXIT_OK, None),
                           "carol": (EXIT_NOT_FOUND, None), "admin": (EXIT_OK, None)}
            for cmd in (["get", done["id"]], ["wait", done["id"]],
                        ["logs", done["id"]]):
                for name, (code, kind) in read_expect.items():
                    self.expect(c, name, who[name], cmd, code, kind)

            # ---- ListJobs: own + team's; other teams' filtered out.
            def listed(name, *extra):
                r = self.expect(c, name, who[name], ["list", "-o", "json", *extra],
                                EXIT_OK)
                return {j["id"] for j in json.loads(r.stdout).get("jobs", [])}
            for name in ("none", "bad"):
                self.expect(c, name, who[name], ["list"], EXIT_DENIED, UNAUTH)
            self.assertEqual(listed("alice"), {done["id"], running["id"]})
            self.assertEqual(listed("bob"), {done["id"], running["id"]})
            self.assertEqual(listed("carol"), {carols["id"]})
            self.assertEqual(listed("carol", "--team", "team-a"), set())
            self.assertEqual(listed("carol", "--user", "alice"), set())
            self.assertEqual(listed("admin"), {done["id"], running["id"], carols["id"]})

            # ---- CancelJob: only the owner (or an admin).
            cancel = ["cancel", running["id"]]
            self.expect(c, "none", None, cancel, EXIT_DENIED, UNAUTH)
            self.expect(c, "bad", who["bad"], cancel, EXIT_DENIED, UNAUTH)
            self.expect(c, "carol", carol, cancel, EXIT_NOT_FOUND)
            self.expect(c, "bob", bob, cancel, EXIT_DENIED, DENIED)
            self.expect(c, "alice", alice, cancel, EXIT_OK)
            self.expect(c, "admin", ADMIN_TOKEN, ["cancel", carols["id"]], EXIT_OK)
            self.assertEqual(state_name(c.get_job(running["id"])), "CANCELLED")

            # ---- GetCostReport: own team for users, every team for admins.
            for name in ("none", "bad"):
                self.expect(c, name, who[name], ["cost"], EXIT_DENIED, UNAUTH)
            for name in ("alice", "bob", "carol", "admin"):
                self.expect(c, name, who[name], ["cost"], EXIT_OK)
            r = self.expect(c, "carol", carol, ["cost", "-o", "json"], EXIT_OK)
            report = json.loads(r.stdout)
            keys = {row["key"] for row in report.get("rows", [])}
            self.assertEqual(keys, {"team-b"})
            # The fleet's idle cost and idle-shutdown savings are not a
            # team's to see, and its table has no IDLE row.
            for fleet_wide in ("idle_cost", "idle_shutdown_saved"):
                self.assertEqual(report.get(fleet_wide, ""), "", report)
            table = self.expect(c, "carol", carol, ["cost"], EXIT_OK)
            self.assertNotIn("IDLE", table.stdout)
            self.expect(c, "alice", alice, ["cost", "--by", "user"], EXIT_DENIED, DENIED)
            self.expect(c, "admin", ADMIN_TOKEN, ["cost", "--by", "user"], EXIT_OK)

            # ---- EstimateJob: any authenticated caller (same answer as admin).
            est = ["estimate", "--", "true"]
            admin_code = self.run_as(c, ADMIN_TOKEN, *est).returncode
            self.assertNotEqual(admin_code, EXIT_DENIED)
            for name in ("none", "bad"):
                self.expect(c, name, who[name], est, EXIT_DENIED, UNAUTH)
            for name in ("alice", "bob", "carol"):
                self.expect(c, name, who[name], est, admin_code)

            # ---- ListWorkers: any authenticated caller.
            for name in ("none", "bad"):
                self.expect(c, name, who[name], ["workers"], EXIT_DENIED, UNAUTH)
            for name in ("alice", "bob", "carol", "admin"):
                self.expect(c, name, who[name], ["workers"], EXIT_OK)

            # ---- AdminService: admins only.
            for cmd in (["admin", "token", "list"],
                        ["admin", "token", "create", "--user", "x", "--team", "t"],
                        ["admin", "token", "revoke", "1"]):
                for name in ("none", "bad"):
                    self.expect(c, name, who[name], cmd, EXIT_DENIED, UNAUTH)
                for name in ("alice", "bob", "carol"):
                    self.expect(c, name, who[name], cmd, EXIT_DENIED, DENIED)
            r = self.expect(c, "admin", ADMIN_TOKEN,
                            ["admin", "token", "list", "-o", "json"], EXIT_OK)
            tokens = json.loads(r.stdout)["tokens"]
            self.assertEqual({t["user"] for t in tokens},
                             {"admin", "alice", "bob", "carol"})
            carol_id = next(t["id"] for t in tokens if t["user"] == "carol")
            self.expect(c, "admin", ADMIN_TOKEN,
                        ["admin", "token", "revoke", carol_id], EXIT_OK)
            # Revocation is immediate.
            self.expect(c, "carol (revoked)", carol, ["workers"], EXIT_DENIED, UNAUTH)

            # ---- DrainWorker: admins only (last: it changes the cluster).
            for name in ("none", "bad"):
                self.expect(c, name, who[name], ["drain", "worker-2"], EXIT_DENIED, UNAUTH)
            for name in ("alice", "bob"):
                self.expect(c, name, who[name], ["drain", "worker-2"], EXIT_DENIED, DENIED)
            self.expect(c, "admin", ADMIN_TOKEN, ["drain", "worker-2"], EXIT_OK)

            # ---- Join tokens: a wrong or missing one is refused.
            self.check_join_token_refused(c)

    def check_join_token_refused(self, c):
        procs = []
        try:
            for wid, token, flags in (("intruder-wrong", "not-the-token", []),
                                      ("intruder-flag", None,
                                       ["--join-token", "not-the-token"]),
                                      ("intruder-none", None, [])):
                env = dict(os.environ)
                env.pop("TUPA_JOIN_TOKEN", None)
                if token:
                    env["TUPA_JOIN_TOKEN"] = token
                log = open(os.path.join(c.home, f"{wid}.log"), "w")
                procs.append((wid, log, subprocess.Popen(
                    [bin_path("tupa-worker"), "--scheduler", c.env["TUPA_SCHEDULER"],
                     "--id", wid, "--emulated-gpus", "1",
                     "--work-dir", os.path.join(c.home, wid),
                     "--metrics-listen", ""] + flags,
                    env=env, stdout=log, stderr=subprocess.STDOUT)))
            expected = {"intruder-wrong": "join token rejected",
                        "intruder-flag": "join token rejected",
                        "intruder-none": "join token required"}
            for wid, log, _ in procs:
                path = os.path.join(c.home, f"{wid}.log")
                wait_for(lambda: expected[wid] in read_text(path), 30,
                         message=f"{wid} to log why it was refused")
            ids = {w["id"] for w in c.workers_json()}
            self.assertNotIn("intruder-wrong", ids)
            self.assertNotIn("intruder-none", ids)
            self.assertNotIn("intruder-flag", ids)
            self.assertIn("worker-1", ids)
            self.assertIn("refused worker", c.log("scheduler"))
        finally:
            for _, log, p in procs:
                kill_quietly(p.pid)
                p.wait()
                log.close()


if __name__ == "__main__":
    unittest.main()
