"""``sessionState: cluster``: each session's state derived from the watched cluster, with no
snapshot from Volcano.

Volcano is configured without onSessionOpenVerb, so it never marshals and posts its snapshot;
it still sends onSessionClose (body ``{}``) and allocate/deallocate. The session boundary is
then: onSessionClose ends a session, and the session's first call after it opens the next one,
which freezes the watched objects (O(1), copy on write) and derives from them, with the
placements Volcano committed and the cluster does not show yet
(:mod:`app.cluster_state.overlay`), the ``OnSessionOpenRequest`` Volcano would have sent. The
derivation is incremental (:mod:`app.cluster_state.incremental`): only the tasks, nodes and jobs
whose objects changed since the previous session are built again, so the session's first call
waits about a millisecond when a few pods changed, not the full derivation's ~100 ms at 10,000
pods. The
plugins open on it as on a snapshot, so per-session plugin state and the decision record work
as before. The extender (``app/extender.py``) drives the boundary; this object owns the watch.

Until every collection has been listed once there is no state to derive, and ``/readyz``
answers 503 so the startupProbe holds vc-scheduler back meanwhile. No probe holds it back when
the sidecar alone restarts (the native sidecar's restart, an OOM kill): vc-scheduler calls the
new process from its first second. A session whose first call comes before the lists have no
state, and answering it without one would let each plugin that needs one abstain, admitting or
placing what the state would hold (an over-quota job admitted, e2e
``stale-view-caldera-restarted``); so it is answered as a stale one is, as ``onStaleState``
says (:meth:`ClusterSessionState.not_current`): ``hold`` admits, places and evicts nothing;
``answer`` answers it without a session (``caldera_verbs_without_session_total`` counts it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from app.cluster_state.audit import SelfAudit
from app.cluster_state.derive import Settings
from app.cluster_state.modes import SessionStateMode
from app.cluster_state.staleness import DEFAULT_MAX_STALENESS
from app.cluster_state.watch import WatchBackedState, WatchErrors
from app.session_events import Opened
from schemas.api import TaskInfo
from schemas.requests import OnSessionOpenRequest

logger = logging.getLogger("caldera.session_state")


class ClusterSessionState(WatchBackedState):
    """The watch, the overlay fed by allocate/deallocate/onSessionClose, and each session's
    derived state."""

    mode = SessionStateMode.CLUSTER

    def __init__(
        self,
        settings: Settings,
        kubeconfig: str | None = None,
        derived: Callable[[float], None] | None = None,
        max_staleness: float = DEFAULT_MAX_STALENESS,
        on_error: WatchErrors | None = None,
        audit: SelfAudit | None = None,
    ) -> None:
        self.audit = audit or SelfAudit()
        """What Volcano sends, compared with each session's state (app/cluster_state/audit.py)."""
        super().__init__(settings, kubeconfig, max_staleness, on_error, self.audit.divergence)
        self._derived = derived
        """Observes each derivation's seconds (``caldera_session_state_derive_seconds``)."""
        self.sessions_derived = 0
        self.sessions_before_sync = 0
        """Sessions whose first call came before every collection was listed once."""
        self.last_derive_seconds: float | None = None

    @property
    def ready(self) -> bool:
        """Whether sessions can be served: the watch has listed every collection once."""
        return self.watch.synced

    def not_current(self) -> list[str]:
        """Why a session opened now must not be answered as usual: the watches have not all
        listed once (there is no state yet: :meth:`open_session` gives none), or the view is
        stale (:class:`~app.cluster_state.staleness.Staleness`). Empty: answered as usual."""
        reasons = self.staleness.stale()
        if not self.watch.synced:
            reasons.insert(0, self.not_listed())
        return reasons

    def not_listed(self) -> str:
        """What has not been listed yet, for the held answers, a 503 and the log."""
        waiting = [r.name for r in self.watch.reflectors if not r.status.synced]
        return (
            f"the cluster view is not listed yet: {', '.join(waiting) or 'no watch started'}"
            f" of {self.staleness.server()} not listed once since Caldera started"
        )

    def open_session(self) -> OnSessionOpenRequest | None:
        """The session's state, frozen now; None before the watch has listed once."""
        if not self.watch.synced:
            self.sessions_before_sync += 1
            if self.sessions_before_sync == 1:
                logger.warning(
                    "a session's first call came before every watch had listed once (%s):"
                    " answered as onStaleState says, without a state",
                    self.not_listed(),
                )
            return None
        started = time.perf_counter()
        derived = self.store.open_session()
        seconds = time.perf_counter() - started
        self.sessions_derived += 1
        self.last_derive_seconds = seconds
        if self._derived is not None:
            self._derived(seconds)
        return derived.snapshot

    def opened(self, session: Opened) -> None:
        """A session opened on the state derived here: the self-audit samples against it."""
        if session.derived:
            self.audit.session_opened(session.number, session.state)

    def allocated(self, task: TaskInfo) -> None:
        super().allocated(task)
        self.audit.placed(task)

    def deallocated(self, task: TaskInfo) -> None:
        super().deallocated(task)
        self.audit.placed(task)

    def closed(self) -> None:
        """onSessionClose, after its answer: the placements committed, then the session's
        sample of what Volcano sent compared with its state (bounded: ``AuditBudget``)."""
        super().closed()
        self.audit.session_closed()

    def describe(self) -> dict[str, Any]:
        """The /debug/session and /readyz section: the watch's, and the sessions derived."""
        return {
            **self.describe_watch(),
            "sessionsDerived": self.sessions_derived,
            "sessionsBeforeSync": self.sessions_before_sync,
            "lastDeriveSeconds": (
                round(self.last_derive_seconds, 4) if self.last_derive_seconds is not None else None
            ),
            "selfAudit": self.audit.describe(),
        }
