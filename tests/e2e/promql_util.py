"""Helpers for tests that run PromQL: a private Prometheus and the
expressions shipped in deploy/ (Python stdlib only)."""

import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from cluster import SOURCE_DIR, wait_for

DEPLOY = os.path.join(SOURCE_DIR, "deploy")
ALERTS_FILE = os.path.join(DEPLOY, "prometheus", "alerts.yml")
DASHBOARDS = sorted(glob.glob(os.path.join(DEPLOY, "grafana", "dashboards", "*.json")))

# Families that carry samples only on real GPUs (NVML power) or once the
# pricing integration feeds them: queries over them must be valid PromQL
# but may return nothing on an emulated, unpriced test cluster. Event
# counters that may never fire (idle shutdowns, scale-ups, zombie jobs)
# are not here: they are exported at 0 for their known labels, so their
# panels must show 0, not "no data".
MAY_BE_EMPTY = ("tupa_device_power_watts", "tupa_cost_accrued_total",
                "tupa_idle_cost_total", "tupa_team_monthly_budget",
                "tupa_idle_shutdown_saved_total")

# What Grafana substitutes for its built-in and template variables.
GRAFANA_SUBSTITUTIONS = [
    ("$__rate_interval", "10s"), ("$__interval", "2s"), ("$__range", "5m"),
]


def free_port():
    """A port nothing listens on, outside the kernel's ephemeral range, as
    scripts/lib/ports.sh picks them: a port bound to 0 comes from that range,
    where any outgoing connection may take it before Prometheus binds it."""
    out = subprocess.run(
        ["bash", "-c", 'source "$1" && pick_free_port', "_",
         os.path.join(SOURCE_DIR, "scripts", "lib", "ports.sh")],
        capture_output=True, text=True, check=True)
    return int(out.stdout)


def dashboard_queries(path):
    """[(panel title, expr)] of every target of every panel of a dashboard."""
    with open(path) as f:
        dash = json.load(f)
    out = []
    for panel in dash.get("panels", []):
        for target in panel.get("targets", []):
            out.append((panel.get("title", "?"), target.get("expr", "")))
    return out


def dashboard_variables(path):
    with open(path) as f:
        dash = json.load(f)
    return [v["name"] for v in dash.get("templating", {}).get("list", [])]


def grafana_to_promql(expr, variables):
    for k, v in GRAFANA_SUBSTITUTIONS:
        expr = expr.replace(k, v)
    for name in variables:  # "All" is the regex .*
        expr = expr.replace("${" + name + "}", ".*").replace("$" + name, ".*")
    return expr


def alert_rules(path=ALERTS_FILE):
    """[(alert name, expr)] from a rules file, parsed without PyYAML: the
    shipped file writes `expr:` either inline or as a `>-` folded block."""
    with open(path) as f:
        lines = f.read().splitlines()
    rules, name = [], None
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("- alert:"):
            name = line.split(":", 1)[1].strip()
        elif line.startswith("expr:"):
            value = line.split(":", 1)[1].strip()
            if value in (">-", ">", "|", "|-"):
                indent, parts = None, []
                i += 1
                while i < len(lines):
                    raw = lines[i]
                    cur = len(raw) - len(raw.lstrip())
                    if raw.strip() and indent is None:
                        indent = cur
                    if raw.strip() and cur < indent:
                        break
                    parts.append(raw.strip())
                    i += 1
                value = " ".join(p for p in parts if p)
                rules.append((name, value))
                continue
            rules.append((name, value))
        i += 1
    return rules


_BINARY = re.compile(r"(>=|<=|==|!=|>|<|\band\b|\bor\b|\bunless\b)")
_MODIFIER = re.compile(r"\s*(bool\b)?\s*((on|ignoring)\s*\([^)]*\))?\s*"
                       r"((group_left|group_right)\s*(\([^)]*\))?)?")


def promql_operands(expr):
    """Operands of the top-level comparison and set operators of `expr`
    (`a > 1 and on () b` -> ['a', '1', 'b']); anything else is one operand."""
    operands, depth, start, i, quote = [], 0, 0, 0, None
    while i < len(expr):
        ch = expr[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'`":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0:
            m = _BINARY.match(expr, i)
            if m and not (m.group(0)[0].isalpha() and i > 0 and
                          (expr[i - 1].isalnum() or expr[i - 1] == "_")):
                operands.append(expr[start:i].strip())
                i = m.end()
                i = _MODIFIER.match(expr, i).end()
                start = i
                continue
        i += 1
    operands.append(expr[start:].strip())
    return [o for o in operands if o]


class Prometheus:
    """A private Prometheus scraping the given targets every second and
    evaluating `rule_files` every second. Context manager."""

    def __init__(self, scheduler_target, worker_targets, rule_files=()):
        self.dir = tempfile.mkdtemp(prefix="tupa-prom-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": list(rule_files),
            # Same job names as deploy/prometheus/prometheus.yml.
            "scrape_configs": [
                {"job_name": "tupa-scheduler",
                 "static_configs": [{"targets": [scheduler_target]}]},
                {"job_name": "tupa-worker",
                 "static_configs": [{"targets": list(worker_targets)}]},
            ],
        }
        self.config = os.path.join(self.dir, "prometheus.yml")
        with open(self.config, "w") as f:
            json.dump(config, f)  # JSON is YAML
        self.proc = None

    def __enter__(self):
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={self.config}",
             f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(self._ready, 30, message="prometheus ready")
        return self

    def __exit__(self, *exc):
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def log_tail(self):
        with open(os.path.join(self.dir, "prometheus.log")) as f:
            return f.read()[-3000:]

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("prometheus exited:\n" + self.log_tail())
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def get(self, path, **params):
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            return json.load(e)

    def query(self, expr):
        """The /api/v1/query answer; raises on a PromQL error."""
        out = self.get("/api/v1/query", query=expr, time=f"{time.time():.3f}")
        if out.get("status") != "success":
            raise AssertionError(f"query {expr!r} failed: {out}")
        return out["data"]

    def has_data(self, expr):
        data = self.query(expr)
        if data["resultType"] in ("scalar", "string"):
            return True
        return len(data["result"]) > 0
