"""``pdb``: keep preemption and reclaim within the cluster's PodDisruptionBudgets.

Follows ``pkg/scheduler/plugins/pdb/pdb.go`` at Volcano ``ed72c7c81`` (v1.16.0-alpha.1-42); the
file is byte-identical from v1.9.0 (commit ``3165c7820``, where the plugin was added) to that
commit, so there is no version branch. v1.6 to v1.8 have no pdb plugin (Volcano logs "Failed to
get plugin" and skips the entry); hosted by Caldera it behaves as in v1.9. Reference:
plugins-part1.md §6.

The filter (``pdbFilterFn``) is called with the candidate victims and returns those whose
eviction keeps every budget at or above zero:

* budgets start from each PDB's ``status.disruptionsAllowed``, afresh on every call, and are
  consumed in the order the candidates arrive (the order matters);
* a pod without labels is passed over: it is never a victim (an upstream quirk, kept);
* a PDB applies to a pod when it is in the pod's namespace, its selector converts with
  ``metav1.LabelSelectorAsSelector`` (an invalid one makes the PDB ignored), the selector is not
  ``Empty()`` and matches the pod's labels, and the pod is not in ``status.disruptedPods``. A
  null selector is ``labels.Nothing()`` and ``{}`` is ``labels.Everything()``, whose ``Empty()`` is
  true, so both match nothing (unlike policy/v1, where ``{}`` selects the whole namespace);
* every applicable PDB is decremented, even after another one is already exhausted; one that
  goes below zero makes the pod a non-victim.

``preemptable`` and ``reclaimable`` both answer ``(filter(candidates), Permit)``: an empty answer
therefore ends the tier with no victims, as upstream.

Upstream reads the budgets from client-go's PDB informer on every call. Caldera keeps them in the
plugin's :class:`~plugins.api.base.Background` (``plugins/pdb/sources.py``; the budget
arithmetic is ``plugins/pdb/budgets.py``), chosen by the plugin arguments:

* ``source: kubernetes`` (default): list and watch ``policy/v1`` PodDisruptionBudgets of all
  namespaces (``plugins/pdb/kube.py``), with the pod's service account or ``kubeconfig: <path>``.
  The service account needs ``list`` and ``watch`` on ``poddisruptionbudgets.policy``.
* ``source: file`` with ``file: <path>``: a YAML or JSON file holding PodDisruptionBudget objects
  (a list, a ``kind: List``/``PodDisruptionBudgetList`` with ``items``, or ``---``-separated
  documents); it is re-read when its modification time or size changes (polled every second).
  An object without ``metadata.namespace`` is in ``default``, as ``kubectl apply`` would put it.
  A file that fails to parse keeps the last good set and is reported in ``/readyz``.

Until the first list or load completes the plugin cannot prove that any disruption is allowed,
so it keeps every candidate (``([], Permit)``). Upstream in that state would read an empty
informer cache and let every labelled pod go; Caldera prefers to protect them, and ``/readyz``
stays false meanwhile. Upstream's feature gate ``PodDisruptionBudgetsSupport`` (default on) has
no equivalent: enabling the plugin here means the budgets are read.

Not carried by the extender: ``AddVictimTasksFns`` (the ``shuffle`` action's victim selection).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from plugins.api import (
    Arguments,
    Background,
    EvictResult,
    Explained,
    OnError,
    Plugin,
    Reason,
    Upstream,
    Vote,
    register,
)
from plugins.pdb.budgets import pdb_filter
from plugins.pdb.sources import (
    FilePdbSource,
    KubePdbSource,
    MisconfiguredPdbSource,
    PdbSource,
)
from schemas.api import TaskInfo

NOT_LOADED = Reason(
    "pdbs-not-loaded", "PodDisruptionBudgets are not loaded yet: pdb lets no pod be evicted"
)

logger = logging.getLogger("caldera.plugins.pdb")


@register
class PdbPlugin(Plugin):
    name = "pdb"
    on_error = OnError.FAIL
    """Its answer protects pods a PodDisruptionBudget covers from eviction: abstaining would offer them."""
    upstream = Upstream(
        repository="volcano-sh/volcano",
        files=("pkg/scheduler/plugins/pdb/pdb.go",),
        commit="ed72c7c81",
        releases="v1.9.0 and later",
    )
    needs_snapshot = False  # it reads the budgets, not the session snapshot
    in_tree_only = ("VictimTasksFns",)

    @classmethod
    def argument_errors(cls, arguments: Arguments) -> dict[str, str]:
        source = arguments.get_string("source", "kubernetes")
        if source not in ("kubernetes", "file"):
            return {"source": f"unknown source {source!r} (expected 'kubernetes' or 'file')"}
        if source == "file" and not arguments.get_string("file", ""):
            return {"file": "source: file needs a 'file' argument: the path of the budgets"}
        return {}

    @classmethod
    def path_problems(cls, arguments: Arguments) -> dict[str, str]:
        source = arguments.get_string("source", "kubernetes")
        key = "file" if source == "file" else "kubeconfig"
        path = arguments.get_string(key, "")
        if path and not Path(path).is_file():
            return {key: f"{path}: no such file here: pdb would never sync and evict no pod"}
        return {}

    @classmethod
    def create_background(cls, arguments: Arguments) -> Background | None:
        # Configurations are validated by argument_errors; a source built without that check
        # (embedding, tests) still fails safe: never ready, no pod evicted.
        source = arguments.get_string("source", "kubernetes")
        if source == "kubernetes":
            kubeconfig = arguments.get_string("kubeconfig", "")
            return KubePdbSource(kubeconfig or None)
        if source == "file":
            path = arguments.get_string("file", "")
            if not path:
                return MisconfiguredPdbSource("source: file needs a 'file' argument")
            return FilePdbSource(path)
        return MisconfiguredPdbSource(
            f"unknown source {source!r} (expected 'kubernetes' or 'file')"
        )

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)
        self._reported_unsynced = False

    def _filter(self, tasks: Sequence[TaskInfo]) -> Explained[EvictResult]:
        vetoes: dict[str, Reason] = {}
        victims = self._victims(tasks, vetoes)
        return Explained((victims, Vote.PERMIT), vetoes=vetoes)

    def _victims(self, tasks: Sequence[TaskInfo], vetoes: dict[str, Reason]) -> list[TaskInfo]:
        source = self.background
        snapshot = source.snapshot() if isinstance(source, PdbSource) else None
        if snapshot is None:
            if not self._reported_unsynced:  # once per session, not once per call
                self._reported_unsynced = True
                detail = source.describe() if source is not None else {"source": None}
                logger.warning(
                    "pdb: PodDisruptionBudgets are not loaded yet (%s); no pod is evicted",
                    detail,
                )
            vetoes.update((task.UID, NOT_LOADED) for task in tasks)
            return []
        return pdb_filter(tasks, snapshot, vetoes)

    def preemptable(
        self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> Explained[EvictResult]:
        return self._filter(preemptees)

    def reclaimable(
        self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
    ) -> Explained[EvictResult]:
        return self._filter(reclaimees)
