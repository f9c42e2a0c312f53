"""The operator guide's install paths (docs/operator-guide.md §1a Helm, §1b plain manifest) run
as written: their shell blocks, with `kubectl` and `helm` simulated by scripts that answer the
live conf and record what they are given, and the real `caldera`. Issue 34: the Helm path
overwrote the operator's conf with the release default (their nodeorder and binpack arguments
were lost); both paths now merge Caldera's entry into the live ConfigMap's conf."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "operator-guide.md"

# What an operator's cluster runs: Volcano v1.15.1's Helm chart default
# (installer/helm/chart/volcano/config/volcano-scheduler.conf) with their own arguments.
LIVE_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  # ours: pack GPU nodes first
  - name: nodeorder
    arguments:
      nodeaffinity.weight: 4
      leastrequested.weight: 0
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.resources: nvidia.com/gpu
      binpack.resources.nvidia.com/gpu: 8
"""

FAKE_KUBECTL = r"""
import json, os, sys
from pathlib import Path
import yaml

argv = sys.argv[1:]
log = open(os.environ["CALL_LOG"], "a")
record = {"tool": "kubectl", "argv": argv}
if argv == ["-n", "volcano-system", "get", "configmap", "volcano-scheduler-configmap", "-o",
            "jsonpath={.data.volcano-scheduler\\.conf}"]:
    sys.stdout.write(Path(os.environ["LIVE_CONF"]).read_text())  # jsonpath adds no newline
elif argv[:5] == ["-n", "volcano-system", "create", "configmap", "volcano-scheduler-configmap"] \
        and argv[6:] == ["--dry-run=client", "-o", "yaml"] and argv[5].startswith("--from-file="):
    path = Path(argv[5].removeprefix("--from-file="))
    sys.stdout.write(yaml.safe_dump({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": argv[4], "namespace": "volcano-system"},
        "data": {path.name: path.read_text()},
    }))
elif argv == ["apply", "-f", "-"]:
    record["stdin"] = sys.stdin.read()
elif argv[:2] == ["apply", "-k"] and Path(argv[2]).is_dir():
    pass
elif argv[:5] == ["-n", "volcano-system", "patch", "deployment", "volcano-scheduler"] \
        and argv[5] == "--type" and argv[7] == "--patch-file" and Path(argv[8]).is_file():
    pass
else:
    sys.exit(f"fake kubectl: unexpected {argv}")
log.write(json.dumps(record) + "\n")
"""

FAKE_HELM = r"""
import json, os, sys
from pathlib import Path

argv = sys.argv[1:]
record = {"tool": "helm", "argv": argv}
for flag, value in zip(argv, argv[1:]):
    if flag == "--set-file":
        record["file"] = Path(value.partition("=")[2]).read_text()
open(os.environ["CALL_LOG"], "a").write(json.dumps(record) + "\n")
"""


def shell_block(heading: str) -> str:
    """The first ```sh block after ``heading`` in the guide."""
    text = GUIDE.read_text()
    section = text[text.index(heading) :]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, f"{heading} lost its shell block"
    return block.group(1)


def run_block(tmp_path: Path, block: str) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, source in (("kubectl", FAKE_KUBECTL), ("helm", FAKE_HELM)):
        tool = bin_dir / name
        tool.write_text(f"#!{sys.executable}\n{source}")
        tool.chmod(0o755)
    caldera = Path(sys.executable).parent / "caldera"
    assert caldera.exists(), "the caldera command is not installed beside this Python"
    (tmp_path / "live.conf").write_text(LIVE_CONF)
    # the Caldera configuration the guide extracts to /tmp/caldera.yaml (§1 "Configuration")
    configmap = yaml.safe_load((ROOT / "deploy/kubernetes/base/caldera-config.yaml").read_text())
    (tmp_path / "caldera.yaml").write_text(configmap["data"]["caldera.yaml"])
    (tmp_path / "deploy").symlink_to(ROOT / "deploy")
    log = tmp_path / "calls.jsonl"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{caldera.parent}{os.pathsep}{os.environ['PATH']}",
        "LIVE_CONF": str(tmp_path / "live.conf"),
        "CALL_LOG": str(log),
    }
    script = block.replace("/tmp/caldera.yaml", str(tmp_path / "caldera.yaml"))
    result = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return result, calls


def assert_merged_into_the_live_conf(conf: str) -> None:
    """The operator's conf with Caldera's entry: their arguments and comment kept, the in-tree
    plugins Caldera hosts handed over."""
    assert "  # ours: pack GPU nodes first\n" in conf
    live_tiers = yaml.safe_load(LIVE_CONF)["tiers"]
    merged = yaml.safe_load(conf)
    plugins = {p["name"]: p for tier in merged["tiers"] for p in tier["plugins"]}
    for name in ("nodeorder", "binpack"):
        [live] = [p for tier in live_tiers for p in tier["plugins"] if p["name"] == name]
        assert plugins[name] == live, name
    assert "conformance" not in plugins
    assert plugins["extender"]["arguments"]["extender.urlPrefix"] == "http://127.0.0.1:8090"
    assert merged["actions"] == "enqueue, allocate, backfill"


def assert_the_missing_actions_are_named(stderr: str) -> None:
    warnings = [line for line in stderr.splitlines() if line.startswith("# warning: ")]
    assert any(w.endswith("add preempt to actions") for w in warnings), stderr
    assert any(w.endswith("add reclaim to actions") for w in warnings), stderr
    assert not any("can evict what Caldera protects" in w for w in warnings), stderr


@pytest.mark.parametrize("heading", ["### 1a. Volcano installed with Helm"])
def test_the_helm_path_hands_helm_the_merged_live_conf(tmp_path: Path, heading: str) -> None:
    result, calls = run_block(tmp_path, shell_block(heading))
    [helm] = [c for c in calls if c["tool"] == "helm"]
    assert helm["argv"][:2] == ["upgrade", "volcano"] and "--reuse-values" in helm["argv"]
    assert "custom.scheduler_config_override=volcano-scheduler.conf" in helm["argv"]
    assert_merged_into_the_live_conf(helm["file"])
    assert_the_missing_actions_are_named(result.stderr)
    patches = [c["argv"] for c in calls if "patch" in c["argv"]]
    assert [p[p.index("--patch-file") + 1] for p in patches] == [
        "deploy/kubernetes/sidecar/scheduler-sidecar.yaml",
        "deploy/kubernetes/plain-container/plain-container.yaml",
    ]


def test_the_plain_manifest_path_applies_the_merged_live_conf(tmp_path: Path) -> None:
    result, calls = run_block(tmp_path, shell_block("### 1b. Volcano installed from the plain"))
    [applied] = [c for c in calls if c["argv"] == ["apply", "-f", "-"]]
    configmap = yaml.safe_load(applied["stdin"])
    assert (configmap["kind"], configmap["metadata"]["name"]) == (
        "ConfigMap",
        "volcano-scheduler-configmap",
    )
    assert_merged_into_the_live_conf(configmap["data"]["volcano-scheduler.conf"])
    assert_the_missing_actions_are_named(result.stderr)
    # the sidecar before the conf: an extender entry never points at a Caldera not yet there
    # (Volcano would run those sessions without the plugins the merge took out of its tiers)
    order = [c["argv"][0] if c["argv"][0] != "-n" else c["argv"][2] for c in calls]
    assert order == ["apply", "patch", "patch", "get", "create", "apply"], order
