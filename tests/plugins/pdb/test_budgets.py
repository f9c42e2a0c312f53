"""The PDB index of ``plugins/pdb/budgets.py``: filing a PDB under one of its
exact ``key=value`` requirements must never change which PDBs a pod matches, so the filter's
answer is the one a scan of every PDB in the namespace gives (``pdbFilterFn``)."""

from __future__ import annotations

import random

from plugins.pdb.budgets import (
    CompiledPdb,
    NamespaceBudgets,
    PdbSnapshot,
    compile_pdb,
    pdb_filter,
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

KEYS = ("app", "tier", "volcano.sh/job-name")
VALUES = ("a", "b", "c")


def pdb(name: str, selector: LabelSelector, allowed: int, namespace: str = "ns") -> CompiledPdb:
    compiled = compile_pdb(
        PodDisruptionBudget(
            metadata=ObjectMeta(name=name, namespace=namespace),
            spec=PodDisruptionBudgetSpec(selector=selector),
            status=PodDisruptionBudgetStatus(disruptionsAllowed=allowed),
        )
    )
    assert compiled is not None
    return compiled


def task(name: str, labels: dict[str, str], namespace: str = "ns") -> TaskInfo:
    pod = Pod(metadata=ObjectMeta(name=name, namespace=namespace, labels=labels))
    return TaskInfo(UID=name, Name=name, Namespace=namespace, Pod=pod)


def scan_filter(tasks: list[TaskInfo], pdbs: list[CompiledPdb]) -> list[TaskInfo]:
    """``pdbFilterFn`` read literally: every PDB of the namespace, in order, for every task."""
    budgets: dict[int, int] = {}
    victims = []
    for t in tasks:
        assert t.Pod is not None and t.Pod.metadata is not None
        labels = t.Pod.metadata.labels or {}
        if not labels:
            continue
        violated = False
        for p in pdbs:
            if p.namespace != t.Namespace or not p.selector.matches(labels):
                continue
            budgets[id(p)] = budgets.get(id(p), p.disruptions_allowed) - 1
            violated = violated or budgets[id(p)] < 0
        if not violated:
            victims.append(t)
    return victims


def random_selector(rng: random.Random) -> LabelSelector:
    match_labels = {k: rng.choice(VALUES) for k in rng.sample(KEYS, rng.randint(0, 2))}
    expressions = []
    for key in rng.sample(KEYS, rng.randint(0 if match_labels else 1, 2)):
        operator = rng.choice(("In", "NotIn", "Exists", "DoesNotExist"))
        values = rng.sample(VALUES, 2) if operator in ("In", "NotIn") else None
        expressions.append(LabelSelectorRequirement(key=key, operator=operator, values=values))
    return LabelSelector(matchLabels=match_labels or None, matchExpressions=expressions or None)


def test_exact_pairs_are_indexed_and_expressions_are_checked_for_every_pod() -> None:
    by_job = pdb("by-job", LabelSelector(matchLabels={"app": "a", "tier": "b"}), 1)
    by_expression = pdb(
        "by-expression",
        LabelSelector(matchExpressions=[LabelSelectorRequirement(key="app", operator="Exists")]),
        1,
    )
    index = NamespaceBudgets.of([by_job, by_expression])
    assert index.by_label == {("app", "a"): (by_job,)}
    assert index.unindexed == (by_expression,)
    assert index.candidates({"app": "a", "tier": "b"}) == [by_expression, by_job]
    assert index.candidates({"app": "b"}) == [by_expression]


def test_the_index_answers_as_a_scan_of_every_pdb() -> None:
    rng = random.Random(20261123)
    for _ in range(300):
        namespaces = ("ns", "other")
        pdbs = [
            pdb(f"p{i}", random_selector(rng), rng.randint(0, 2), rng.choice(namespaces))
            for i in range(rng.randint(1, 8))
        ]
        tasks = [
            task(
                f"t{i}",
                {k: rng.choice(VALUES) for k in rng.sample(KEYS, rng.randint(0, 3))},
                rng.choice(namespaces),
            )
            for i in range(rng.randint(1, 12))
        ]
        got = pdb_filter(tasks, PdbSnapshot.build(pdbs))
        assert [t.Name for t in got] == [t.Name for t in scan_filter(tasks, pdbs)]
