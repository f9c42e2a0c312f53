"""The Volcano release that calls Caldera, asked by name rather than by version tuples.

One Caldera process serves one scheduler, so the release is fixed by ``volcanoVersion`` and
built once. The wire rules (which verbs exist, the predicate answer's shape, the 1.6–1.7 shared
URL) and the plugins' per-release behaviour ask this object; nothing else compares versions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from plugins.api.extension_points import BY_VERB


class PredicateShape(StrEnum):
    """The predicate answer's JSON shape (protocol reference §3.2)."""

    ERROR_MESSAGE = "errorMessage"
    """1.6–1.7: ``{"errorMessage": "..."}``."""
    STATUS_LIST = "status-list"
    """1.8–1.9: ``{"status": [{"Code": n, "Reason": "..."}]}``."""
    STATUS_CODE = "status-code"
    """1.10 and later: ``{"status": "...", "code": n}``."""


SHARED_RECLAIMABLE_PATH_VERBS = ("jobEnqueueable", "queueOverused")
"""Verbs that 1.6–1.7 post to the reclaimable verb's URL, told apart by their body."""


@dataclass(frozen=True, slots=True)
class Release:
    """A Volcano release line such as 1.15, or one patch release of it such as 1.14.1.

    ``patch`` is None for an unqualified ``volcanoVersion: "1.15"``: the newest patch release of
    that line, so fixes backported to it apply. Naming the patch matters only where Volcano
    changed behaviour in a patch release (``has_change``)."""

    major: int
    minor: int
    patch: int | None = None

    @classmethod
    def of(cls, version: tuple[int, int] | tuple[int, int, int]) -> Release:
        return cls(*version)

    @property
    def version(self) -> tuple[int, int]:
        """The release line, ``(major, minor)``: what the wire protocol depends on."""
        return (self.major, self.minor)

    @property
    def name(self) -> str:
        line = f"{self.major}.{self.minor}"
        return line if self.patch is None else f"{line}.{self.patch}"

    def at_least(self, major: int, minor: int, patch: int = 0) -> bool:
        """Whether this release is ``major.minor.patch`` or newer (a line without a patch is
        its newest patch release)."""
        if self.version != (major, minor):
            return self.version > (major, minor)
        return self.patch is None or self.patch >= patch

    def has_change(self, *first: tuple[int, int, int]) -> bool:
        """Whether this release has a change that first shipped in each listed patch release
        (the newest line's, plus backports to older lines): every later line has it, an older
        listed line from that patch on, an unlisted older line not at all."""
        newest = max(first)
        if self.version > newest[:2]:
            return True
        return any(
            self.version == (major, minor) and self.at_least(major, minor, patch)
            for major, minor, patch in first
        )

    def has_verb(self, verb: str) -> bool:
        """Whether this release's extender plugin can send ``verb`` (on its own URL or, for
        1.6–1.7, on the reclaimable verb's)."""
        point = BY_VERB.get(verb)
        return point is not None and self.at_least(*point.since)

    @property
    def predicate_shape(self) -> PredicateShape:
        if not self.at_least(1, 8):
            return PredicateShape.ERROR_MESSAGE
        if not self.at_least(1, 10):
            return PredicateShape.STATUS_LIST
        return PredicateShape.STATUS_CODE

    @property
    def shares_reclaimable_path(self) -> bool:
        """1.6–1.7 post jobEnqueueable and queueOverused bodies to the reclaimable verb (and to
        the bare prefix when ``reclaimableVerb`` is empty)."""
        return not self.at_least(1, 8)

    @property
    def has_managed_resources(self) -> bool:
        """``extender.managedResources`` exists from 1.13."""
        return self.at_least(1, 13)

    @property
    def admission_follows_vote(self) -> bool:
        """Whether an admitted job is announced by a jobEnqueued call. When not (before 1.16),
        the framework tells the plugins itself right after a vote that was not a Reject: that is
        exactly when Volcano's enqueue action admits the job and calls ``JobEnqueued`` in-tree."""
        return self.has_verb("jobEnqueued")

    @property
    def is_stable(self) -> bool:
        """Whether this release has a stable (non-alpha) tag."""
        return self.version <= NEWEST_STABLE_VERSION

    def __str__(self) -> str:
        return self.name


SUPPORTED_VERSIONS: tuple[tuple[int, int], ...] = tuple((1, minor) for minor in range(6, 17))
"""The extender protocol exists from 1.6; 1.16 exists only as alpha tags (v1.16.0-alpha.0/1)."""
NEWEST_STABLE_VERSION = (1, 15)
"""The release assumed when ``volcanoVersion`` is not set: the newest stable one (v1.15.1).
Alpha releases are served only when named explicitly."""
