"""deploy/kubernetes/prometheusrule.yaml under promtool, Prometheus' own rule engine (built from
its Go module: tests/deploy/promtool.py), against the series a scheduler pod exports.

CalderaNoSessionOpened must page for a leading vc-scheduler whose sessions do not reach its
Caldera, and never for a standby replica under leader election (issue 34): vc-scheduler exports
no leader-election series, so the rule reads the session count vc-scheduler itself exports
(``volcano_e2e_scheduling_latency_milliseconds``, observed once per session, by the leader
only). That this metric exists and is observed so in every Volcano release with an overlay here
is read from Volcano's own source below."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.promtool import promtool_binary
from tests.deploy.upstream import volcano_file

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "kubernetes" / "prometheusrule.yaml"
OVERLAYS = sorted((ROOT / "deploy" / "kubernetes").glob("volcano-v*"))

NAMESPACE = "volcano-system"
CALDERA = {"container": "caldera", "endpoint": "caldera-health", "namespace": NAMESPACE}
SCHEDULER = {"container": "volcano-scheduler", "endpoint": "vc-metrics", "namespace": NAMESPACE}
MINUTES = 30
"""Each series spans 30 one-minute samples; alerts are read at minute 20."""


def rules_file(tmp_path: Path) -> Path:
    """The PrometheusRule's groups as the rules file Prometheus (and promtool) reads."""
    document = yaml.safe_load(RULES.read_text())
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": document["spec"]["groups"]}))
    return path


def rule(name: str) -> dict[str, Any]:
    groups = yaml.safe_load(RULES.read_text())["spec"]["groups"]
    [found] = [r for g in groups for r in g["rules"] if r.get("alert") == name]
    return found


def series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    rendered = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    return {"series": f"{name}{{{rendered}}}", "values": values}


def scheduler_pod(pod: str, scheduled: str, opened: str, expected: int = 1) -> list[dict[str, str]]:
    """The series of one vc-scheduler pod: vc-scheduler's session count (``scheduled``) and its
    Caldera's sessions opened (``opened``), as promtool expanding notation per minute."""
    return [
        series("volcano_e2e_scheduling_latency_milliseconds_count", {**SCHEDULER, "pod": pod},
               scheduled),
        series("caldera_sessions_opened_total", {**CALDERA, "pod": pod}, opened),
        series("caldera_snapshot_expected", {**CALDERA, "pod": pod}, f"{expected}x{MINUTES}"),
    ]  # fmt: skip


def expected_alert(name: str, pod: str) -> dict[str, Any]:
    """The alert promtool should report for ``pod``: the rule's labels beside the series' own,
    its annotations with ``{{ $labels.pod }}`` filled in."""
    found = rule(name)
    annotations = {}
    for key, text in found["annotations"].items():
        filled = text.replace("{{ $labels.pod }}", pod)
        assert "{{" not in filled, f"{name}.{key}: a template this test does not fill"
        annotations[key] = filled
    return {"exp_labels": {**CALDERA, "pod": pod, **found["labels"]},
            "exp_annotations": annotations}  # fmt: skip


EVERY_MINUTE = f"0+60x{MINUTES}"  # a session a second
NEVER = f"0x{MINUTES}"
UNTIL_MINUTE_5 = "0+60x5 300x25"  # led for 5 minutes, then lost the lease

CASES = {
    "a leader whose sessions never reach Caldera pages": (
        scheduler_pod("leader", EVERY_MINUTE, NEVER), ["leader"]),
    "a standby replica does not page": (scheduler_pod("standby", NEVER, NEVER), []),
    "leader and standby: only the leader pages": (
        scheduler_pod("leader", EVERY_MINUTE, NEVER) + scheduler_pod("standby", NEVER, NEVER),
        ["leader"]),
    "a leader that Caldera serves does not page": (
        scheduler_pod("leader", EVERY_MINUTE, EVERY_MINUTE), []),
    "a former leader, standby for 15 minutes, does not page": (
        scheduler_pod("former", UNTIL_MINUTE_5, UNTIL_MINUTE_5)
        + scheduler_pod("new-leader", "0x5 0+60x25", "0x5 0+60x25"), []),
    "no snapshot-bound plugin: no onSessionOpen is expected": (
        scheduler_pod("leader", EVERY_MINUTE, NEVER, expected=0), []),
    "without vc-scheduler's metrics the alert cannot fire (the documented scrape)": (
        scheduler_pod("leader", EVERY_MINUTE, NEVER)[1:], []),
}  # fmt: skip


@pytest.mark.parametrize(("inputs", "paging"), CASES.values(), ids=CASES.keys())
def test_no_session_opened_pages_for_the_leader_only(
    tmp_path: Path, inputs: list[dict[str, str]], paging: list[str]
) -> None:
    tests = {
        "rule_files": [str(rules_file(tmp_path))],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": inputs,
                "alert_rule_test": [
                    {
                        "eval_time": "20m",
                        "alertname": "CalderaNoSessionOpened",
                        "exp_alerts": [
                            expected_alert("CalderaNoSessionOpened", pod) for pod in paging
                        ],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "tests.yaml"
    path.write_text(yaml.safe_dump(tests))
    result = subprocess.run(
        [str(promtool_binary()), "test", "rules", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_rule_is_valid_promql_for_prometheus(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(promtool_binary()), "check", "rules", str(rules_file(tmp_path))],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def volcano_source(tag: str, path: str) -> str:
    return volcano_file(
        f"https://raw.githubusercontent.com/volcano-sh/volcano/{tag}/{path}"
    ).read_text()


@pytest.mark.parametrize("overlay", OVERLAYS, ids=[o.name for o in OVERLAYS])
def test_vc_scheduler_counts_its_sessions_in_the_metric_the_alert_reads(overlay: Path) -> None:
    """``volcano_e2e_scheduling_latency_milliseconds`` is an unlabelled histogram of
    pkg/scheduler/metrics (subsystem ``volcano``), observed in runOnce, which opens one session
    and runs only under the leader (cmd/scheduler/app/server.go runs the scheduler from
    OnStartedLeading); and vc-scheduler registers no leader-election metrics provider, so no
    leader_election_master_status series exists to use instead."""
    tag = overlay.name.removeprefix("volcano-")
    metrics = volcano_source(tag, "pkg/scheduler/metrics/metrics.go")
    declaration = re.search(
        r"promauto\.NewHistogram\(\s*prometheus\.HistogramOpts\{(?P<opts>[^}]*)\}", metrics
    )
    assert declaration is not None, tag
    opts = declaration["opts"]
    assert re.search(r'Name:\s*"e2e_scheduling_latency_milliseconds"', opts), tag
    assert re.search(r"Subsystem:\s*Volcano\w*,", opts), tag
    assert re.search(r'Volcano\w*\s*=\s*"volcano"', metrics), tag
    scheduler = volcano_source(tag, "pkg/scheduler/scheduler.go")
    run_once = scheduler[scheduler.index("func (pc *Scheduler) runOnce()") :]
    run_once = run_once[: run_once.index("\n}\n")]
    assert "framework.OpenSession(" in run_once and "metrics.UpdateE2eDuration(" in run_once
    server = volcano_source(tag, "cmd/scheduler/app/server.go")
    assert "OnStartedLeading: run" in server, tag
    assert "clientgo/leaderelection" not in server and "SetProvider" not in server, tag


# Issue 49: the alert's expression evaluated on the series a scheduler pod exports. Each case:
# the gauge per minute (promtool notation), the alert, and whether it fires at minute 20.
GAUGE_CASES = [
    ("a stale view pages after a minute", "caldera_session_state_stale", "0x10 1x20",
     "CalderaSessionStateStale", True),
    ("a blip of under a minute does not", "caldera_session_state_stale", "0x19 1x1 0x10",
     "CalderaSessionStateStale", False),
    ("a current view does not", "caldera_session_state_stale", f"0x{MINUTES}",
     "CalderaSessionStateStale", False),
    ("a feature degraded for 5 minutes warns", "caldera_feature_degraded", "0x10 1x20",
     "CalderaFeatureDegraded", True),
    ("a feature back within 5 minutes does not", "caldera_feature_degraded", "0x14 1x4 0x12",
     "CalderaFeatureDegraded", False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("metric", "values", "alert", "fires"),
    [c[1:] for c in GAUGE_CASES],
    ids=[c[0] for c in GAUGE_CASES],
)
def test_gauge_alerts(tmp_path: Path, metric: str, values: str, alert: str, fires: bool) -> None:
    labels = {**CALDERA, "pod": "scheduler-0"}
    if metric == "caldera_feature_degraded":
        labels["feature"] = "events"
    expected = expected_alert(alert, "scheduler-0")
    expected["exp_labels"] = {**labels, **rule(alert)["labels"]}
    tests = {
        "rule_files": [str(rules_file(tmp_path))],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [series(metric, labels, values)],
                "alert_rule_test": [
                    {
                        "eval_time": "20m",
                        "alertname": alert,
                        "exp_alerts": [expected] if fires else [],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "tests.yaml"
    path.write_text(yaml.safe_dump(tests))
    result = subprocess.run(
        [str(promtool_binary()), "test", "rules", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
