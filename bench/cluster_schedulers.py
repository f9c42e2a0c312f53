"""The cluster benchmark's schedulers (tests/e2e/scale_test.go's scaleSchedulers), one row each:
what bench/cluster.py plans, tabulates and plots for it, and how bench/cluster_decisions.py
judges it. No import of the runner or the judge, so both can read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Scheduler:
    name: str
    style: Any
    """Its line in the plot (a matplotlib linestyle)."""
    snapshot: bool = False
    """Volcano posts its snapshot (onSessionOpen with the objects): the snapshot's size and the
    extender's OnSessionOpen time are its figures. Not in-tree, cluster mode, or identifiers
    mode, whose onSessionOpen carries the roster only."""
    default: bool = True
    """In the plan unless ``--schedulers`` says otherwise: not the patched Volcano's (a
    prototype's, protocol/volcano-identifiers, measured on a plan of its own)."""
    hosted: tuple[str, str] | None = None
    """Caldera hosts the plugins: its name beside in-tree's and the neutral server's figures, and
    the words a decision difference names it by."""
    floor_of: str | None = None
    """A neutral server: the hosted scheduler whose protocol cost it measures (the same merged
    conf, every call answered at once), whose floor it is."""
    neutral_words: str = ""
    """A neutral server: the words a "no control" line names it by."""


ROWS = (
    Scheduler("intree", "-"),
    Scheduler(
        "caldera", "--", snapshot=True, hosted=("Caldera", "through Caldera")
    ),
    Scheduler(
        "caldera-cluster", "-.", hosted=("cluster mode", "through Caldera in cluster mode")
    ),
    Scheduler(
        "neutral", ":", snapshot=True, floor_of="caldera", neutral_words="the neutral server"
    ),
    Scheduler(
        "neutral-cluster", (0, (1, 3)), floor_of="caldera-cluster",
        neutral_words="the neutral server (cluster mode's conf)",
    ),
    Scheduler(
        "caldera-names", (0, (5, 1, 1, 1)), default=False,
        hosted=("identifiers", "through Caldera with identifiers (patched Volcano)"),
    ),
    Scheduler(
        "neutral-names", (0, (5, 1, 1, 1, 1, 1)), default=False, floor_of="caldera-names",
        neutral_words="the neutral server (identifiers, patched Volcano)",
    ),
)  # fmt: skip
BY_NAME = {row.name: row for row in ROWS}
