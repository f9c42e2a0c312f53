"""pdb: ``pkg/scheduler/plugins/pdb/pdb_test.go`` (TestPreemptableAndReclaimableFn) plus the
behaviours of plugins-part1.md §6 the upstream tests leave out, and the file source."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from plugins.api.arguments import Arguments
from plugins.api.base import Session, Vote
from plugins.api.reasons import answer_of
from plugins.pdb.budgets import NO_LABELS
from plugins.pdb.labels import label_selector_as_selector
from plugins.pdb.pdb import NOT_LOADED, PdbPlugin
from plugins.pdb.sources import (
    FilePdbSource,
    KubePdbSource,
    MisconfiguredPdbSource,
    PdbSource,
    StaticPdbSource,
    parse_pdb_file,
)
from schemas.api import TaskInfo
from schemas.k8s import (
    LabelSelector,
    LabelSelectorRequirement,
    ObjectMeta,
    Pod,
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
)

LABEL = "volcano.sh/job-name"


def make_task(
    name: str, labels: dict[str, str] | None, namespace: str = "default", with_pod: bool = True
) -> TaskInfo:
    pod = Pod(metadata=ObjectMeta(name=name, namespace=namespace, labels=labels))
    return TaskInfo(
        UID=f"{namespace}-{name}",
        Name=name,
        Namespace=namespace,
        Pod=pod if with_pod else None,
    )


def make_pdb(
    allowed: int,
    selector: LabelSelector | None,
    name: str = "test-pdb",
    namespace: str = "default",
    disrupted: Sequence[str] = (),
) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=PodDisruptionBudgetSpec(selector=selector),
        status=PodDisruptionBudgetStatus(
            disruptionsAllowed=allowed,
            disruptedPods={p: "2026-08-01T10:00:00Z" for p in disrupted} or None,
        ),
    )


def match_labels(**labels: str) -> LabelSelector:
    return LabelSelector(matchLabels=dict(labels))


def expression(key: str, operator: str, *values: str) -> LabelSelector:
    reqs = [LabelSelectorRequirement(key=key, operator=operator, values=list(values) or None)]
    return LabelSelector(matchExpressions=reqs)


def open_plugin(background: PdbSource | None) -> PdbPlugin:
    plugin = PdbPlugin(Arguments({}, plugin="pdb"), background)
    plugin.on_session_open(Session())
    return plugin


def check_both_hooks(
    plugin: PdbPlugin, candidates: list[TaskInfo], expected: list[TaskInfo]
) -> None:
    """preemptable and reclaimable answer the same: the victims (by identity, in input order)
    and Permit, with a reason for every candidate left out."""
    evictor = TaskInfo()
    for hook in (plugin.preemptable, plugin.reclaimable):
        result = hook(evictor, candidates)
        victims, vote = answer_of(result)
        assert vote is Vote.PERMIT
        left_out = {t.UID for t in candidates} - {t.UID for t in victims}
        assert set(result.vetoes) == left_out
        assert [id(v) for v in victims] == [id(t) for t in expected], [t.Name for t in victims]


# --- upstream: TestPreemptableAndReclaimableFn ----------------------------------------------

TASK1 = make_task("test-pod1", {LABEL: "job-1"})
TASK2 = make_task("test-pod2", {LABEL: "job-1"})
JOB1 = match_labels(**{LABEL: "job-1"})


@pytest.mark.parametrize(
    ("pdbs", "expected"),
    [
        ([], [TASK1, TASK2]),
        ([make_pdb(0, JOB1)], []),
        ([make_pdb(1, JOB1)], [TASK1]),
    ],
    ids=[
        "test without pdbs",
        "test with pdbs(can evict 0 pod)",
        "test with pdbs(can evict 1 pod)",
    ],
)
def test_preemptable_and_reclaimable_fn(
    pdbs: list[PodDisruptionBudget], expected: list[TaskInfo]
) -> None:
    check_both_hooks(open_plugin(StaticPdbSource(pdbs)), [TASK1, TASK2], expected)


# --- reference §6 behaviours beyond the upstream tests ----------------------------------------

WEB_DB = make_task("web-db", {"app": "web", "role": "db"})
WEB = make_task("web", {"app": "web"})
UNLABELLED = make_task("bare", None)
EMPTY_LABELS = make_task("empty", {})
NO_POD = make_task("nopod", None, with_pod=False)
OTHER_NS = make_task("test-pod1", {LABEL: "job-1"}, namespace="other")

CASES: list[tuple[str, list[PodDisruptionBudget], list[TaskInfo], list[TaskInfo]]] = [
    ("unlabelled pods are never victims", [], [UNLABELLED, TASK1, EMPTY_LABELS], [TASK1]),
    ("a task without a pod is never a victim", [], [NO_POD, TASK1], [TASK1]),
    (
        "budget consumed in input order",
        [make_pdb(1, JOB1)],
        [TASK2, TASK1],
        [TASK2],
    ),
    (
        "disrupted pod neither consumes nor violates",
        [make_pdb(1, JOB1, disrupted=["test-pod1"])],
        [TASK1, TASK2],
        [TASK1, TASK2],
    ),
    (
        "disrupted pod is a victim of an exhausted pdb",
        [make_pdb(0, JOB1, disrupted=["test-pod2"])],
        [TASK1, TASK2],
        [TASK2],
    ),
    ("nil selector matches nothing", [make_pdb(0, None)], [TASK1, TASK2], [TASK1, TASK2]),
    (
        "empty selector matches nothing",
        [make_pdb(0, LabelSelector())],
        [TASK1, TASK2],
        [TASK1, TASK2],
    ),
    (
        "empty matchLabels and matchExpressions match nothing",
        [make_pdb(0, LabelSelector(matchLabels={}, matchExpressions=[]))],
        [TASK1],
        [TASK1],
    ),
    (
        "pdb in another namespace is ignored",
        [make_pdb(0, JOB1, namespace="other")],
        [TASK1, TASK2],
        [TASK1, TASK2],
    ),
    (
        "pdb applies in its own namespace only",
        [make_pdb(0, JOB1, namespace="other")],
        [OTHER_NS, TASK1],
        [TASK1],
    ),
    (
        "overlapping pdbs: exhausted B filters the pod and A is still consumed",
        [make_pdb(1, match_labels(app="web"), "a"), make_pdb(0, match_labels(role="db"), "b")],
        [WEB_DB, WEB],
        [],
    ),
    (
        "overlapping pdbs: without B the first pod is a victim",
        [make_pdb(1, match_labels(app="web"), "a")],
        [WEB_DB, WEB],
        [WEB_DB],
    ),
    (
        "overlapping pdbs: order decides who consumes A",
        [make_pdb(1, match_labels(app="web"), "a"), make_pdb(0, match_labels(role="db"), "b")],
        [WEB, WEB_DB],
        [WEB],
    ),
    (
        "two pdbs on one pod with room in both",
        [make_pdb(1, match_labels(app="web"), "a"), make_pdb(1, match_labels(role="db"), "b")],
        [WEB_DB, WEB],
        [WEB_DB],
    ),
    (
        "negative disruptionsAllowed blocks",
        [make_pdb(-1, JOB1)],
        [TASK1],
        [],
    ),
    (
        "matchLabels and matchExpressions are ANDed",
        [
            make_pdb(
                0,
                LabelSelector(
                    matchLabels={"app": "web"},
                    matchExpressions=[LabelSelectorRequirement("role", "In", ["db"])],
                ),
            )
        ],
        [WEB_DB, WEB],
        [WEB],
    ),
]


@pytest.mark.parametrize(
    ("pdbs", "candidates", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_filter_edge_cases(
    pdbs: list[PodDisruptionBudget], candidates: list[TaskInfo], expected: list[TaskInfo]
) -> None:
    check_both_hooks(open_plugin(StaticPdbSource(pdbs)), candidates, expected)


OPERATOR_CASES: list[tuple[str, LabelSelector, bool]] = [
    ("In matches a listed value", expression("app", "In", "web", "api"), True),
    ("In misses an unlisted value", expression("app", "In", "api"), False),
    ("In misses an absent key", expression("tier", "In", "web"), False),
    ("NotIn misses a listed value", expression("app", "NotIn", "web"), False),
    ("NotIn matches an unlisted value", expression("app", "NotIn", "api"), True),
    ("NotIn matches an absent key", expression("tier", "NotIn", "web"), True),
    ("Exists matches a present key", expression("app", "Exists"), True),
    ("Exists misses an absent key", expression("tier", "Exists"), False),
    ("DoesNotExist misses a present key", expression("app", "DoesNotExist"), False),
    ("DoesNotExist matches an absent key", expression("tier", "DoesNotExist"), True),
    ("matchLabels matches an equal value", match_labels(app="web"), True),
    ("matchLabels misses another value", match_labels(app="api"), False),
    # Invalid selectors make LabelSelectorAsSelector fail: the PDB is ignored (no protection).
    ("invalid: unknown operator", expression("app", "Equals", "web"), False),
    ("invalid: In without values", expression("app", "In"), False),
    ("invalid: NotIn without values", expression("app", "NotIn"), False),
    ("invalid: Exists with values", expression("app", "Exists", "web"), False),
    ("invalid: DoesNotExist with values", expression("tier", "DoesNotExist", "x"), False),
    ("invalid: key with two slashes", match_labels(**{"a/b/app": "web"}), False),
    ("invalid: key with an empty prefix", match_labels(**{"/app": "web"}), False),
    ("invalid: key prefix not a DNS name", match_labels(**{"Example.com/app": "web"}), False),
    ("invalid: key name too long", expression("a" * 64, "Exists"), False),
    ("invalid: value with a space", expression("app", "In", "web", "no good"), False),
    ("invalid: matchLabels value too long", match_labels(app="w" * 64), False),
    # The invalid requirement spoils the whole selector even when the valid part matches.
    (
        "invalid: a bad requirement next to a matching one",
        LabelSelector(
            matchLabels={"app": "web"},
            matchExpressions=[LabelSelectorRequirement("role", "Bogus", ["db"])],
        ),
        False,
    ),
]


@pytest.mark.parametrize(
    ("selector", "applies"),
    [c[1:] for c in OPERATOR_CASES],
    ids=[c[0] for c in OPERATOR_CASES],
)
def test_selector_operators(selector: LabelSelector, applies: bool) -> None:
    """A PDB with no budget left protects the pod exactly when its selector applies."""
    expected = [] if applies else [WEB_DB]
    check_both_hooks(open_plugin(StaticPdbSource([make_pdb(0, selector)])), [WEB_DB], expected)


def test_selector_conversion_semantics() -> None:
    nothing = label_selector_as_selector(None)
    assert not nothing.empty()
    assert not nothing.matches({"app": "web"})
    everything = label_selector_as_selector(LabelSelector())
    assert everything.empty()
    assert everything.matches({"app": "web"})
    assert label_selector_as_selector(match_labels(app="")).matches({"app": ""})
    prefixed = label_selector_as_selector(match_labels(**{"example.com/app": "x"}))
    assert prefixed.matches({"example.com/app": "x"})
    assert not prefixed.matches({"app": "x"})


def test_budgets_are_fresh_on_every_call() -> None:
    plugin = open_plugin(StaticPdbSource([make_pdb(1, JOB1)]))
    for _ in range(3):
        check_both_hooks(plugin, [TASK1, TASK2], [TASK1])


def test_budget_changes_are_seen_within_a_session() -> None:
    """Upstream lists the informer cache on every call, so a session sees live updates."""
    source = StaticPdbSource([make_pdb(0, JOB1)])
    plugin = open_plugin(source)
    check_both_hooks(plugin, [TASK1, TASK2], [])
    source.set([make_pdb(2, JOB1)])
    check_both_hooks(plugin, [TASK1, TASK2], [TASK1, TASK2])


@pytest.mark.parametrize(
    ("allowed", "candidates", "reasons"),
    [
        pytest.param(0, [TASK1], {TASK1.UID: "PodDisruptionBudget default/test-pdb allows no"
                                  " disruption now"}, id="none-allowed"),
        pytest.param(1, [TASK1, TASK2], {TASK2.UID: "PodDisruptionBudget default/test-pdb allows"
                     " 1 disruptions, taken by earlier candidates of this call"}, id="taken"),
        pytest.param(1, [UNLABELLED], {UNLABELLED.UID: NO_LABELS.message}, id="no-labels"),
    ],
)  # fmt: skip
def test_every_candidate_left_out_is_explained(
    allowed: int, candidates: list[TaskInfo], reasons: dict[str, str]
) -> None:
    plugin = open_plugin(StaticPdbSource([make_pdb(allowed, JOB1)]))
    result = plugin.preemptable(TaskInfo(), candidates)
    assert {uid: r.message for uid, r in result.vetoes.items()} == reasons
    not_loaded = open_plugin(None).reclaimable(TaskInfo(), [TASK1])
    assert not_loaded.vetoes == {TASK1.UID: NOT_LOADED}


def test_plugin_declarations() -> None:
    assert PdbPlugin.name == "pdb"
    assert PdbPlugin.needs_snapshot is False
    assert "VictimTasksFns" in PdbPlugin.in_tree_only
    assert PdbPlugin(Arguments({})).hooks() == frozenset({"preemptable", "reclaimable"})


# --- not synced -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "background",
    [None, FilePdbSource("/nonexistent/pdbs.yaml"), KubePdbSource("/nonexistent/kubeconfig")],
    ids=["no background", "file not loaded", "kubernetes not listed"],
)
def test_not_synced_keeps_every_candidate(
    background: PdbSource | None, caplog: pytest.LogCaptureFixture
) -> None:
    plugin = open_plugin(background)
    with caplog.at_level(logging.WARNING, logger="caldera.plugins.pdb"):
        for _ in range(3):
            check_both_hooks(plugin, [TASK1, TASK2], [])
    assert len([r for r in caplog.records if "not loaded yet" in r.getMessage()]) == 1
    if background is not None:
        assert not background.ready()
        assert background.describe()["synced"] is False
        assert background.metrics()["synced"] == 0.0


# --- create_background: the source arguments --------------------------------------------------


def test_create_background_default_is_kubernetes() -> None:
    background = PdbPlugin.create_background(Arguments({}, plugin="pdb"))
    assert isinstance(background, KubePdbSource)
    assert background.kubeconfig is None
    assert background.describe()["config"].startswith("default (in a pod: its service account")


def test_create_background_kubeconfig() -> None:
    args = Arguments({"source": "kubernetes", "kubeconfig": "/tmp/kc"}, plugin="pdb")
    background = PdbPlugin.create_background(args)
    assert isinstance(background, KubePdbSource)
    assert background.kubeconfig == "/tmp/kc"


def test_create_background_file(tmp_path: Path) -> None:
    args = Arguments({"source": "file", "file": str(tmp_path / "p.yaml")}, plugin="pdb")
    background = PdbPlugin.create_background(args)
    assert isinstance(background, FilePdbSource)
    assert background.path == str(tmp_path / "p.yaml")


@pytest.mark.parametrize(
    "arguments",
    [{"source": "etcd"}, {"source": "file"}, {"source": "file", "file": 3}],
    ids=["unknown source", "file source without a file", "file argument not a string"],
)
def test_create_background_misconfigured(arguments: dict[str, object]) -> None:
    background = PdbPlugin.create_background(Arguments(arguments, plugin="pdb"))
    assert isinstance(background, MisconfiguredPdbSource)
    assert not background.ready()
    assert background.describe()["lastError"]
    check_both_hooks(open_plugin(background), [TASK1], [])


# --- file source ------------------------------------------------------------------------------

PDB_YAML = """\
- apiVersion: policy/v1
  kind: PodDisruptionBudget
  metadata: {name: test-pdb, namespace: default}
  spec:
    selector:
      matchLabels: {volcano.sh/job-name: job-1}
  status:
    disruptionsAllowed: %d
    disruptedPods:
      ghost-pod: 2026-08-01T10:00:00Z
"""


def write(path: Path, text: str, mtime_ns: int) -> None:
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))  # a distinct mtime even on coarse filesystems


def test_file_source_load_reload_and_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "pdbs.yaml"
    source = FilePdbSource(str(path))
    plugin = open_plugin(source)
    assert source.reload_if_changed() is False  # missing: not synced, error recorded
    assert "cannot stat" in (source.describe()["lastError"] or "")
    check_both_hooks(plugin, [TASK1, TASK2], [])

    write(path, PDB_YAML % 1, 1_000_000_000)
    assert source.reload_if_changed() is True
    assert source.ready()
    assert source.describe()["count"] == 1
    assert source.describe()["lastError"] is None
    check_both_hooks(plugin, [TASK1, TASK2], [TASK1])
    assert source.reload_if_changed() is False  # unchanged: not read again

    write(path, PDB_YAML % 2, 2_000_000_000)
    assert source.reload_if_changed() is True
    check_both_hooks(plugin, [TASK1, TASK2], [TASK1, TASK2])

    write(path, "- kind: PodDisruptionBudget\n  metadata: {name: x\n", 3_000_000_000)
    assert source.reload_if_changed() is False
    assert source.describe()["lastError"]
    assert source.ready()
    check_both_hooks(plugin, [TASK1, TASK2], [TASK1, TASK2])  # the last good set

    write(path, PDB_YAML % 0, 4_000_000_000)
    assert source.reload_if_changed() is True
    assert source.describe()["lastError"] is None
    check_both_hooks(plugin, [TASK1, TASK2], [])
    assert source.metrics() == {
        "synced": 1.0,
        "objects": 1.0,
        "watch_restarts": 0.0,
        "relists": 2.0,
    }


def test_file_source_same_size_change_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "pdbs.yaml"
    source = FilePdbSource(str(path))
    write(path, PDB_YAML % 1, 1_000_000_000)
    assert source.reload_if_changed()
    write(path, PDB_YAML % 0, 2_000_000_000)  # same length, new mtime
    assert source.reload_if_changed()
    check_both_hooks(open_plugin(source), [TASK1, TASK2], [])


BAD_FILES = [
    ("not yaml", "{[", "cannot load"),
    ("a scalar", "42\n", "expected an object"),
    ("another kind", "kind: ConfigMap\nmetadata: {name: x}\n", "not a PodDisruptionBudget"),
    ("items not a list", "kind: List\nitems: 3\n", "'items' is not a list"),
    ("no name", "- kind: PodDisruptionBudget\n  metadata: {namespace: a}\n", "no metadata.name"),
    (
        "wrong field type",
        "- metadata: {name: a}\n  status: {disruptionsAllowed: one}\n",
        "disruptionsAllowed",
    ),
]


@pytest.mark.parametrize(
    ("text", "message"), [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES]
)
def test_file_source_rejects_bad_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "pdbs.yaml"
    write(path, text, 1_000_000_000)
    source = FilePdbSource(str(path))
    assert source.reload_if_changed() is False
    assert not source.ready()
    assert message in (source.describe()["lastError"] or "")


def test_file_formats() -> None:
    as_list = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {"metadata": {"name": "a", "namespace": "ns"}, "status": {"disruptionsAllowed": 3}},
                {"kind": "PodDisruptionBudget", "metadata": {"name": "b"}},
            ],
        }
    )
    pdbs = parse_pdb_file(as_list)
    assert [(p.metadata.namespace, p.metadata.name) for p in pdbs if p.metadata] == [
        ("ns", "a"),
        ("default", "b"),  # no namespace: default, as kubectl would
    ]
    assert pdbs[0].status is not None and pdbs[0].status.disruptionsAllowed == 3
    multi = "kind: PodDisruptionBudget\nmetadata: {name: a}\n---\n---\n- metadata: {name: b}\n"
    assert [p.metadata.name for p in parse_pdb_file(multi) if p.metadata] == ["a", "b"]
    typed_list = '{"kind": "PodDisruptionBudgetList", "items": null}'
    assert parse_pdb_file(typed_list) == []
    # `kubectl get pdb -o yaml` as it prints: managedFields (with an unquoted timestamp, which
    # YAML loads as a datetime) and a creationTimestamp.
    kubectl = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: policy/v1\n  kind: PodDisruptionBudget\n"
        "  metadata:\n    name: web\n    namespace: shop\n"
        "    creationTimestamp: 2026-11-27T08:00:00Z\n"
        "    managedFields:\n    - manager: kubectl-create\n      operation: Update\n"
        "      time: 2026-11-27T08:00:00Z\n      fieldsType: FieldsV1\n"
        "      fieldsV1: {f:spec: {f:minAvailable: {}}}\n"
        "  spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}\n"
        "  status: {disruptionsAllowed: 0}\n"
    )
    (web,) = parse_pdb_file(kubectl)
    assert web.metadata is not None and web.metadata.name == "web"
    assert web.status is not None and web.status.disruptionsAllowed == 0
    assert parse_pdb_file("") == []


async def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


async def test_file_source_background_polls(tmp_path: Path) -> None:
    path = tmp_path / "pdbs.yaml"
    write(path, PDB_YAML % 0, 1_000_000_000)
    source = FilePdbSource(str(path), poll_interval=0.01)
    await source.start()
    try:
        assert source.ready()  # start() loads before returning
        check_both_hooks(open_plugin(source), [TASK1, TASK2], [])
        write(path, PDB_YAML % 5, 2_000_000_000)
        await wait_until(lambda: source.loads == 2)
        check_both_hooks(open_plugin(source), [TASK1, TASK2], [TASK1, TASK2])
    finally:
        await source.stop()
    assert source.describe()["file"] == str(path)


@pytest.mark.parametrize(
    ("arguments", "errors"),
    [
        ({}, {}),
        ({"source": "kubernetes", "kubeconfig": "/tmp/kc"}, {}),
        ({"source": "file", "file": "/etc/pdbs.yaml"}, {}),
        ({"source": 7}, {}),  # a wrong type keeps the default (kubernetes), as Volcano's getters
        ({"source": "etcd"}, {"source": "unknown source 'etcd' (expected 'kubernetes' or 'file')"}),
        (
            {"source": "file"},
            {"file": "source: file needs a 'file' argument: the path of the budgets"},
        ),
        (
            {"source": "file", "file": 3},
            {"file": "source: file needs a 'file' argument: the path of the budgets"},
        ),
    ],
    ids=[
        "defaults",
        "kubernetes",
        "file",
        "wrong type keeps default",
        "unknown source",
        "file without path",
        "file path not a string",
    ],
)
def test_argument_errors_stop_startup(arguments: dict[str, object], errors: dict[str, str]) -> None:
    assert PdbPlugin.argument_errors(Arguments(arguments, plugin="pdb")) == errors
