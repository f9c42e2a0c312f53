"""``sessionState``: where a session's state comes from (issue 36).

* ``snapshot`` (the default): Volcano's onSessionOpen body, as always.
* ``compare``: the body still, and Caldera also derives the state from the cluster and reports
  every difference (:mod:`app.cluster_state.compare_mode`): how an operator trusts the cluster
  mode on their own cluster before turning Volcano's snapshot off.
* ``cluster``: the state from the cluster only. Refused for now: answering without
  onSessionOpen's body is not wired yet. The other reasons it can be refused are checked already,
  so a configuration learns all of them at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from plugins.api.release import Release

SESSION_STATES = ("snapshot", "cluster", "compare")

CLUSTER_NOT_SERVED = (
    "sessionState cluster is not served yet: Caldera does not answer without onSessionOpen's"
    " body (issue 36); use compare to check the derived state against Volcano's on this cluster"
)

SNAPSHOT_ONLY: Mapping[str, str] = {
    "usage": (
        "it reads each node's ResourceUsage, which Volcano's metrics source fills in the"
        " snapshot; no Kubernetes object Caldera can watch carries it"
    ),
}
"""Plugins whose session state cannot come from the cluster, with the reason. A plugin class
may say so itself with a ``session_state_from_cluster_refusal`` string attribute."""


def refusal(plugin: str, cls: type) -> str | None:
    reason = getattr(cls, "session_state_from_cluster_refusal", None)
    return reason if isinstance(reason, str) else SNAPSHOT_ONLY.get(plugin)


def problems(
    mode: str, release: Release, plugins: Iterable[tuple[str, str, type]]
) -> list[tuple[str, str]]:
    """(key path, problem) for each reason ``mode`` cannot be served; ``plugins`` are (where,
    name, class) of the configured entries."""
    found: list[tuple[str, str]] = []
    if mode == "snapshot":
        return found
    if not release.has_verb("allocate"):
        found.append(
            (
                "sessionState",
                f"Volcano {release} sends no allocateFunc/deallocateFunc (they exist from 1.13),"
                " so Caldera cannot tell which tasks Volcano is binding and would count them"
                " Pending on no node until their pods are bound; the derived state needs 1.13"
                " or later",
            )
        )
    if mode != "cluster":
        return found
    found.append(("sessionState", CLUSTER_NOT_SERVED))
    for where, name, cls in plugins:
        reason = refusal(name, cls)
        if reason is not None:
            found.append(
                (f"{where}.name", f"plugin {name!r} cannot run with sessionState cluster: {reason}")
            )
    return found
