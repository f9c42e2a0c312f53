"""Volcano's multi-scheduler mode without node selectors: which pods, PodGroups and nodes one
vc-scheduler replica's cache holds, so that its sidecar derives that replica's state.

Volcano (``docs/design/deploy-multi-volcano-schedulers-without-using-selector.md``) runs
several vc-scheduler replicas side by side, each with the environment ``MULTI_SCHEDULER_ENABLE=
true``, ``SCHEDULER_NUM`` (the replicas) and ``SCHEDULER_POD_NAME`` (its own pod's name, from
the downward API). ``getMultiSchedulerInfo`` (``pkg/scheduler/cache/util.go``, the same from
v1.13.0 to v1.16.0-alpha.1) puts ``<base>-0`` … ``<base>-<SCHEDULER_NUM-1>`` on a consistent
hash ring (``stathat.com/c/consistent`` v1.0.0, ``<base>`` the pod name up to its last ``-``),
and the cache keeps only what the ring gives this replica:

* pods (the pod informer's filter, ``addEventHandler`` in ``cache.go``): ``responsibleForPod``
  (one of the scheduler's names, and the ring's member for the first owner reference's name,
  else the pod's name is this replica), or a pod on a node ``responsibleForNode`` gives it;
* PodGroups (the PodGroup informer's filter): ``responsibleForPodGroup``, the same key;
* nodes (``nodeCanAddCache``, ``event_handlers.go``): ``responsibleForNode``, by the node's
  name. A pod this replica keeps on a node it does not hold is on no node, as on any node the
  cache never saw.

Caldera runs in the same pod as vc-scheduler, so it is given the same three variables (the
operator guide, section 9): it reads them from its own environment rather than from its
configuration file, since ``SCHEDULER_POD_NAME`` differs per replica while the replicas share
one ConfigMap. :class:`Consistent` is the ring, bit for bit (crc32 IEEE of ``strconv.Itoa(i) +
member`` for 20 virtual nodes each, a later member taking a colliding point, ``sort.Search``
for the first point above the key's hash, wrapping to the first);
``tests/conformance/consistent/`` checks it against the Go package.
"""

from __future__ import annotations

import bisect
import re
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from app.cluster_state.modes import SessionStateMode

ENABLE = "MULTI_SCHEDULER_ENABLE"
NUM = "SCHEDULER_NUM"
POD_NAME = "SCHEDULER_POD_NAME"

NUMBER_OF_REPLICAS = 20
"""``consistent.New``'s ``NumberOfReplicas``: virtual nodes per member."""

MAX_SCHEDULERS = 10_000
"""The largest ``SCHEDULER_NUM`` Caldera builds a ring for. vc-scheduler sorts its whole ring
once per member it adds, so far beyond this it does not start in any useful time either."""

_GO_ATOI = re.compile(r"^[+-]?[0-9]+$")
_INT64 = (-(1 << 63), (1 << 63) - 1)


def hash_key(key: str) -> int:
    """``hashKey``: crc32 (IEEE) of the string's bytes."""
    return zlib.crc32(key.encode()) & 0xFFFFFFFF


class Consistent:
    """``consistent.Consistent`` of stathat.com/c/consistent v1.0.0, for ``Add`` and ``Get``."""

    def __init__(self, members: Iterable[str] = (), replicas: int = NUMBER_OF_REPLICAS) -> None:
        self.replicas = replicas
        self.circle: dict[int, str] = {}
        self.members: dict[str, None] = {}
        """Every member, in the order added."""
        for member in members:
            self._place(member)
        self.sorted_hashes = sorted(self.circle)

    def add(self, member: str) -> None:
        self._place(member)
        self.sorted_hashes = sorted(self.circle)

    def _place(self, member: str) -> None:
        # ``eltKey``: strconv.Itoa(idx) + elt; a point another member holds goes to this one.
        for i in range(self.replicas):
            self.circle[hash_key(f"{i}{member}")] = member
        self.members[member] = None

    def get(self, name: str) -> str | None:
        """The member for ``name``; None for an empty ring (Go's ``ErrEmptyCircle``, whose ""
        is then no replica's name)."""
        if not self.circle:
            return None
        hashes = self.sorted_hashes
        i = bisect.bisect_right(hashes, hash_key(name))  # sort.Search: first point > hash
        return self.circle[hashes[i if i < len(hashes) else 0]]


class MultiSchedulerError(ValueError):
    """An environment vc-scheduler cannot run with, or one Caldera does not follow."""


@dataclass(frozen=True)
class MultiScheduler:
    """This replica's name and the ring of every replica's."""

    pod_name: str
    schedulers: int
    ring: Consistent = field(compare=False, repr=False)

    def owns(self, key: str) -> bool:
        """The ring gives ``key`` to this replica."""
        return self.ring.get(key) == self.pod_name

    @property
    def member(self) -> bool:
        """This replica's name is on the ring; if not, it holds no pod, PodGroup or node."""
        return self.pod_name in self.ring.members

    def describe(self) -> dict[str, object]:
        return {"podName": self.pod_name, "schedulers": self.schedulers, "member": self.member}


def _atoi(text: str) -> int | None:
    """``strconv.Atoi``: None where Go returns an error."""
    if not _GO_ATOI.match(text):
        return None
    value = int(text)
    return value if _INT64[0] <= value <= _INT64[1] else None


def from_env(environ: Mapping[str, str]) -> MultiScheduler | None:
    """``getMultiSchedulerInfo`` on ``environ``: None unless ``MULTI_SCHEDULER_ENABLE`` is
    ``true``; a ``SCHEDULER_NUM`` that is no integer counts 1, as Volcano counts it.

    Raises :class:`MultiSchedulerError` where vc-scheduler cannot start (a pod name without a
    ``-``: it slices at index -1 and panics) or where the ring is beyond ``MAX_SCHEDULERS``."""
    if environ.get(ENABLE, "") != "true":
        return None
    pod_name = environ.get(POD_NAME, "")
    index = pod_name.rfind("-")
    if index < 0:
        raise MultiSchedulerError(
            f"{ENABLE}=true with {POD_NAME}={pod_name!r}, which has no '-': vc-scheduler"
            " panics at start slicing the replicas' base name out of it (getMultiSchedulerInfo,"
            f" pkg/scheduler/cache/util.go); give the sidecar the scheduler pod's own {POD_NAME}"
            " (the downward API's metadata.name)"
        )
    count = _atoi(environ.get(NUM, ""))
    schedulers = 1 if count is None else count
    if schedulers > MAX_SCHEDULERS:
        raise MultiSchedulerError(
            f"{NUM}={schedulers}: Caldera follows rings of up to {MAX_SCHEDULERS} scheduler"
            " replicas"
        )
    base = pod_name[:index]
    ring = Consistent(f"{base}-{i}" for i in range(schedulers))
    return MultiScheduler(pod_name, schedulers, ring)


def problems(session_state: SessionStateMode, environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(where, problem) when ``session_state`` derives the state and ``environ`` asks for a
    multi-scheduler ring Caldera cannot follow; nothing for a snapshot (Volcano's is already
    this replica's)."""
    if session_state == SessionStateMode.SNAPSHOT:
        return []
    try:
        from_env(environ)
    except MultiSchedulerError as exc:
        return [("sessionState", f"{session_state} cannot follow the scheduler's ring: {exc}")]
    return []


def warnings(session_state: SessionStateMode, environ: Mapping[str, str]) -> list[str]:
    """What a ring Caldera follows may still get wrong: a replica whose name is none of the
    ring's members (a Deployment's pod names) holds nothing, in vc-scheduler as here."""
    if session_state == SessionStateMode.SNAPSHOT:
        return []
    try:
        multi = from_env(environ)
    except MultiSchedulerError:
        return []
    if multi is None or multi.member:
        return []
    members = list(multi.ring.members)
    shown = f"{members[0]} … {members[-1]}" if members else "no replica"
    return [
        f"{ENABLE}=true: {POD_NAME}={multi.pod_name!r} is none of the ring's replicas"
        f" ({shown}, from {NUM}={multi.schedulers}), so vc-scheduler, and the state Caldera"
        " derives for it, holds no pod, PodGroup or node: run the schedulers as a StatefulSet"
        " whose pods are named <base>-0 … <base>-N-1"
    ]
