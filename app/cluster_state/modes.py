"""``sessionState``: where a session's state comes from (issue 36).

* ``snapshot`` (the default): Volcano's onSessionOpen body, as always.
* ``compare``: the body still, and Caldera also derives the state from the cluster and reports
  every difference (:mod:`app.cluster_state.compare_mode`): how an operator trusts the cluster
  mode on their own cluster before turning Volcano's snapshot off.
* ``cluster``: the state from the cluster only (:mod:`app.cluster_state.cluster_mode`);
  Volcano is configured without onSessionOpenVerb and never marshals its snapshot.

Every reason a mode cannot be served is checked at once, so a configuration learns all of them
together: the release must send allocate/deallocate (the extension-point table's row says from
which release), the release must be named rather than inferred from a snapshot that cluster mode
never receives, and each hosted plugin must read nothing that only the snapshot carries (its
class's ``snapshot_only``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from plugins.api.extension_points import BY_VERB, Verb
from plugins.api.release import Release


class SessionStateMode(enum.StrEnum):
    """``sessionState``'s values: where a session's state comes from (see the module)."""

    SNAPSHOT = "snapshot"
    CLUSTER = "cluster"
    COMPARE = "compare"


SESSION_STATES: tuple[SessionStateMode, ...] = tuple(SessionStateMode)

AUTO_RELEASE = (
    "volcanoVersion auto infers the release from onSessionOpen's body, which Volcano does not"
    " send with sessionState cluster; name the release"
)


def refusal(cls: type) -> str | None:
    """Why ``cls``'s session state cannot come from the cluster, or None."""
    reason = getattr(cls, "snapshot_only", None)
    return reason if isinstance(reason, str) else None


def problems(
    mode: SessionStateMode,
    release: Release,
    plugins: Iterable[tuple[str, str, type]],
    infers_release: bool = False,
) -> list[tuple[str, str]]:
    """(key path, problem) for each reason ``mode`` cannot be served; ``plugins`` are (where,
    name, class) of the configured entries."""
    found: list[tuple[str, str]] = []
    if mode == SessionStateMode.SNAPSHOT:
        return found
    if not release.has_verb(Verb.ALLOCATE):
        since = ".".join(map(str, BY_VERB[Verb.ALLOCATE].since))
        found.append(
            (
                "sessionState",
                f"Volcano {release} sends no allocateFunc/deallocateFunc (they exist from {since}),"
                " so Caldera cannot tell which tasks Volcano is binding and would count them"
                f" Pending on no node until their pods are bound; the derived state needs {since}"
                " or later",
            )
        )
    if mode != SessionStateMode.CLUSTER:
        return found
    if infers_release:
        found.append(("volcanoVersion", AUTO_RELEASE))
    for where, name, cls in plugins:
        reason = refusal(cls)
        if reason is not None:
            found.append(
                (f"{where}.name", f"plugin {name!r} cannot run with sessionState cluster: {reason}")
            )
    return found
