"""The Grafana dashboard and the PrometheusRule query only metrics Caldera exports.

Metric names are read from the PromQL of every panel and alert and compared with the names
registered in app/metrics.py's registry (a histogram exports ``_bucket``, ``_sum`` and
``_count``, a counter ``_total``), so a renamed or removed metric fails here, and metrics
added later need no change to this test."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.metrics import Metrics
from schemas.goduration import parse_go_duration
from tests.deploy.kustomize import render
from tests.deploy.upstream import volcano_file

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "caldera-dashboard.json"
RULES = ROOT / "deploy" / "kubernetes" / "prometheusrule.yaml"
POD_MONITOR = ROOT / "deploy" / "kubernetes" / "podmonitor.yaml"
OVERLAY = ROOT / "deploy" / "kubernetes" / "volcano-v1.15.1"

KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring"}
KEYWORDS |= {"group_left", "group_right", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (Grafana variables allowed)."""
    text = re.sub(r"\$\{?\w+\}?", "1", expr)  # $__rate_interval, $pod, ${datasource}
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', text)
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors and subqueries
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        name = match[0]
        following = text[match.end() :].lstrip()
        if following.startswith("(") or name in KEYWORDS:
            continue
        if match.start() > 0 and (
            text[match.start() - 1].isdigit() or text[match.start() - 1] == "."
        ):
            continue  # the exponent or unit of a number (1e3, 5m)
        names.add(name)
    return names


def exported_names() -> set[str]:
    names = set()
    for family in Metrics().registry.collect():
        # no _created series: app/metrics.py turns them off
        if family.type == "counter":
            names.add(f"{family.name}_total")
        elif family.type == "histogram":
            names |= {f"{family.name}_{s}" for s in ("bucket", "sum", "count")}
        else:
            names.add(family.name)
    return names


def dashboard_exprs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("expr"), str):
            yield node["expr"]
        for value in node.values():
            yield from dashboard_exprs(value)
    elif isinstance(node, list):
        for item in node:
            yield from dashboard_exprs(item)


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text())
    assert document["apiVersion"] == "monitoring.coreos.com/v1"
    assert document["kind"] == "PrometheusRule"
    return [rule for group in document["spec"]["groups"] for rule in group["rules"]]


def test_the_parser_finds_metrics_and_only_metrics() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (verb, le) (rate(a_bucket{pod=~"$pod"}[$__rate_interval])))'
        " / on (pod) group_left b_total offset 5m > 1e3 or vector($http_timeout) and c"
    )
    assert metric_names(expr) == {"a_bucket", "b_total", "c"}


def test_registry_names_include_histogram_and_counter_suffixes() -> None:
    names = exported_names()
    assert "caldera_request_duration_seconds_bucket" in names
    assert "caldera_responses_total" in names and "caldera_session_age_seconds" in names


def test_dashboard_queries_only_exported_metrics() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = list(dashboard_exprs(dashboard["panels"]))
    variable_queries = [
        v["definition"] for v in dashboard["templating"]["list"] if "definition" in v
    ]
    used: set[str] = set()
    for expr in exprs + [
        re.sub(r"^label_values\((.*), \w+\)$", r"\1", q) for q in variable_queries
    ]:
        names = metric_names(expr)
        assert names <= exported_names(), f"{expr}: {names - exported_names()} not exported"
        used |= names
    # every topic of the dashboard is there
    for family in (
        "caldera_responses_total",
        "caldera_request_duration_seconds_bucket",
        "caldera_plugin_decisions_total",
        "caldera_plugin_errors_total",
        "caldera_session_age_seconds",
        "caldera_snapshot_objects",
        "caldera_request_bodies_refused_total",
        "caldera_release_mismatch_total",
    ):
        assert family in used, f"the dashboard shows no {family}"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids are unique"


VOLCANO_METRICS = {"volcano_e2e_scheduling_latency_milliseconds_count"}
"""vc-scheduler's own series a rule reads beside Caldera's (CalderaNoSessionOpened: which pod
leads); tests/deploy/test_alert_rules.py reads them from Volcano's source."""


def test_rules_query_only_exported_metrics_and_cover_the_alerts() -> None:
    found = {}
    for rule in rules():
        names = metric_names(rule["expr"]) - VOLCANO_METRICS
        assert names, f"{rule['alert']} selects no metric"
        assert names <= exported_names(), f"{rule['alert']}: {names - exported_names()}"
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
        found[rule["alert"]] = rule
    assert set(found) == {
        "CalderaExtenderErrors",
        "CalderaPluginErrors",
        "CalderaLatencyNearHttpTimeout",
        "CalderaNoSessionOpened",
        "CalderaBodiesRefused",
        "CalderaSnapshotNotTaken",
        "CalderaPdbNotSynced",
        "CalderaReleaseMismatch",
        "CalderaConfigRejected",
        "CalderaSessionStateStale",
        "CalderaFeatureDegraded",
    }


def shipped_http_timeout() -> float:
    documents = render(OVERLAY, volcano_file)
    [conf] = [d for d in documents if d["metadata"]["name"] == "volcano-scheduler-configmap"]
    tiers = yaml.safe_load(conf["data"]["volcano-scheduler.conf"])["tiers"]
    [extender] = [p for tier in tiers for p in tier["plugins"] if p["name"] == "extender"]
    return parse_go_duration(extender["arguments"]["extender.httpTimeout"]) / 1e9


def test_latency_alert_and_dashboard_line_follow_the_shipped_http_timeout() -> None:
    timeout = shipped_http_timeout()
    [rule] = [r for r in rules() if r["alert"] == "CalderaLatencyNearHttpTimeout"]
    # one threshold per histogram: the answer, and the work after it (onSessionOpen's build)
    thresholds = [float(t) for t in re.findall(r">\s*([0-9.]+)\s*(?:or\b|$)", rule["expr"])]
    assert len(thresholds) == 2 and "caldera_after_answer_seconds_bucket" in rule["expr"]
    assert thresholds == [pytest.approx(0.8 * timeout)] * 2
    dashboard = json.loads(DASHBOARD.read_text())
    [variable] = [v for v in dashboard["templating"]["list"] if v["name"] == "http_timeout"]
    assert float(variable["query"]) == timeout


def test_pod_monitor_scrapes_the_sidecar_port() -> None:
    monitor = yaml.safe_load(POD_MONITOR.read_text())
    documents = render(OVERLAY, volcano_file)
    deployments = [d for d in documents if d["kind"] == "Deployment"]
    [deployment] = [d for d in deployments if d["metadata"]["name"] == "volcano-scheduler"]
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    selector = monitor["spec"]["selector"]["matchLabels"].items()
    assert selector <= labels.items()
    others = [d for d in deployments if d is not deployment]
    assert not any(selector <= d["spec"]["template"]["metadata"]["labels"].items() for d in others)
    every = [*pod["spec"].get("initContainers", []), *pod["spec"]["containers"]]
    ports = {p["name"]: (c, p) for c in every for p in c.get("ports", []) if "name" in p}
    endpoints = {e["port"]: e for e in monitor["spec"]["podMetricsEndpoints"]}
    assert set(endpoints) == {"caldera-health", "vc-metrics"}
    assert all(e["path"] == "/metrics" for e in endpoints.values())
    caldera, _ = ports["caldera-health"]
    assert caldera["name"] == "caldera"
    # vc-scheduler's metrics, for CalderaNoSessionOpened: the port its --listen-address
    # (default :8080) serves with --enable-metrics.
    scheduler, port = ports["vc-metrics"]
    assert scheduler["name"] == "volcano-scheduler"
    assert "--enable-metrics=true" in scheduler["args"]
    listen = [a for a in scheduler["args"] if a.startswith("--listen-address")]
    assert listen in ([], [f"--listen-address=:{port['containerPort']}"])
    assert port["containerPort"] == 8080
    assert monitor["metadata"]["namespace"] == deployment["metadata"]["namespace"]


def test_the_compose_prometheus_gives_every_label_the_dashboard_variables_select() -> None:
    """The dashboard's variables read namespace and pod (from the PodMonitor in Kubernetes):
    the compose Prometheus must add them, or every panel is blank there."""
    dashboard = json.loads(DASHBOARD.read_text())
    wanted = {
        match
        for v in dashboard["templating"]["list"]
        for match in re.findall(r"label_values\([^,]+, (\w+)\)", v.get("definition", ""))
    }
    assert wanted >= {"namespace", "pod"}
    compose = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    [job] = compose["scrape_configs"]
    labels = {key for target in job["static_configs"] for key in target.get("labels", {})}
    assert wanted <= labels, f"the compose Prometheus lacks {wanted - labels}"
