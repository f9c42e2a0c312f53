"""Volcano 1.6–1.7's shared URL: jobEnqueueable and queueOverused bodies posted to the
reclaimable verb (and to the bare prefix when ``reclaimableVerb`` is empty).

The one place that knows it: the extender dispatches by body shape, the routes add the bare
prefix, and ``caldera volcano-config`` folds the two verbs into reclaimable.
"""

from __future__ import annotations

from plugins.api.extension_points import Verb
from plugins.api.release import SHARED_RECLAIMABLE_PATH_VERBS, Release
from schemas.requests import LegacyReclaimablePathRequest

BARE_PREFIX = "/"
"""Where those releases post when ``extender.reclaimableVerb`` is empty."""


def verb_of(shape: LegacyReclaimablePathRequest) -> str | None:
    """The verb a body posted to the shared path is for, by the object it carries."""
    if shape.evictor:
        return Verb.RECLAIMABLE
    if shape.job:
        return Verb.JOB_ENQUEUEABLE
    if shape.queue:
        return Verb.QUEUE_OVERUSED
    return None


UNKNOWN_SHAPE = (
    "expected an object with 'evictor' (reclaimable), 'job' (jobEnqueueable) or 'queue'"
    " (queueOverused): Volcano 1.6–1.7 send all three to the reclaimable verb"
)


def fold_verbs(release: Release, verbs: list[str]) -> tuple[list[str], list[str]]:
    """The verbs to enable in ``volcano-scheduler.conf`` for ``release``, and a note when the
    shared path carries some of them."""
    if not release.shares_reclaimable_path or not set(SHARED_RECLAIMABLE_PATH_VERBS) & set(verbs):
        return verbs, []
    folded = [verb for verb in verbs if verb not in SHARED_RECLAIMABLE_PATH_VERBS]
    if Verb.RECLAIMABLE not in folded:
        folded.append(Verb.RECLAIMABLE)
    note = (
        f"Volcano {release} posts jobEnqueueable and queueOverused to the reclaimable verb;"
        " Caldera tells them apart by their body"
    )
    return folded, [note]
