"""PodDisruptionBudget arithmetic of Volcano's pdb plugin (``pdbFilterFn`` of
``pkg/scheduler/plugins/pdb/pdb.go``): budgets compiled once when they arrive, then consumed per
call in the order the candidate victims come.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from plugins.api import Reason
from plugins.pdb.labels import Selector, SelectorError, label_selector_as_selector
from schemas.api import TaskInfo
from schemas.k8s import PodDisruptionBudget

logger = logging.getLogger("caldera.plugins.pdb")


@dataclass(frozen=True, slots=True, eq=False)
class CompiledPdb:
    """A PDB that can apply to some pod: its selector converted once, when it arrives.

    Compared by identity: the filter keys its per-call budgets by the object itself.
    """

    namespace: str
    name: str
    selector: Selector
    disruptions_allowed: int
    disrupted_pods: frozenset[str]
    exhausted: Reason
    """Why a pod it covers may not go once its budget is spent (it names only the budget)."""


def compile_pdb(pdb: PodDisruptionBudget) -> CompiledPdb | None:
    """None for a PDB the filter would always skip (invalid or empty selector)."""
    meta = pdb.metadata
    namespace = meta.namespace if meta else ""
    name = meta.name if meta else ""
    try:
        selector = label_selector_as_selector(pdb.spec.selector if pdb.spec else None)
    except SelectorError as exc:
        logger.warning("PodDisruptionBudget %s/%s is ignored: %s", namespace, name, exc)
        return None
    if selector.empty() or selector.nothing:  # Nothing() is never Matched either
        return None
    status = pdb.status
    allowed = status.disruptionsAllowed if status else 0
    return CompiledPdb(
        namespace=namespace,
        name=name,
        selector=selector,
        disruptions_allowed=allowed,
        disrupted_pods=frozenset(status.disruptedPods or ()) if status else frozenset(),
        exhausted=Reason(
            "pdb-no-disruptions",
            f"PodDisruptionBudget {namespace}/{name} allows"
            + (
                f" {allowed} disruptions, taken by earlier candidates of this call"
                if allowed > 0
                else " no disruption now"
            ),
        ),
    )


@dataclass(frozen=True, slots=True)
class NamespaceBudgets:
    """One namespace's PDBs, indexed so a pod is matched only against the PDBs it could match.

    A selector with an exact ``key=value`` requirement (every ``matchLabels`` entry is one) can
    only match a pod carrying that label, so the PDB is filed under its first such pair; the
    others (``matchExpressions`` only) are checked against every pod. Each PDB sits in exactly
    one place, and the full selector is still evaluated, so the candidates of a pod are the PDBs
    a scan would match. Their order does not matter: every matching budget is consumed.
    """

    by_label: Mapping[tuple[str, str], tuple[CompiledPdb, ...]]
    unindexed: tuple[CompiledPdb, ...]

    @classmethod
    def of(cls, pdbs: Iterable[CompiledPdb]) -> NamespaceBudgets:
        by_label: dict[tuple[str, str], list[CompiledPdb]] = {}
        unindexed: list[CompiledPdb] = []
        for pdb in pdbs:
            pair = next(
                (
                    (r.key, next(iter(r.values)))
                    for r in pdb.selector.requirements
                    if r.operator == "="
                ),
                None,
            )
            if pair is None:
                unindexed.append(pdb)
            else:
                by_label.setdefault(pair, []).append(pdb)
        return cls({pair: tuple(p) for pair, p in by_label.items()}, tuple(unindexed))

    def candidates(self, labels: Mapping[str, str]) -> list[CompiledPdb]:
        found = list(self.unindexed)
        for pair in labels.items():
            filed = self.by_label.get(pair)
            if filed:
                found.extend(filed)
        return found


@dataclass(frozen=True, slots=True)
class PdbSnapshot:
    """An immutable view of the budgets, swapped in whole whenever they change."""

    by_namespace: Mapping[str, NamespaceBudgets]
    count: int
    """How many PDB objects the source holds (including those that can never apply)."""

    @classmethod
    def build(cls, compiled: Iterable[CompiledPdb | None]) -> PdbSnapshot:
        by_namespace: dict[str, list[CompiledPdb]] = {}
        count = 0
        for pdb in compiled:
            count += 1
            if pdb is not None:
                by_namespace.setdefault(pdb.namespace, []).append(pdb)
        return cls({ns: NamespaceBudgets.of(p) for ns, p in by_namespace.items()}, count)

    @classmethod
    def of(cls, pdbs: Iterable[PodDisruptionBudget]) -> PdbSnapshot:
        return cls.build(compile_pdb(pdb) for pdb in pdbs)


NO_LABELS = Reason(
    "no-labels", "a pod without labels is never a pdb victim (upstream: it matches no PDB)"
)


def pdb_filter(
    tasks: Sequence[TaskInfo], snapshot: PdbSnapshot, vetoes: dict[str, Reason] | None = None
) -> list[TaskInfo]:
    """``pdbFilterFn``: the tasks that may be evicted, in input order. ``vetoes``, when given,
    receives why each other task may not be (by UID)."""
    budgets: dict[CompiledPdb, int] = {}  # only the PDBs this call touches; fresh every call
    victims: list[TaskInfo] = []
    for task in tasks:
        meta = task.Pod.metadata if task.Pod is not None else None
        if meta is None or not meta.labels:
            if vetoes is not None:
                vetoes[task.UID] = NO_LABELS
            continue  # upstream: "a pod with no labels will not match any PDB" (never a victim)
        violated: CompiledPdb | None = None
        namespace = snapshot.by_namespace.get(meta.namespace or task.Namespace)
        if namespace is None:
            victims.append(task)
            continue
        for pdb in namespace.candidates(meta.labels):
            if not pdb.selector.matches(meta.labels) or meta.name in pdb.disrupted_pods:
                continue  # an already disrupted pod was counted by the disruption controller
            left = budgets.get(pdb, pdb.disruptions_allowed) - 1
            budgets[pdb] = left
            if left < 0 and violated is None:
                violated = pdb  # keep going: every matching budget is consumed
        if violated is None:
            victims.append(task)
        elif vetoes is not None:
            vetoes[task.UID] = violated.exhausted
    return victims
