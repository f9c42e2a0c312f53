"""Noticing when what arrives contradicts the configured ``volcanoVersion``.

The release decides answers, not only the wire shape: configured for 1.16, overcommit and
resourcequota wait for jobEnqueued calls that a 1.15 scheduler never sends, and admit more than
the in-tree plugins would. So Caldera watches for evidence of another release and says so loudly:
an error log line once per session and signal, ``caldera_release_mismatch_total{signal}``, and
the latest evidence in ``/readyz``. It keeps answering as configured.

Each signal is one row: what was seen, and which releases it proves.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from app.metrics import Metrics
from plugins.api.release import Release
from schemas.requests import OnSessionOpenRequest

logger = logging.getLogger("caldera.release")


@dataclass(frozen=True, slots=True)
class TaskField:
    """A ``TaskInfo`` key that Volcano's ``json.Marshal`` writes from ``since`` on."""

    key: str
    since: tuple[int, int]

    @property
    def needle(self) -> bytes:
        return f'"{self.key}":'.encode()


TASK_FIELDS: tuple[TaskField, ...] = (
    TaskField("PodAnnotations", (1, 16)),
    TaskField("DRAResreq", (1, 15)),
    TaskField("TaskRole", (1, 10)),
)
"""Protocol reference §3.4: fields added to ``TaskInfo`` by a release (never removed since)."""

TASK_MARKER = b'"Resreq":'
"""Written for every task by every release: a window holding it holds a whole task's keys."""

PROBE_WINDOW = 256 << 10
"""How much of an onSessionOpen body is searched for task keys: the jobs come first, so the
first task is within it in any cluster that has one. Searching 75 MiB would cost tens of ms."""


def task_fields_signals(body: bytes | bytearray, release: Release) -> list[tuple[str, str]]:
    """Signals from the keys of the first task in ``body``: a key the configured release cannot
    write, or a key it always writes that is missing."""
    window = bytes(body[:PROBE_WINDOW])
    start = window.find(TASK_MARKER)
    if start < 0:
        return []
    # The keys of one TaskInfo surround its Resreq; look at a stretch around it.
    task = window[max(0, start - 4096) : start + 16384]
    found: list[tuple[str, str]] = []
    for spec in TASK_FIELDS:
        present = spec.needle in task
        expected = release.at_least(*spec.since)
        if present and not expected:
            found.append(
                (
                    "task_field_from_newer_release",
                    f"tasks carry {spec.key}, which Volcano writes only from"
                    f" {spec.since[0]}.{spec.since[1]}",
                )
            )
        elif expected and not present:
            found.append(
                (
                    "task_field_missing",
                    f"tasks lack {spec.key}, which Volcano {release} always writes (a release"
                    f" before {spec.since[0]}.{spec.since[1]} is calling)",
                )
            )
    return found


def object_shape_signals(request: OnSessionOpenRequest, release: Release) -> list[tuple[str, str]]:
    """PodGroup and Queue changed JSON shape in 1.14: flattened ``ObjectMeta`` and untagged
    ``Spec``/``Status`` before, ``metadata``/``spec``/``status`` from it."""
    nested_expected = release.at_least(1, 14)
    found: list[tuple[str, str]] = []
    for job in (request.Jobs or {}).values():
        pg = job.PodGroup
        if pg is None or not (pg.Spec is not None or pg.metadata.name):
            continue
        flattened = pg.Spec is not None
        if flattened == nested_expected:
            found.append(_shape_signal("PodGroup", flattened, release))
        break  # every PodGroup of one snapshot has the same shape
    for queue in (request.Queues or {}).values():
        q = queue.Queue
        if q is None or not (q.Spec is not None or q.metadata.name):
            continue
        flattened = q.Spec is not None
        if flattened == nested_expected:
            found.append(_shape_signal("Queue", flattened, release))
        break
    return found


def _shape_signal(kind: str, flattened: bool, release: Release) -> tuple[str, str]:
    if flattened:
        return (
            f"{kind.lower()}_shape",
            f"{kind} objects arrive in the flattened shape of Volcano 1.13 and earlier, but"
            f" volcanoVersion is {release}",
        )
    return (
        f"{kind.lower()}_shape",
        f"{kind} objects arrive in the metadata/spec/status shape of Volcano 1.14 and later,"
        f" but volcanoVersion is {release}",
    )


def verb_signal(verb: str, release: Release) -> tuple[str, str] | None:
    """A call of a verb the configured release cannot send."""
    if release.has_verb(verb):
        return None
    return (
        f"{verb}_verb",
        f"Volcano sent {verb}, which Volcano {release} cannot send: a newer release is calling",
    )


@dataclass
class ReleaseWatch:
    """Collects the signals, logs each once per session, counts every one."""

    release: Release
    metrics: Metrics | None = None
    evidence: dict[str, str] = field(default_factory=dict)
    """The latest detail per signal, for ``/readyz``."""
    _logged: set[str] = field(default_factory=set)

    def new_session(self) -> None:
        self._logged.clear()

    def report(self, signal: str, detail: str) -> None:
        self.evidence[signal] = detail
        if self.metrics is not None:
            self.metrics.release_mismatch.labels(signal).inc()
        if signal not in self._logged:
            self._logged.add(signal)
            logger.error(
                "release mismatch (%s): %s; set volcanoVersion to the release you run,"
                " Caldera keeps answering as %s",
                signal,
                detail,
                self.release,
            )

    def check_session(self, body: bytes | bytearray, request: OnSessionOpenRequest) -> None:
        self.new_session()
        for signal, detail in task_fields_signals(body, self.release):
            self.report(signal, detail)
        for signal, detail in object_shape_signals(request, self.release):
            self.report(signal, detail)

    def check_verb(self, verb: str) -> None:
        found = verb_signal(verb, self.release)
        if found is not None:
            self.report(*found)
