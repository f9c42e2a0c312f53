"""``caldera volcano-config --merge``: the operator's scheduler conf with Caldera's entry in
place, everything else kept byte for byte, and a warning for every layout that changes a
decision (app/commands/volcano_merge.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from app.commands.cli import main
from tests.examples import HELM_DEFAULT_CONF

# Volcano v1.15.1's chart default (installer/helm/chart/volcano/config/volcano-scheduler-ci.conf),
# with a comment of an operator's added to show it survives.
VOLCANO_CI_CONF = """\
actions: "enqueue, allocate, backfill, reclaim, preempt"
tiers:
- plugins:
  - name: priority
  # our gang stays as upstream ships it
  - name: gang
    enablePreemptable: false
  - name: conformance
  - name: sla
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
    arguments:
      predicate.DynamicResourceAllocationEnable: true
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
"""

EXPECTED_WITH_DEFAULT_CONFIG = """\
actions: "enqueue, allocate, backfill, reclaim, preempt"
tiers:
- plugins:
  # handed to Caldera by caldera volcano-config --merge: {name: priority}
  - name: priority
    enablePreemptable: false
  - name: extender
    arguments:
      extender.urlPrefix: http://127.0.0.1:8090
      extender.httpTimeout: 1s
      extender.onSessionOpenVerb: onSessionOpen
      extender.onSessionCloseVerb: onSessionClose
      extender.preemptableVerb: preemptable
      extender.reclaimableVerb: reclaimable
      extender.jobEnqueueableVerb: jobEnqueueable
      extender.ignorable: false
  # our gang stays as upstream ships it
  - name: gang
    enablePreemptable: false
  # handed to Caldera by caldera volcano-config --merge: {name: conformance}
  # handed to Caldera by caldera volcano-config --merge: {name: sla}
  - name: sla
    enableJobEnqueued: false
- plugins:
  # handed to Caldera by caldera volcano-config --merge: {name: overcommit}
  - name: drf
    enablePreemptable: false
  - name: predicates
    arguments:
      predicate.DynamicResourceAllocationEnable: true
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
"""


def merge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], conf: str, caldera: str | None = None
) -> tuple[int, str, list[str], list[str]]:
    conf_path = tmp_path / "volcano-scheduler.conf"
    conf_path.write_text(conf)
    args = ["volcano-config", "--url", "http://127.0.0.1:8090", "--merge", str(conf_path)]
    if caldera is not None:
        (tmp_path / "caldera.yaml").write_text(caldera)
        args += ["--config", str(tmp_path / "caldera.yaml")]
    code = main(args)
    out, err = capsys.readouterr()
    notes = [line[8:] for line in err.splitlines() if line.startswith("# note: ")]
    warnings = [line[11:] for line in err.splitlines() if line.startswith("# warning: ")]
    return code, out, notes, warnings


def test_volcanos_default_conf_with_the_embedded_configuration(tmp_path: Path, capsys) -> None:
    code, out, notes, warnings = merge(tmp_path, capsys, VOLCANO_CI_CONF)
    assert code == 0
    assert out == EXPECTED_WITH_DEFAULT_CONFIG
    assert "conformance: removed from tier 1, Caldera hosts it" in notes
    assert any(n.startswith("priority: kept in tier 1 for TaskOrderFn, JobOrderFn") for n in notes)
    assert any(n.startswith("sla: kept in tier 1 for JobOrderFn, JobPipelinedFn") for n in notes)
    # drf registers no reclaim vote without enableHierarchy: only proportion falls through
    assert sorted(w.split(" ")[0] for w in warnings) == ["overcommit", "proportion", "proportion"]
    assert any("proportion's check is skipped" in w for w in warnings)
    assert any("proportion can evict what Caldera protects" in w for w in warnings)


MIN_RUNTIME = "tiers: [{plugins: [{name: min-runtime}]}]\n"


@pytest.mark.parametrize(
    ("name", "conf", "caldera", "expected_warning"),
    [
        pytest.param(
            "protection falls through to a later tier",
            "actions: preempt\ntiers:\n- plugins:\n  - name: priority\n- plugins:\n  - name: drf\n",
            MIN_RUNTIME,
            "drf in tier 2 votes on preemptable after the extender's tier 1",
            id="fall-through",
        ),
        pytest.param(
            "a plugin hosted twice",
            "tiers:\n- plugins:\n  - name: cdp\n- plugins:\n  - name: cdp\n",
            "tiers: [{plugins: [{name: cdp}]}]\n",
            "cdp is listed more than once",
            id="twice",
        ),
        pytest.param(
            "another service's extender entry already there",
            "tiers:\n- plugins:\n  - name: extender\n    arguments: {extender.urlPrefix: http://x}\n",
            "tiers: [{plugins: [{name: cdp}]}]\n",
            "already has an extender entry (http://x): it is replaced by Caldera's",
            id="extender",
        ),
        pytest.param(
            "a flag off in-tree, on in Caldera",
            "tiers:\n- plugins:\n  - name: conformance\n    enableReclaimable: false\n",
            "tiers: [{plugins: [{name: conformance}]}]\n",
            "conformance: enableReclaimable is off in-tree but on in Caldera's configuration",
            id="flags differ",
        ),
        pytest.param(
            "a flag on in-tree, off in Caldera",
            "tiers:\n- plugins:\n  - name: cdp\n",
            "tiers: [{plugins: [{name: cdp, enableReclaimable: false}]}]\n",
            "cdp: enableReclaimable is on in-tree but off in Caldera's configuration",
            id="flags differ (reverse)",
        ),
    ],
)
def test_each_layout_that_changes_a_decision_is_warned(
    tmp_path: Path, capsys, name: str, conf: str, caldera: str, expected_warning: str
) -> None:
    code, out, _, warnings = merge(tmp_path, capsys, conf, caldera)
    assert code == 0, name
    assert any(expected_warning in w for w in warnings), (name, warnings)
    merged = yaml.safe_load(out)
    extenders = [p for t in merged["tiers"] for p in t["plugins"] if p["name"] == "extender"]
    assert len(extenders) == 1, name


SLA_THEN_PROPORTION = (
    "actions: enqueue\ntiers:\n- plugins:\n  - name: sla\n- plugins:\n  - name: proportion\n"
)


@pytest.mark.parametrize(
    ("name", "caldera", "warned"),
    [
        pytest.param(
            "sla hosted where it was: proportion was skipped after its Permit in-tree too",
            "tiers: [{plugins: [{name: sla}]}]\n",
            False,
            id="unchanged",
        ),
        pytest.param(
            "overcommit, not in the conf, now permits in tier 1 too",
            "tiers: [{plugins: [{name: sla}, {name: overcommit}]}]\n",
            True,
            id="new voter",
        ),
    ],
)
def test_a_later_voter_is_warned_only_where_the_merge_changes_its_turn(
    tmp_path: Path, capsys, name: str, caldera: str, warned: bool
) -> None:
    code, _, notes, warnings = merge(tmp_path, capsys, SLA_THEN_PROPORTION, caldera)
    assert code == 0
    later = "proportion in tier 2 votes on jobEnqueueable after the extender's tier 1"
    assert any(later in w for w in warnings) is warned, (name, warnings)
    if not warned:
        assert any(
            n.startswith(later) and n.endswith("as it did after sla in-tree: unchanged")
            for n in notes
        ), notes


def test_a_verb_the_release_cannot_send_is_noted(tmp_path: Path, capsys) -> None:
    caldera = 'volcanoVersion: "1.15"\ntiers: [{plugins: [{name: overcommit}]}]\n'
    conf = "tiers:\n- plugins:\n  - name: overcommit\n"
    _, out, notes, _ = merge(tmp_path, capsys, conf, caldera)
    assert any("Volcano 1.15 has no jobEnqueued verb" in n for n in notes), notes
    assert "extender.jobEnqueuedVerb" not in out


def test_conformance_stays_in_tree_only_where_gang_actions_need_it(tmp_path: Path, capsys) -> None:
    caldera = "tiers: [{plugins: [{name: conformance}]}]\n"
    conf = 'actions: "enqueue, allocate, gangpreempt"\ntiers:\n- plugins:\n  - name: conformance\n'
    _, out, notes, _ = merge(tmp_path, capsys, conf, caldera)
    [kept] = [
        p for t in yaml.safe_load(out)["tiers"] for p in t["plugins"] if p["name"] == "conformance"
    ]
    assert kept == {"name": "conformance", "enablePreemptable": False, "enableReclaimable": False}
    assert any("kept in tier 1 for UnifiedEvictableFn" in n for n in notes)
    _, out, _, _ = merge(tmp_path, capsys, conf.replace("gangpreempt", "preempt"), caldera)
    assert "conformance" not in [
        p["name"] for t in yaml.safe_load(out)["tiers"] for p in t["plugins"]
    ]


def test_a_conf_without_hosted_plugins_gets_a_first_tier(tmp_path: Path, capsys) -> None:
    conf = "tiers:\n# the operator's tier\n- plugins:\n  - name: gang\n"
    _, out, notes, _ = merge(tmp_path, capsys, conf, "tiers: [{plugins: [{name: cdp}]}]\n")
    tiers = yaml.safe_load(out)["tiers"]
    assert [p["name"] for p in tiers[0]["plugins"]] == ["extender"]
    assert [p["name"] for p in tiers[1]["plugins"]] == ["gang"]
    assert "# the operator's tier\n" in out
    assert any("added as a new first tier" in n for n in notes)


def test_stdin(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(VOLCANO_CI_CONF))
    assert main(["volcano-config", "--url", "http://127.0.0.1:8090", "--merge", "-"]) == 0
    assert capsys.readouterr().out == EXPECTED_WITH_DEFAULT_CONFIG


@pytest.mark.parametrize(
    ("conf", "problem"),
    [
        ("tiers: [", "not YAML"),
        ("- a\n- b\n", "expected a mapping with tiers"),
        ("actions: x\n", "no tiers list"),
        ("tiers:\n- plugins:\n  - enablePreemptable: true\n", "has no name"),
    ],
)
def test_a_conf_that_cannot_be_merged_is_refused(
    tmp_path: Path, capsys, conf: str, problem: str
) -> None:
    code, out, _, _ = merge(tmp_path, capsys, conf)
    assert code == 2 and out == ""


def test_a_missing_file_is_refused(tmp_path: Path, capsys) -> None:
    code = main(["volcano-config", "--merge", str(tmp_path / "nope.conf")])
    assert code == 2
    assert "No such file" in capsys.readouterr().err


def test_helm_default_conf_is_told_which_actions_its_victim_verbs_need(
    tmp_path: Path, capsys
) -> None:
    """Issue 34: the Helm default conf got the preemptable and reclaimable verbs with nothing
    saying no action asks them, and a warning that drf "can evict" through reclaim, an action
    it does not have."""
    code, out, _, warnings = merge(tmp_path, capsys, HELM_DEFAULT_CONF)
    assert code == 0
    [preempt] = [w for w in warnings if w.startswith("extender.preemptableVerb: ")]
    assert "no action of this conf (enqueue, allocate, backfill) asks preemptable" in preempt
    assert "cdp, conformance and priority" in preempt and preempt.endswith("add preempt to actions")
    [reclaim] = [w for w in warnings if w.startswith("extender.reclaimableVerb: ")]
    assert reclaim.endswith("add reclaim to actions")
    assert not [w for w in warnings if "can evict what Caldera protects" in w], warnings
    assert not [w for w in warnings if w.startswith("extender.jobEnqueueableVerb")]
    # the merged conf still carries the verbs: adding the actions is all it takes
    [extender] = [p for t in yaml.safe_load(out)["tiers"] for p in t["plugins"]
                  if p["name"] == "extender"]  # fmt: skip
    assert extender["arguments"]["extender.preemptableVerb"] == "preemptable"


CONFORMANCE = "tiers: [{plugins: [{name: conformance}]}]\n"
OVERCOMMIT = "tiers: [{plugins: [{name: overcommit}]}]\n"


@pytest.mark.parametrize(
    ("name", "conf", "caldera", "present", "absent"),
    [
        pytest.param(
            "a victim voter of a later tier falls through only where an action asks victims",
            "actions: preempt\ntiers:\n- plugins:\n  - name: priority\n- plugins:\n"
            "  - name: drf\n  - name: proportion\n",
            MIN_RUNTIME,
            ["drf in tier 2 votes on preemptable"],
            ["reclaimable after", "add preempt", "jobEnqueueable after"],
            id="preempt only",
        ),
        pytest.param(
            "a flag that differs on a verb no action asks decides nothing",
            'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: conformance\n'
            "    enableReclaimable: false\n",
            CONFORMANCE,
            ["extender.reclaimableVerb: no action of this conf (enqueue, allocate) asks"],
            ["enableReclaimable is off in-tree"],
            id="flags of an unasked verb",
        ),
        pytest.param(
            "admission without the enqueue action",
            'actions: "allocate, backfill"\ntiers:\n- plugins:\n  - name: overcommit\n'
            "- plugins:\n  - name: proportion\n",
            OVERCOMMIT,
            ["extender.jobEnqueueableVerb: no action of this conf (allocate, backfill) asks"
             " jobEnqueueable (Volcano's JobEnqueueableFn), so what overcommit answers there"
             " is never used: add enqueue to actions"],
            ["proportion in tier 2 votes on jobEnqueueable"],
            id="no enqueue",
        ),
        pytest.param(
            "Volcano 1.6 posts jobEnqueueable to the reclaimable verb: enqueue asks it",
            'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: sla\n',
            'volcanoVersion: "1.6"\ntiers: [{plugins: [{name: sla}]}]\n',
            [],
            ["extender.reclaimableVerb"],
            id="shared reclaimable path",
        ),
        pytest.param(
            "a conf without actions is refused by Volcano; every check still runs",
            "tiers:\n- plugins:\n  - name: priority\n- plugins:\n  - name: drf\n",
            MIN_RUNTIME,
            ["the conf has no actions: Volcano refuses it", "drf in tier 2 votes on preemptable"],
            ["no action of this conf"],
            id="no actions",
        ),
    ],
)  # fmt: skip
def test_warnings_follow_the_actions_of_the_conf(
    tmp_path: Path,
    capsys,
    name: str,
    conf: str,
    caldera: str,
    present: list[str],
    absent: list[str],
) -> None:
    code, _, _, warnings = merge(tmp_path, capsys, conf, caldera)
    assert code == 0, name
    for part in present:
        assert any(part in w for w in warnings), (name, part, warnings)
    for part in absent:
        assert not any(part in w for w in warnings), (name, part, warnings)


def test_every_extension_point_names_the_actions_that_ask_it() -> None:
    """The actions column: each point Volcano sends only inside an action names actions Volcano
    has; only the session's own verbs are sent whatever the actions."""
    from plugins.api.extension_points import ACTIONS, EXTENSION_POINTS

    known = set(ACTIONS)
    for point in EXTENSION_POINTS:
        if point.verb in ("onSessionOpen", "onSessionClose"):
            assert point.actions is None, point.verb
        else:
            assert point.actions and point.actions <= known, point.verb


# Issue 47 item 6: merging the shipped overlay's conf warned that drf and proportion "can evict
# what Caldera protects", and merging the merged conf again (as the operator guide says to after
# each change of caldera.yaml) added warnings it had caused itself.

SHIPPED_CONFS = sorted(
    (Path(__file__).resolve().parents[3] / "deploy" / "kubernetes").glob(
        "volcano-v*/volcano-scheduler-conf.yaml"
    )
)
BASE_CALDERA = Path(__file__).resolve().parents[3] / "deploy" / "kubernetes" / "base"


def shipped_conf(path: Path) -> str:
    text: str = yaml.safe_load(path.read_text())["data"]["volcano-scheduler.conf"]
    return text


def base_caldera_config() -> str:
    text: str = yaml.safe_load((BASE_CALDERA / "caldera-config.yaml").read_text())["data"][
        "caldera.yaml"
    ]
    return text


@pytest.mark.parametrize("path", SHIPPED_CONFS, ids=lambda p: p.parent.name)
def test_the_shipped_conf_merges_clean_and_unchanged(tmp_path: Path, capsys, path: Path) -> None:
    """The overlay's conf is what the merge makes of the release's default: merging it again
    with the base configuration changes nothing and warns of nothing (its queue plugin keeps no
    reclaim vote in tier 2, drf has none without enableHierarchy, the extender entry there is
    Caldera's own)."""
    conf = shipped_conf(path)
    code, out, notes, warnings = merge(tmp_path, capsys, conf, base_caldera_config())
    assert code == 0
    assert warnings == []
    assert out == conf
    assert any("already has Caldera's extender entry" in n for n in notes), notes


HELM_WITH_VICTIM_ACTIONS = HELM_DEFAULT_CONF.replace(
    "enqueue, allocate, backfill", "enqueue, allocate, preempt, reclaim, backfill"
)


@pytest.mark.parametrize(
    ("name", "conf", "caldera"),
    [
        pytest.param("Volcano's CI conf, the embedded default configuration", VOLCANO_CI_CONF,
                     None, id="ci conf"),
        pytest.param("Helm's default with victim actions, the base configuration",
                     HELM_WITH_VICTIM_ACTIONS, "base", id="helm, base"),
        pytest.param("Helm's default as shipped (no victim actions)", HELM_DEFAULT_CONF, "base",
                     id="helm default"),
        pytest.param("the shipped v1.15.1 conf", "v1.15.1", "base", id="shipped"),
        pytest.param("a later voter noted as unchanged: sla hosted where it was",
                     SLA_THEN_PROPORTION, "tiers: [{plugins: [{name: sla}]}]\n", id="unchanged"),
        pytest.param("a hosted plugin moved from tier 2 into the extender's tier",
                     "actions: enqueue\ntiers:\n- plugins:\n  - name: sla\n  - name: gang\n"
                     "- plugins:\n  - name: overcommit\n  - name: proportion\n",
                     "tiers: [{plugins: [{name: sla}, {name: overcommit}]}]\n", id="moved"),
        pytest.param("a flag off in-tree the extender now answers",
                     "actions: reclaim\ntiers:\n- plugins:\n  - name: conformance\n"
                     "    enableReclaimable: false\n  - name: gang\n", CONFORMANCE,
                     id="flag off"),
    ],
)  # fmt: skip
def test_merging_a_merged_conf_again_changes_nothing(
    tmp_path: Path, capsys, name: str, conf: str, caldera: str | None
) -> None:
    if caldera == "base":
        caldera = base_caldera_config()
    if conf.startswith("v1."):
        conf = shipped_conf(next(p for p in SHIPPED_CONFS if p.parent.name == f"volcano-{conf}"))
    code, once, _, warned_once = merge(tmp_path, capsys, conf, caldera)
    assert code == 0, name
    code, twice, _, warned_twice = merge(tmp_path, capsys, once, caldera)
    assert code == 0, name
    assert twice == once, name
    assert warned_twice == warned_once, name


@pytest.mark.parametrize(
    ("name", "drf", "warned"),
    [
        pytest.param("drf as Volcano ships it registers no ReclaimableFn", "  - name: drf\n",
                     False, id="drf"),
        pytest.param("hierarchical drf (hdrf) votes on reclaim",
                     "  - name: drf\n    enableHierarchy: true\n", True, id="hdrf"),
    ],
)  # fmt: skip
def test_drf_votes_on_reclaim_only_with_its_hierarchy(
    tmp_path: Path, capsys, name: str, drf: str, warned: bool
) -> None:
    conf = f"actions: reclaim\ntiers:\n- plugins:\n  - name: conformance\n- plugins:\n{drf}"
    code, _, _, warnings = merge(tmp_path, capsys, conf, MIN_RUNTIME.replace("min-runtime", "pdb"))
    assert code == 0
    fall_through = "drf in tier 2 votes on reclaimable after the extender's tier 1"
    assert any(fall_through in w for w in warnings) is warned, (name, warnings)


def test_a_plugin_caldera_no_longer_hosts_comes_back_as_it_was(tmp_path: Path, capsys) -> None:
    """The guide's loop: merge, change caldera.yaml, merge the merged conf again."""
    conf = (
        "actions: preempt\ntiers:\n- plugins:\n  - name: priority\n    enableJobOrder: true\n"
        "  - name: conformance\n    enableReclaimable: false\n  - name: gang\n"
    )
    both = "tiers: [{plugins: [{name: priority}, {name: conformance}]}]\n"
    _, once, _, _ = merge(tmp_path, capsys, conf, both)
    in_tree = [p["name"] for t in yaml.safe_load(once)["tiers"] for p in t["plugins"]]
    assert in_tree == ["priority", "extender", "gang"]
    _, again, notes, _ = merge(tmp_path, capsys, once, MIN_RUNTIME)
    assert "conformance: back in tier 1 as it was, Caldera no longer hosts it" in notes
    assert "priority: back in tier 1 as it was, Caldera no longer hosts it" in notes
    plugins = yaml.safe_load(again)["tiers"][0]["plugins"]
    assert plugins[0] == {"name": "priority", "enableJobOrder": True}
    assert {"name": "conformance", "enableReclaimable": False} in plugins
    assert "handed to Caldera" not in again
