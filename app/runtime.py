"""What the app runs on, as one typed object: built by ``create_app`` (app/main.py), started and
stopped by its lifespan, read by the operator routes (``/readyz``, ``/metrics``,
``/debug/*``) through :func:`runtime_of` instead of untyped ``app.state`` attributes.

The parts that a live reload replaces (``config``, ``sessions``, ``backgrounds``) are swapped
together by :meth:`Runtime.publish`, between sessions; a route reading them on the health
listener's thread (app/listeners.py) sees either the old three or the new three, since each
read goes through the one ``served`` reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fastapi import Request

from app.cluster_state.cluster_mode import ClusterSessionState
from app.cluster_state.compare_mode import SessionStateComparison
from app.config import CalderaConfig
from app.config_watch import ConfigWatch
from app.events import PodGroupEvents
from app.explain import DecisionRecord
from app.extender import Extender
from app.features import Features
from app.metrics import Metrics
from app.plugin_faults import PluginFaults
from app.session import SessionManager
from app.shadow import Shadow
from app.snapshot_health import SnapshotHealth
from plugins.api.base import Background


@dataclass(frozen=True, slots=True)
class Serving:
    """The configuration being served, its sessions and its plugins' background data
    sources, keyed ``tiers[t].plugins[i]:<name>`` as ``/readyz`` shows them."""

    config: CalderaConfig
    sessions: SessionManager
    backgrounds: Mapping[str, Background]


@dataclass(slots=True)
class Runtime:
    metrics: Metrics
    extender: Extender
    record: DecisionRecord
    events: PodGroupEvents | None
    faults: PluginFaults
    snapshot: SnapshotHealth
    config_watch: ConfigWatch
    served: Serving
    features: Features
    session_state: SessionStateComparison | ClusterSessionState | None
    shadow: Shadow | None = None
    """``serve --shadow FILE``: the shadow configuration and its findings (app/shadow.py)."""

    def publish(
        self,
        config: CalderaConfig,
        sessions: SessionManager,
        backgrounds: Mapping[tuple[int, int], Background],
    ) -> None:
        """Serve ``config`` from now on, as the operator routes see it."""
        self.served = Serving(
            config,
            sessions,
            {
                f"tiers[{t}].plugins[{i}]:{config.tiers[t].plugins[i].name}": bg
                for (t, i), bg in backgrounds.items()
            },
        )

    @property
    def config(self) -> CalderaConfig:
        return self.served.config

    @property
    def sessions(self) -> SessionManager:
        return self.served.sessions

    @property
    def backgrounds(self) -> Mapping[str, Background]:
        return self.served.backgrounds


def runtime_of(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime
