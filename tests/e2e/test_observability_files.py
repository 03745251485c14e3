"""The shipped Prometheus and Grafana files (issue 5): promtool accepts the
config and the rules; every dashboard is well-formed Grafana JSON whose
panels name the provisioned datasource, whose queries use only template
variables the dashboard defines, and whose PromQL parses (promtool)."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import promql_util as pu

PROM_DIR = os.path.join(pu.DEPLOY, "prometheus")
GRAFANA_DIR = os.path.join(pu.DEPLOY, "grafana")
BUILTIN_VARS = {"__rate_interval", "__interval", "__range", "__range_s", "__interval_ms"}


def provisioned_datasource_uids():
    path = os.path.join(GRAFANA_DIR, "provisioning", "datasources", "tupa.yml")
    with open(path) as f:
        return set(re.findall(r"^\s*uid:\s*(\S+)\s*$", f.read(), re.M))


class PromtoolTest(unittest.TestCase):
    def promtool(self, *args):
        proc = subprocess.run(["promtool", *args], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return proc.stdout

    def test_promtool_check_config_accepts_shipped_prometheus_yml(self):
        # check config also checks the rule files it names.
        out = self.promtool("check", "config", os.path.join(PROM_DIR, "prometheus.yml"))
        self.assertIn("SUCCESS", out)
        with open(os.path.join(PROM_DIR, "prometheus.yml")) as f:
            text = f.read()
        for job in ("tupa-scheduler", "tupa-worker"):
            self.assertIn(f"job_name: {job}", text)  # the alerts name them
        with open(os.path.join(PROM_DIR, "workers.example.json")) as f:
            groups = json.load(f)
        self.assertTrue(groups and all(g["targets"] for g in groups))

    def test_compose_prometheus_and_grafana_point_at_the_compose_services(self):
        # Inside the compose network localhost is the container itself.
        compose_prom = os.path.join(PROM_DIR, "prometheus-compose.yml")
        self.assertIn("SUCCESS", self.promtool("check", "config", compose_prom))
        with open(compose_prom) as f:
            text = f.read()
        for target in ("scheduler:9464", "worker-gpu:9465", "worker-cpu:9465"):
            self.assertIn(target, text)
        deploy = os.path.dirname(PROM_DIR)
        with open(os.path.join(deploy, "docker-compose.yml")) as f:
            compose = f.read()
        self.assertIn("--config.file=/etc/prometheus/prometheus-compose.yml", compose)
        self.assertIn("PROMETHEUS_URL: http://prometheus:9090", compose)
        with open(os.path.join(deploy, "grafana", "provisioning", "datasources",
                               "tupa.yml")) as f:
            self.assertIn("url: ${PROMETHEUS_URL}", f.read())

    def test_promtool_check_rules_accepts_shipped_alerts(self):
        self.promtool("check", "rules", pu.ALERTS_FILE)
        names = {n for n, _ in pu.alert_rules()}
        for required in ("TupaWorkerLost", "TupaJobFailingRepeatedly",
                         "TupaGpusIdleWhileJobsPend", "TupaTeamBurnRateAboveBudget",
                         "TupaTrainingStalled"):
            self.assertIn(required, names)

    def test_every_dashboard_query_is_valid_promql(self):
        # promtool check rules parses PromQL: wrap each query in a rule.
        lines = ["groups:", "  - name: dashboards", "    rules:"]
        n = 0
        for path in pu.DASHBOARDS:
            variables = pu.dashboard_variables(path)
            for _, expr in pu.dashboard_queries(path):
                n += 1
                q = pu.grafana_to_promql(expr, variables)
                lines += [f"      - record: tupa:dashboard_query_{n}",
                          f"        expr: {json.dumps(q)}"]
        tmp = tempfile.mkdtemp()
        try:
            path = os.path.join(tmp, "queries.yml")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            self.promtool("check", "rules", path)
        finally:
            shutil.rmtree(tmp)
        self.assertGreater(n, 20)


class DashboardJsonTest(unittest.TestCase):
    def test_three_dashboards_ship_with_provisioning(self):
        uids = set()
        for path in pu.DASHBOARDS:
            with open(path) as f:
                uids.add(json.load(f)["uid"])
        self.assertEqual(uids, {"tupa-cluster", "tupa-cost", "tupa-training"})
        providers = os.path.join(GRAFANA_DIR, "provisioning", "dashboards", "tupa.yml")
        with open(providers) as f:
            text = f.read()
        self.assertIn("providers:", text)
        self.assertIn("type: file", text)

    def test_dashboards_are_well_formed_grafana_json(self):
        uids = provisioned_datasource_uids()
        self.assertEqual(uids, {"tupa-prometheus"})
        for path in pu.DASHBOARDS:
            name = os.path.basename(path)
            with open(path) as f:
                dash = json.load(f)
            for key in ("uid", "title", "panels", "schemaVersion", "templating"):
                self.assertIn(key, dash, name)
            self.assertTrue(dash["title"].strip(), name)
            self.assertRegex(dash["uid"], r"^[a-zA-Z0-9_-]{1,40}$", name)
            variables = {v["name"]: v for v in dash["templating"]["list"]}
            for v in variables.values():
                self.assertEqual(v["datasource"]["uid"], "tupa-prometheus", (name, v["name"]))
                self.assertTrue(v.get("query"), (name, v["name"]))
            ids = set()
            self.assertTrue(dash["panels"], name)
            for panel in dash["panels"]:
                where = f"{name} / {panel.get('title')}"
                self.assertTrue(panel.get("title"), where)
                self.assertNotIn(panel["id"], ids, where)
                ids.add(panel["id"])
                self.assertIn(panel["type"], {"timeseries", "stat", "gauge", "bargauge",
                                              "table"}, where)
                for k in ("x", "y", "w", "h"):
                    self.assertIn(k, panel["gridPos"], where)
                self.assertEqual(panel["datasource"], {"type": "prometheus",
                                                       "uid": "tupa-prometheus"}, where)
                self.assertTrue(panel.get("targets"), where)
                refs = set()
                for t in panel["targets"]:
                    self.assertTrue(t.get("expr"), where)
                    self.assertNotIn(t["refId"], refs, where)
                    refs.add(t["refId"])
                    self.assertEqual(t["datasource"]["uid"], "tupa-prometheus", where)
                    for used in re.findall(r"\$\{?(\w+)", t["expr"]):
                        self.assertTrue(used in variables or used in BUILTIN_VARS,
                                        f"{where}: ${used} is not a template variable")

    def test_dashboards_offer_team_worker_and_job_variables(self):
        seen = set()
        for path in pu.DASHBOARDS:
            seen |= set(pu.dashboard_variables(path))
        self.assertTrue({"team", "worker", "job"} <= seen, seen)


if __name__ == "__main__":
    unittest.main()
