"""What vc-scheduler's sharding and multi-scheduler settings mean for each sessionState: the
notes and refusals of ``caldera volcano-config --scheduler-sharding-mode / --scheduler-num /
--node-selector``, and the refusal at start of a multi-scheduler environment Caldera cannot
follow (``caldera check-config`` and ``serve``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from app.cluster_state.scheduler_flags import SchedulerFlags, flag_notes
from app.commands.cli import main
from plugins.api.release import Release

V1_13, V1_14, V1_15 = Release(1, 13), Release(1, 14, 1), Release(1, 15, 1)

# (name, sessionState, release, flags, what the notes say, what the refusals say)
CASES: list[tuple[str, str, Release, SchedulerFlags, list[str], list[str]]] = [
    ("no flags", "cluster", V1_14, SchedulerFlags(), [], []),
    (
        "hard sharding, cluster mode: the state is the unsharded one",
        "cluster",
        V1_14,
        SchedulerFlags(sharding_mode="hard"),
        ["holds every Ready node", "only about the shard's nodes", "changes nothing"],
        [],
    ),
    (
        "soft sharding, compare mode, 1.15",
        "compare",
        V1_15,
        SchedulerFlags(sharding_mode="soft"),
        ["holds every Ready node", "prefers the shard's", "changes nothing"],
        [],
    ),
    (
        "hard sharding with Volcano's snapshot",
        "snapshot",
        V1_14,
        SchedulerFlags(sharding_mode="hard"),
        ["holds every Ready node", "Caldera sees what Volcano sends"],
        [],
    ),
    (
        "sharding none: nothing to say",
        "cluster",
        V1_14,
        SchedulerFlags(sharding_mode="none"),
        [],
        [],
    ),
    (
        "a mode vc-scheduler does not know is none",
        "cluster",
        V1_14,
        SchedulerFlags(sharding_mode="strict"),
        ["neither hard nor soft"],
        [],
    ),
    (
        "sharding before 1.14: vc-scheduler has no such flag",
        "snapshot",
        V1_13,
        SchedulerFlags(sharding_mode="hard"),
        [],
        ["Volcano 1.13 has no node sharding (from 1.14)"],
    ),
    (
        "multi-scheduler, cluster mode: the sidecar needs the scheduler's environment",
        "cluster",
        V1_14,
        SchedulerFlags(schedulers=3),
        ["MULTI_SCHEDULER_ENABLE=true, SCHEDULER_NUM=3 and SCHEDULER_POD_NAME"],
        [],
    ),
    (
        "multi-scheduler with Volcano's snapshot: each replica's own",
        "snapshot",
        V1_13,
        SchedulerFlags(schedulers=3),
        ["its own share", "its own sidecar"],
        [],
    ),
    (
        "multi-scheduler beyond the rings Caldera follows",
        "compare",
        V1_14,
        SchedulerFlags(schedulers=20_000),
        [],
        ["rings of up to 10000"],
    ),
    (
        "node selectors, cluster mode: refused",
        "cluster",
        V1_14,
        SchedulerFlags(node_selectors=("volcano.sh/role:train",)),
        [],
        ["--node-selector volcano.sh/role:train", "nodeCanAddCache", "use sessionState snapshot"],
    ),
    (
        "node selectors with Volcano's snapshot: nothing to follow",
        "snapshot",
        V1_14,
        SchedulerFlags(node_selectors=("volcano.sh/role:train",)),
        [],
        [],
    ),
]


@pytest.mark.parametrize(
    ("session_state", "release", "flags", "notes", "refusals"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_what_the_scheduler_flags_mean_for_the_session_state(
    session_state: str,
    release: Release,
    flags: SchedulerFlags,
    notes: list[str],
    refusals: list[str],
) -> None:
    said = flag_notes(session_state, release, flags)
    assert len(said.notes) == (1 if notes else 0)
    assert len(said.refusals) == (1 if refusals else 0)
    for part in notes:
        assert part in said.notes[0]
    for part in refusals:
        assert part in said.refusals[0]


CLUSTER = """volcanoVersion: "1.14"
sessionState: cluster
tiers:
- plugins:
  - name: priority
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "caldera.yaml"
    path.write_text(text)
    return str(path)


def test_volcano_config_prints_the_notes_before_the_entry(tmp_path: Path, capsys) -> None:
    argv = ["volcano-config", "--config", write(tmp_path, CLUSTER)]
    flags = ["--scheduler-sharding-mode", "hard", "--scheduler-num", "3"]
    assert main([*argv, *flags]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if line.startswith("# note: ")]
    assert any("--scheduler-sharding-mode hard" in n for n in notes)
    assert any("SCHEDULER_NUM=3" in n for n in notes)
    [entry] = yaml.safe_load(out)
    assert main(argv) == 0  # the entry itself does not change
    assert yaml.safe_load(capsys.readouterr().out) == [entry]


def test_volcano_config_refuses_what_caldera_cannot_follow(tmp_path: Path, capsys) -> None:
    argv = ["volcano-config", "--config", write(tmp_path, CLUSTER)]
    assert main([*argv, "--node-selector", "a:b", "--node-selector", "c:d"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("caldera: sessionState cluster with --node-selector a:b,c:d")
    merged = tmp_path / "volcano-scheduler.conf"
    merged.write_text("actions: enqueue\ntiers:\n- plugins:\n  - name: priority\n")
    assert main([*argv, "--merge", str(merged), "--node-selector", "a:b"]) == 2


def test_volcano_config_merge_puts_the_notes_on_stderr(tmp_path: Path, capsys) -> None:
    merged = tmp_path / "volcano-scheduler.conf"
    merged.write_text("actions: enqueue\ntiers:\n- plugins:\n  - name: priority\n")
    argv = ["volcano-config", "--config", write(tmp_path, CLUSTER), "--merge", str(merged)]
    assert main([*argv, "--scheduler-sharding-mode", "soft"]) == 0
    captured = capsys.readouterr()
    assert "# note: --scheduler-sharding-mode soft" in captured.err
    assert "sharding" not in captured.out


MULTI = {"MULTI_SCHEDULER_ENABLE": "true", "SCHEDULER_NUM": "2"}

START_CASES = [
    ("cluster mode, a StatefulSet's pod name: served", "cluster", "volcano-scheduler-0", 0, ""),
    (
        "cluster mode, a pod name vc-scheduler panics on: refused",
        "cluster",
        "scheduler",
        2,
        "sessionState: cluster cannot follow the scheduler's ring",
    ),
    (
        "compare mode, no pod name: refused",
        "compare",
        "",
        2,
        "sessionState: compare cannot follow the scheduler's ring",
    ),
    ("Volcano's snapshot: nothing to follow", "snapshot", "scheduler", 0, ""),
    (
        "a pod name the ring does not hold: served, with a warning",
        "cluster",
        "vc-scheduler-7d9f-abcde",
        0,
        "# warning: MULTI_SCHEDULER_ENABLE=true: SCHEDULER_POD_NAME='vc-scheduler-7d9f-abcde'",
    ),
]


@pytest.mark.parametrize(
    ("mode", "pod_name", "code", "said"),
    [c[1:] for c in START_CASES],
    ids=[c[0] for c in START_CASES],
)
def test_check_config_refuses_a_ring_caldera_cannot_follow(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, mode, pod_name, code, said
) -> None:
    """check-config and serve share the check (config_checks.build_problems)."""
    for key, value in {**MULTI, "SCHEDULER_POD_NAME": pod_name}.items():
        monkeypatch.setenv(key, value)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    text = CLUSTER.replace("cluster\n", f"{mode}\nsessionStateKubeconfig: {kubeconfig}\n", 1)
    assert main(["check-config", write(tmp_path, text)]) == code
    captured = capsys.readouterr()
    assert said in captured.out + captured.err
