"""``taint-toleration``: a plugin of the suite's own, written against the documented API only
(docs/plugin-author-guide.md, "Field reference"), that reads the node's taints and the pod's
tolerations. It answers as Kubernetes' TaintToleration filter does
(``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go`` ``Filter``, with
``v1helper.FindMatchingUntoleratedTaint`` and ``Toleration.ToleratesTaint`` of
``k8s.io/api/core/v1/toleration.go``): a node with a ``NoSchedule`` or ``NoExecute`` taint the
pod does not tolerate does not fit; ``PreferNoSchedule`` only scores, so it never rejects.

Served through a real ``caldera serve`` by tests/service/test_plugin_taint_toleration.py, where
it arrives through the ``caldera.plugins`` entry-point group as a third-party plugin would.
"""

from __future__ import annotations

from plugins.api import FitError, Plugin, StatusCode
from schemas.api import NodeInfo, TaskInfo
from schemas.k8s import Taint, Toleration

FILTERED_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """``Toleration.ToleratesTaint``: an empty effect matches every effect; an empty key with
    ``Exists`` matches every key; ``Exists`` ignores the value; ``Equal`` (the default when the
    operator is empty) compares it."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return False  # an unknown operator tolerates nothing


class TaintToleration(Plugin):
    name = "taint-toleration"

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        spec = node.Node.spec if node.Node else None
        taints = spec.taints if spec else None
        if not taints:
            return None
        pod_spec = task.Pod.spec if task.Pod else None
        tolerations = (pod_spec.tolerations if pod_spec else None) or []
        for taint in taints:
            if taint.effect not in FILTERED_EFFECTS:
                continue
            if not any(tolerates(toleration, taint) for toleration in tolerations):
                return FitError(
                    f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}",
                    StatusCode.UNSCHEDULABLE_AND_UNRESOLVABLE,
                )
        return None
